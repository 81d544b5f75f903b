"""The system prompt: tells the model what it works with (a screen and its coordinate space, a
shell, tool servers) and how to finish."""

from __future__ import annotations

DEFAULT_SYSTEM_PROMPT = """\
You are {role} to complete the user's task.
{screen}You can use these tools: {tools}.
Work step by step: look at the result of each action before the next one.
When the task is complete call `done` with status DONE. If the task cannot be done, call `done` with status FAIL.
"""


def system_prompt(template: str, tool_names: list[str], width: int, height: int, coordinates: str) -> str:
    screen = ""
    if "computer" in tool_names:
        space = (
            "coordinates normalised to 0-1000 on both axes"
            if coordinates == "normalized_1000"
            else f"pixel coordinates of the screenshot ({width}x{height})"
        )
        screen = f"The screen is {width}x{height} pixels. Give mouse positions as {space}.\n"
    return (template or DEFAULT_SYSTEM_PROMPT).format(
        screen=screen, tools=", ".join(tool_names), width=width, height=height, role=role(tool_names)
    )


def role(tool_names: list[str]) -> str:
    """Who the model is, by what it was given: no screen means no talk of a desktop."""
    if "computer" in tool_names:
        return "a computer-use agent operating a Linux desktop" + (
            " and its applications' tool servers" if any("-" in t for t in tool_names) else ""
        )
    if "bash" in tool_names:
        return "an agent working in a Linux shell"
    return "an agent working through the tools below (calls to applications' tool servers)"
