"""The Claude profile: Claude driven as Anthropic's own computer-use reference agent drives it
(anthropics/anthropic-quickstarts, computer-use-demo/computer_use_demo: loop.py and tools/).

What it follows, and where it differs on purpose (docs/agent.md, "Claude"):

- System prompt: the reference's, item by item — a ``<SYSTEM_CAPABILITY>`` list (machine, shell,
  browser, GUI apps from the shell, long output, zooming out, chaining calls, today's date) and an
  ``<IMPORTANT>`` list (first-run wizards, PDFs), the task's own prompt appended after a space. It is
  written here in our words (the project copies no one's prose) and its facts are our desktop's
  where the reference's would be false: Debian with openbox, not Ubuntu; Chromium, not Firefox;
  an offline machine (no ``curl`` downloads, no package installs); DISPLAY already set in the shell;
  no ``str_replace_based_edit_tool`` (we give no editor). Bullets about the shell appear only when
  the modality gives one. Added: how to end (our loop ends on ``done``; the reference on a turn
  without tool calls).
- Tools: Anthropic's native computer and bash tools of the model's version (``model.computer_tool``,
  ``model.bash_tool``: the provider sends their types, not JSON schemas), the computer tool
  executing exactly that version's actions (agent/tools/computer.py).
- Screenshot size: the reference's scaling — a screen whose aspect is 4:3, 16:10 or ~16:9 and
  wider than XGA (1024x768), WXGA (1280x800) or FWXGA (1366x768) is scaled to that target, any
  other is sent as it is — then capped at what the API documents it would downscale to anyway
  (1568 px on the long edge, ~1.15 megapixels), so the model's coordinates are always those of the
  image it really saw (the reference skips this and would misclick there). ``model.image_max``,
  when a researcher sets it, caps it further.
- Screenshots kept: all of them, as the reference does on Anthropic's API (prompt caching makes
  old ones cheap; dropping them would break the cache) — ``profile_options.keep_screenshots``
  sets a window instead. A tool result that returned a screenshot carries only the screenshot
  (the reference's xdotool actions print nothing), not our loop's "ok".
- Request layout and decoding: the provider's (agent/providers/anthropic.py) — cache breakpoints
  on the system prompt and the 3 latest user turns, each screenshot in its own tool_result,
  ``is_error`` on every result, thinking blocks sent back unchanged, ``thinking`` when
  ``model.thinking_budget`` is set. The presets' temperature 1.0 is the API default the reference
  leaves unset.
"""

from __future__ import annotations

import math
import platform
from datetime import date

from mcpworld.agent.messages import Message, ToolSchema
from mcpworld.agent.profiles.base import LoopRules, NoCall, Profile, PromptContext
from mcpworld.agent.tools.base import OffScreen, Tool
from mcpworld.agent.tools.computer import ComputerTool, CoordinateMap, image_size

REFERENCE = (
    "anthropics/anthropic-quickstarts computer-use-demo/computer_use_demo/loop.py and tools/ "
    "@44c2b5c97d6d91a07033691f12b3b5c5ca464c35; "
    "https://platform.claude.com/docs/en/agents-and-tools/tool-use/computer-use-tool"
)

# The reference's scaling targets (tools/computer.py), by aspect ratio.
SCALING_TARGETS = ((1024, 768), (1280, 800), (1366, 768))
ASPECT_TOLERANCE = 0.02  # the reference's: no real screen is exactly 16:9
# What the API documents it downsizes larger images to (vision / computer-use documentation).
API_LONG_EDGE = 1568
API_PIXELS = 1_150_000
KEEP_ALL = 1_000_000  # screenshots: every one (the loop's window, never reached)


def reference_size(screen: tuple[int, int]) -> tuple[int, int]:
    """The reference agent's screenshot size for a screen: the first target of the screen's aspect
    ratio, when the screen is wider than it; else the screen itself."""
    width, height = screen
    for target_w, target_h in SCALING_TARGETS:
        if abs(target_w / target_h - width / height) < ASPECT_TOLERANCE:
            return (target_w, target_h) if target_w < width else screen
    return screen


def api_size(size: tuple[int, int]) -> tuple[int, int]:
    """``size`` shrunk (aspect kept) to what the API keeps without downscaling it itself."""
    width, height = size
    scale = min(1.0, API_LONG_EDGE / max(width, height), math.sqrt(API_PIXELS / (width * height)))
    return size if scale >= 1.0 else (max(1, int(width * scale)), max(1, int(height * scale)))


def claude_image_size(screen: tuple[int, int], image_max: list[int] | tuple[int, int] | None = None) -> tuple[int, int]:
    """The screenshot size Claude is sent for ``screen`` (see the module docstring)."""
    size = api_size(reference_size(screen))
    return image_size(size, image_max) if image_max else size


class ScreenBounds(CoordinateMap):
    """The reference's bounds: it refuses a coordinate only past the *screen's* size (its
    ``scale_coordinates`` checks x, y against its own width and height), so a point past the edge of
    the smaller image it sent is scaled up and lands on the screen's edge, where X puts the pointer."""

    def to_screen(self, x: float, y: float) -> tuple[int, int]:
        (sw, sh), (iw, ih) = self.screen, self.image
        if not (0 <= x <= sw and 0 <= y <= sh):
            raise OffScreen(f"Coordinates {x:g}, {y:g} are out of bounds")
        return min(max(round(x * sw / iw), 0), sw - 1), min(max(round(y * sh / ih), 0), sh - 1)


class ClaudeProfile(Profile):
    name = "claude"
    version = "2"
    reference = REFERENCE
    loop = LoopRules(no_call=NoCall.end)  # sampling_loop returns on a reply without tool_use

    def screen(self, screen: tuple[int, int]) -> CoordinateMap:
        return ScreenBounds("pixels", screen, claude_image_size(screen, self.model.image_max))

    def keep_screenshots(self, configured: int) -> int:
        keep = self.model.options.get("keep_screenshots")
        return int(keep) if keep is not None else KEEP_ALL

    def request(self, messages: list[Message], schemas: list[ToolSchema]) -> tuple[list[Message], list[ToolSchema]]:
        """The conversation with the loop's "ok" left out of results that carry a screenshot."""
        return [_without_ok(m) for m in messages], schemas

    def tools(self, tools: dict[str, Tool]) -> dict[str, Tool]:
        """The computer tool of the model's version (its actions, as the provider declares it)."""
        computer = tools.get("computer")
        version = self.model.computer_tool
        if not isinstance(computer, ComputerTool) or not version or computer.version == version:
            return tools
        versioned = ComputerTool(computer.env, computer.coords, version=version)
        return {name: versioned if name == "computer" else tool for name, tool in tools.items()}

    def system_prompt(self, context: PromptContext) -> str:
        prompt = render(context.tool_names, date.today())
        return f"{prompt} {context.task_prompt}" if context.task_prompt else prompt


def _without_ok(message: Message) -> Message:
    """A tool result that carries a screenshot, without the loop's "ok" (the reference sends none)."""
    if message["role"] == "tool" and message.get("images") and message["content"] == "ok":
        quiet = message.copy()
        quiet["content"] = ""
        return quiet
    return message


def render(tool_names: list[str], today: date) -> str:
    """The reference's two lists, our facts (see the module docstring)."""
    shell = "bash" in tool_names
    capability = [
        f"You are using a Debian Linux desktop (openbox window manager) on a {platform.machine()} "
        "machine without internet access."
    ]
    if shell:
        capability.append(
            "Your bash tool runs on this machine. Nothing can be downloaded or installed: there is "
            "no network, so apt-get, curl and wget fail."
        )
    capability.append(
        "The web browser is Chromium, not Firefox. The task has started the programs it needs"
        + ("; start any other from your bash tool." if shell else ".")
    )
    if shell:
        capability += [
            "Programs started from your bash tool show on your desktop (DISPLAY is already set): run them in the "
            'background, e.g. "(chromium &)", and take a screenshot to check that the window came up, which may '
            "take a moment.",
            "When a command may print a lot, send its output to a file under /tmp and read the part you need with "
            "`grep -n -B <lines before> -A <lines after> <pattern> <file>`.",
        ]
    capability += [
        "A page may not fit the screen: zoom out to see all of it, or scroll down through it, before deciding "
        "that something is not there.",
        "Computer actions take a while to run and report back. Where you can, send several of them in one "
        "request instead of one at a time.",
        f"Today is {today.strftime('%A, %B')} {today.day}, {today.year}.",
        "When the task is complete, call `done` with status DONE; if it cannot be done, call `done` with status FAIL.",
    ]
    important = [
        "If Chromium shows a first-run, welcome or sign-in screen, do not follow it or dismiss it step by "
        "step: click the address bar and type the address or the search there."
    ]
    if shell:
        important.append(
            "To read a whole PDF rather than page through screenshots of it, find the file's path and "
            "convert it with `pdftotext` (if it is installed), then read the text file from bash."
        )
    return (
        "<SYSTEM_CAPABILITY>\n" + "\n".join(f"* {line}" for line in capability) + "\n</SYSTEM_CAPABILITY>\n\n"
        "<IMPORTANT>\n" + "\n".join(f"* {line}" for line in important) + "\n</IMPORTANT>"
    )
