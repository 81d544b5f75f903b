"""Reading a shell command line as bash splits it, as far as knowing what it runs: its top-level
items (``a && b; c``), each item's pipeline, every simple command (also inside ``$(…)``, backticks,
``( … )`` and ``bash -c '…'``) and the program each one starts.

Suites write their setup and grader commands for bash; a task is checked before the run for the
programs they need (tasks/programs_needed.py), and a setup step's ``sudo`` items are read to see
whether they only ask for what the desktop already has (core/sudo.py). This is a reader, not a
shell: what it cannot read (a heredoc, ``case`` patterns) it reads loosely, never raising.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

LIST_OPERATORS = ("&&", "||", ";;", ";", "&", "\n")
# words that start no program: bash's keywords and builtins (and what test/[ are as builtins)
KEYWORDS = frozenset(
    [
        "if",
        "then",
        "else",
        "elif",
        "fi",
        "do",
        "done",
        "while",
        "until",
        "for",
        "in",
        "case",
        "esac",
        "function",
        "select",
        "time",
        "!",
        "{",
        "}",
        "[[",
        "]]",
        "coproc",
    ]
)
BUILTINS = frozenset(
    [
        "echo",
        "printf",
        "cd",
        "export",
        "set",
        "unset",
        "read",
        "test",
        "[",
        "true",
        "false",
        ":",
        "source",
        ".",
        "eval",
        "exit",
        "return",
        "local",
        "declare",
        "typeset",
        "shift",
        "wait",
        "trap",
        "type",
        "alias",
        "unalias",
        "pushd",
        "popd",
        "dirs",
        "let",
        "ulimit",
        "umask",
        "hash",
        "kill",
        "pwd",
        "readonly",
        "getopts",
        "builtin",
        "enable",
        "help",
        "history",
        "jobs",
        "fg",
        "bg",
        "disown",
        "suspend",
        "logout",
        "mapfile",
        "readarray",
        "shopt",
        "caller",
        "compgen",
        "complete",
        "exec",
        "command",
    ]
)
# programs that run the program named after their options: each one's options that take a value,
# and how many plain arguments come before the program (timeout's duration)
WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
    "sudo": (frozenset(["-u", "-g", "-h", "-p", "-C", "-D", "-r", "-t", "-U"]), 0),
    "timeout": (frozenset(["-s", "-k"]), 1),
    "nice": (frozenset({"-n"}), 0),
    "env": (frozenset(["-u", "-C", "-S"]), 0),
    "nohup": (frozenset(), 0),
    "stdbuf": (frozenset(["-i", "-o", "-e"]), 0),
    "xargs": (frozenset(["-I", "-n", "-d", "-E", "-L", "-P", "-s", "-a"]), 0),
    "exec": (frozenset({"-a"}), 0),
    "command": (frozenset(), 0),
    "time": (frozenset(["-f", "-o"]), 0),
}
SHELLS = frozenset({"bash", "sh", "dash", "zsh"})
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=")
REDIRECTION = re.compile(r"^\d*(>>|>&|<&|&>>|&>|<<<|<<-|<<|<>|>\||>|<)")


@dataclass(frozen=True)
class Token:
    kind: str  # "word", "op" (a list or pipe operator) or "group" (the inside of ( … ))
    text: str
    start: int
    end: int


def _close(text: str, i: int) -> int:
    """Index just past the ``)`` matching the ``(`` at ``i`` (quotes and nesting respected), or len(text)."""
    depth, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == "'":
            i = _past_single(text, i)
            continue
        if c == '"':
            i = _past_double(text, i)
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return n


def _past_single(text: str, i: int) -> int:
    end = text.find("'", i + 1)
    return len(text) if end < 0 else end + 1


def _past_double(text: str, i: int) -> int:
    i += 1
    while i < len(text):
        c = text[i]
        if c == "\\":
            i += 2
            continue
        if c == '"':
            return i + 1
        if c == "$" and text[i + 1 : i + 2] == "(":
            i = _close(text, i + 1)
            continue
        i += 1
    return len(text)


def tokens(text: str) -> list[Token]:
    """The top-level tokens of a command line: words (quotes kept as written), operators, groups."""
    out: list[Token] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t\r" or (c == "\\" and text[i + 1 : i + 2] == "\n"):
            i += 1 if c != "\\" else 2
            continue
        if c == "#":  # a comment, to the end of the line
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        op = next((o for o in ("&&", "||", ";;") if text.startswith(o, i)), None) or (c if c in ";&|\n" else None)
        if op and not (c == "&" and text[i + 1 : i + 2] == ">"):
            out.append(Token("op", op, i, i + len(op)))
            i += len(op)
            continue
        if c == "(":
            end = _close(text, i)
            out.append(Token("group", text[i + 1 : max(i + 1, end - 1)], i, end))
            i = end
            continue
        if c == ")":
            i += 1
            continue
        start = i
        while i < n:
            c = text[i]
            if c == "\\":
                i += 2
            elif c == "'":
                i = _past_single(text, i)
            elif c == '"':
                i = _past_double(text, i)
            elif c == "$" and text[i + 1 : i + 2] == "(":
                i = _close(text, i + 1)
            elif c == "`":
                end = text.find("`", i + 1)
                i = n if end < 0 else end + 1
            elif c == "&" and (text[i - 1 : i] in (">", "<") or text[i + 1 : i + 2] == ">"):
                i += 1  # 2>&1, &>file: part of a redirection
            elif c in " \t\r\n;&|()":
                break
            else:
                i += 1
        out.append(Token("word", text[start:i], start, i))
    return out


def items(text: str) -> list[tuple[int, int]]:
    """The spans of the top-level items of a command list (``a | b && c; d`` → ``a | b``, ``c``, ``d``)."""
    spans: list[tuple[int, int]] = []
    first: Token | None = None
    last: Token | None = None
    for token in [*tokens(text), Token("op", ";", len(text), len(text))]:
        if token.kind == "op" and token.text in LIST_OPERATORS:
            if first is not None and last is not None:
                spans.append((first.start, last.end))
            first = last = None
        else:
            first = first or token
            last = token
    return spans


def unquote(word: str) -> str:
    try:
        return "".join(shlex.split(word)) if word else word
    except ValueError:
        return word.strip("'\"")


def simple_commands(text: str) -> list[list[str]]:
    """Every simple command's words (unquoted, redirections left out), nested ones included."""
    out: list[list[str]] = []
    words: list[str] = []
    skip_next = False
    for token in [*tokens(text), Token("op", ";", len(text), len(text))]:
        if token.kind == "op":
            if words:
                out.append(words)
            words, skip_next = [], False
            continue
        if token.kind == "group":
            out += simple_commands(token.text)
            continue
        for inner in _substitutions(token.text):
            out += simple_commands(inner)
        if skip_next:
            skip_next = False
            continue
        redirect = REDIRECTION.match(token.text)
        if redirect:
            skip_next = redirect.end() == len(token.text)  # `> file`: the next word is the file
            continue
        words.append(unquote(token.text))
    return out


def _substitutions(word: str) -> list[str]:
    """The command lines inside a word's ``$(…)`` and backticks (not inside single quotes)."""
    found, i = [], 0
    while i < len(word):
        c = word[i]
        if c == "\\":
            i += 2
        elif c == "'" and not _in_double(word, i):
            i = _past_single(word, i)
        elif c == "$" and word[i + 1 : i + 2] == "(" and word[i + 2 : i + 3] != "(":
            end = _close(word, i + 1)
            found.append(word[i + 2 : end - 1])
            i = end
        elif c == "`":
            end = word.find("`", i + 1)
            end = len(word) if end < 0 else end
            found.append(word[i + 1 : end])
            i = end + 1
        else:
            i += 1
    return found


def _in_double(word: str, i: int) -> bool:
    return word[:i].count('"') % 2 == 1


def command_words(words: list[str]) -> list[str]:
    """A simple command's words from its program on: assignments, keywords and wrappers
    (``timeout 10``, ``env -i``, ``sudo -S``) skipped; [] when it starts no program."""
    i = 0
    while i < len(words):
        word = words[i]
        if ASSIGNMENT.match(word) or word in KEYWORDS - {"for", "case", "select", "function"}:
            i += 1
            continue
        if word in ("for", "case", "select", "function"):
            return []
        name = Path(word).name
        if name in WRAPPERS:
            with_value, plain = WRAPPERS[name]
            i += 1
            while i < len(words) and words[i].startswith("-"):
                i += 1 if words[i] == "--" else 2 if words[i] in with_value else 1
                if words[i - 1] == "--":
                    break
            i += plain
            continue
        return words[i:]
    return []


def programs(command: str | list[str], shell: bool = True) -> list[str]:
    """The programs a command runs, in order: for a shell command line every simple command's
    program (nested ones and ``bash -c`` scripts too); for an argv list its first word (and the
    script of ``bash -c``). Builtins and words only known when it runs (``$x``) are left out."""
    if isinstance(command, list):
        argv = [str(c) for c in command]
        if shell:  # OSWorld passes a list with shell=True as one line
            return programs(" ".join(argv), True)
        return _program_of(argv)
    if not shell:
        try:
            return _program_of(shlex.split(command))
        except ValueError:
            return _program_of(command.split())
    found: list[str] = []
    for words in simple_commands(command):
        found += _program_of(words)
    return found


def _program_of(words: list[str]) -> list[str]:
    words = command_words(words)
    if not words:
        return []
    name = words[0]
    if not name or name in BUILTINS or name in KEYWORDS or "$" in name or "`" in name or "*" in name:
        return []
    found = [name]
    if Path(name).name in SHELLS and "-c" in words[1:]:
        script = words[words.index("-c") + 1 : words.index("-c") + 2]
        found += programs(script[0], True) if script else []
    return found
