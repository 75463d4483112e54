"""Deterministic session workloads, so every system stores exactly the same data.

A workload is a list of *flush groups*; a group is the events of one agent step
(the turn's ``turn/start`` + ``user/message`` ride with its first step, its
``turn/end`` with its last), each event an :class:`Intent` in agentlog's
vocabulary (docs/vocabulary.md). Messages are about 1 KiB, alternate
user/assistant, and every 10th message is an assistant tool call answered by a
tool result; assistant text is optionally streamed as ``assistant/chunk`` events.

One block of 10 messages is four turns::

    turn (U, A) x 3  |  turn (U, A+call, R, A)    roles: u a u a u a u a u a

With chunks a one-step turn is 11 events and a block 54 (5.4 events/message);
without chunks a block is 29 events (2.9 events/message).
"""

from __future__ import annotations

import functools
import random
from dataclasses import dataclass, field
from typing import Any, Literal

SurfaceOp = Literal["append"] | dict[str, Any]

SURFACE_TYPES = frozenset(
    {
        "user/message",
        "assistant/message",
        "tool/result",
        "context/message",
        "steering/message",
    }
)
CHUNKS_PER_MESSAGE = 5
TEXT_BYTES = 1000
ARGUMENT_BYTES = 400
TAIL_MESSAGES = 50
COMPACT_PREAMBLE = (
    "This is an automatically generated checkpoint condensing an earlier span of "
    "the conversation to free up context. Treat the captured context as "
    "established background and build on it without restating it. Continue the "
    "task directly from the messages that follow, without acknowledging this "
    "checkpoint."
)
_WORDS = [
    "agent",
    "session",
    "event",
    "surface",
    "replay",
    "append",
    "fold",
    "message",
    "tool",
    "result",
    "call",
    "stream",
    "chunk",
    "step",
    "turn",
    "flush",
    "durable",
    "snapshot",
    "projection",
    "listing",
    "title",
    "fork",
    "boundary",
    "compaction",
    "summary",
    "history",
    "context",
    "provenance",
    "sqlite",
    "recorder",
    "aggregate",
    "version",
    "notification",
    "tracking",
    "window",
    "cursor",
    "query",
    "trace",
    "lineage",
    "header",
    "payload",
    "validation",
    "invariant",
    "pydantic",
    "model",
    "vocabulary",
    "json",
    "orjson",
    "codec",
    "deep",
    "nesting",
    "integer",
    "float",
    "string",
    "array",
    "object",
    "null",
    "true",
    "false",
    "the",
    "a",
    "of",
    "to",
    "and",
    "in",
    "is",
    "it",
    "that",
    "for",
    "on",
    "with",
    "as",
    "was",
    "by",
    "be",
    "this",
    "are",
    "at",
    "or",
    "from",
]


@functools.cache
def _text_pool(seed: int, size: int = 97) -> tuple[str, ...]:
    """Pre-draw a pool of ~1 KB texts: cheap to index, deterministic per seed."""
    rng = random.Random(seed)
    pool: list[str] = []
    for _ in range(size):
        words: list[str] = []
        length = 0
        while length < TEXT_BYTES:
            word = rng.choice(_WORDS)
            words.append(word)
            length += len(word) + 1
        pool.append(" ".join(words)[:TEXT_BYTES])
    return tuple(pool)


@dataclass(frozen=True, slots=True)
class Intent:
    """One event to append: what a caller passes to ``handle.append``.

    ``seq`` is the position the event takes in its session's log (contiguous
    from 0); the baselines store it verbatim and agentlog assigns the same.
    """

    seq: int
    type: str
    data: dict[str, Any]
    surface_op: SurfaceOp | None = None
    source_event_seqs: list[int] | None = None

    def envelope(self, time_ms: int) -> dict[str, Any]:
        """The stored JSON object (docs/events.md#envelope key order)."""
        env: dict[str, Any] = {
            "type": self.type,
            "seq": self.seq,
            "time": time_ms,
            "data": self.data,
        }
        if self.source_event_seqs is not None:
            env["sourceEventSeqs"] = self.source_event_seqs
        if self.surface_op is not None:
            env["surfaceOp"] = self.surface_op
        return env


Group = list[Intent]


@dataclass
class Conversation:
    """Generates one session's events turn by turn, tracking seq and turn state.

    Regenerating with the same arguments yields identical events, so a cold
    worker process can rebuild "the next step" of a stored fixture without
    reading it back.
    """

    session_id: str
    chunks: bool = True
    seed: int = 0
    groups: list[Group] = field(default_factory=list)
    n_messages: int = 0
    next_seq: int = 0
    next_turn: int = 1
    surface: list[int] = field(default_factory=list)
    turn_ends: list[tuple[int, int]] = field(default_factory=list)
    """(turn/end seq, messages so far) per closed turn."""
    _pool: tuple[str, ...] = field(default=(), repr=False)
    _titled: bool = False

    def __post_init__(self) -> None:
        self._pool = _text_pool(self.seed)

    @property
    def n_events(self) -> int:
        """Events generated so far (= the session's next seq)."""
        return self.next_seq

    # -- building blocks -------------------------------------------------------

    def _text(self, label: str) -> str:
        body = self._pool[self.n_messages % len(self._pool)]
        head = f"[{self.session_id} {label} {self.n_messages}] "
        return (head + body)[:TEXT_BYTES]

    def _event(
        self,
        event_type: str,
        data: dict[str, Any],
        surface_op: SurfaceOp | None = None,
        source_event_seqs: list[int] | None = None,
    ) -> Intent:
        intent = Intent(self.next_seq, event_type, data, surface_op, source_event_seqs)
        self.next_seq += 1
        if surface_op == "append":
            self.surface.append(intent.seq)
        return intent

    def _user(self, group: Group, *, title: bool) -> None:
        text = self._text("user")
        content = [{"type": "text", "text": text}]
        intent = self._event(
            "user/message",
            {"content": content, "source": {"kind": "user"}},
            "append",
        )
        group.append(intent)
        self.n_messages += 1
        if title and not self._titled:
            self._titled = True
            group.append(
                self._event(
                    "session/title",
                    {
                        "title": " ".join(text.split()[:5]),
                        "messageSeqs": [intent.seq],
                        "source": {"kind": "fallback"},
                    },
                )
            )

    def _assistant(
        self, group: Group, turn: int, step: int, call_id: str | None
    ) -> None:
        text = self._text("assistant")
        if call_id is not None:
            text = text[: TEXT_BYTES - ARGUMENT_BYTES]
        chunk_seqs: list[int] | None = None
        if self.chunks:
            chunk_seqs = []
            size = -(-len(text) // CHUNKS_PER_MESSAGE)
            for start in range(0, len(text), size):
                chunk = {
                    "type": "text-delta",
                    "index": 0,
                    "text": text[start : start + size],
                }
                intent = self._event(
                    "assistant/chunk", {"turn": turn, "step": step, "chunk": chunk}
                )
                chunk_seqs.append(intent.seq)
                group.append(intent)
        content: list[dict[str, Any]] = [{"type": "text", "text": text}]
        if call_id is not None:
            content.append(
                {
                    "type": "tool-call",
                    "id": call_id,
                    "name": "bash",
                    "arguments": self._arguments(),
                }
            )
        group.append(
            self._event(
                "assistant/message",
                {"turn": turn, "step": step, "content": content},
                "append",
                chunk_seqs,
            )
        )
        self.n_messages += 1

    def _arguments(self) -> str:
        body = self._pool[(self.n_messages * 7) % len(self._pool)]
        command = body[: ARGUMENT_BYTES - 20].replace('"', "'")
        return '{"command":"' + command + '"}'

    def _tool(self, group: Group, turn: int, step: int, call_id: str) -> None:
        arguments = group[-1].data["content"][-1]["arguments"]
        call = self._event(
            "tool/call",
            {
                "turn": turn,
                "step": step,
                "callId": call_id,
                "name": "bash",
                "arguments": arguments,
            },
        )
        group.append(call)
        group.append(
            self._event(
                "tool/result",
                {
                    "turn": turn,
                    "step": step,
                    "callId": call_id,
                    "content": [{"type": "text", "text": self._text("tool")}],
                    "isError": False,
                },
                "append",
                [call.seq],
            )
        )
        self.n_messages += 1

    # -- turns -----------------------------------------------------------------

    def turn(self, *, tool: bool = False, title: bool = False) -> list[Group]:
        """Append one turn (1 step, or 2 steps with a tool call); return its groups."""
        turn = self.next_turn
        self.next_turn += 1
        trigger = {"kind": "message", "source": {"kind": "user"}}
        first: Group = [self._event("turn/start", {"turn": turn, "trigger": trigger})]
        self._user(first, title=title)
        first.append(self._event("step/start", {"turn": turn, "step": 1}))
        groups = [first]
        if tool:
            call_id = f"call-{turn}"
            self._assistant(first, turn, 1, call_id)
            self._tool(first, turn, 1, call_id)
            first.append(self._event("step/end", {"turn": turn, "step": 1}))
            second: Group = [self._event("step/start", {"turn": turn, "step": 2})]
            self._assistant(second, turn, 2, None)
            second.append(self._event("step/end", {"turn": turn, "step": 2}))
            groups.append(second)
        else:
            self._assistant(first, turn, 1, None)
            first.append(self._event("step/end", {"turn": turn, "step": 1}))
        last = groups[-1]
        end = self._event("turn/end", {"turn": turn, "reason": {"kind": "completed"}})
        last.append(end)
        self.turn_ends.append((end.seq, self.n_messages))
        self.groups.extend(groups)
        return groups

    def grow(
        self,
        *,
        messages: int | None = None,
        events: int | None = None,
        title: bool = False,
    ) -> Conversation:
        """Add turns until at least ``messages`` messages or ``events`` events."""
        while (messages is not None and self.n_messages < messages) or (
            events is not None and self.next_seq < events
        ):
            # Every 4th turn (messages 7..10 of a block) carries the tool call.
            self.turn(tool=self.next_turn % 4 == 0, title=title)
        return self

    def compaction(self, fraction: float = 0.9) -> Group:
        """A compaction turn replacing the first ``fraction`` of the messages.

        Follows docs/surface.md#compaction: inside a new turn, ``compact/start``,
        ``compact/summary``, a ``user/message`` replacing the region
        (provenance: start, summary, every shadowed node), ``compact/end``,
        then one ordinary step. The region ends at a turn boundary, so it is
        tool-pairing balanced.
        """
        limit = fraction * self.n_messages
        end_seq = next(
            (seq for seq, msgs in self.turn_ends if msgs >= limit),
            self.turn_ends[-1][0],
        )
        shadowed = [seq for seq in self.surface if seq < end_seq]
        turn = self.next_turn
        self.next_turn += 1
        trigger = {"kind": "message", "source": {"kind": "user"}}
        group: Group = [self._event("turn/start", {"turn": turn, "trigger": trigger})]
        self._user(group, title=False)
        start = self._event("compact/start", {"turn": turn})
        summary_text = self._text("summary")
        summary = self._event(
            "compact/summary",
            {
                "summary": [{"type": "text", "text": summary_text}],
                "shadowedRange": {"start": shadowed[0], "end": shadowed[-1]},
                "shadowedSeqs": shadowed,
                "shadowedTokenCount": len(shadowed) * 250,
            },
        )
        op = {"op": "replace", "start": shadowed[0], "end": shadowed[-1]}
        framed = [
            {"type": "text", "text": COMPACT_PREAMBLE + "\n\n<compacted-summary>"},
            {"type": "text", "text": summary_text},
            {"type": "text", "text": "</compacted-summary>"},
        ]
        replace = Intent(
            self.next_seq,
            "user/message",
            {"content": framed, "source": {"kind": "plugin", "plugin": "compact"}},
            op,
            [start.seq, summary.seq, *shadowed],
        )
        self.next_seq += 1
        gone = set(shadowed)
        first_kept = self.surface.index(shadowed[0])
        kept = [seq for seq in self.surface if seq not in gone]
        self.surface = [*kept[:first_kept], replace.seq, *kept[first_kept:]]
        self.n_messages += 1 - len(shadowed)
        group += [start, summary, replace, self._event("compact/end", {"turn": turn})]
        group.append(self._event("step/start", {"turn": turn, "step": 1}))
        self._assistant(group, turn, 1, None)
        group.append(self._event("step/end", {"turn": turn, "step": 1}))
        end = self._event("turn/end", {"turn": turn, "reason": {"kind": "completed"}})
        group.append(end)
        self.turn_ends.append((end.seq, self.n_messages))
        self.groups.append(group)
        return group

    # -- reference points for the workloads ------------------------------------

    def intents(self) -> list[Intent]:
        """Every event in log order."""
        return [intent for group in self.groups for intent in group]

    def fork_boundary(self) -> int:
        """The ``turn/end`` seq closest to (at or after) the midpoint message."""
        half = self.n_messages / 2
        return next(seq for seq, msgs in self.turn_ends if msgs >= half)

    def tail_after(self, messages: int = TAIL_MESSAGES) -> int:
        """The seq just before the window holding the last ``messages`` messages.

        ``read_events(after=tail_after())`` returns exactly those messages' events
        (and the log-only events between them).
        """
        window = self.surface[-messages:]
        return window[0] - 1 if window else -1


def build(
    session_id: str,
    *,
    messages: int | None = None,
    events: int | None = None,
    chunks: bool = True,
    title: bool = False,
    seed: int = 0,
) -> Conversation:
    """A conversation grown to the given size (see :meth:`Conversation.grow`)."""
    conversation = Conversation(session_id, chunks=chunks, seed=seed)
    return conversation.grow(messages=messages, events=events, title=title)


def next_turns(conversation: Conversation, count: int) -> list[Group]:
    """Generate ``count`` further one-step turns; return the groups of the last.

    W5 appends one step per sample to the same stored session; the k-th sample
    must continue the turn and seq numbering left by the k-1 before it.
    """
    groups: list[Group] = []
    for _ in range(count):
        groups = conversation.turn(tool=False)
    return groups
