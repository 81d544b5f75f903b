"""Which outside accounts a Toolathlon task's own code needs: read from what its preprocess and grader
actually execute, not from every line that names an app.

The entry points are ``preprocess/main.py`` and ``evaluation/main.py``, run as upstream runs them
(``python -m tasks.finalpool.<task>.….main``). From there the code that runs is followed through
Python's ``ast``: a module's top-level statements run (its ``if __name__ == "__main__":`` block only
for an entry point), a function or class runs when live code names it, and a task-local module runs
when live code imports it (relative imports, the task's own folders, ``tasks.finalpool.<task>.…``).
An account is needed when live code uses it:

- a name imported from ``utils.app_specific.<app>`` that live code uses (an import whose name is
  never used, or is rebound by a later import or definition before it is used, needs nothing;
  ``poste.domain_utils`` only rewrites the per-run mail domain in strings and needs no mailbox);
- a key of ``token_key_session`` / ``all_token_key_session`` that live code reads;
- a mail, API or cloud client library that live code uses (imaplib/smtplib for the Poste.io mailbox,
  google.cloud, gspread, kubernetes, wandb, huggingface_hub …: ``LIBRARY_ACCOUNTS``);
- a command in live code that runs a ``utils.app_specific.<app>`` module (``uv run -m …``);
  a string naming a script of the task's own runs that script as an entry point.

Commented-out code is not code. Each use names the file and line that needs it. This module imports
only the standard library, so a newer interpreter can run it on graders written in newer syntax
(``python3.12 toolathlon_accounts.py TASK…`` prints the uses as JSON).
"""

from __future__ import annotations

import ast
import json
import re
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

# utils.app_specific.<app> -> the outside account it talks to
APP_ACCOUNTS = {
    "github": "GitHub",
    "notion": "Notion",
    "googlesheet": "Google",
    "google_form": "Google",
    "google_oauth": "Google",
    "google_maps": "Google API key",
    "google_cloud": "Google Cloud",
    "snowflake": "Snowflake",
    "woocommerce": "WooCommerce",
    "canvas": "Canvas",
    "poste": "Poste.io mail",
    "huggingface": "Hugging Face",
    "wandb": "W&B",
    "k8s": "kind cluster",
}
# token_key_session keys, by prefix -> the account they belong to
TOKEN_ACCOUNTS = {
    "github": "GitHub",
    "notion": "Notion",
    "googlesheet": "Google",
    "google_form": "Google",
    "google_oauth": "Google",
    "google_maps": "Google API key",
    "google_cloud": "Google Cloud",
    "snowflake": "Snowflake",
    "woocommerce": "WooCommerce",
    "canvas": "Canvas",
    "poste": "Poste.io mail",
    "huggingface": "Hugging Face",
    "wandb": "W&B",
    "serper": "Serper",
    "emails": "Poste.io mail",
    "gcp": "Google Cloud",
    "kubernetes": "kind cluster",
    "k8s": "kind cluster",
}
# libraries whose use in live code talks to an outside account (the task's own mail, API and cloud clients)
LIBRARY_ACCOUNTS = {
    "imaplib": "Poste.io mail",
    "smtplib": "Poste.io mail",
    "notion_client": "Notion",
    "huggingface_hub": "Hugging Face",
    "wandb": "W&B",
    "gspread": "Google",
    "google.cloud": "Google Cloud",
    "kubernetes": "kind cluster",
    "snowflake": "Snowflake",
    "woocommerce": "WooCommerce",
}
# helpers under utils.app_specific that need no account
NO_ACCOUNT = {("poste", "domain_utils")}
TOKEN_NAMES = {"all_token_key_session", "token_key_session"}
ENTRIES = ("preprocess/main.py", "evaluation/main.py")
APP_MODULE = re.compile(r"(?:^|[.\s/])app_specific[./](\w+)(?:[./](\w+))?")
SHARED_PACKAGES = {"utils", "configs"}  # the checkout's own packages (never the task's)


@dataclass(frozen=True)
class Use:
    """One place the task's live code needs ``account``: ``file`` (relative to the task folder), ``line``, and ``what``."""

    account: str
    file: str
    line: int
    what: str

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass
class Accounts:
    """A task's uses of outside accounts, and the files that could not be read as this Python's code."""

    uses: list[Use] = field(default_factory=list)
    unparsed: list[str] = field(default_factory=list)

    def by_account(self) -> dict[str, list[Use]]:
        out: dict[str, list[Use]] = {}
        for use in sorted(set(self.uses), key=lambda u: (u.account, u.file, u.line, u.what)):
            out.setdefault(use.account, []).append(use)
        return out


def app_account(dotted: str) -> tuple[str, str] | None:
    """``utils.app_specific.github.api`` → (GitHub, app); None for other modules and helpers that need no account."""
    match = APP_MODULE.search(dotted)
    if not match:
        return None
    app, sub = match.group(1), match.group(2) or ""
    if (app, sub) in NO_ACCOUNT:
        return None
    return APP_ACCOUNTS.get(app, app), f"utils.app_specific.{app}"


def library_account(dotted: str) -> str | None:
    """``google.cloud.storage`` → Google Cloud; None for a library that needs no account."""
    return next((account for lib, account in LIBRARY_ACCOUNTS.items() if dotted == lib or dotted.startswith(lib + ".")), None)


def token_account(key: str) -> str | None:
    return next((account for prefix, account in TOKEN_ACCOUNTS.items() if key.startswith(prefix)), None)


# --- the program model ----------------------------------------------------------------------------


@dataclass
class Binding:
    """A name bound at some point of a scope: by an import (``module``, ``attr``), a def/class (``node``), or anything else."""

    name: str
    pos: tuple[int, int]
    kind: str  # import | def | other
    conditional: bool = False
    main_only: bool = False  # inside `if __name__ == "__main__":`
    module: str = ""  # import: the dotted module (absolute, or with leading dots)
    attr: str | None = None  # from-import: the imported name
    node: ast.AST | None = None


def _is_main_guard(stmt: ast.stmt) -> bool:
    test = stmt.test if isinstance(stmt, ast.If) else None
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id == "__name__"
        and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in test.comparators)
    )


def _stores(node: ast.AST | None, pos: tuple[int, int], conditional: bool, main_only: bool) -> list[Binding]:
    if node is None:
        return []
    names = [n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]
    names += [n.name for n in ast.walk(node) if isinstance(n, (ast.MatchAs, ast.MatchStar)) and n.name]
    return [Binding(name, pos, "other", conditional, main_only) for name in names]


TRY = tuple(t for t in (ast.Try, getattr(ast, "TryStar", None)) if t is not None)


def _bindings(body: list[ast.stmt], conditional: bool = False, main_only: bool = False) -> list[Binding]:
    """The names a block binds (not inside nested functions or classes), in source order; a binding
    that may not happen (in a branch, a loop, a try) is ``conditional``."""
    out: list[Binding] = []
    for stmt in body:
        pos = (stmt.lineno, stmt.col_offset)
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                out.append(
                    Binding(
                        alias.asname or alias.name.split(".")[0],
                        pos,
                        "import",
                        conditional,
                        main_only,
                        module=alias.name if alias.asname else alias.name.split(".")[0],
                    )
                )
        elif isinstance(stmt, ast.ImportFrom):
            module = "." * stmt.level + (stmt.module or "")
            for alias in stmt.names:
                out.append(
                    Binding(alias.asname or alias.name, pos, "import", conditional, main_only, module=module, attr=alias.name)
                )
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.append(Binding(stmt.name, pos, "def", conditional, main_only, node=stmt))
        elif _is_main_guard(stmt):
            assert isinstance(stmt, ast.If)
            out += _bindings(stmt.body, conditional, True) + _bindings(stmt.orelse, True, main_only)
        elif isinstance(stmt, (ast.If, ast.While)):
            out += _stores(stmt.test, pos, True, main_only)
            out += _bindings(stmt.body, True, main_only) + _bindings(stmt.orelse, True, main_only)
        elif isinstance(stmt, (ast.For, ast.AsyncFor)):
            out += _stores(stmt.target, pos, True, main_only) + _stores(stmt.iter, pos, conditional, main_only)
            out += _bindings(stmt.body, True, main_only) + _bindings(stmt.orelse, True, main_only)
        elif isinstance(stmt, (ast.With, ast.AsyncWith)):
            for item in stmt.items:
                out += _stores(item, pos, conditional, main_only)
            out += _bindings(stmt.body, conditional, main_only)
        elif isinstance(stmt, TRY):
            out += _bindings(stmt.body, True, main_only)
            for handler in stmt.handlers:
                if handler.name:
                    out.append(Binding(handler.name, pos, "other", True, main_only))
                out += _bindings(handler.body, True, main_only)
            out += _bindings(stmt.orelse, True, main_only) + _bindings(stmt.finalbody, conditional, main_only)
        elif isinstance(stmt, ast.Match):
            out += _stores(stmt.subject, pos, conditional, main_only)
            for case in stmt.cases:
                out += _stores(case.pattern, pos, True, main_only) + _bindings(case.body, True, main_only)
        else:  # a simple statement
            out += _stores(stmt, pos, conditional, main_only)
    return out


def _last(found: list[Binding]) -> list[Binding]:
    """Of a name's bindings in order, those it may have after them: the last unconditional one and any
    conditional ones after it."""
    out: list[Binding] = []
    for b in reversed(found):
        out.append(b)
        if not b.conditional:
            break
    return out


@dataclass
class Scope:
    """A function's (or class body's) own names; ``parent``: the enclosing function's scope (None: the module)."""

    node: ast.AST
    parent: Scope | None = None
    bindings: dict[str, list[Binding]] = field(default_factory=dict)
    params: set[str] = field(default_factory=set)
    declared_global: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, parent: Scope | None) -> Scope:
        scope = cls(node, parent)
        for b in _bindings(node.body):
            scope.bindings.setdefault(b.name, []).append(b)
        if not isinstance(node, ast.ClassDef):
            a = node.args
            scope.params = {
                arg.arg
                for arg in [
                    *a.posonlyargs,
                    *a.args,
                    *a.kwonlyargs,
                    *([a.vararg] if a.vararg else []),
                    *([a.kwarg] if a.kwarg else []),
                ]
            }
        scope.declared_global = {n for s in ast.walk(node) if isinstance(s, (ast.Global, ast.Nonlocal)) for n in s.names}
        return scope

    def owns(self, name: str) -> bool:
        return name not in self.declared_global and (name in self.bindings or name in self.params)

    def effective(self, name: str, before: tuple[int, int]) -> list[Binding]:
        found = self.bindings.get(name, [])
        return _last([b for b in found if b.pos < before] or found)


class Module:
    def __init__(self, program: Program, path: Path, tree: ast.Module, main: bool):
        self.program, self.path, self.tree, self.main = program, path, tree, main
        self.rel = program.rel(path)
        self.bindings: dict[str, list[Binding]] = {}
        for b in _bindings(tree.body):
            if b.main_only and not main:
                continue
            self.bindings.setdefault(b.name, []).append(b)
        self.live: set[int] = set()  # ids of def/class nodes walked

    def effective(self, name: str, before: tuple[int, int] | None) -> list[Binding]:
        """The module-level bindings ``name`` may have when read at ``before`` (None: from a function,
        after the module ran)."""
        return _last([b for b in self.bindings.get(name, []) if before is None or b.pos < before])

    def symbol(self, name: str) -> None:
        """``name`` of this module is used from elsewhere (after it ran)."""
        for b in self.effective(name, None):
            self.program.use(self, b, None)


class Program:
    """The task's code that runs, from its entry points; ``accounts.uses`` is what it needs."""

    def __init__(self, folder: Path):
        self.folder = folder.resolve()
        self.modules: dict[tuple[Path, bool], Module | None] = {}
        self.accounts = Accounts()
        self.scripts = {p.resolve() for p in self.folder.rglob("*.py")}

    def rel(self, path: Path) -> str:
        try:
            return path.resolve().relative_to(self.folder).as_posix()
        except ValueError:
            return str(path)

    def add(self, account: str, module: Module, node: Any, what: str) -> None:
        line = node.pos[0] if isinstance(node, Binding) else getattr(node, "lineno", 0)
        self.accounts.uses.append(Use(account, module.rel, line, what))

    def load(self, path: Path, main: bool) -> Module | None:
        """The module at ``path``, its top level run (once per way it runs: as __main__ or imported)."""
        key = (path.resolve(), main)
        if key in self.modules:
            return self.modules[key]
        try:
            tree = ast.parse(path.read_text(encoding="utf-8", errors="replace"), filename=str(path))
        except SyntaxError:
            if self.rel(path) not in self.accounts.unparsed:
                self.accounts.unparsed.append(self.rel(path))
            self.modules[key] = None
            return None
        module = Module(self, path, tree, main)
        self.modules[key] = module
        self.walk(module, tree.body, None)
        return module

    def run_entries(self) -> Accounts:
        for entry in ENTRIES:
            if (self.folder / entry).is_file():
                self.load(self.folder / entry, main=True)
        return self.accounts

    # -- resolving imports to the task's own files -------------------------------------------

    def resolve(self, module: Module, dotted: str) -> Path | None:
        """The task-local file a (possibly relative) module name names, if any."""
        level = len(dotted) - len(dotted.lstrip("."))
        parts = [p for p in dotted.lstrip(".").split(".") if p]
        if level:
            base = module.path.parent
            for _ in range(level - 1):
                base = base.parent
            return self._file(base, parts)
        if not parts or parts[0] in SHARED_PACKAGES:
            return None
        if parts[:2] == ["tasks", "finalpool"]:
            return self._file(self.folder, parts[3:]) if len(parts) > 3 and parts[2] == self.folder.name else None
        for base in (module.path.parent, self.folder, self.folder / "preprocess", self.folder / "evaluation"):
            found = self._file(base, parts)
            if found is not None:
                return found
        return None

    def _file(self, base: Path, parts: list[str]) -> Path | None:
        target = base.joinpath(*parts)
        candidates = ([target.with_name(target.name + ".py")] if parts else []) + [target / "__init__.py"]
        return next((c for c in candidates if c.resolve() in self.scripts), None)

    # -- what live code does -----------------------------------------------------------------

    def use(self, module: Module, b: Binding, node: ast.AST | None, scope: Scope | None = None) -> None:
        """Live code read binding ``b`` of ``module`` (at ``node``; ``scope``: where ``b`` is bound)."""
        if b.kind == "def":
            assert isinstance(b.node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
            if id(b.node) not in module.live:
                module.live.add(id(b.node))
                self.define(module, b.node, scope)
        elif b.kind == "import":
            full = f"{b.module}.{b.attr}" if b.attr else b.module
            account = app_account(full)
            if account:
                self.add(account[0], module, node or b, full.lstrip("."))
                return
            library = library_account(full) if not b.module.startswith(".") and self.resolve(module, b.module) is None else None
            if library:
                self.add(library, module, node or b, full)
                return
            if b.attr is not None:  # from X import attr: the submodule X.attr, or attr of X
                sub = self.resolve(module, f"{b.module}.{b.attr}" if b.module.strip(".") else b.module + b.attr)
                target = self.resolve(module, b.module)
                if sub is not None:
                    self.load(sub, main=False)
                elif target is not None and (loaded := self.load(target, main=False)) is not None:
                    loaded.symbol(b.attr)
            elif (target := self.resolve(module, b.module)) is not None:
                self.load(target, main=False)

    def define(self, module: Module, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, parent: Scope | None) -> None:
        """A def's body runs (a class: its body runs and its methods are taken as live)."""
        scope = Scope.of(node, parent)
        if isinstance(node, ast.ClassDef):
            for inner in node.body:
                if isinstance(inner, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    for expr in inner.decorator_list:
                        self._expr(module, expr, parent)
                    self.define(module, inner, parent)  # (a class body is no enclosing scope of its methods)
                else:
                    self._stmt(module, inner, scope)
            return
        for default in [*node.args.defaults, *[d for d in node.args.kw_defaults if d is not None]]:
            self._expr(module, default, parent)
        self.walk(module, node.body, scope)

    def walk(self, module: Module, body: list[ast.stmt], scope: Scope | None) -> None:
        for stmt in body:
            self._stmt(module, stmt, scope)

    def _stmt(self, module: Module, stmt: ast.stmt, scope: Scope | None) -> None:
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for expr in [*stmt.decorator_list, *getattr(stmt, "bases", [])]:
                self._expr(module, expr, scope)
            if scope is not None and id(stmt) not in module.live:  # a def inside a live function: taken as live
                module.live.add(id(stmt))
                self.define(module, stmt, scope)
            return
        if scope is None and _is_main_guard(stmt):
            assert isinstance(stmt, ast.If)
            self.walk(module, stmt.body if module.main else stmt.orelse, None)
            return
        if isinstance(stmt, (ast.Import, ast.ImportFrom)):  # a task-local module's top level runs
            dotted = [a.name for a in stmt.names] if isinstance(stmt, ast.Import) else ["." * stmt.level + (stmt.module or "")]
            for name in dotted:
                if (target := self.resolve(module, name)) is not None:
                    self.load(target, main=False)
            return
        for child in ast.iter_child_nodes(stmt):
            if isinstance(child, ast.stmt):
                self._stmt(module, child, scope)
            elif isinstance(child, ast.ExceptHandler):
                if child.type is not None:
                    self._expr(module, child.type, scope)
                self.walk(module, child.body, scope)
            elif isinstance(child, ast.match_case):
                self.walk(module, child.body, scope)
            else:
                self._expr(module, child, scope)

    def _read(self, module: Module, name: str, node: ast.AST, scope: Scope | None) -> None:
        """Live code reads ``name``: the binding(s) it may have there are used."""
        pos = (getattr(node, "lineno", 0), getattr(node, "col_offset", 0))
        inner = scope
        while inner is not None:
            if inner.owns(name):
                for b in inner.effective(name, pos):
                    self.use(module, b, node, inner)
                return
            inner = inner.parent
        for b in module.effective(name, pos if scope is None else None):
            self.use(module, b, node)

    def _expr(self, module: Module, expr: ast.AST, scope: Scope | None) -> None:
        for node in ast.walk(expr):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                self._read(module, node.id, node, scope)
            elif isinstance(node, ast.Attribute):
                holder = node.value
                if (isinstance(holder, ast.Name) and holder.id in TOKEN_NAMES) or (
                    isinstance(holder, ast.Attribute) and holder.attr in TOKEN_NAMES
                ):
                    if account := token_account(node.attr):
                        self.add(account, module, node, f"token_key_session.{node.attr}")
                elif isinstance(holder, ast.Name):
                    self._module_attr(module, holder.id, node.attr, scope)
            elif (
                isinstance(node, ast.Subscript)
                and isinstance(node.value, ast.Name)
                and node.value.id in TOKEN_NAMES
                and isinstance(node.slice, ast.Constant)
            ):
                key = str(node.slice.value)
                if account := token_account(key):
                    self.add(account, module, node, f"token_key_session.{key}")
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                self._string(module, node)

    def _module_attr(self, module: Module, name: str, attr: str, scope: Scope | None) -> None:
        """``name.attr`` where ``name`` is a task-local module: its ``attr`` is used."""
        inner, found = scope, None
        while inner is not None and found is None:
            found = inner.bindings.get(name) if inner.owns(name) else None
            inner = inner.parent
        for b in _last(found) if found else module.effective(name, None):
            if b.kind != "import":
                continue
            dotted = f"{b.module}.{b.attr}" if b.attr else b.module
            if (target := self.resolve(module, dotted)) is not None and (loaded := self.load(target, main=False)) is not None:
                loaded.symbol(attr)

    def _string(self, module: Module, node: ast.Constant) -> None:
        """A command that runs an app helper module, or a script of the task's own that runs."""
        text = str(node.value)
        if len(text) > 500:
            return
        if ("-m " in text or ".py" in text) and (account := app_account(text)):
            self.add(account[0], module, node, f"runs {' '.join(text.split())[:80]}")
            return
        name = text.strip()
        if not re.fullmatch(r"[\w-]+(\.py)?", name) or name in ("main", "main.py", "__init__", "__init__.py"):
            return
        candidate = module.path.parent / (name if name.endswith(".py") else f"{name}.py")
        if candidate.resolve() in self.scripts and candidate.resolve() != module.path.resolve():
            self.load(candidate, main=True)


def task_accounts(folder: Path) -> Accounts:
    """What the task's live preprocess and grader code needs (this interpreter's syntax)."""
    return Program(Path(folder)).run_entries()


def text_accounts(folder: Path, files: list[str]) -> list[Use]:
    """For files this interpreter cannot parse: app imports and token keys on lines that are not
    comments (an over-count, said as such by the caller)."""
    uses: list[Use] = []
    for rel in files:
        for n, line in enumerate((Path(folder) / rel).read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            code = line.split("#", 1)[0]
            account = app_account(code) if "app_specific" in code else None
            if account:
                uses.append(Use(account[0], rel, n, account[1]))
            for key in re.findall(r"(?:all_token_key_session|token_key_session)\.(\w+)", code):
                if found := token_account(key):
                    uses.append(Use(found, rel, n, f"token_key_session.{key}"))
    return uses


def accounts_of(folders: list[Path], python: str | None = None) -> dict[Path, Accounts]:
    """Every task's accounts; tasks with files this interpreter cannot parse (upstream's graders use
    Python 3.12 syntax) are read again by ``python`` (a 3.12 or newer) when there is one, else
    their unreadable files are scanned as text (``Accounts.unparsed`` stays set)."""
    out = {Path(f): task_accounts(Path(f)) for f in folders}
    again = [f for f, a in out.items() if a.unparsed]
    if again and python:
        import subprocess

        proc = subprocess.run(
            [python, "-I", str(Path(__file__).resolve()), *map(str, again)], capture_output=True, text=True, timeout=600
        )
        if proc.returncode == 0:
            for key, data in json.loads(proc.stdout).items():
                out[Path(key)] = Accounts([Use(**u) for u in data["uses"]], data["unparsed"])
    for folder, accounts in out.items():
        if accounts.unparsed:
            accounts.uses += text_accounts(folder, accounts.unparsed)
    return out


def main(argv: list[str]) -> int:
    result: dict[str, Any] = {}
    for arg in argv:
        accounts = task_accounts(Path(arg))
        result[arg] = {"uses": [asdict(u) for u in accounts.uses], "unparsed": accounts.unparsed}
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
