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

    Each model step streams its output as ``assistant/chunk`` events, then records
    the assembled ``assistant/message`` citing those chunks, then one ``tool/call``
    per requested call; results cite their call. Every append goes through the
    public :meth:`SessionHandle.append`, so every rule of the spec is checked.
    """

    def __init__(self, handle: SessionHandle) -> None:
        self.handle = handle
        events = handle.events
        self.turn = max(
            (e["data"]["turn"] for e in events if e["type"] == "turn/start"), default=0
        )
        self._calls = sum(1 for e in events if e["type"] == "tool/call")
        self.step = 0
        self.prompt_seq = -1
        self.pending: dict[str, int] = {}
        """Tool calls of the open step that have no result yet: call id -> seq."""

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

    # ------------------------------------------------------------------ turns

    def start_turn(self, prompt: str) -> None:
        """A drained user prompt opens a turn and joins the surface."""
        self.turn += 1
        self.step = 0
        trigger = {"kind": "message", "source": USER}
        self.append("turn/start", {"turn": self.turn, "trigger": trigger})
        content = [text_block(prompt)]
        self.prompt_seq = self.append(
            "user/message", {"content": content, "source": USER}, "append"
        )

    def end_turn(self, reason: str = "completed") -> int:
        return self.append("turn/end", {"turn": self.turn, "reason": {"kind": reason}})

    def inject_context(self, text: str, plugin: str) -> None:
        """Context a plugin adds (not a prompt): the model sees it in an envelope."""
        source = {"kind": "plugin", "plugin": plugin}
        data = {"content": [text_block(text)], "source": source}
        self.append("context/message", data, "append")

    def steer(self, text: str) -> None:
        """The user steers a running turn between two steps."""
        data = {"turn": self.turn, "content": [text_block(text)], "source": USER}
        self.append("steering/message", data, "append")

    def write_todos(self, *items: tuple[str, str]) -> None:
        todos = [{"content": content, "status": status} for content, status in items]
        self.append("todo/write", {"todos": todos})

    def title(self) -> str | None:
        """The fallback title of the first prompt, if the session has none yet."""
        data = plan_fallback_title(self.handle.events, TITLE_CONFIG)
        if data is None:
            return None
        self.append("session/title", data)
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
        self.step += 1
        where = {"turn": self.turn, "step": self.step}
        self.append("step/start", where)
        chunks: list[int] = []
        blocks: list[dict[str, Any]] = []

        def chunk(body: dict[str, Any]) -> None:
            chunks.append(self.append("assistant/chunk", {**where, "chunk": body}))

        for kind, value in (("reasoning", reasoning), ("text", text)):
            if value is None:
                continue
            index = len(blocks)
            chunk({"type": "block-start", "index": index, "blockType": kind})
            for piece in _pieces(value):
                chunk({"type": f"{kind}-delta", "index": index, "text": piece})
            blocks.append({"type": kind, "text": value})
            chunk({"type": "block-end", "index": index, "block": blocks[-1]})
        calls_made: list[tuple[str, dict[str, Any]]] = []
        for name, arguments in calls:
            self._calls += 1
            call_id = f"call_{self._calls}"
            index = len(blocks)
            raw = dumps(dict(arguments)).decode()
            chunk({"type": "block-start", "index": index, "blockType": "tool-call"})
            half = len(raw) // 2
            for number, piece in enumerate((raw[:half], raw[half:])):
                delta: dict[str, Any] = {
                    "type": "tool-call-delta",
                    "index": index,
                    "id": call_id,
                }
                if number == 0:
                    delta["name"] = name
                chunk({**delta, "argumentsDelta": piece})
            block = {"type": "tool-call", "id": call_id, "name": name, "arguments": raw}
            blocks.append(block)
            calls_made.append((call_id, block))
            chunk({"type": "block-end", "index": index, "block": block})
        usage = {
            "inputTokens": 900 + 250 * self.step,
            "outputTokens": 40 + sum(len(dumps(block)) // 4 for block in blocks),
            "cacheReadTokens": 2048,
        }
        chunk({"type": "usage", "usage": usage})
        finish = "tool-calls" if calls else "stop"
        chunk({"type": "finish", "reason": {"kind": finish}})
        message = {**where, "content": blocks, "usage": usage}
        self.append("assistant/message", message, "append", chunks)
        for call_id, block in calls_made:
            call = {
                **where,
                "callId": call_id,
                "name": block["name"],
                "arguments": block["arguments"],
            }
            self.pending[call_id] = self.append("tool/call", call)
        return [call_id for call_id, _ in calls_made]

    def tool_result(self, call_id: str, output: str, *, is_error: bool = False) -> None:
        """A tool finished: its result joins the surface and cites its call."""
        call_seq = self.pending.pop(call_id)
        data = {
            "turn": self.turn,
            "step": self.step,
            "callId": call_id,
            "content": [text_block(output)],
            "isError": is_error,
        }
        self.append("tool/result", data, "append", [call_seq])

    def end_step(self) -> None:
        self.append("step/end", {"turn": self.turn, "step": self.step})

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
