"""Aggregate scenarios: given these events, when this command, then these events.

The scenarios' notation is provided as builders (``TS(1)``, ``U("hi")``,
``Rep(0, 1, [0, 1])`` …). A builder is an ``Append``: the arguments of one
``Session.append`` call. ``Scenario`` runs them against a bare aggregate and checks
the new events — or the exact error and that nothing was recorded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from agentlog.domain.json import Envelope, copy_json
from agentlog.domain.session import Session


@dataclass(frozen=True)
class Append:
    """One ``append`` call: type, data and the optional surface intent."""

    type: str
    data: Any
    surface_op: Any = None
    source_event_seqs: Any = None

    def to(self, session: Session) -> Envelope:
        return session.append(
            self.type,
            self.data,
            surface_op=self.surface_op,
            source_event_seqs=self.source_event_seqs,
        )

    def envelope(self, seq: int, time: int = 1234) -> Envelope:
        """The event this append records at ``seq`` (for seeds and expectations)."""
        env: Envelope = {"type": self.type, "seq": seq, "time": time, "data": self.data}
        if self.source_event_seqs is not None:
            env["sourceEventSeqs"] = self.source_event_seqs
        if self.surface_op is not None:
            env["surfaceOp"] = self.surface_op
        return env

    def with_intent(self, surface_op: Any = None, sources: Any = None) -> Append:
        return Append(self.type, self.data, surface_op, sources)


USER = {"kind": "user"}


def TS(turn: int, trigger: Any = None) -> Append:
    return Append(
        "turn/start",
        {"turn": turn, "trigger": trigger or {"kind": "message", "source": USER}},
    )


def TE(turn: int, reason: Any = None) -> Append:
    return Append("turn/end", {"turn": turn, "reason": reason or {"kind": "completed"}})


def SS(turn: int, step: int) -> Append:
    return Append("step/start", {"turn": turn, "step": step})


def SE(turn: int, step: int) -> Append:
    return Append("step/end", {"turn": turn, "step": step})


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def U(value: str, source: Any = None) -> Append:
    return Append(
        "user/message",
        {"content": [text(value)], "source": source or USER},
        surface_op="append",
    )


def A(value: str, turn: int = 1, step: int = 1) -> Append:
    return Append(
        "assistant/message",
        {"turn": turn, "step": step, "content": [text(value)]},
        surface_op="append",
    )


def call_block(call_id: str) -> dict[str, Any]:
    return {"type": "tool-call", "id": call_id, "name": "bash", "arguments": "{}"}


def Acall(call_id: str, turn: int = 1, step: int = 1) -> Append:
    return Append(
        "assistant/message",
        {"turn": turn, "step": step, "content": [call_block(call_id)]},
        surface_op="append",
    )


def C(call_id: str, turn: int = 1, step: int = 1) -> Append:
    return Append(
        "tool/call",
        {
            "turn": turn,
            "step": step,
            "callId": call_id,
            "name": "bash",
            "arguments": "{}",
        },
    )


def R(call_id: str, turn: int = 1, step: int = 1, **extra: Any) -> Append:
    return Append(
        "tool/result",
        {
            "turn": turn,
            "step": step,
            "callId": call_id,
            "content": [text("ok")],
            "isError": False,
            **extra,
        },
        surface_op="append",
    )


def Rep(start: int, end: int, sources: Any, value: str = "summary") -> Append:
    return Append(
        "assistant/message",
        {"turn": 1, "step": 1, "content": [text(value)]},
        surface_op={"op": "replace", "start": start, "end": end},
        source_event_seqs=sources,
    )


def chunk(turn: int = 1, step: int = 1, delta: str = "x") -> Append:
    return Append(
        "assistant/chunk",
        {
            "turn": turn,
            "step": step,
            "chunk": {"type": "text-delta", "index": 0, "text": delta},
        },
    )


def add(target: Any, *appends: Append) -> list[Envelope]:
    """Append each in turn to a ``Session`` or a ``SessionHandle``."""
    return [append.to(target) for append in appends]


def strip_time(events: Sequence[Envelope]) -> list[Envelope]:
    return [{k: v for k, v in e.items() if k != "time"} for e in events]


@dataclass
class Scenario:
    """``Scenario().given(...).when(...).then(...)`` over one bare aggregate."""

    invariants: bool = False
    session_id: str = "s"
    clock: Callable[[], int] = field(default=lambda: 1234)
    session: Session = field(init=False)
    history: list[Envelope] = field(default_factory=list)
    new: list[Envelope] = field(default_factory=list)
    error: BaseException | None = None
    result: Any = None

    def __post_init__(self) -> None:
        self.session = Session.create(
            self.session_id, invariants=self.invariants, clock=self.clock
        )

    def given(self, *appends: Append) -> Scenario:
        for append in appends:
            self.history.append(append.to(self.session))
        return self

    def when(self, command: Callable[[Session], Any] | Append) -> Scenario:
        before = self.session.seq
        state_before = copy_json(self.session.decision_state())
        command_fn = command.to if isinstance(command, Append) else command
        try:
            self.result = command_fn(self.session)
        except Exception as error:
            self.error = error
            assert self.session.seq == before, "a rejected command recorded events"
            assert self.session.decision_state() == state_before, (
                "a rejected command changed the decision state"
            )
        self.new = [
            e.envelope
            for e in self.session.pending_events[1 + len(self.history) :]
            if hasattr(e, "envelope")
        ]
        return self

    def then(self, *expected: Envelope) -> Scenario:
        if self.error is not None:
            raise AssertionError(f"expected events, got {self.error!r}")
        assert strip_time(self.new) == strip_time(list(expected))
        return self

    def then_error(self, error_type: type[BaseException], message: str) -> Scenario:
        assert self.error is not None, f"expected {error_type.__name__}, got events"
        assert isinstance(self.error, error_type), repr(self.error)
        assert str(self.error) == message
        assert self.new == []
        return self

    @property
    def events(self) -> list[Envelope]:
        return self.history + self.new


def raises_exactly(error_type: type[BaseException], message: str) -> Any:
    """``pytest.raises`` matching the whole message literally."""
    import re

    return pytest.raises(error_type, match="^" + re.escape(message) + "$")
