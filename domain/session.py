"""The ``Session`` aggregate: one session, one event stream.

The aggregate keeps only the state its rules decide on — the next seq, the surface
(node seqs and types), the open turn and step, pending tool calls, the last time —
never the log itself, so a snapshot stays small and loading a session to append reads
only its tail. Every rule is checked in :meth:`Session.append` before anything is
recorded, in the order of docs/events.md#the-append-pipeline; ``apply`` never validates.
"""

from __future__ import annotations

import os
import time as _time
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, ClassVar

from eventsourcing.domain import (
    BaseAggregate,
    CanInitAggregate,
    CanSnapshotAggregate,
)

from agentlog.domain.errors import (
    CorruptSessionLogError,
    NonJsonDataError,
    SeedError,
    SessionError,
    SessionNotFoundError,
    SurfaceError,
)
from agentlog.domain.events import Erased, SessionEvent, build_event
from agentlog.domain.header import (
    ORIGIN_RULE,
    OWNER_RULE,
    SESSION_FORMAT_VERSION,
    is_origin,
    is_owner,
    is_storable_text,
)
from agentlog.domain.invariants import TurnInvariants
from agentlog.domain.json import Envelope, NotJsonError, dumps, loads, snapshot_json
from agentlog.domain.repair import RepairTracker
from agentlog.domain.surface import Surface, check_intent
from agentlog.domain.topics import HEADER_TOPIC, SNAPSHOT_TOPIC
from agentlog.domain.vocabulary import (
    SURFACE_TYPES,
    check_legacy,
    check_payload,
    check_reserved_type,
)

Clock = Callable[[], int]
"""Returns the wall clock in epoch milliseconds."""

ENVELOPE_KEYS = frozenset(
    {"type", "seq", "time", "data", "sourceEventSeqs", "surfaceOp"}
)


def now_ms() -> int:
    """The wall clock in epoch milliseconds."""
    return _time.time_ns() // 1_000_000


def make_header(
    session_id: str,
    *,
    created_at: int | None = None,
    cwd: str | None = None,
    parent_session: str | None = None,
    seed_length: int | None = None,
    delegation_depth: int | None = None,
    owner: str | None = None,
    origin: str | None = None,
    clock: Clock = now_ms,
) -> dict[str, Any]:
    """Build a header the way the store does, checking its fields.

    See docs/events.md#header.

    Keys appear in the spec's order and only when supplied; ``created_at`` of ``0``
    is kept.
    """
    check_new_session_id(session_id)
    if cwd is not None and (type(cwd) is not str or not os.path.isabs(cwd)):
        raise SessionError(f'session cwd must be an absolute path, got "{cwd}"')
    if created_at is not None and type(created_at) is not int:
        raise SessionError("session createdAt must be an integer (epoch ms)")
    if parent_session is not None and type(parent_session) is not str:
        raise SessionError("session parentSession must be a string")
    for name, value in (
        ("seedLength", seed_length),
        ("delegationDepth", delegation_depth),
    ):
        if value is not None and (type(value) is not int or value < 0):
            raise SessionError(f"session {name} must be a non-negative integer")
    if owner is not None and not is_owner(owner):
        raise SessionError(OWNER_RULE)
    if origin is not None and not is_origin(origin):
        raise SessionError(ORIGIN_RULE)
    header: dict[str, Any] = {
        "version": SESSION_FORMAT_VERSION,
        "id": session_id,
        "createdAt": clock() if created_at is None else created_at,
    }
    if cwd is not None:
        header["cwd"] = cwd
    if parent_session is not None:
        header["parentSession"] = parent_session
    if seed_length is not None:
        header["seedLength"] = seed_length
    if delegation_depth is not None:
        header["delegationDepth"] = delegation_depth
    if owner is not None:
        header["owner"] = owner
    if origin is not None:
        header["origin"] = origin
    return header


def _created_on(created_ms: object) -> datetime:
    """The library's timestamp of the created event, from ``createdAt`` (epoch ms).

    Only ``createdAt`` in the header is ever read back; a value beyond what a
    ``datetime`` holds (a hostile or odd import) falls back to the epoch.
    """
    try:
        return datetime.fromtimestamp(
            (created_ms if type(created_ms) is int else 0) / 1000, tz=UTC
        )
    except (OverflowError, OSError, ValueError):
        return datetime.fromtimestamp(0, tz=UTC)


def check_session_id(session_id: object) -> None:
    """Session ids are opaque, non-empty strings (docs/events.md#ids)."""
    if type(session_id) is not str or not session_id:
        raise SessionError("session id must be a non-empty string")


def check_new_session_id(session_id: object) -> None:
    """A new session's id must also be storable as SQL text on every backend.

    Every store keys rows by id as text: SQLite cannot encode a lone surrogate and
    PostgreSQL text cannot hold NUL. A new id with either is refused on every
    backend alike, so swapping stores never changes which ids are valid.
    """
    check_session_id(session_id)
    if not is_storable_text(str(session_id)):
        raise SessionError("session id must not contain NUL or lone surrogates")


def check_known_session_id(session_id: object) -> None:
    """An id to read: a session id that some store could hold.

    An id no store can hold (NUL, a lone surrogate) was never stored, so reading
    it is :class:`SessionNotFoundError`, as for any missing id, on every backend
    (SQLite would fail to encode it, PostgreSQL to send it).
    """
    check_session_id(session_id)
    if not is_storable_text(str(session_id)):
        raise SessionNotFoundError(str(session_id))


def header_line(header: Mapping[str, Any]) -> dict[str, Any]:
    """The header as the first line of a log: ``{"type":"session", ...header}``."""
    return {"type": "session", **header}


class SessionCreated(CanInitAggregate[str]):
    """Version 1 of every session stream: the immutable header.

    It builds its aggregate the library's way: the inherited
    :meth:`~eventsourcing.domain.CanInitAggregate.mutate` resolves
    :attr:`originator_topic`, gives the new aggregate this event's id, version
    and timestamp (the library's base initialiser), then runs
    ``Session.__init__`` with its header.
    """

    TOPIC: ClassVar[str] = HEADER_TOPIC
    originator_topic = "agentlog.domain.session:Session"

    def __init__(self, originator_id: str, header: dict[str, Any]) -> None:
        self.originator_id = originator_id
        self.originator_version = 1
        self.timestamp = _created_on(header.get("createdAt"))
        self.header = header

    @property
    def encoded(self) -> bytes:
        return dumps(header_line(self.header))


class SessionSnapshot(CanSnapshotAggregate[str]):
    """A compact snapshot of the decision state (no log, no payloads)."""

    TOPIC: ClassVar[str] = SNAPSHOT_TOPIC

    def __init__(
        self, originator_id: str, originator_version: int, state: dict[str, Any]
    ) -> None:
        self.originator_id = originator_id
        self.originator_version = originator_version
        self.state = state

    @property
    def timestamp(self) -> datetime:
        ms = self.state.get("lastTime") or 0
        return datetime.fromtimestamp(ms / 1000, tz=UTC)

    @property
    def topic(self) -> str:  # type: ignore[override]
        return self.TOPIC

    @classmethod
    def take(cls, aggregate: Any) -> SessionSnapshot:
        assert isinstance(aggregate, Session)
        return cls(aggregate.id, aggregate.version, aggregate.decision_state())

    def mutate(self, _: Any) -> Any:
        return Session.from_decision_state(
            self.originator_id, self.originator_version, self.state
        )


class Session(BaseAggregate[str]):
    """An append-only session log, as an event-sourced aggregate.

    Create with :meth:`create`; append with :meth:`append`; the pending events are
    the write-behind buffer an application saves on flush.
    """

    def __init__(self, header: dict[str, Any]) -> None:
        """The state of a session with no events yet (version 1).

        Called by :class:`SessionCreated` when it builds the aggregate; id,
        version and times are set before, by the library.
        """
        self.header = header
        self.surface = Surface()
        self.turns = TurnInvariants()
        self.repair_tracker = RepairTracker()
        self.last_time: int | None = None
        self.invariants = True
        self.clock: Clock = now_ms
        self.corruption: CorruptSessionLogError | None = None

    # ---------------------------------------------------------------- creation

    @classmethod
    def from_header(cls, session_id: str, header: dict[str, Any]) -> Session:
        """A session with no events yet (version 1), as the created event makes it."""
        return cls.from_created(SessionCreated(session_id, header))

    @classmethod
    def from_created(cls, created: SessionCreated) -> Session:
        """The session ``created`` builds (the library's ``mutate``), typed."""
        session = created.mutate(None)
        assert isinstance(session, cls)
        return session

    @classmethod
    def create(
        cls,
        session_id: str,
        header: dict[str, Any] | None = None,
        *,
        seed: Sequence[Mapping[str, Any]] | None = None,
        strict: bool = False,
        invariants: bool = True,
        clock: Clock = now_ms,
    ) -> Session:
        """A new session, optionally seeded with inherited or imported history.

        The header is taken as given (the store validates it, see :func:`make_header`);
        without one a minimal ``{version, id, createdAt}`` is synthesised. Seed events
        pass the seed rules and the checks (a)–(c) of the pipeline, and (d) only when
        ``strict``.
        """
        check_session_id(session_id)
        if header is None:
            header = make_header(session_id, clock=clock)
        try:
            header = snapshot_json(header)
        except NotJsonError:
            raise SessionError(
                "session metadata must be losslessly JSON-serializable"
            ) from None
        created = SessionCreated(session_id, header)
        session = cls.from_created(created)
        session.invariants = invariants
        session.clock = clock
        session.pending_events.append(created)
        if seed is not None:
            session.seed(seed, strict=strict)
        return session

    def seed(
        self,
        seed: Sequence[Mapping[str, Any]],
        *,
        strict: bool = False,
        extend: bool = False,
    ) -> None:
        """Record history events with their own seqs and times (docs/fork.md#seeds).

        With ``extend`` the events continue a seed already recorded (an import
        streamed in batches); their seqs go on from the session's next seq.
        """
        if not isinstance(seed, Sequence) or isinstance(seed, (str, bytes)):
            raise SeedError("seed must be a list of session events")
        if self.seq != 0 and not extend:
            raise SeedError("a seed can only start an empty session")
        for index, event in enumerate(seed, start=self.seq):
            if not isinstance(event, Mapping):
                raise SeedError(f"seed event at index {index} is not an object")
            seq = event.get("seq")
            event_type = event.get("type")
            if type(seq) is not int or seq != index:
                raise SeedError(
                    f"seed event at index {index} has seq {_render(seq)} "
                    f"(expected {index}); seed must be contiguous from 0"
                )
            if type(event_type) is not str or not event_type:
                raise SeedError(f"seed event at index {index} has no type")
            if "data" not in event:
                raise SeedError(f'seed event "{event_type}" (seq {seq}) has no data')
            try:
                data = snapshot_json(event.get("data"))
            except NotJsonError:
                raise NonJsonDataError(
                    f'seed event "{event_type}" (seq {seq}) carries '
                    "non-JSON-serializable data"
                ) from None
            if event_type in SURFACE_TYPES and event.get("surfaceOp") is None:
                raise SeedError(
                    f'seed event "{event_type}" (seq {seq}) is surface-eligible but '
                    "carries no surfaceOp marker"
                )
            try:
                envelope = {
                    key: data if key == "data" else snapshot_json(value)
                    for key, value in event.items()
                }
            except NotJsonError:
                raise NonJsonDataError(
                    f'seed event "{event_type}" (seq {seq}) carries '
                    "non-JSON-serializable data"
                ) from None
            extra = [key for key in envelope if key not in ENVELOPE_KEYS]
            if extra:
                raise SeedError(
                    f'seed event "{event_type}" (seq {seq}) carries unknown key '
                    f'"{extra[0]}"'
                )
            if type(envelope.get("time")) is not int:
                raise SeedError(
                    f'seed event "{event_type}" (seq {seq}) has a time that is not an '
                    "integer (epoch ms)"
                )
            self._check(envelope, invariants=strict)
            self._record(envelope)

    # ------------------------------------------------------------------ append

    @property
    def seq(self) -> int:
        """The next seq (the number of events in the log)."""
        return self.version - 1

    def append(
        self,
        event_type: str,
        data: Any,
        surface_op: Any = None,
        source_event_seqs: Any = None,
    ) -> Envelope:
        """Validate, then record one event; returns a copy of the recorded event.

        Nothing is recorded when a check fails (docs/events.md#the-append-pipeline):
        lossless JSON and the surface intent, the payload model, the strict-fold surface
        rules, then — when invariants are on — the turn/step/tool-call rules.
        """
        if type(event_type) is not str or not event_type:
            raise SessionError("session event type must be a non-empty string")
        try:
            data = snapshot_json(data)
        except NotJsonError:
            raise NonJsonDataError(
                f'session event "{event_type}" carries non-JSON-serializable data'
            ) from None
        seq = self.seq
        check_intent(event_type, surface_op, source_event_seqs, seq)
        envelope: Envelope = {
            "type": event_type,
            "seq": seq,
            "time": self.clock(),
            "data": data,
        }
        if source_event_seqs is not None:
            envelope["sourceEventSeqs"] = list(source_event_seqs)
        if surface_op is not None:
            envelope["surfaceOp"] = snapshot_json(surface_op)
        self._check(envelope, invariants=self.invariants, intent_checked=True)
        event = self._record(envelope)
        return loads(event.encoded)  # type: ignore[no-any-return]

    def _check(
        self, envelope: Envelope, *, invariants: bool, intent_checked: bool = False
    ) -> None:
        if self.corruption is not None:
            raise self.corruption
        event_type = envelope["type"]
        if not intent_checked:
            check_intent(
                event_type,
                envelope.get("surfaceOp"),
                envelope.get("sourceEventSeqs"),
                envelope["seq"],
            )
        check_legacy(self.id, event_type, envelope["data"], envelope["seq"])
        check_reserved_type(self.id, event_type, envelope["seq"])
        check_payload(event_type, envelope["data"])
        self.surface.check(envelope)
        if invariants:
            self.turns.check(envelope)

    def _record(self, envelope: Envelope) -> SessionEvent:
        event = build_event(self.id, envelope)
        event.encoded  # noqa: B018 - encode now, so saving can never fail on it
        self.apply_envelope(envelope)
        self.version = event.originator_version
        self.pending_events.append(event)
        return event

    def apply_stored(self, envelope: Envelope) -> None:
        """Fold one event read from a store, checking the strict surface rules.

        A stored log may have been written by anything; a log that breaks the
        surface rules marks the aggregate corrupt (naming the seq) instead of
        being repaired or extended.
        """
        if self.corruption is None:
            try:
                check_intent(
                    envelope["type"],
                    envelope.get("surfaceOp"),
                    envelope.get("sourceEventSeqs"),
                    envelope["seq"],
                )
                self.surface.check(envelope)
            except (SessionError, KeyError, TypeError) as error:
                self.corruption = self._corrupt(envelope, error)
        self.apply_envelope(envelope)

    def _corrupt(
        self, envelope: Envelope, error: BaseException
    ) -> CorruptSessionLogError:
        seq = envelope.get("seq")
        return CorruptSessionLogError(
            f'corrupt session log: session "{self.id}" fails the surface fold '
            f"at seq {seq}: {error}",
            session_id=self.id,
            seq=seq if type(seq) is int else None,
        )

    def apply_envelope(self, envelope: Envelope) -> None:
        """Fold one recorded event into the decision state (never validates)."""
        if self.corruption is None:
            try:
                self.surface.apply(envelope)
            except (SurfaceError, KeyError, TypeError) as error:
                self.corruption = self._corrupt(envelope, error)
        self.turns.apply(envelope)
        self.repair_tracker.apply(envelope)
        self.last_time = envelope.get("time")

    # ------------------------------------------------------------------ repair

    def closers(self) -> list[Envelope]:
        """The events that close an open last turn (docs/repair.md), or ``[]``."""
        if self.last_time is None:
            return []
        return self.repair_tracker.closers(self.seq, self.last_time)

    def repair(self) -> list[Envelope]:
        """Append the closers of an open last turn; returns what was appended."""
        closers = self.closers()
        for closer in closers:
            self._check(closer, invariants=self.invariants)
            self._record(closer)
        return [loads(dumps(closer)) for closer in closers]

    @property
    def is_turn_open(self) -> bool:
        return self.repair_tracker.open_turn is not None

    # --------------------------------------------------------------- snapshots

    def decision_state(self) -> dict[str, Any]:
        """Everything the rules need, as compact JSON (for snapshots)."""
        return {
            "header": self.header,
            "surface": self.surface.to_state(),
            "turns": self.turns.to_state(),
            "repair": self.repair_tracker.to_state(),
            "lastTime": self.last_time,
        }

    @classmethod
    def from_decision_state(
        cls, session_id: str, version: int, state: Mapping[str, Any]
    ) -> Session:
        session = cls.from_header(session_id, dict(state["header"]))
        session.version = version
        session.surface = Surface.from_state(state["surface"])
        session.turns = TurnInvariants.from_state(state["turns"])
        session.repair_tracker = RepairTracker.from_state(state["repair"])
        session.last_time = state["lastTime"]
        if session.last_time is not None:
            session.modified_on = datetime.fromtimestamp(
                session.last_time / 1000, tz=UTC
            )
        return session


def project_session(aggregate: Session | None, events: Any) -> Session | None:
    """A plain-loop projector: the library's default checks a Protocol per event.

    Stored events are folded with the strict surface checks; a missing header or a
    gap in the versions is a corrupt log naming the seq. An erased session's
    tombstone makes the stream a missing session (``None``).
    """
    for event in events:
        if isinstance(event, Erased):
            return None
        if aggregate is None:
            if not isinstance(event, (SessionCreated, SessionSnapshot)):
                seq = event.originator_version - 2
                raise CorruptSessionLogError(
                    f'corrupt session log: session "{event.originator_id}" has no '
                    "header row",
                    session_id=str(event.originator_id),
                    seq=seq if seq >= 0 else None,
                )
            aggregate = event.mutate(None)
            continue
        if event.originator_version != aggregate.version + 1:
            missing = aggregate.version - 1
            raise CorruptSessionLogError(
                f'corrupt session log: session "{aggregate.id}" has a seq gap at '
                f"seq {missing}",
                session_id=aggregate.id,
                seq=missing,
            )
        aggregate.apply_stored(event.envelope)
        aggregate.version = event.originator_version
    if aggregate is not None and aggregate.last_time is not None:
        aggregate.modified_on = datetime.fromtimestamp(
            aggregate.last_time / 1000, tz=UTC
        )
    return aggregate


def _render(value: object) -> str:
    """A value as JavaScript's template literal would print it in a message."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


__all__ = [
    "SESSION_FORMAT_VERSION",
    "Clock",
    "Session",
    "SessionCreated",
    "SessionSnapshot",
    "check_session_id",
    "header_line",
    "make_header",
    "now_ms",
    "project_session",
]
