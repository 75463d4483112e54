"""Given/when/then scenarios for testing code built on agentlog (docs/testing.md).

A scenario states a session's history (*given*), one command (*when*), and what
must follow (*then*): the events the command recorded, or the exact error it
raised, in which case the kit also checks that nothing was recorded. Two
scenarios share one vocabulary:

- :class:`Scenario` runs on a bare :class:`~agentlog.domain.session.Session`
  aggregate: no store, a fixed clock, the rules alone (microseconds per test);
- :class:`SessionsScenario` runs through a :class:`~agentlog.Sessions` service,
  on whichever store it was opened with, using its public API only: the events
  are appended, flushed and read back, and a failed command must leave the stored
  log as it was.

A step is an :class:`Append` (the arguments of one ``append`` call) or a callable
taking the aggregate, or the service and the session id, so any command a
service has can be the *when*.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

from agentlog.domain.json import copy_json
from agentlog.domain.session import Session

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from agentlog.application.sessions import Sessions
    from agentlog.domain.json import Envelope

__all__ = [
    "Append",
    "Scenario",
    "SessionsScenario",
    "given",
    "without_time",
]

FIXED_TIME = 1234
"""The time a :class:`Scenario`'s clock gives every event, unless told otherwise."""

_S = TypeVar("_S", bound="_Steps")


class Append(NamedTuple):
    """One ``append`` call: type, data and the optional surface intent."""

    type: str
    data: Any
    surface_op: Any = None
    source_event_seqs: Any = None

    def to(self, target: Session | Any) -> Envelope:
        """Append to a ``Session`` or a ``SessionHandle``; returns the event."""
        envelope: Envelope = target.append(
            self.type,
            self.data,
            surface_op=self.surface_op,
            source_event_seqs=self.source_event_seqs,
        )
        return envelope

    def envelope(self, seq: int, time: int = FIXED_TIME) -> Envelope:
        """The event this append records at ``seq`` (for seeds and expectations)."""
        env: Envelope = {"type": self.type, "seq": seq, "time": time, "data": self.data}
        if self.source_event_seqs is not None:
            env["sourceEventSeqs"] = self.source_event_seqs
        if self.surface_op is not None:
            env["surfaceOp"] = self.surface_op
        return env

    def with_intent(self, surface_op: Any = None, sources: Any = None) -> Append:
        """The same event with another surface intent."""
        return Append(self.type, self.data, surface_op, sources)


def without_time(events: Sequence[Envelope]) -> list[Envelope]:
    """The events without their ``time`` (what a scenario compares)."""
    return [{k: v for k, v in event.items() if k != "time"} for event in events]


class _Steps:
    """The *then* half both scenarios share: expected events or the exact error."""

    first_new_seq: int = 0
    new: list[Envelope]
    error: BaseException | None
    result: Any

    def then(self: _S, *expected: Envelope | Append) -> _S:
        """The command succeeded and recorded exactly these events (times aside).

        An :class:`Append` stands for the event it records at its place among
        the new ones.
        """
        if self.error is not None:
            raise AssertionError(f"expected events, got {self.error!r}")
        wanted = [
            item.envelope(self.first_new_seq + index)
            if isinstance(item, Append)
            else item
            for index, item in enumerate(expected)
        ]
        assert without_time(self.new) == without_time(wanted)
        return self

    def then_raises(
        self: _S,
        error_type: type[BaseException],
        message: str | None = None,
        *,
        code: str | None = None,
    ) -> _S:
        """The command raised ``error_type`` (with exactly ``message`` and
        ``code`` when given) and recorded nothing."""
        assert self.error is not None, f"expected {error_type.__name__}, got events"
        assert isinstance(self.error, error_type), repr(self.error)
        if message is not None:
            assert str(self.error) == message
        if code is not None:
            assert getattr(self.error, "code", None) == code, repr(self.error)
        assert self.new == [], "a rejected command recorded events"
        return self


class Scenario(_Steps):
    """``Scenario().given(...).when(...).then(...)`` over one bare aggregate.

    ``invariants`` turns the turn/step/tool-call rules on (as ``Sessions`` has
    them); ``clock`` gives every event its time (fixed by default, so expected
    events can be written out).
    """

    def __init__(
        self,
        *,
        invariants: bool = True,
        session_id: str = "s",
        clock: Callable[[], int] = lambda: FIXED_TIME,
    ) -> None:
        self.session = Session.create(session_id, invariants=invariants, clock=clock)
        self.history: list[Envelope] = []
        self.new = []
        self.error = None
        self.result = None

    def given(self, *appends: Append) -> Scenario:
        """Record these events first (each must pass the rules)."""
        for append in appends:
            self.history.append(append.to(self.session))
        self.first_new_seq = self.session.seq
        return self

    def when(self, command: Callable[[Session], Any] | Append) -> Scenario:
        """Run one command on the aggregate; an error is kept for ``then_raises``.

        A rejected command must leave the aggregate as it was: no event recorded,
        the decision state unchanged (checked here).
        """
        before = self.session.seq
        self.first_new_seq = before
        pending_before = len(self.session.pending_events)
        state_before = copy_json(self.session.decision_state())
        run = command.to if isinstance(command, Append) else command
        try:
            self.result = run(self.session)
        except Exception as error:
            self.error = error
            assert self.session.seq == before, "a rejected command recorded events"
            assert self.session.decision_state() == state_before, (
                "a rejected command changed the decision state"
            )
        self.new = [
            event.envelope
            for event in self.session.pending_events[pending_before:]
            if hasattr(event, "envelope")
        ]
        return self

    @property
    def events(self) -> list[Envelope]:
        """The whole log: the given events, then the new ones."""
        return self.history + self.new


def given(
    *appends: Append,
    invariants: bool = True,
    session_id: str = "s",
    clock: Callable[[], int] = lambda: FIXED_TIME,
) -> Scenario:
    """``given(...).when(...).then(...)``: a :class:`Scenario` with this history."""
    scenario = Scenario(invariants=invariants, session_id=session_id, clock=clock)
    return scenario.given(*appends)


class SessionsScenario(_Steps):
    """The same steps through a ``Sessions`` service and its store.

    ``given`` creates the session (``create_session`` arguments go to the
    constructor), appends and flushes; ``when`` runs an :class:`Append`
    (appended and flushed) or ``command(sessions, session_id)``. The new events
    are read back with ``read_events``; a failed command must leave them as
    they were.
    """

    def __init__(
        self, sessions: Sessions, session_id: str = "s", **create: Any
    ) -> None:
        self.sessions = sessions
        self.session_id = session_id
        self.create = create
        self.history: list[Envelope] = []
        self.new = []
        self.error = None
        self.result = None

    def _handle(self) -> Any:
        live = self.sessions.live_session(self.session_id)
        if live is not None:
            return live
        if self.sessions.is_stored(self.session_id):
            return self.sessions.get_session(self.session_id)
        return self.sessions.create_session(session_id=self.session_id, **self.create)

    def _stored(self) -> list[Envelope]:
        if not self.sessions.is_stored(self.session_id):
            return []
        return self.sessions.read_events(self.session_id)

    def given(self, *appends: Append) -> SessionsScenario:
        """Create the session if needed, append these events, and flush."""
        handle = self._handle()
        for append in appends:
            self.history.append(append.to(handle))
        self.sessions.flush(handle)
        self.first_new_seq = len(self._stored())
        return self

    def when(
        self, command: Callable[[Sessions, str], Any] | Append
    ) -> SessionsScenario:
        """Run one command; an :class:`Append` is appended and flushed."""
        before = self._stored()
        self.first_new_seq = len(before)
        try:
            if isinstance(command, Append):
                handle = self._handle()
                self.result = command.to(handle)
                self.sessions.flush(handle)
            else:
                self.result = command(self.sessions, self.session_id)
        except Exception as error:
            self.error = error
            assert self._stored() == before, "a failed command stored events"
        self.new = self._stored()[len(before) :]
        return self

    @property
    def events(self) -> list[Envelope]:
        """The stored log as it is now."""
        return self._stored()
