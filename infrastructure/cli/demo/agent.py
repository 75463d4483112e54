"""``ScriptedAgent``: writes a session the way an agent loop does, without a model.

One method per thing a loop does — open a turn with a prompt, inject context, steer,
write todos, title, stream a model step, run tools, compact
(docs/surface.md#compaction), close the turn — each through the public
:meth:`SessionHandle.append`, so every rule of the spec is checked on the way in. The
demo drives it; so can tests and benchmarks that want realistic logs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agentlog.domain.errors import SessionError, SurfaceError
from agentlog.domain.json import dumps
from agentlog.domain.pairing import is_tool_pairing_balanced
from agentlog.domain.title import TitleConfig, plan_fallback_title

if TYPE_CHECKING:
    from agentlog.application.agent_turns import Step, Turn
    from agentlog.application.handle import SessionHandle

ToolCall = tuple[str, Mapping[str, Any]]
"""A tool name and its arguments (the model writes them as JSON text)."""

TITLE_CONFIG = TitleConfig(
    fallback_max_words=5, fallback_max_bytes=40, max_title_bytes=80
)
"""The title limits of the harness's demo spine (docs/titles.md#producers)."""
COMPACT_PREAMBLE = (
    "This is an automatically generated checkpoint condensing an earlier span of the "
    "conversation to free up context. Treat the captured context as established "
    "background and build on it without restating it. Continue the task directly "
    "from the messages that follow, without acknowledging this checkpoint."
)
"""The framing of a compaction checkpoint (docs/surface.md#compaction step 3)."""
USER: dict[str, Any] = {"kind": "user"}


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _pieces(text: str, count: int = 3) -> list[str]:
    """Split text at spaces into about ``count`` stream deltas (they join back)."""
    words = text.split(" ")
    size = max(1, -(-len(words) // count))
    parts = [" ".join(words[i : i + size]) for i in range(0, len(words), size)]
    return [part + " " for part in parts[:-1]] + parts[-1:]


class ScriptedAgent:
    """Writes a session the way an agent loop does, one method per loop action.

    Turns and steps go through the turn writer (``app.turn(handle)``,
    docs/agents.md) on the live handle: it numbers them, cites each step's chunks
    from its assistant message and each call from its result. Each model step
    streams its output as ``assistant/chunk`` events, then records the assembled
    ``assistant/message``, then one ``tool/call`` per requested call. Compaction,
    which the writer leaves to plugins, appends through the public
    :meth:`SessionHandle.append`. The caller flushes, as a ``get_session`` loop does.
    """

    def __init__(self, handle: SessionHandle) -> None:
        self.handle = handle
        self._calls = sum(1 for e in handle.events if e["type"] == "tool/call")
        self.turn = 0
        self.step = 0
        self.prompt_seq = -1
        self._turn: Turn | None = None
        self._step: Step | None = None

    def append(
        self,
        event_type: str,
        data: Any,
        surface_op: Any = None,
        sources: Sequence[int] | None = None,
    ) -> int:
        """Append one event; returns its seq."""
        event = self.handle.append(
            event_type,
            data,
            surface_op=surface_op,
            source_event_seqs=None if sources is None else list(sources),
        )
        return int(event["seq"])

    def _open_turn(self) -> Turn:
        if self._turn is None:
            msg = "no turn is open: call start_turn first"
            raise SessionError(msg)
        return self._turn

    def _open_step(self) -> Step:
        if self._step is None:
            msg = "no step is open: call model_step first"
            raise SessionError(msg)
        return self._step

    # ------------------------------------------------------------------ turns

    def start_turn(self, prompt: str) -> None:
        """A drained user prompt opens a turn and joins the surface."""
        self._turn = self.handle.app.turn(self.handle, user=prompt).open()
        self.turn = self._turn.number
        self.step = 0
        self.prompt_seq = self._turn.user_seq if self._turn.user_seq is not None else -1

    def end_turn(self, reason: str = "completed") -> int:
        turn = self._open_turn()
        turn.end(reason)
        turn.close()
        self._turn = None
        assert turn.end_seq is not None
        return turn.end_seq

    def inject_context(self, text: str, plugin: str) -> None:
        """Context a plugin adds (not a prompt): the model sees it in an envelope."""
        self._open_turn().context(text, plugin=plugin)

    def steer(self, text: str) -> None:
        """The user steers a running turn between two steps."""
        self._open_turn().steer(text)

    def write_todos(self, *items: tuple[str, str]) -> None:
        todos = [{"content": content, "status": status} for content, status in items]
        self._open_turn().event("todo/write", {"todos": todos})

    def title(self) -> str | None:
        """The fallback title of the first prompt, if the session has none yet."""
        data = plan_fallback_title(self.handle.events, TITLE_CONFIG)
        if data is None:
            return None
        self._open_turn().event("session/title", data)
        return str(data["title"])

    # ------------------------------------------------------------------ steps

    def model_step(
        self,
        *,
        reasoning: str | None = None,
        text: str | None = None,
        calls: Sequence[ToolCall] = (),
    ) -> list[str]:
        """Open a step, stream the model's output, record it; returns the call ids."""
        step = self._open_turn().step()
        step.__enter__()
        self._step = step
        self.step = step.number
        blocks: list[dict[str, Any]] = []
        for kind, value in (("reasoning", reasoning), ("text", text)):
            if value is None:
                continue
            index = len(blocks)
            step.chunk({"type": "block-start", "index": index, "blockType": kind})
            for piece in _pieces(value):
                step.chunk({"type": f"{kind}-delta", "index": index, "text": piece})
            blocks.append({"type": kind, "text": value})
            step.chunk({"type": "block-end", "index": index, "block": blocks[-1]})
        call_ids: list[str] = []
        for name, arguments in calls:
            self._calls += 1
            call_id = f"call_{self._calls}"
            index = len(blocks)
            raw = dumps(dict(arguments)).decode()
            step.chunk(
                {"type": "block-start", "index": index, "blockType": "tool-call"}
            )
            half = len(raw) // 2
            for number, piece in enumerate((raw[:half], raw[half:])):
                delta: dict[str, Any] = {
                    "type": "tool-call-delta",
                    "index": index,
                    "id": call_id,
                }
                if number == 0:
                    delta["name"] = name
                step.chunk({**delta, "argumentsDelta": piece})
            block = {"type": "tool-call", "id": call_id, "name": name, "arguments": raw}
            blocks.append(block)
            call_ids.append(call_id)
            step.chunk({"type": "block-end", "index": index, "block": block})
        usage = {
            "inputTokens": 900 + 250 * self.step,
            "outputTokens": 40 + sum(len(dumps(block)) // 4 for block in blocks),
            "cacheReadTokens": 2048,
        }
        step.chunk({"type": "usage", "usage": usage})
        finish = "tool-calls" if calls else "stop"
        step.chunk({"type": "finish", "reason": {"kind": finish}})
        step.assistant(content=blocks, usage=usage)
        step.tool_calls  # noqa: B018 - writes the message and its calls now
        return call_ids

    def tool_result(self, call_id: str, output: str, *, is_error: bool = False) -> None:
        """A tool finished: its result joins the surface and cites its call."""
        self._open_step().tool_result(call_id, output, is_error=is_error)

    def end_step(self) -> None:
        self._open_step().__exit__(None, None, None)
        self._step = None

    # ------------------------------------------------------------- compaction

    def compact(self, summary: str) -> tuple[int, list[int]]:
        """Replace everything before this turn's prompt with a checkpoint.

        See docs/surface.md#compaction.

        Runs inside the open turn and outside any step, like the loop's pre-step
        seam. Both edges of the region must be balanced cuts (no tool call split
        from its result). Returns the checkpoint's seq and the seqs it shadows.
        """
        nodes = self.handle.surface.seqs
        events = {event["seq"]: event for event in self.handle.events}
        end_index = nodes.index(self.prompt_seq) - 1
        if end_index < 0:
            msg = "compactRegion: nothing to compact before the prompt"
            raise SurfaceError(msg)
        start, end = nodes[0], nodes[end_index]
        after = nodes[end_index + 1]
        # Both cuts must be balanced; the texts are the seed's
        # (docs/surface.md#compaction).
        if not is_tool_pairing_balanced(nodes, events, start):
            msg = (
                f"compactRegion: start seq {start} is not a balanced boundary "
                "(would split a step's tool-call/result pair)"
            )
            raise SurfaceError(msg)
        if not is_tool_pairing_balanced(nodes, events, after):
            msg = (
                f"compactRegion: end seq {end} is not a balanced boundary "
                "(would split a step, or the step is still open)"
            )
            raise SurfaceError(msg)
        shadowed = nodes[: end_index + 1]
        start_seq = self.append("compact/start", {"turn": self.turn})
        try:
            tokens = sum(len(dumps(events[seq]["data"])) for seq in shadowed) // 4
            raw_summary = [text_block(summary)]
            summary_seq = self.append(
                "compact/summary",
                {
                    "summary": raw_summary,
                    "shadowedRange": {"start": start, "end": end},
                    "shadowedSeqs": shadowed,
                    "shadowedTokenCount": tokens,
                },
            )
            framed = [
                text_block(COMPACT_PREAMBLE + "\n\n<compacted-summary>"),
                *raw_summary,
                text_block("</compacted-summary>"),
            ]
            source = {"kind": "plugin", "plugin": "compact"}
            checkpoint = self.append(
                "user/message",
                {"content": framed, "source": source},
                {"op": "replace", "start": start, "end": end},
                [start_seq, summary_seq, *shadowed],
            )
        except SessionError as error:
            # A failed compaction releases the lock and leaves the surface as it was.
            self.append("compact/end", {"turn": self.turn, "error": str(error)})
            raise
        self.append("compact/end", {"turn": self.turn})
        return checkpoint, shadowed
