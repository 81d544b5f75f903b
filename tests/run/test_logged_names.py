"""docs/tracking.md lists the params and metrics a run logs (mcpworld/run/logged_names.py): made by
the builders that log them, on configs composed as a run's are, so the doc cannot drift."""

from __future__ import annotations

from mcpworld.core.result import EpisodeResult, ToolCounts
from mcpworld.run.logged_names import DOC, compose, doc_block, doc_list, listed_names, logged_names, pattern


def test_the_docs_list_of_logged_names_is_what_a_run_logs() -> None:
    made = doc_list(logged_names())
    written = doc_block(DOC.read_text(encoding="utf-8"))
    missing, stale = listed_names(made) - listed_names(written), listed_names(written) - listed_names(made)
    assert written == made, (
        f"docs/tracking.md's list of logged names is not what a run logs; logged but not listed: {sorted(missing)}; "
        f"listed but not logged: {sorted(stale)}. Rewrite it: python -m mcpworld.run.logged_names --doc docs/tracking.md"
    )


def test_the_list_counts_every_param_a_default_job_logs() -> None:
    sections = logged_names()
    job = sections["job params"]
    assert {"config.sha256", "prompt.sha256", "tools.sha256", "profile.version", "model", "resolution"} <= set(job)
    assert len(job) == 22 and sections["job params where set"] == ["seed", "thinking_budget"]
    assert (sections["episode params added"], sections["episode params dropped"]) == (["attempt", "task"], ["tasks"])
    assert "22 in a default job" in doc_list(sections) and "23 in a default job's episode" in doc_list(sections)
    # the set-aside keys are really left out of a default job and in one that sets them
    assert "seed" not in job and compose(["seed=1"]).seed == 1


def test_an_episode_and_its_job_name_tool_metrics_alike() -> None:
    sections = logged_names()
    for name in ("tool_calls.<family>", "tool_success.<family>", "success", "steps", "actions", "gpu.*"):
        assert name in sections["episode metrics"] and name in sections["job metrics"], name
    assert not [n for n in sections["episode metrics"] if n.startswith("tool.")]  # no column per tool
    numbers = EpisodeResult(task_id="t", app="a", tool_calls={"s-x": ToolCounts(1, 1), "s-y": ToolCounts(1)}).numbers()
    assert (numbers["tool_calls.mcp"], numbers["tool_success.mcp"]) == (3, 2 / 3)  # an MCP server's tools: one family
    assert pattern("tool_calls.wait_for") == "tool_calls.<family>" and pattern("tool_calls_x") == "tool_calls_x"


def test_a_missing_name_is_named_by_the_check() -> None:
    block = doc_list(logged_names())
    edited = block.replace("`prompt.sha256`", "`prompt.sha`")
    assert (listed_names(block) - listed_names(edited), listed_names(edited) - listed_names(block)) == (
        {"prompt.sha256"},
        {"prompt.sha"},
    )
