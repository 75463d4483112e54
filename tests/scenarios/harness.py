"""Aggregate scenarios: given these events, when this command, then these events.

The kit is :mod:`agentlog.testing` (docs/testing.md); the scenarios' notation
(``TS(1)``, ``U("hi")``, ``Rep(0, 1, [0, 1])`` …) comes from :mod:`tests.builders`,
re-exported here with the kit. A builder is an ``Append``: the arguments of one
``Session.append`` call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agentlog import testing
from agentlog.domain.json import Envelope
from agentlog.testing import FIXED_TIME, SessionsScenario, without_time
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
    "SessionsScenario",
    "U",
    "add",
    "call_block",
    "chunk",
    "text",
]


def add(target: Any, *appends: Append) -> list[Envelope]:
    """Append each in turn to a ``Session`` or a ``SessionHandle``."""
    return [append.to(target) for append in appends]


strip_time = without_time


class Scenario(testing.Scenario):
    """The kit's aggregate scenario with the turn invariants off unless asked:
    most of our scenarios check one rule family alone."""

    def __init__(
        self,
        *,
        invariants: bool = False,
        session_id: str = "s",
        clock: Callable[[], int] = lambda: FIXED_TIME,
    ) -> None:
        super().__init__(invariants=invariants, session_id=session_id, clock=clock)


def raises_exactly(error_type: type[BaseException], message: str) -> Any:
    """``pytest.raises`` matching the whole message literally."""
    import re

    return pytest.raises(error_type, match="^" + re.escape(message) + "$")
