"""The local backend: desktops on this host (Xvfb, D-Bus, a window manager), each in its own account,
cgroup and namespaces; also a home folder on this host (home.py). docs/isolation.md."""
