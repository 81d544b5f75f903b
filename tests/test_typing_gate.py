"""The lower and the orchestrating layers take typed pieces, not ``Any``: a function in core/,
config/ or run/ whose parameter or return is a bare ``Any`` fails here unless it is listed below
as data of no fixed shape (JSON, a task file's step, a parsed literal)."""

import ast
from pathlib import Path

PKG = Path(__file__).resolve().parents[1] / "mcpworld"
GATED = ("core", "config", "run")
# function -> why Any is the honest type there
DATA_OF_ANY_SHAPE = {
    "core/pyautogui_script.py:_literal": "a Python literal of OSWorld's script, any type",
    "core/pyautogui_script.py:_keys": "a pyautogui argument: a key name or a list of them",
    "core/secrets.py:strip_secrets": "a config tree of any shape",
    "core/secrets.py:redact_tree": "a trace payload of any shape",
    "core/steps.py:normalize_step": "a task file's step as written, checked here",
    "core/steps.py:fill_screen": "a step's command: a string or an argv list",
    "core/task.py:read_json": "a task file's JSON",
    "core/urls.py:_split_host": "tldextract's result",
    "core/urls.py:compare_urls": "OSWorld passes URLs of any type (None, lists)",
    "run/metering.py:__getattr__": "the wrapped provider's attributes, whatever they are",
}


def bare_any(annotation: ast.expr | None) -> bool:
    return (isinstance(annotation, ast.Name) and annotation.id == "Any") or (
        isinstance(annotation, ast.Constant) and annotation.value == "Any"
    )


def untyped_functions(root: Path) -> set[str]:
    found = set()
    for package in GATED:
        for path in sorted((root / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    args = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
                    if any(bare_any(a.annotation) for a in args) or bare_any(node.returns):
                        found.add(f"{path.relative_to(root)}:{node.name}")
    return found


def test_no_bare_any_in_core_config_and_run_signatures():
    assert untyped_functions(PKG) - set(DATA_OF_ANY_SHAPE) == set()


def test_the_gate_catches_a_config_passed_as_any(tmp_path: Path):
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "x.py").write_text("from typing import Any\ndef go(cfg: Any) -> None: ...\n")
    assert untyped_functions(tmp_path) == {"run/x.py:go"}
