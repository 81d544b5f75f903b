"""The Plan-Act-Observe loop: messages → provider → tool calls → tools → observations.

Bounded by max_steps (model turns, as OSWorld's runner counts them; the actions they hold are
counted apart), max_llm_calls and a wall-clock timeout. What a turn without a call does comes from
the model family's profile (``LoopRules``). Every LLM and tool call becomes a trace event; counters
land in the EpisodeResult.
"""

from __future__ import annotations

import asyncio
import base64
import copy
import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from PIL.Image import Image

from mcpworld.agent.messages import AssistantMessage, ContentPart, ImagePart, JSONObject, Message, ToolMessage, ToolSchema
from mcpworld.agent.profiles.base import LoopRules, NoCall
from mcpworld.agent.providers.base import Provider, Reply, ToolCall
from mcpworld.agent.tools.base import Observation, Tool, ToolError
from mcpworld.agent.tools.normalize import normalize_call
from mcpworld.agent.truncation import is_cut, notice, truncation
from mcpworld.core.errors import EndpointUnreachable, InfraError, UserError
from mcpworld.core.result import EpisodeResult
from mcpworld.env.screen import FORMATS, encode
from mcpworld.telemetry.trace import Trace, preview

if TYPE_CHECKING:
    from mcpworld.agent.profiles.base import Profile

IMAGE_PLACEHOLDER = "[older screenshot removed to save context]"
NUDGE = "Continue with a tool call, or call `done` when the task is finished."


@dataclass
class Limits:
    max_steps: int
    max_llm_calls: int
    timeout_s: float
    keep_screenshots: int = 3
    image_format: str = "jpeg"  # how observations are encoded, once, for the model and for disk
    image_quality: int = 85
    loop_repeats: int = 3  # the same action with the same observation this many times in a row is a loop
    loop_stop: bool = False  # end the episode (termination "loop") when a loop is detected


def image_part(data: bytes, fmt: str) -> ImagePart:
    b64 = base64.b64encode(data).decode()
    mime = FORMATS[fmt][1] if fmt in FORMATS else f"image/{fmt}"
    return {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{b64}"}}


def prune_images(messages: list[Message], keep: int) -> None:
    """Keep only the ``keep`` most recent images; older ones become a short text placeholder."""
    seen = 0
    for message in reversed(messages):
        content = message["content"]
        if not isinstance(content, list):
            continue
        for i in range(len(content) - 1, -1, -1):
            if content[i]["type"] == "image_url":
                seen += 1
                if seen > keep:
                    content[i] = {"type": "text", "text": IMAGE_PLACEHOLDER}


def readable(call: ToolCall) -> bool:
    """A call whose arguments could be read (the providers and profiles mark others with ``_raw``)."""
    return "_raw" not in call.arguments


def finishing(calls: list[ToolCall]) -> bool:
    """A turn that ends the episode or waits (what UI-TARS's reference lets through on its last turn)."""
    return any(c.name == "done" or c.arguments.get("action") in ("wait", "terminate", "answer") for c in calls)


def unreadable_error(name: str, args: JSONObject) -> str:
    return f"the call to {name!r} could not be parsed as JSON: {str(args['_raw'])[:200]}"


def fingerprint(text: str, image: bytes | None) -> str:
    """What the model saw after an action: its text and its encoded screenshot (a deterministic
    encoding of the same pixels; hashing the ~100 KB encoding, not 3-6 MB of raw pixels, keeps
    this off the step's critical path)."""
    h = hashlib.blake2b(text.encode(), digest_size=16)
    if image is not None:
        h.update(image)
    return h.hexdigest()


class LoopDetector:
    """An agent stuck: the same (action, observation) ``repeats`` times in a row, or an A-B-A-B cycle
    of two of them. Reports once per stuck stretch, at its start."""

    def __init__(self, repeats: int = 3):
        self.repeats = max(2, repeats)
        self.history: list[tuple[str, str]] = []
        self.stuck = False

    def see(self, action: str, observation: str) -> str | None:
        """Record one step; the loop kind (``repeat`` / ``cycle``) when a loop starts here, else None."""
        h = self.history
        h.append((action, observation))
        kind = None
        if len(h) >= self.repeats and len(set(h[-self.repeats :])) == 1:
            kind = "repeat"
        elif len(h) >= 4 and h[-1] == h[-3] and h[-2] == h[-4] and h[-1] != h[-2]:
            kind = "cycle"
        started = kind is not None and not self.stuck
        self.stuck = kind is not None
        return kind if started else None


class AgentLoop:
    def __init__(
        self,
        provider: Provider,
        tools: dict[str, Tool],
        limits: Limits,
        trace: Trace,
        result: EpisodeResult,
        save_image: Callable[[bytes, str], str] | None = None,
        send_images: bool = True,
        withheld: frozenset[str] = frozenset(),
        after_step: Callable[[], None] | None = None,
        profile: Profile | None = None,
        replay: dict[str, Tool] | None = None,
    ):
        self.provider, self.tools, self.limits = provider, tools, limits
        # tools the oracle's replay may call but no model is offered (agent.tools.replay_tools)
        self.replay = replay or {}
        self.profile = profile  # renders each request from the conversation and reads each reply (None: as is)
        self.rules = profile.loop if profile else LoopRules()  # what a turn without a call does …
        self.first_request: tuple[list[Message], list[ToolSchema]] | None = None  # for provenance
        self.trace, self.result = trace, result
        self.save_image = save_image
        self.send_images = send_images
        self.schemas = [t.schema() for t in tools.values()]
        self.loops = LoopDetector(limits.loop_repeats)
        # tools that exist for this task but not in this modality (names, or "<server>-" prefixes):
        # a call to one is the hallucination kind "outside_modality"
        self.withheld = withheld
        self.messages: list[Message] = []  # the conversation, for trajectory logs
        self.after_step = after_step  # the episode's watch on the desktop (apps that exited …)
        self.turns = 0  # model turns taken (each a `turn` event)

    async def run(self, system: str, instruction: str, first_screen: Image | None) -> None:
        r = self.result
        content: list[ContentPart] = [{"type": "text", "text": instruction}]
        if first_screen is not None:
            began = time.perf_counter()
            saved = self._observe(self._encode(first_screen), content)
            if saved:
                self.trace.emit("observation", screenshot=saved, seconds=round(time.perf_counter() - began, 4))
        messages = self.messages
        messages += [{"role": "system", "content": system}, {"role": "user", "content": content}]
        deadline = time.monotonic() + self.limits.timeout_s
        try:
            await self._steps(messages, deadline)
        except EndpointUnreachable:
            raise  # every later episode would fail the same way: the experiment stops
        except InfraError as exc:
            r.termination, r.reason = "infra_error", str(exc)
            self.trace.emit("error", kind="infra", message=str(exc))
        except UserError:
            raise
        except Exception as exc:  # a harness bug (provider, tool) is not the agent's failure, nor lost
            import traceback

            r.termination, r.reason = "infra_error", f"harness error: {type(exc).__name__}: {exc}"
            self.trace.emit("error", kind="harness", message=r.reason, traceback=traceback.format_exc()[-4000:])

    async def _steps(self, messages: list[Message], deadline: float) -> None:
        """One model turn per pass, each a step of ``max_steps`` (OSWorld's runner counts its turns,
        whatever number of actions one holds, and a turn without one too); every call of a turn runs."""
        r, lim = self.result, self.limits
        while True:
            if r.steps >= lim.max_steps:
                r.termination = "max_steps"
                return
            if r.llm_calls >= lim.max_llm_calls:
                r.termination = "max_llm_calls"
                return
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                r.termination = "timeout"
                return
            began, asked = time.perf_counter(), r.llm_calls
            try:
                if await self._one_turn(messages, deadline):
                    return
            finally:  # the turn's span holds its model calls, tool calls and what followed them
                if r.llm_calls > asked:
                    self.turns += 1
                    self.trace.emit("turn", n=self.turns, step=r.steps, seconds=round(time.perf_counter() - began, 4))

    async def _one_turn(self, messages: list[Message], deadline: float) -> bool:
        """The model asked and its calls run; True when the episode ended."""
        r, lim, rules = self.result, self.limits, self.rules
        reply = await self._turn(messages, deadline)
        if reply is None:
            r.termination = "timeout"
            return True
        if not reply.tool_calls or any(c.name not in self.replay for c in reply.tool_calls):
            r.steps += 1  # (a turn of the oracle's waits for app state alone acts on nothing: no step)
        messages.append(self._assistant_message(reply))
        cut = truncation(reply)  # cut off by the output limit: said as such, never nudged away (agent/truncation.py)
        if cut is not None:
            r.truncations += 1
            self.trace.emit("truncation", **cut)
        calls = self._shown(reply)
        if not calls:
            if rules.no_call == NoCall.end:  # Claude's sampling loop returns on a reply without tool_use
                r.termination, r.final_action = rules.end_as
                return True
            if rules.no_call == NoCall.nudge:
                messages.append({"role": "user", "content": notice(reply) if cut else NUDGE})
            return False  # NoCall.skip: the next turn starts from the same screen, as OSWorld's runner does
        if rules.last_turn_fails and r.steps >= lim.max_steps and not finishing(calls):
            r.termination, r.final_action = "max_steps", "FAIL"  # the reference's last turn (LoopRules)
            self.trace.emit("budget_fail", step=r.steps, tools=[c.name for c in calls])
            return True
        return await self._act(reply, calls, cut, messages, deadline)

    def _shown(self, reply: Reply) -> list[ToolCall]:
        """The turn's calls that run or are answered; an unreadable one the family's reference skips is
        counted and dropped here (``LoopRules.show_unreadable``)."""
        if self.rules.show_unreadable:
            return list(reply.tool_calls)
        for call in reply.tool_calls:
            if not readable(call):
                self._unreadable(call.name, call.arguments)
        return [c for c in reply.tool_calls if readable(c)]

    async def _turn(self, messages: list[Message], deadline: float) -> Reply | None:
        """The model's reply for this turn (None: out of time). A reply with nothing readable is asked
        again, as the family's reference does (``LoopRules.unreadable_tries``), within the call budget."""
        r, lim, rules = self.result, self.limits, self.rules
        prune_images(messages, lim.keep_screenshots)
        request, schemas = self.profile.request(messages, self.schemas) if self.profile else (messages, self.schemas)
        if self.first_request is None:
            self.first_request = copy.deepcopy((request, schemas))
        tries = 0
        while True:
            tries += 1
            retry = tries > 1 and rules.retry_temperature is not None
            try:
                call = self.provider.complete(request, schemas, **({"temperature": rules.retry_temperature} if retry else {}))
                reply = await asyncio.wait_for(call, deadline - time.monotonic())
            except TimeoutError:
                return None
            reply = self.profile.parse(reply) if self.profile else reply
            self._account(reply)
            if any(readable(c) for c in reply.tool_calls) or tries >= rules.unreadable_tries or r.llm_calls >= lim.max_llm_calls:
                return reply
            r.hallucinations += 1  # a reply the reference asks again for, at its retry temperature
            self.trace.emit(
                "hallucination",
                kind="no_action",
                tool=None,
                args={},
                step=r.steps + 1,
                error=f"no readable action (try {tries} of {rules.unreadable_tries}): {reply.text[:300]}",
            )

    async def _act(
        self, reply: Reply, calls: list[ToolCall], cut: dict[str, object] | None, messages: list[Message], deadline: float
    ) -> bool:
        """Run the turn's calls in order; True when the episode ended (a final action, a loop)."""
        r, lim = self.result, self.limits
        images: list[ContentPart] = []
        for call in calls:
            if time.monotonic() >= deadline:
                messages.append({"role": "tool", "tool_call_id": call.id, "content": "[not run: limit reached]"})
                continue
            if cut is not None and is_cut(call):
                messages.append({"role": "tool", "tool_call_id": call.id, "content": notice(reply)})
                continue
            action = r.actions + 1  # (as its tool_call event numbers it)
            obs = await self._call_tool(call.name, call.arguments, deadline)
            if call.name not in self.replay:
                r.actions += 1
            if self.after_step:  # timed: key-step checks can take seconds, and the trace accounts for them
                began = time.perf_counter()
                self.after_step()
                self.trace.emit("after_step", step=r.steps, action=action, seconds=round(time.perf_counter() - began, 4))
            answer: ToolMessage = {"role": "tool", "tool_call_id": call.id, "content": obs.text or "ok"}
            if not obs.ok:
                answer["is_error"] = True
            messages.append(answer)
            began = time.perf_counter()
            data = self._encode(obs.image) if obs.image is not None else None
            shown = [(data, lim.image_format)] if data is not None else []
            sent = len(images)
            for picture, fmt in shown + obs.images:
                saved = self._observe(picture, images, fmt)
                if saved:  # seconds: this image's encoding (the first only: the others come encoded) and saving
                    self.trace.emit(
                        "observation",
                        screenshot=saved,
                        step=r.steps,
                        action=r.actions,
                        seconds=round(time.perf_counter() - began, 4),
                    )
                began = time.perf_counter()
            if len(images) > sent:  # which of the images that follow the tool messages are this call's
                answer["images"] = len(images) - sent
            loop = self.loops.see(
                f"{call.name}:{json.dumps(call.arguments, sort_keys=True, default=str)}", fingerprint(obs.text, data)
            )
            if obs.final:
                r.final_action, r.answer = obs.final, obs.answer
                r.termination = "done" if obs.final == "DONE" else "infeasible"
                return True
            if loop:
                r.loops += 1
                self.trace.emit("loop", kind=loop, tool=call.name, args=preview(call.arguments), step=r.steps)
                if lim.loop_stop:
                    r.termination = "loop"
                    return True
        if images:
            messages.append({"role": "user", "content": images})
        return False

    def _account(self, reply: Reply) -> None:
        r = self.result
        r.llm_calls += 1
        r.tokens_in += reply.usage.input_tokens
        r.tokens_out += reply.usage.output_tokens
        r.tokens_estimated = r.tokens_estimated or reply.usage.estimated
        r.tokens_cached += reply.usage.cached_input_tokens
        if reply.ttft_s is not None:
            r.ttft_s.append(round(reply.ttft_s, 4))
            r.generation_s.append(round(max(0.0, reply.latency_s - reply.ttft_s), 4))
        r.llm_latency_s.append(round(reply.latency_s, 4))
        self.trace.emit(
            "llm_call",
            n=r.llm_calls,
            ttft_s=reply.ttft_s,
            latency_s=reply.latency_s,
            tokens_in=reply.usage.input_tokens,
            tokens_out=reply.usage.output_tokens,
            tokens_estimated=reply.usage.estimated,
            finish_reason=reply.finish_reason,
            text=reply.text[:500],
            tool_calls=[c.name for c in reply.tool_calls],
            **({"reasoning": reply.reasoning[:2000]} if reply.reasoning else {}),
            **({"refusal": reply.refusal[:500]} if reply.refusal else {}),
        )

    @staticmethod
    def _assistant_message(reply: Reply) -> AssistantMessage:
        message: AssistantMessage = {"role": "assistant", "content": reply.text or None}
        if reply.reasoning_blocks:  # sent back verbatim by the provider that made them
            message["reasoning_blocks"] = reply.reasoning_blocks
        if reply.tool_calls:
            message["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": json.dumps(c.arguments, ensure_ascii=False)},
                }
                for c in reply.tool_calls
            ]
        return message

    async def _call_tool(self, written: str, raw_args: JSONObject, deadline: float | None = None) -> Observation:
        """One call, bounded by the episode's ``deadline`` (cancelled there: a hosted MCP tool that
        hangs ends the episode at agent.timeout_s, not at mcp.call_timeout_s)."""
        start = time.perf_counter()
        name, args = (written, raw_args) if written in self.replay else normalize_call(written, raw_args, self.tools)
        tool = self.tools.get(name) or self.replay.get(name)
        error = kind = None
        if "_raw" in args:
            kind, error = "invalid_json", unreadable_error(name, args)
        elif tool is None:  # outside the modality or invented
            kind = "outside_modality" if self._withheld(name) else "unknown_tool"
            error = f"there is no tool named {name!r}; available: {', '.join(self.tools)}"
        else:
            try:
                call = tool.call(args)
                obs = await (call if deadline is None else asyncio.wait_for(call, deadline - time.monotonic()))
            except TimeoutError:
                if deadline is None or time.monotonic() < deadline:
                    raise
                obs = Observation(text="Error: cancelled: the episode's time limit (agent.timeout_s) ran out", ok=False)
                self.trace.emit("tool_cancelled", tool=name, seconds=round(time.perf_counter() - start, 4))
            except ToolError as exc:
                kind, error = exc.kind, str(exc)
            except (UserError, ValueError, TypeError, KeyError) as exc:
                kind, error = "invalid_arguments", str(exc)
        if error is not None:  # the model sees the error, the trace a hallucination
            obs = Observation(text=f"Error: {error}", ok=False)
            self._hallucination(kind or "", name, args, error)
        latency = time.perf_counter() - start
        self.result.count_tool(name if tool else "unknown", obs.ok)
        event: dict[str, object] = {
            "tool": name,
            "args": preview(args),
            "ok": obs.ok,
            "latency_s": round(latency, 4),
            "step": self.result.steps,
            "action": self.result.actions + 1,
        }
        if (written, raw_args) != (name, args):
            event["as_written"] = {"tool": written, "args": preview(raw_args)}
        if error:
            event["error"] = error
        elif obs.text:
            event["output"] = obs.text[:500]
        self.trace.emit("tool_call", **event)
        return obs

    def _hallucination(self, kind: str, name: str, args: JSONObject, error: str) -> None:
        self.result.hallucinations += 1
        self.trace.emit("hallucination", kind=kind, tool=name, args=preview(args), error=error, step=self.result.steps)

    def _unreadable(self, name: str, args: JSONObject) -> None:
        """A call that could not be read, dropped unseen (``LoopRules.show_unreadable`` False)."""
        self._hallucination("invalid_json", name, args, unreadable_error(name, args))
        self.result.count_tool("unknown", False)

    def _withheld(self, name: str) -> bool:
        return name in self.withheld or any(p.endswith("-") and name.startswith(p) for p in self.withheld)

    def _encode(self, image: Image) -> bytes:
        """Encoded once per observation: for the model, for disk and for loop detection."""
        return encode(image, self.limits.image_format, self.limits.image_quality)

    def _observe(self, data: bytes, content: list[ContentPart], fmt: str | None = None) -> str | None:
        """Send to the model (if it sees images) and save to disk. Returns the saved name."""
        fmt = fmt or self.limits.image_format
        if self.send_images:
            content.append(image_part(data, fmt))
        return self.save_image(data, fmt) if self.save_image else None
