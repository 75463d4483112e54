"""Aggregate scenarios: given these events, when this command, then these events.

The scenarios' notation (``TS(1)``, ``U("hi")``, ``Rep(0, 1, [0, 1])`` …) comes from
:mod:`tests.builders`, re-exported here. A builder is an ``Append``: the arguments of
one ``Session.append`` call. ``Scenario`` runs them against a bare aggregate and
checks the new events — or the exact error and that nothing was recorded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from agentlog.domain.json import Envelope, copy_json
from agentlog.domain.session import Session
from tests.builders import (
    SE,
    SS,
    TE,
    TS,
    USER,
    A,
    Acall,
    Append,
    C,
    R,
    Rep,
    U,
    call_block,
    chunk,
    text,
)

__all__ = [
    "SE",
    "SS",
    "TE",
    "TS",
    "USER",
    "A",
    "Acall",
    "Append",
    "C",
    "R",
    "Rep",
    "Scenario",
    "U",
    "add",
    "call_block",
    "chunk",
    "text",
]


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
