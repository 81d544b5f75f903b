import numpy
import pytest

from mcpworld.core.errors import InfraError, MissingWindow, UserError
from mcpworld.evaluation import registry
from mcpworld.evaluation.spec import FILE_TEXT_CHARS, evaluate_spec, preview, validate_spec

TASK = "tasks/demo/task.yaml"


def cmd(command):
    return {"type": "vm_command_line", "command": command}


def rule(**rules):
    return {"type": "rule", "rules": rules}


@pytest.fixture
def calls(monkeypatch):
    """Register test getters: `counting` records each call, `boom` raises."""
    seen = []

    def counting(env, cfg):
        seen.append(cfg.get("tag"))
        return cfg.get("value")

    def boom(env, cfg):
        raise RuntimeError("disk on fire")

    monkeypatch.setitem(registry.GETTERS, "counting", counting)
    monkeypatch.setitem(registry.GETTERS, "boom", boom)
    return seen


def test_single_metric_pass_and_fail_with_real_files(env):
    env.write("answer.txt", "42\n")
    spec = {
        "func": "exact_match",
        "result": {"type": "content_from_vm_file", "path": "/home/user/answer.txt", "file_type": "txt"},
        "expected": rule(expected="42"),
    }
    score, outcomes = evaluate_spec(env, spec, "DONE")
    assert score == 1.0
    assert outcomes[0].name == "exact_match" and outcomes[0].score == 1.0
    assert outcomes[0].actual == "42\n" and outcomes[0].expected == '{"expected": "42"}'
    env.write("answer.txt", "41\n")
    assert evaluate_spec(env, spec, "DONE")[0] == 0.0


@pytest.mark.parametrize("path", ["/home/user/out/result.txt", "~/out/result.txt"])
def test_vm_file_paths_reach_the_home(env, path):
    env.write("out/result.txt", "alpha beta\n")
    spec = {
        "func": "file_contains",
        "result": {"type": "vm_file", "path": path, "dest": "result.txt"},
        "expected": rule(expected=["alpha", "beta"]),
    }
    score, outcomes = evaluate_spec(env, spec, None)
    assert score == 1.0
    assert outcomes[0].actual == "alpha beta\n"  # what the file held, not the cache copy's path


def test_missing_file_scores_zero_with_a_reason(env):
    spec = {"func": "file_contains", "result": {"type": "vm_file", "path": "~/nope.txt"}, "expected": rule(expected=["x"])}
    score, outcomes = evaluate_spec(env, spec, "DONE")
    assert score == 0.0
    assert outcomes[0].actual == "None"
    assert "vm_file returned None" in outcomes[0].reason


def test_and_is_the_mean_of_partial_scores(env, local, calls):
    env.write("a.txt", "line one\nline two\n")
    gold = local("gold.txt", "line one\nline 2\n")
    spec = {
        "func": ["diff_text_file", "exact_match"],
        "result": [{"type": "vm_file", "path": "~/a.txt"}, cmd("echo ok")],
        "expected": [{"type": "counting", "value": gold}, rule(expected="ok")],
    }
    score, outcomes = evaluate_spec(env, spec, "DONE")
    partial = outcomes[0].score
    assert partial == 0.5 and outcomes[1].score == 1.0  # one of two lines differs
    assert score == pytest.approx((partial + 1.0) / 2)


def test_and_exits_early_and_skips_later_getters(env, calls):
    spec = {
        "func": ["exact_match", "exact_match", "exact_match"],
        "result": [
            {"type": "counting", "tag": "first", "value": "yes"},
            {"type": "counting", "tag": "second", "value": "no"},
            {"type": "counting", "tag": "third", "value": "yes"},
        ],
        "expected": [rule(expected="yes")] * 3,
        "conj": "and",
    }
    score, outcomes = evaluate_spec(env, spec, "DONE")
    assert score == 0.0
    assert calls == ["first", "second"]  # the third getter never ran
    assert [o.name for o in outcomes] == ["exact_match#0", "exact_match#1"]  # skipped ones are not recorded
    assert "1 later metric(s) skipped" in outcomes[1].reason


def test_or_exits_early_on_a_full_score(env, calls):
    spec = {
        "func": ["exact_match", "exact_match", "exact_match"],
        "result": [{"type": "counting", "tag": t, "value": v} for t, v in [("a", "no"), ("b", "yes"), ("c", "yes")]],
        "expected": [rule(expected="yes")] * 3,
        "conj": "or",
    }
    score, outcomes = evaluate_spec(env, spec, "DONE")
    assert score == 1.0
    assert calls == ["a", "b"]
    assert [o.score for o in outcomes] == [0.0, 1.0]


def test_or_without_a_full_score_is_the_max(env, local, calls):
    env.write("doc.txt", "line one\nline two\n")
    near = local("near.txt", "line one\nline 2\n")
    far = local("far.txt", "completely different\n")
    result = {"type": "vm_file", "path": "~/doc.txt"}
    spec = {
        "func": ["diff_text_file", "diff_text_file"],
        "result": [result, result],
        "expected": [{"type": "counting", "value": far}, {"type": "counting", "value": near}],
        "conj": "or",
    }
    score, outcomes = evaluate_spec(env, spec, "DONE")
    assert len(outcomes) == 2
    assert score == max(o.score for o in outcomes) == outcomes[1].score < 1.0


def test_failing_getter_scores_zero_and_never_reuses_a_stale_result(env, calls):
    # Anchor bug: under `or`, a failing getter left the previous metric's result in place, so the
    # second exact_match would have compared "yes" and passed.
    spec = {
        "func": ["exact_match", "exact_match"],
        "result": [{"type": "counting", "tag": "ok", "value": "yes"}, {"type": "boom"}],
        "expected": [rule(expected="no"), rule(expected="yes")],
        "conj": "or",
    }
    score, outcomes = evaluate_spec(env, spec, "DONE")
    assert score == 0.0
    assert outcomes[1].score == 0.0
    assert outcomes[1].reason == "getter boom: RuntimeError: disk on fire"


def test_failing_first_getter_under_or_does_not_crash(env, calls):
    spec = {
        "func": ["exact_match", "exact_match"],
        "result": [{"type": "boom"}, {"type": "counting", "tag": "second", "value": "yes"}],
        "expected": [rule(expected="yes"), rule(expected="yes")],
        "conj": "or",
    }
    score, outcomes = evaluate_spec(env, spec, "DONE")
    assert score == 1.0
    assert outcomes[0].reason.startswith("getter boom: RuntimeError")


def test_failing_expected_getter_and_failing_metric(env, calls, monkeypatch):
    spec = {"func": "exact_match", "result": cmd("echo hi"), "expected": {"type": "boom"}}
    score, outcomes = evaluate_spec(env, spec, "DONE")
    assert score == 0.0 and outcomes[0].reason == "getter boom: RuntimeError: disk on fire"
    assert outcomes[0].actual == "hi\n"

    def crashing(result, expected=None):
        raise ValueError("bad input")

    monkeypatch.setitem(registry.METRICS, "crashing", crashing)
    score, outcomes = evaluate_spec(env, {"func": "crashing", "result": cmd("echo hi")}, "DONE")
    assert score == 0.0 and outcomes[0].reason == "metric crashing: ValueError: bad input"


def test_broken_result_file_is_zero_with_the_parse_error(env):
    env.write("conf.json", "{broken")
    spec = {"func": "check_json", "result": {"type": "vm_file", "path": "~/conf.json"}, "expected": rule(expect=[])}
    score, outcomes = evaluate_spec(env, spec, "DONE")
    assert score == 0.0 and outcomes[0].reason.startswith("metric check_json: JSONDecodeError")


@pytest.mark.parametrize(
    "value, score, reason",
    [
        (True, 1.0, ""),
        (False, 0.0, ""),
        (1, 1.0, ""),
        (0.25, 0.25, ""),
        (1.7, 1.0, "clamped"),
        (-2, 0.0, "clamped"),
        (float("nan"), 0.0, "NaN"),
        ("1", 0.0, "returned str, not a number"),
        (None, 0.0, "returned NoneType"),
        (numpy.bool_(True), 1.0, ""),
        (numpy.float64(0.5), 0.5, ""),
    ],
)
def test_metric_values_are_coerced_to_scores(env, monkeypatch, value, score, reason):
    monkeypatch.setitem(registry.METRICS, "const", lambda result, **options: value)
    got, outcomes = evaluate_spec(env, {"func": "const", "result": cmd("true")}, "DONE")
    assert got == score and isinstance(got, float)
    assert reason in outcomes[0].reason


def test_options_and_null_entries(env):
    spec = {
        "func": ["literal_match", "check_include_exclude"],
        "result": [cmd("echo PARIS"), cmd("echo alpha")],
        "expected": [rule(expected="paris\n"), rule(include=["alpha"])],
        "options": [{"ignore_case": True}, None],
    }
    score, _ = evaluate_spec(env, spec, "DONE")
    assert score == 1.0
    spec = {"func": ["exact_match", "exact_match"], "result": [cmd("echo a"), cmd("echo b")], "expected": None}
    validate_spec(spec, TASK)  # absent expected → None for each metric (the metric then decides)


@pytest.mark.parametrize("spec", [{"func": "infeasible"}, {"infeasible": True}, {"infeasible": True, "func": "exact_match"}])
def test_infeasible_scores_one_only_on_fail(env, spec):
    score, outcomes = evaluate_spec(env, spec, "FAIL")
    assert score == 1.0 and outcomes[0].name == "infeasible" and outcomes[0].score == 1.0
    assert evaluate_spec(env, spec, "DONE")[0] == 0.0
    assert evaluate_spec(env, spec, None)[0] == 0.0


def test_fail_on_a_feasible_task_scores_zero_without_running_anything(env, calls):
    spec = {
        "func": "exact_match",
        "result": {"type": "counting", "tag": "r", "value": "yes"},
        "expected": rule(expected="yes"),
        "postconfig": [{"type": "sleep", "parameters": {"seconds": 1}}],
    }
    score, outcomes = evaluate_spec(env, spec, "FAIL")
    assert score == 0.0 and calls == [] and env.steps == []
    assert "declared FAIL" in outcomes[0].reason
    assert evaluate_spec(env, spec, "DONE")[0] == 1.0


def test_postconfig_runs_before_the_getters(env):
    steps = [{"type": "execute", "parameters": {"command": ["true"]}}]
    spec = {"func": "exact_match", "result": cmd("echo x"), "expected": rule(expected="x"), "postconfig": steps}
    assert evaluate_spec(env, spec, "DONE")[0] == 1.0
    assert env.steps == [steps]


def test_a_failing_postconfig_step_is_the_environments_failure(env, calls):
    """A launch that fails, a harness bug: never a score of 0 for the agent."""
    spec = {
        "func": ["exact_match", "exact_match"],
        "result": [{"type": "counting", "tag": "a", "value": "y"}] * 2,
        "expected": [rule(expected="y")] * 2,
        "postconfig": [{"type": "launch", "parameters": {"command": ["vlc"]}}],
    }
    env.step_error = InfraError("vlc exited with 1 but no window matching 'VLC' appeared")
    with pytest.raises(InfraError, match="no window matching 'VLC'"):
        evaluate_spec(env, spec, "DONE")
    env.step_error = RuntimeError("a harness bug")
    with pytest.raises(RuntimeError):
        evaluate_spec(env, spec, "DONE")
    assert calls == []


def test_configuration_and_infrastructure_errors_propagate(env, monkeypatch):
    spec = {"func": "exact_match", "result": {"type": "content_from_vm_file", "path": "~/a", "file_type": "xlsx"}}
    env.write("a", "x")
    with pytest.raises(UserError, match="xlsx"):
        evaluate_spec(env, spec, "DONE")

    def dead(env, cfg):
        raise InfraError("container gone")

    monkeypatch.setitem(registry.GETTERS, "dead", dead)
    with pytest.raises(InfraError):
        evaluate_spec(env, {"func": "exact_match", "result": {"type": "dead"}}, "DONE")


def test_postconfig_goes_on_past_a_window_the_agent_closed(env, caplog):
    """OSWorld's setup controller logs a window it cannot activate and carries on: the getters
    then see what the agent left (here a correct answer)."""
    env.step_error = MissingWindow("no window matching 'Mousepad' to activate")
    steps = [{"type": "activate_window", "parameters": {"window_name": "Mousepad"}}, {"type": "sleep"}]
    score, _outcomes = evaluate_spec(
        env, {"func": "exact_match", "result": cmd("echo x"), "expected": rule(expected="x"), "postconfig": steps}, "DONE"
    )
    assert score == 1.0 and len(env.steps) == 2  # each step tried
    assert "no window matching 'Mousepad'" in caplog.text


@pytest.mark.parametrize(
    "spec, pattern",
    [
        ({"result": cmd("true")}, r"evaluator\.func is missing"),
        (
            {"func": "exact_mach", "result": cmd("true")},
            r"evaluator\.func: unknown metric 'exact_mach'; did you mean exact_match",
        ),
        ({"func": ["exact_match", "infeasible"], "result": [cmd("a"), cmd("b")]}, r"evaluator\.func: 'infeasible'"),
        ({"func": [], "result": []}, r"evaluator\.func must be"),
        ({"func": "exact_match"}, r"evaluator\.result is missing"),
        ({"func": "exact_match", "result": {"type": "vm_fiel", "path": "x"}}, r"evaluator\.result: unknown getter 'vm_fiel'"),
        ({"func": "exact_match", "result": {"path": "x"}}, r"evaluator\.result entries must be getter configs"),
        (
            {"func": "exact_match", "result": cmd("true"), "expected": {"type": "rul"}},
            r"evaluator\.expected: unknown getter 'rul'",
        ),
        (
            {"func": ["exact_match", "exact_match"], "result": [cmd("true")]},
            r"evaluator\.result has 1 entries but evaluator\.func has 2",
        ),
        ({"func": ["exact_match"], "result": [cmd("true")], "expected": [None, None]}, r"evaluator\.expected has 2"),
        ({"func": ["exact_match"], "result": [cmd("true")], "options": [{}, {}]}, r"evaluator\.options has 2"),
        ({"func": ["exact_match"], "result": cmd("true")}, r"evaluator\.result must be a list"),
        ({"func": "exact_match", "result": [cmd("true")]}, r"evaluator\.result is a list but evaluator\.func is a single"),
        ({"func": "exact_match", "result": cmd("true"), "options": ["x"]}, r"evaluator\.options is a list"),
        ({"func": "exact_match", "result": cmd("true"), "conj": "xor"}, r"evaluator\.conj must be 'and' or 'or'"),
        ({"func": "exact_match", "result": cmd("true"), "postconfig": "pkill x"}, r"evaluator\.postconfig"),
        ("exact_match", r"evaluator must be a mapping"),
    ],
)
def test_validate_spec_names_the_file_and_the_key(spec, pattern):
    with pytest.raises(UserError, match=pattern) as err:
        validate_spec(spec, TASK)
    assert str(err.value).startswith(TASK + ": ")


def test_evaluate_spec_validates_up_front(env, calls):
    with pytest.raises(UserError, match="conj"):
        evaluate_spec(env, {"func": "exact_match", "result": {"type": "counting"}, "conj": "nand"}, "DONE", where=TASK)
    assert calls == []


def test_preview_is_short():
    assert preview(None) == "None"
    assert preview("x" * 500) == "x" * 199 + "…"
    assert preview({"a": [1, 2]}) == '{"a": [1, 2]}'
    assert len(preview(list(range(1000)))) == 200


@pytest.fixture
def same_bytes(monkeypatch):
    """A metric comparing two files byte for byte (the shape of compare_table and its kin)."""
    monkeypatch.setitem(
        registry.METRICS,
        "same_bytes",
        lambda result, expected: float(open(result, "rb").read() == open(expected, "rb").read()),  # noqa: SIM115 - kept open beyond this block
    )


def test_a_compared_file_is_shown_by_its_content_after_its_cache_copy_is_gone(env, same_bytes):
    import shutil

    env.write("out/notes.txt", "total: 42\n")
    (env.cache_dir / "gold").mkdir(parents=True)
    (env.cache_dir / "gold" / "notes.txt").write_text("total: 41\n")
    spec = {
        "func": "same_bytes",
        "result": {"type": "vm_file", "path": "~/out/notes.txt", "dest": "notes.txt"},
        "expected": {"type": "cache_file", "path": "gold/notes.txt"},
    }
    score, (outcome,) = evaluate_spec(env, spec, "DONE")
    shutil.rmtree(env.cache_dir)  # as at the episode's end
    assert score == 0.0
    assert (outcome.actual, outcome.expected) == ("total: 42\n", "total: 41\n")


def test_a_long_text_file_is_cut_with_a_note_and_a_split_character_is_dropped(env, same_bytes):
    text = "é" * (FILE_TEXT_CHARS + 1500)  # two bytes a character: the read cuts inside the text
    env.write("big.txt", text)
    spec = {
        "func": "same_bytes",
        "result": {"type": "vm_file", "path": "~/big.txt", "dest": "big.txt"},
        "expected": {"type": "vm_file", "path": "~/big.txt", "dest": "same.txt"},
    }
    score, (outcome,) = evaluate_spec(env, spec, "DONE")
    assert score == 1.0
    shown, note = outcome.actual.split("\n", 1)
    assert shown == "é" * FILE_TEXT_CHARS
    assert note == f"… [big.txt: {len(text.encode()):,} bytes; the first {FILE_TEXT_CHARS} characters shown]"


def test_a_binary_file_is_described_by_name_size_and_sha256(env, same_bytes):
    import hashlib

    data = b"PK\x03\x04\x00\x00" + bytes(range(256)) * 40  # a zip's start, NUL bytes: an .xlsx's shape
    target = env.resolve("~/scores.xlsx")
    target.write_bytes(data)
    spec = {
        "func": "same_bytes",
        "result": {"type": "vm_file", "path": "~/scores.xlsx", "dest": "scores.xlsx"},
        "expected": {"type": "vm_file", "path": "~/scores.xlsx", "dest": "gold.xlsx"},
    }
    _, (outcome,) = evaluate_spec(env, spec, "DONE")
    digest = hashlib.sha256(data).hexdigest()[:12]
    assert outcome.actual == f"[scores.xlsx: {len(data):,} bytes, binary, sha256 {digest}]"
    assert outcome.expected == f"[gold.xlsx: {len(data):,} bytes, binary, sha256 {digest}]"


def test_files_of_a_multi_getter_are_shown_each_and_an_empty_one_is_named(env):
    env.write("a.txt", "first\n")
    env.write("b.txt", "")
    spec = {
        "func": "file_contains",
        "result": {
            "type": "vm_file",
            "multi": True,
            "path": ["~/a.txt", "~/b.txt", "~/missing.txt"],
            "dest": ["a.txt", "b.txt", "c.txt"],
            "gives": [0, 1, 2],
        },
        "expected": rule(expected=["first"]),
    }
    _, (outcome,) = evaluate_spec(env, spec, "DONE")
    assert outcome.actual == "[1/3] first\n\n[2/3] [b.txt: empty file]\n[3/3] None"


def test_only_files_in_the_episodes_cache_are_read_never_another_path_of_this_host(env, tmp_path):
    host_file = tmp_path / "host-secret.txt"
    host_file.write_text("not the agent's")
    spec = {"func": "exact_match", "result": cmd(f"printf %s {host_file}"), "expected": rule(expected="x")}
    _, (outcome,) = evaluate_spec(env, spec, "DONE")
    assert outcome.actual == str(host_file)


def test_a_known_secret_in_a_compared_file_is_redacted(env):
    from mcpworld.core.secrets import register_secrets

    secret = "sk-test-FILE-SECRET-77"
    register_secrets([secret])
    env.write("config.txt", f"key = {secret}\n")
    spec = {
        "func": "file_contains",
        "result": {"type": "vm_file", "path": "~/config.txt", "dest": "config.txt"},
        "expected": rule(expected=["key"]),
    }
    _, (outcome,) = evaluate_spec(env, spec, "DONE")
    assert outcome.actual == "key = ***\n"
