#include <cstdio>
int main() { std::puts("hello"); }
