"""How certify sums a task's episodes up, spoils a solution, and compares against a committed
certificate: pure functions over real files, no desktop."""

from __future__ import annotations

import asyncio

import pytest

from mcpworld.agent.providers.oracle import OracleProvider, changes_state, spoiled
from mcpworld.certify.certificate import read_statuses, regressions, to_markdown, write_csv
from mcpworld.certify.main import parse_args
from mcpworld.certify.modes import NOOP, SPOILED, job_overrides
from mcpworld.certify.verdict import ModeOutcome, Verdict, excluded, judge
from mcpworld.core.errors import TaskFileError, UserError
from mcpworld.core.task_parts import OracleStep
from mcpworld.tasks.native import load_task
from mcpworld.tasks.solutions import read_solution


def key(keys: str) -> OracleStep:
    return OracleStep("computer", {"action": "key", "text": keys})


WAIT = OracleStep("computer", {"action": "wait", "duration": 1})
WAIT_FOR = OracleStep("wait_for", {"window": "Save"})


def test_the_generic_spoil_leaves_out_the_last_state_changing_step_and_the_waits_for_its_effect():
    solution = [key("ctrl+a"), WAIT_FOR, key("ctrl+s"), WAIT, WAIT_FOR, OracleStep("computer", {"action": "screenshot"})]
    assert spoiled(solution) == [key("ctrl+a"), WAIT_FOR]  # earlier waits stay: they wait for what did happen
    assert spoiled([WAIT, WAIT_FOR, OracleStep("done", {})]) is None  # nothing to leave out


@pytest.mark.parametrize(
    "step, acts",
    [
        (OracleStep("bash", {"command": "true"}), True),
        (OracleStep("excel-sort_range", {}), True),
        (OracleStep("filesystem-read_text_file", {}), False),
        (OracleStep("computer", {"action": "mouse_move", "coordinate": [1, 2]}), False),
        (OracleStep("computer", {"action": "zoom"}), False),
        (OracleStep("computer", {"action": "left_click", "coordinate": [1, 2]}), True),
        (WAIT_FOR, False),
        (OracleStep("local-claim_done", {}), False),  # Toolathlon's end of the episode, as done
    ],
)
def test_what_counts_as_changing_state(step, acts):
    assert changes_state(step) is acts


def test_a_declared_spoil_is_read_from_task_yaml_and_replayed(tmp_path):
    (tmp_path / "task.yaml").write_text("""
app: xterm
instruction: Write {{ word }}.
params: {word: ready, wrong: readi}
evaluator: {template: file_text_equals, with: {path: ~/a.txt, text: ready}}
solution:
  cli:
    - bash: {command: "printf start > ~/log"}
      spoil: omit
    - tool: bash
      args: {command: "printf {{ word }} > ~/a.txt"}
      spoil: {command: "printf {{ wrong }} > ~/a.txt"}
""")
    steps = load_task(tmp_path / "task.yaml").solution.get("cli")
    assert steps[1] == OracleStep("bash", {"command": "printf ready > ~/a.txt"}, {"command": "printf readi > ~/a.txt"})
    assert spoiled(steps) == [OracleStep("bash", {"command": "printf readi > ~/a.txt"})]

    async def replay(oracle: OracleProvider) -> list[tuple[str, dict]]:
        calls = []
        for _ in range(3):
            (call,) = (await oracle.complete([], [])).tool_calls
            calls.append((call.name, call.arguments))
        return calls

    assert asyncio.run(replay(OracleProvider(steps, spoil=True))) == [
        ("bash", {"command": "printf readi > ~/a.txt"}),
        ("done", {"status": "DONE"}),
        ("done", {"status": "DONE"}),
    ]
    full = asyncio.run(replay(OracleProvider(steps)))
    assert [args for _, args in full[:2]] == [{"command": "printf start > ~/log"}, {"command": "printf ready > ~/a.txt"}]


def test_a_bad_spoil_is_one_error_naming_the_file(tmp_path):
    path = tmp_path / "abc.yaml"
    path.write_text("solution:\n  - computer: {action: type, text: '42'}\n    spoil: 41\n")
    with pytest.raises(TaskFileError, match=r"abc\.yaml: .*'spoil' must be 'omit' .* got 41"):
        read_solution(path)
    path.write_text("solution:\n  - computer: {action: type, text: '42'}\n    spoil: {text: '41'}\n")
    assert read_solution(path)[1].get("gui")[0].spoil == {"text": "41"}


def outcome(passed: int, judged: int, *unjudged: str) -> ModeOutcome:
    return ModeOutcome(passed, judged, [float(10 + i) for i in range(judged)], list(unjudged))


@pytest.mark.parametrize(
    "oracle, noop, spoil, status",
    [
        (outcome(2, 2), outcome(0, 2), outcome(0, 2), Verdict.certified),
        (outcome(0, 2), outcome(0, 2), outcome(0, 2), Verdict.unsolved),
        (outcome(2, 2), outcome(2, 2), outcome(0, 2), Verdict.lenient),
        (outcome(2, 2), outcome(0, 2), outcome(2, 2), Verdict.lenient),
        (outcome(1, 2), outcome(0, 2), outcome(0, 2), Verdict.flaky),
        (outcome(2, 2), outcome(1, 2), outcome(0, 2), Verdict.flaky),
        (outcome(2, 2), outcome(0, 1, "infra_error: no display"), outcome(0, 2), Verdict.flaky),
        (outcome(0, 0, "eval_error: x", "eval_error: x"), outcome(0, 2), outcome(0, 2), Verdict.excluded),
    ],
)
def test_the_status_of_each_combination(oracle, noop, spoil, status):
    assert judge("t", "app", "generic", oracle, noop, spoil).status == status


def test_numbers_and_notes():
    cert = judge("t", "app", "generic", outcome(2, 2), outcome(1, 2), outcome(0, 2))
    assert cert.flake_rate == pytest.approx(1 / 6) and cert.median_s == 10.5 and cert.p90_s == 11.0
    assert "outcomes differ between repeats (noop)" in cert.note
    gone = judge("t", "app", "generic", outcome(0, 0, "infra_error: x", "infra_error: x"), outcome(0, 2), outcome(0, 2))
    assert "oracle: infra_error: x (×2)" in gone.note and gone.flake_rate == 0.0


def test_a_certified_task_that_is_not_any_more_is_a_regression(tmp_path):
    before = [judge(t, "app", "generic", outcome(2, 2), outcome(0, 2), outcome(0, 2)) for t in ("a", "b", "c")]
    before.append(judge("d", "app", "generic", outcome(1, 2), outcome(0, 2), outcome(0, 2)))
    path = tmp_path / "certificate.csv"
    write_csv(before, path)
    statuses = read_statuses(path)
    assert statuses == {"a": "certified", "b": "certified", "c": "certified", "d": "flaky"}
    now = [
        judge("a", "app", "generic", outcome(2, 2), outcome(2, 2), outcome(0, 2)),  # lenient now
        excluded("b", "app", "unavailable: vscode is not installed"),
        judge("c", "app", "generic", outcome(2, 2), outcome(0, 2), outcome(0, 2)),
        judge("d", "app", "generic", outcome(2, 2), outcome(0, 2), outcome(0, 2)),  # better: fine
        judge("e", "app", "generic", outcome(0, 2), outcome(0, 2), outcome(0, 2)),
    ]  # new: fine
    failed, warned = regressions(statuses, now)
    assert [line.split(":")[0] for line in failed] == ["a"] and "lenient now" in failed[0]
    assert [line.split(":")[0] for line in warned] == ["b"]
    table = to_markdown(now, 2)
    assert table.startswith("**5 tasks: certified 2, flaky 0, unsolved 1, lenient 1, excluded 1**")
    assert "| a | lenient | 2/2 | 2/2 | 0/2 | generic | 0 % | 10.5 | 11.0 |" in table
    # the same tasks certified elsewhere (e.g. env=vm on the suite's own VM), as a column
    vm = to_markdown(now, 2, {"on the authors' VM": {"a": "certified", "c": "flaky"}})
    assert "| task | status | on the authors' VM | oracle |" in vm
    assert "| a | lenient | certified | 2/2 |" in vm and "| c | certified | flaky |" in vm and "| b | excluded | – |" in vm


def test_a_file_that_is_not_a_certificate_is_one_clear_error(tmp_path):
    with pytest.raises(UserError, match="cannot read it"):
        read_statuses(tmp_path / "missing.csv")
    (tmp_path / "other.csv").write_text("model,success\nx,1\n")
    with pytest.raises(UserError, match="not a certificate"):
        read_statuses(tmp_path / "other.csv")


def test_each_job_runs_the_chosen_tasks_in_its_mode():
    user = ["tasks.root=/suite", "task=mousepad/*", "agent.max_steps=20", "tracking.uri=sqlite:///x.db", "env=local"]
    noop = job_overrides(user, NOOP, ["a/b", "it's"], 2, 3, "/out/noop")
    assert noop == [
        "tasks.root=/suite",
        "env=local",
        "provider=oracle",
        "provider.replay=solution",
        "agent.max_steps=0",
        r"task=['a/b','it\'s']",
        "attempts=2",
        "concurrency=3",
        "tracking=none",
        "hydra.run.dir='/out/noop'",
    ]
    assert "agent.max_steps=20" in job_overrides(user, SPOILED, ["a"], 1, 1, "/o")


def test_keys_certify_sets_itself_are_refused(capsys):
    with pytest.raises(SystemExit):
        parse_args(["attempts=3"])
    assert "use --n" in capsys.readouterr().err
    args = parse_args(["app=xterm", "--n", "3", "task=xterm/*", "--against", "c.csv"])
    assert args.overrides == ["app=xterm", "task=xterm/*"] and args.n == 3


def test_a_missing_certificate_to_compare_with_stops_before_any_episode(tmp_path, capsys):
    from mcpworld.certify.main import main

    assert main(["task=xterm/set_theme", "--out", str(tmp_path / "out"), "--against", str(tmp_path / "no.csv")]) == 2
    assert "no.csv: cannot read it" in capsys.readouterr().err and not (tmp_path / "out").exists()


def test_certify_stages_each_workers_next_episode_unless_told_or_unable():
    from mcpworld.certify.main import compose_config, staging_default

    assert staging_default(compose_config([]), []) == ["env.stage=true"]
    assert staging_default(compose_config(["env=docker"]), ["env=docker"]) == ["env.stage=true"]
    assert staging_default(compose_config(["env.stage=false"]), ["env.stage=false"]) == []  # the user's choice
    assert staging_default(compose_config(["env=vm"]), ["env=vm"]) == []  # one VM per desktop slot
    assert staging_default(compose_config(["env=klavis"]), ["env=klavis"]) == []  # leases taken per episode
