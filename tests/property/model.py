"""A model of a valid session, for hypothesis: every append it generates is valid.

:class:`SessionModel` tracks what the rules decide on — open turn and step, the tool
calls an assistant message declared and those still owed a result, and the current
surface with each node's tool-pairing delta — so that it only offers moves the
default ``Sessions`` (invariants on) accepts: turns with steps, chunks, assistant
messages with tool-call blocks, ``tool/call`` + ``tool/result`` pairs, user, context
and steering messages, todo writes, compactions (``compact/*`` around a
``user/message`` replace) and in-step assistant replaces, each replace collapsing a
tool-pairing balanced range of current nodes and citing every node it shadows.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from tests.scenarios.harness import Append

Draw = Callable[[st.SearchStrategy[Any]], Any]

# Text with every code point, lone surrogates and NUL included: the store must keep it.
TEXT = st.text(st.characters(exclude_categories=()), max_size=8)
SIMPLE = st.text("abc xyz", max_size=5)
JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.sampled_from([2**70, -(2**64), -0.0, 1.5, 0.1])
    | st.floats(allow_nan=False, allow_infinity=False)
    | TEXT
)
JSON = st.recursive(
    JSON_SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3)
    ),
    max_leaves=6,
)
SOURCES = st.sampled_from(
    [
        {"kind": "user"},
        {"kind": "plugin", "plugin": "watcher"},
        {"kind": "x-cron", "every": "5m"},  # open set: unknown kinds pass
    ]
)
BLOCKS = st.one_of(
    st.builds(lambda t: {"type": "text", "text": t}, TEXT),
    st.builds(lambda t: {"type": "reasoning", "text": t}, TEXT),
    st.builds(lambda v: {"type": "x-image", "ref": v}, JSON),
)
CHUNKS = st.one_of(
    st.builds(lambda t: {"type": "text-delta", "index": 0, "text": t}, TEXT),
    st.builds(lambda t: {"type": "reasoning-delta", "index": 1, "text": t}, TEXT),
    st.just({"type": "usage", "usage": {"inputTokens": 3, "outputTokens": 5}}),
    st.just({"type": "finish", "reason": {"kind": "stop"}}),
    st.just({"type": "x-chunk"}),
)
END_REASONS = st.sampled_from(
    [
        {"kind": "completed"},
        {"kind": "aborted", "reason": "cancelled"},
        {"kind": "error", "step": 1, "message": "boom", "code": "E"},
        {"kind": "disposed"},
        {"kind": "max-tokens"},
        {"kind": "rejected", "reason": "blocked"},
        {"kind": "interrupted"},
    ]
)
TODOS = st.lists(
    st.fixed_dictionaries(
        {
            "content": SIMPLE,
            "status": st.sampled_from(["pending", "in_progress", "completed"]),
        }
    ),
    max_size=3,
)


@dataclass
class SessionModel:
    """The decision state of a valid session, and the moves that keep it valid."""

    appends: list[Append] = field(default_factory=list)
    types: list[str] = field(default_factory=list)
    surface: list[tuple[int, int]] = field(default_factory=list)  # (seq, delta)
    shadowed: set[int] = field(default_factory=set)
    open_turn: int | None = None
    next_turn: int = 1
    open_step: int | None = None
    next_step: int = 1
    step_chunks: list[int] = field(default_factory=list)
    declared: list[str] = field(default_factory=list)
    pending: dict[str, int] = field(default_factory=dict)
    calls: int = 0

    # ----------------------------------------------------------------- state

    @property
    def seq(self) -> int:
        return len(self.appends)

    @property
    def surface_seqs(self) -> list[int]:
        return [seq for seq, _ in self.surface]

    def add(self, append: Append, delta: int = 0) -> int:
        """Record one append and fold it into the surface; returns its seq."""
        seq = self.seq
        self.appends.append(append)
        self.types.append(append.type)
        op = append.surface_op
        if op == "append":
            self.surface.append((seq, delta))
        elif isinstance(op, dict):
            seqs = self.surface_seqs
            i, j = seqs.index(op["start"]), seqs.index(op["end"])
            self.shadowed.update(seqs[i : j + 1])
            self.surface[i : j + 1] = [(seq, delta)]
        return seq

    def balanced_ranges(self) -> list[tuple[int, int]]:
        """Position pairs ``(i, j)`` whose both cuts are tool-pairing balanced."""
        before, depth = [], 0
        for _, delta in self.surface:
            before.append(depth)
            depth += delta
        after = [*before[1:], depth]
        return [
            (i, j)
            for i in range(len(self.surface))
            if before[i] == 0
            for j in range(i, len(self.surface))
            if after[j] == 0
        ]

    def moves(self) -> list[Callable[[Draw], None]]:
        if self.open_turn is None:
            return [self.turn_start]
        if self.open_step is None:
            moves = [self.message, self.message, self.todo, self.step_start]
            moves += [self.turn_end, self.prompt_blocked]
            if self.balanced_ranges():
                moves.append(self.compaction)
            return moves
        moves = [self.chunk, self.assistant, self.assistant, self.message]
        if self.declared:
            moves += [self.tool_call, self.tool_call]
        if self.pending:
            moves += [self.tool_result, self.tool_result]
        if not self.declared and not self.pending:
            moves.append(self.step_end)
        if self.balanced_ranges():
            moves.append(self.rewrite)
        return moves

    # ----------------------------------------------------------------- moves

    def turn_start(self, draw: Draw) -> None:
        kind = draw(st.sampled_from(["message", "injection"]))
        trigger = {"kind": kind, "source": draw(SOURCES)}
        self.add(Append("turn/start", {"turn": self.next_turn, "trigger": trigger}))
        self.open_turn, self.next_step = self.next_turn, 1

    def turn_end(self, draw: Draw) -> None:
        reason = draw(END_REASONS)
        self.add(Append("turn/end", {"turn": self.open_turn, "reason": reason}))
        self.open_turn = None
        self.next_turn += 1

    def step_start(self, draw: Draw) -> None:
        self.add(Append("step/start", {"turn": self.open_turn, "step": self.next_step}))
        self.open_step = self.next_step
        self.step_chunks, self.declared, self.pending = [], [], {}

    def step_end(self, draw: Draw) -> None:
        self.add(Append("step/end", {"turn": self.open_turn, "step": self.open_step}))
        self.open_step = None
        self.next_step += 1

    def message(self, draw: Draw) -> None:
        """A user, context or steering message (user messages only between steps)."""
        kinds = ["context/message", "steering/message"]
        if self.open_step is None:
            kinds.append("user/message")
        event_type = draw(st.sampled_from(kinds))
        data: dict[str, Any] = {
            "content": draw(st.lists(BLOCKS, max_size=2)),
            "source": draw(SOURCES),
        }
        if event_type == "steering/message":
            data["turn"] = self.open_turn
        if draw(st.booleans()):
            data["x-extra"] = draw(JSON)
        self.add(Append(event_type, data, "append"))

    def todo(self, draw: Draw) -> None:
        self.add(Append("todo/write", {"todos": draw(TODOS)}))

    def prompt_blocked(self, draw: Draw) -> None:
        data = {
            "content": draw(st.lists(BLOCKS, max_size=1)),
            "source": {"kind": "user"},
            "reason": draw(SIMPLE),
        }
        self.add(Append("prompt/blocked", data))

    def chunk(self, draw: Draw) -> None:
        data = {"turn": self.open_turn, "step": self.open_step, "chunk": draw(CHUNKS)}
        self.step_chunks.append(self.add(Append("assistant/chunk", data)))

    def assistant(self, draw: Draw) -> None:
        ids = []
        for _ in range(draw(st.integers(0, 2))):
            self.calls += 1
            ids.append(f"call-{self.calls}")
        blocks = draw(st.lists(BLOCKS, max_size=2))
        calls = [
            {"type": "tool-call", "id": i, "name": "bash", "arguments": "{}"}
            for i in ids
        ]
        data: dict[str, Any] = {
            "turn": self.open_turn,
            "step": self.open_step,
            "content": blocks + calls,
        }
        if draw(st.booleans()):
            data["usage"] = {"inputTokens": 10, "outputTokens": draw(st.integers(0, 9))}
        choice = draw(st.sampled_from(["chunks", "empty", "none"]))
        sources = None
        if choice == "chunks" and self.step_chunks:
            sources = list(self.step_chunks)
        elif choice == "empty":
            sources = []  # [] is valid on assistant/message only
        self.add(Append("assistant/message", data, "append", sources), delta=len(ids))
        self.declared.extend(ids)

    def tool_call(self, draw: Draw) -> None:
        call_id = self.declared.pop(draw(st.integers(0, len(self.declared) - 1)))
        data = {
            "turn": self.open_turn,
            "step": self.open_step,
            "callId": call_id,
            "name": "bash",
            "arguments": draw(st.sampled_from(["{}", '{"cmd":"ls"}', "not json"])),
        }
        self.pending[call_id] = self.add(Append("tool/call", data))

    def tool_result(self, draw: Draw) -> None:
        call_id = draw(st.sampled_from(sorted(self.pending)))
        call_seq = self.pending.pop(call_id)
        is_error = draw(st.booleans())
        data: dict[str, Any] = {
            "turn": self.open_turn,
            "step": self.open_step,
            "callId": call_id,
            "content": draw(st.lists(BLOCKS, max_size=2)),
            "isError": is_error,
        }
        if is_error and draw(st.booleans()):
            data["error"] = {"name": "ToolError", "code": "E_TOOL"}
        if draw(st.booleans()):
            data["meta"] = draw(JSON)
        sources = [call_seq] if draw(st.booleans()) else None
        self.add(Append("tool/result", data, "append", sources), delta=-1)

    def _replace(self, draw: Draw) -> tuple[dict[str, Any], list[int]]:
        """A balanced range of current nodes as a replace op and its node seqs."""
        i, j = draw(st.sampled_from(self.balanced_ranges()))
        seqs = self.surface_seqs
        op = {"op": "replace", "start": seqs[i], "end": seqs[j]}
        return op, seqs[i : j + 1]

    def _cite(self, draw: Draw, removed: list[int], *also: int) -> list[int]:
        """Provenance covering ``removed``, maybe with other earlier seqs, shuffled."""
        others = [s for s in range(self.seq) if s not in removed and s not in also]
        extra = (
            draw(st.lists(st.sampled_from(others), max_size=2, unique=True))
            if others
            else []
        )
        return draw(st.permutations([*also, *removed, *extra]))

    def compaction(self, draw: Draw) -> None:
        """Compaction: compact/start, compact/summary, the checkpoint replace, compact/end."""
        op, removed = self._replace(draw)
        turn = self.open_turn
        start = self.add(Append("compact/start", {"turn": turn}))
        summary = [{"type": "text", "text": draw(SIMPLE)}]
        summary_data = {
            "summary": summary,
            "shadowedRange": {"start": op["start"], "end": op["end"]},
            "shadowedSeqs": removed,
            "shadowedTokenCount": 7 * len(removed),
        }
        summary_seq = self.add(Append("compact/summary", summary_data))
        checkpoint = {
            "content": summary,
            "source": {"kind": "plugin", "plugin": "compact"},
        }
        sources = self._cite(draw, removed, start, summary_seq)
        self.add(Append("user/message", checkpoint, op, sources))
        self.add(Append("compact/end", {"turn": turn}))

    def rewrite(self, draw: Draw) -> None:
        """An in-step assistant message that replaces a balanced range."""
        op, removed = self._replace(draw)
        data = {
            "turn": self.open_turn,
            "step": self.open_step,
            "content": [{"type": "text", "text": draw(SIMPLE)}],
        }
        self.add(Append("assistant/message", data, op, self._cite(draw, removed)))


@st.composite
def valid_models(draw: Draw, max_events: int = 40, min_events: int = 0) -> SessionModel:
    """A model whose ``appends`` are a valid session of about ``max_events``."""
    model = SessionModel()
    target = draw(st.integers(min_events, max_events))
    while model.seq < target:
        draw(st.sampled_from(model.moves()))(draw)
    if model.open_turn is not None and draw(st.booleans()):
        if model.open_step is not None:
            while model.declared:
                model.tool_call(draw)
            while model.pending:
                model.tool_result(draw)
            model.step_end(draw)
        model.turn_end(draw)
    return model


def valid_sessions(max_events: int = 40) -> st.SearchStrategy[list[Append]]:
    return valid_models(max_events).map(lambda model: model.appends)
