"""Turn, step and tool-call enclosure rules as a pure state machine.

See docs/invariants.md.

:class:`TurnInvariants` is the step-5 state the aggregate keeps and checks at append
(check (d) of docs/events.md#the-append-pipeline).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from agentlog.domain.errors import InvariantError
from agentlog.domain.json import js_number
from agentlog.domain.vocabulary import IN_STEP_TYPES

if TYPE_CHECKING:
    from agentlog.domain.json import Envelope, Json


class _Undefined:
    """A payload field that is absent; JavaScript shows it as ``undefined``."""

    def __str__(self) -> str:
        return "undefined"


_UNDEFINED: Final = _Undefined()
_js: Final = js_number  # a value as JavaScript's ${value} shows it


def _field(data: Json, key: str) -> object:
    """``data[key]``, or the undefined marker when ``data`` has no such key."""
    if type(data) is dict and key in data:
        return data[key]
    return _UNDEFINED


def _same(left: object, right: object) -> bool:
    """JavaScript ``===`` on JSON scalars: numbers by value, booleans apart."""
    if isinstance(left, bool) or isinstance(right, bool):
        return left is right
    if isinstance(left, int | float) and isinstance(right, int | float):
        return left == right
    return type(left) is type(right) and left == right


def _stored(value: object) -> Json:
    """A field value as JSON state (an absent field is kept as ``None``)."""
    return None if value is _UNDEFINED else value


def _call_key(value: object) -> str:
    """A pending-call key; call ids are strings, anything else by its message text."""
    return value if type(value) is str else _js(value)


def _is_synthetic_result(data: Json) -> bool:
    """A crash-repair result (docs/repair.md) is exempt from the pending-call rule."""
    error = _field(data, "error")
    return _field(data, "isError") is True and _field(error, "code") == "interrupted"


class TurnInvariants:
    """The turn/step/tool-call state of step 5 and its rules.

    ``check`` decides without changing anything; ``apply`` only applies and accepts
    any log, so state can be folded from history that was never checked.
    """

    __slots__ = ("next_step", "next_turn", "open_step", "open_turn", "pending_calls")

    def __init__(self) -> None:
        self.open_turn: Json = None
        self.open_step: Json = None
        self.next_turn: int = 1
        self.next_step: int = 1
        self.pending_calls: dict[str, None] = {}

    def check(self, event: Envelope) -> None:
        """Raise :class:`InvariantError` when ``event`` breaks a step-5 rule."""
        detail = self._violation(event)
        if detail is not None:
            raise InvariantError(detail)

    def _violation(self, event: Envelope) -> str | None:
        event_type = event.get("type")
        data = event.get("data")
        turn = _field(data, "turn")
        step = _field(data, "step")
        if event_type == "turn/start":
            if self.open_turn is not None:
                return (
                    f"turn/start {_js(turn)} while turn {_js(self.open_turn)} "
                    "is still open"
                )
            if not _same(turn, self.next_turn):
                return f"turn/start expected turn {self.next_turn}, got {_js(turn)}"
            return None
        if event_type == "turn/end":
            if not _same(turn, self.open_turn):
                return (
                    f"turn/end {_js(turn)} does not match open turn "
                    f"{_js(self.open_turn)}"
                )
            if self.open_step is not None:
                return (
                    f"turn/end {_js(turn)} while step {_js(self.open_step)} "
                    "is still open"
                )
            return None
        if event_type == "step/start":
            if not _same(turn, self.open_turn):
                return (
                    f"step/start in turn {_js(turn)} but open turn is "
                    f"{_js(self.open_turn)}"
                )
            if self.open_step is not None:
                return (
                    f"step/start {_js(step)} while step {_js(self.open_step)} "
                    "is still open"
                )
            if not _same(step, self.next_step):
                return (
                    f"step/start expected step {self.next_step} in turn "
                    f"{_js(turn)}, got {_js(step)}"
                )
            return None
        if event_type in IN_STEP_TYPES:
            if not (_same(turn, self.open_turn) and _same(step, self.open_step)):
                return (
                    f"{event_type} names turn {_js(turn)}/step {_js(step)} but "
                    f"open is turn {_js(self.open_turn)}/step "
                    f"{_js(self.open_step)}"
                )
            if event_type == "tool/result":
                call_id = _field(data, "callId")
                if _call_key(
                    call_id
                ) not in self.pending_calls and not _is_synthetic_result(data):
                    return (
                        f"tool/result for {_js(call_id)} with no prior tool/call "
                        "in this step"
                    )
            return None
        if self.open_turn is None:
            return (
                f"{_js(event_type)} appended outside any open turn "
                "(every event must be turn-enclosed)"
            )
        return None

    def apply(self, event: Envelope) -> None:
        """Fold one event into the state; never validates, never raises."""
        event_type = event.get("type")
        data = event.get("data")
        if event_type == "turn/start":
            self.open_turn = _stored(_field(data, "turn"))
            self.next_step = 1
        elif event_type == "turn/end":
            self.open_turn = None
            self.next_turn += 1
        elif event_type == "step/start":
            self.open_step = _stored(_field(data, "step"))
        elif event_type == "step/end":
            self.pending_calls.clear()
            self.open_step = None
            self.next_step += 1
        elif event_type == "tool/call":
            self.pending_calls[_call_key(_field(data, "callId"))] = None
        elif event_type == "tool/result":
            self.pending_calls.pop(_call_key(_field(data, "callId")), None)

    def to_state(self) -> Json:
        """The state as JSON (for snapshots)."""
        return {
            "openTurn": self.open_turn,
            "openStep": self.open_step,
            "nextTurn": self.next_turn,
            "nextStep": self.next_step,
            "pendingCalls": list(self.pending_calls),
        }

    @classmethod
    def from_state(cls, state: Json) -> TurnInvariants:
        """Rebuild from :meth:`to_state` output."""
        invariants = cls()
        invariants.open_turn = state["openTurn"]
        invariants.open_step = state["openStep"]
        invariants.next_turn = state["nextTurn"]
        invariants.next_step = state["nextStep"]
        invariants.pending_calls = dict.fromkeys(state["pendingCalls"])
        return invariants
