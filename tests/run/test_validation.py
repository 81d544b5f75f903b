"""Bad input stops before any episode with one line naming the file or key, the value and the fix."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from mcpworld.core.errors import TaskFileError, UserError
from mcpworld.evaluation.spec import validate_spec
from mcpworld.tasks.load import find_task_files
from mcpworld.tasks.native import load_task

ROOT = Path(__file__).resolve().parents[2]
TASK = """app: mousepad
instruction: {instruction}
{extra}
evaluator: {{func: exact_match, result: {{type: vm_command_line, command: "true"}},
            expected: {{type: rule, rules: {{expected: ""}}}}}}
"""


def task_file(tmp_path: Path, instruction: str = "Do it.", extra: str = "") -> Path:
    folder = tmp_path / "suite" / "mousepad" / "t"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "task.yaml"
    path.write_text(TASK.format(instruction=instruction, extra=extra))
    return path


def test_a_jinja_syntax_error_names_the_file(tmp_path):
    path = task_file(tmp_path, instruction='"Add {{ line "')
    with pytest.raises(TaskFileError, match=f"{path}: instruction: template syntax error"):
        load_task(path)


def test_non_utf8_bytes_name_the_file_and_the_fix(tmp_path):
    path = task_file(tmp_path)
    path.write_bytes(path.read_bytes().replace(b"Do it.", b"Do \xff it."))
    with pytest.raises(TaskFileError, match=f"{path}: not UTF-8 text .*save the file as UTF-8"):
        load_task(path)


@pytest.mark.parametrize("extra", ["timeout: 0", "max_steps: -3", "timeout: -1"])
def test_bounds_in_a_task_file_must_be_positive(tmp_path, extra):
    with pytest.raises(TaskFileError, match="must be positive"):
        load_task(task_file(tmp_path, extra=extra))


def test_a_broken_task_json_is_an_error_not_a_missing_task(tmp_path):
    (tmp_path / "ok_data.json").write_text("{not json at all")  # context data: not ours to judge
    broken = tmp_path / "0a1b.json"
    broken.write_text('{"id": "0a1b", "instruction": "x", "evaluator": {"func": "exact_match",}')
    with pytest.raises(TaskFileError, match=f"{broken}: not valid JSON: .* line 1 column"):
        find_task_files(tmp_path)


def spec(**changes):
    base = {
        "func": "exact_match",
        "result": {"type": "vm_command_line", "command": "true"},
        "expected": {"type": "rule", "rules": {"expected": "x"}},
    }
    return {**base, **changes}


def test_a_misspelled_metric_option_names_the_metric_and_suggests_the_right_one():
    with pytest.raises(
        UserError,
        match=r"task.yaml: .*metric 'compare_text_file' has no option 'ignore_cse'; "
        r"did you mean 'ignore_case'",
    ):
        validate_spec(spec(func="compare_text_file", options={"ignore_cse": True}), "task.yaml")
    validate_spec(spec(func="compare_text_file", options={"ignore_case": True}), "task.yaml")


def test_rules_must_be_a_mapping_or_a_list():
    with pytest.raises(UserError, match="'rules' as a mapping"):
        validate_spec(spec(expected={"type": "rule", "rules": "hi"}), "task.yaml")
    validate_spec(
        spec(
            func="check_accessibility_tree",
            result={"type": "accessibility_tree"},
            expected={"type": "rule", "rules": [{"selectors": ["x"]}]},
        ),
        "task.yaml",
    )


@pytest.mark.parametrize(
    "override,message",
    [
        ("agent.image_quality=500", "agent.image_quality=500 must be 1..100"),
        ("resolution.width=0", "resolution.width=0 must be 200..8192"),
        ("agent.max_llm_calls=0", "agent.max_llm_calls=0 must be positive"),
        ("agent.max_steps=-1", "agent.max_steps=-1 must be 0"),
        ("agent.timeout_s=-5", "agent.timeout_s=-5.0 must be positive"),
    ],
)
def test_bad_config_values_stop_with_one_line_and_exit_2(tmp_path, override, message):
    proc = subprocess.run(
        [sys.executable, "-m", "mcpworld", override, "tracking=none", f"hydra.run.dir={tmp_path}/run"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and not list((tmp_path / "run").rglob("result.json"))


def test_a_bad_native_task_stops_the_run_naming_the_file(tmp_path):
    path = task_file(tmp_path, extra="max_steps: 0")
    proc = subprocess.run(
        # env.network=host: the fence (root, iptables) is checked before the tasks, and is not this test's subject
        [
            sys.executable,
            "-m",
            "mcpworld",
            f"tasks.root={tmp_path}/suite",
            "env.network=host",
            "tracking=none",
            f"hydra.run.dir={tmp_path}/run",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and f"{path}: 'max_steps' must be positive" in proc.stderr, proc.stderr
