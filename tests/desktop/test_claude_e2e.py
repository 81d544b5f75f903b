"""``python -m mcpworld model=claude_sonnet_4_5`` against the fake Anthropic server: the Claude
profile's request (its prompt, native tools, screenshot size), a scripted hold_key and shift-click
that really happen on the desktop (as xev, an X client on it, reports them), and with
``model.thinking_budget`` set, the thinking block sent back on the next request with its signature."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.fakes.anthropic_server import FakeAnthropicServer
from tests.helpers.cli import results, run_cli

pytestmark = [pytest.mark.desktop, pytest.mark.slow]


def suite(tmp_path: Path) -> Path:
    folder = tmp_path / "suite" / "xev" / "shift_click"
    folder.mkdir(parents=True)
    (folder / "task.yaml").write_text(
        "app: xev\ninstruction: Shift-click in the window, then hold shift for half a second.\n"
        "setup:\n  - launch: {command: [xev, -geometry, 1024x768+0+0, -event, keyboard, -event, button], "
        "window: Event Tester}\n"
        "evaluator:\n  func: check_include_exclude\n"
        "  result: {type: vm_command_line, command: 'echo ok', shell: true}\n"
        "  expected: {type: rule, rules: {include: ['ok'], exclude: []}}\n"
    )
    return tmp_path / "suite"


def xev_events(run: Path) -> list[tuple[str, int, str]]:
    """(event, server time in ms, state or key) for each key and button event xev printed."""
    (log,) = run.rglob("logs/*-xev.log")
    out = []
    for block in log.read_text().split("\n\n"):
        head = re.match(r"(KeyPress|KeyRelease|ButtonPress|ButtonRelease) event", block.strip())
        if head:
            time = int(re.search(r"time (\d+)", block).group(1))
            detail = re.search(r"keysym 0x[0-9a-f]+, (\w+)\)", block) or re.search(r"(button \d+)", block)
            state = re.search(r"state (0x[0-9a-f]+)", block).group(1)
            out.append((head.group(1), time, f"{detail.group(1) if detail else '?'} {state}"))
    return out


def test_claude_sonnet_4_5_shift_click_hold_key_and_thinking_round_trip(tmp_path):
    script = [
        {
            "thinking": "Shift-click in the middle of the window first.",
            "tool_uses": [
                {
                    "id": "toolu_click",
                    "name": "computer",
                    "input": {"action": "left_click", "coordinate": [512, 384], "text": "shift"},
                }
            ],
        },
        {
            "thinking": "Now hold shift.",
            "tool_uses": [
                {"id": "toolu_hold", "name": "computer", "input": {"action": "hold_key", "text": "shift", "duration": 0.5}}
            ],
        },
        {"thinking": "Both done.", "tool_uses": [{"id": "toolu_done", "name": "done", "input": {"status": "DONE"}}]},
    ]
    with FakeAnthropicServer(script, model="claude-sonnet-4-5-20250929") as server:
        proc = run_cli(
            tmp_path,
            "model=claude_sonnet_4_5",
            f"provider.base_url={server.base_url}",
            "model.thinking_budget=2048",
            "modality=gui",
            "resolution=rect",
            f"tasks.root={suite(tmp_path)}",
            "tracking=none",
            env={"ANTHROPIC_API_KEY": "sk-ant-test"},
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        first, second, third = server.requests  # a thinking block sent back altered or not at all: a 400
        headers = server.headers[0]
    (result,) = results(tmp_path / "run")
    assert result["status"] == "success" and result["hallucinations"] == 0, result

    # the request the reference agent would send: its prompt's lists, native tools at the screenshot's size
    assert first["model"] == "claude-sonnet-4-5-20250929" and first["max_tokens"] == 16384
    assert first["thinking"] == {"type": "enabled", "budget_tokens": 2048} and first["temperature"] == 1.0
    assert first["system"][0]["text"].startswith("<SYSTEM_CAPABILITY>\n* You are using a Debian Linux desktop")
    assert first["tools"][0] == {
        "type": "computer_20250124",
        "name": "computer",
        "display_width_px": 1024,
        "display_height_px": 768,
    }
    # the reference's betas: the computer tool's only (interleaved thinking is model.interleaved_thinking's)
    assert headers["anthropic-beta"].split(",") == ["computer-use-2025-01-24"]

    # thinking back, first in its turn, with the signature the server issued for it
    for request, turns in ((second, 1), (third, 2)):
        assistant = [m for m in request["messages"] if m["role"] == "assistant"]
        assert len(assistant) == turns
        for message, reply in zip(assistant, script, strict=False):
            block = message["content"][0]
            assert block["type"] == "thinking" and block["thinking"] == reply["thinking"]
            assert server.issued[block["signature"]] == reply["thinking"]
    click_result = second["messages"][-1]["content"][0]
    assert click_result["tool_use_id"] == "toolu_click" and click_result["is_error"] is False
    assert [b["type"] for b in click_result["content"]] == ["image"]

    # on the desktop: a button press with Shift down, then Shift held for the duration
    events = xev_events(tmp_path / "run")
    kinds = [(kind, detail.split()[0]) for kind, _, detail in events]
    assert kinds == [
        ("KeyPress", "Shift_L"),
        ("ButtonPress", "button"),
        ("ButtonRelease", "button"),
        ("KeyRelease", "Shift_L"),
        ("KeyPress", "Shift_L"),
        ("KeyRelease", "Shift_L"),
    ], events
    assert int(events[1][2].split()[-1], 16) & 1  # ShiftMask in the press's state
    assert events[5][1] - events[4][1] >= 450  # held 0.5 s by the X server's clock
