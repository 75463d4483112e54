"""Import and export of whole sessions: the use cases, with any size in bounded memory.

The byte formats live in :mod:`agentlog.infrastructure.formats`; this module sees a
log only through :class:`LogSource` (a header, a report, and passes over the events)
and writes one through a plain iterator, so the application never parses a file.

An import stores all of a log or none of it. A log of up to :data:`ONE_PASS_EVENTS`
events is checked and stored in one transaction, as any seeded session is. A longer
one is read twice: the first pass checks every event against a throwaway aggregate
(which keeps only decision state, never the events), so a refusal names its file
line before anything is written; the second maps it batch by batch into ONE
transaction (the recorder's ``insert_stream``), so an import stopped by a signal,
a lost connection or a file that changed between the passes stores nothing. The
in-memory store, which holds everything in memory anyway, gets one flush.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from eventsourcing.persistence import IntegrityError

from agentlog.application.store_errors import store_errors
from agentlog.domain.errors import (
    AgentlogError,
    LogImportError,
    SessionAlreadyExistsError,
)
from agentlog.domain.session import Session, make_header

if TYPE_CHECKING:
    from collections.abc import Iterable, Iterator, Mapping, Sequence

    from eventsourcing.persistence import StoredEvent

    from agentlog.application.handle import SessionHandle
    from agentlog.application.sessions import Sessions
    from agentlog.domain.json import Envelope

BATCH_EVENTS = 2000
"""Events checked or stored per step of a long import."""

ONE_PASS_EVENTS = 2000
"""A log up to this long is checked and stored in one pass and one transaction;
a longer one is read twice (check, then store) a batch at a time, so an import's
memory does not grow with the log (docs/performance.md#memory-of-an-import)."""

EXPORT_PAGE = 1000
"""Events read from the store per query while exporting."""

_PLACEHOLDER = re.compile(r"\{\{[A-Za-z0-9_.-]+\}\}")
"""A snapshot placeholder (``{{sessionId}}``): never a session's real id."""


class LogSource(Protocol):
    """A log file opened for import (see :func:`~agentlog.infrastructure.formats`).

    ``header`` holds the header's keys (without ``type``); ``report`` says what the
    reader dropped or mapped inexactly, complete once a pass has finished.
    """

    @property
    def name(self) -> str: ...

    @property
    def header(self) -> Mapping[str, Any]: ...

    @property
    def report(self) -> list[str]: ...

    def events(self, phase: str) -> Iterator[tuple[int, Envelope]]:
        """A fresh pass over ``(file line, event)``; ``phase`` names it for progress."""
        ...


@runtime_checkable
class StreamInserter(Protocol):
    """A recorder that stores a stream of row batches in one transaction."""

    def insert_stream(
        self, first: Sequence[StoredEvent], more: Iterable[Sequence[StoredEvent]]
    ) -> None: ...


@dataclass(frozen=True)
class ImportResult:
    """The id of the session an import stored, its event count, and the report."""

    session_id: str
    events: int
    report: list[str] = field(default_factory=list)


def import_session(
    app: Sessions,
    log: LogSource,
    *,
    session_id: str | None = None,
    parent_session: str | None = None,
    strict: bool = False,
) -> ImportResult:
    """Store ``log`` as a new session: its events become the seed, checked as one.

    ``session_id`` and ``parent_session`` replace the header's (an import under a new
    id); otherwise the header's are kept, and an id the store already holds is
    refused with :class:`SessionAlreadyExistsError`, and so is a placeholder id
    (``{{sessionId}}``, :class:`LogImportError`). A log with no events is stored
    as its header alone. Errors in events are :class:`LogImportError` naming the
    file line.
    """
    app.check_writable()
    header = dict(log.header)
    if session_id is None and _PLACEHOLDER.search(str(header["id"])):
        msg = (
            f'line 1: the session id "{header["id"]}" is a placeholder, not an id;'
            " import it under a new id (agentlog import --new-id)"
        )
        raise LogImportError(msg, line=1)
    new_id = str(header["id"]) if session_id is None else session_id
    parent = header.get("parentSession") if parent_session is None else parent_session
    header.update(id=new_id)
    if parent is not None:
        header["parentSession"] = parent
    if app.live_session(new_id) is not None or app.is_stored(new_id):
        msg = f'session "{new_id}" already exists'
        raise SessionAlreadyExistsError(msg)
    first_pass = log.events("reading")
    first = list(itertools.islice(first_pass, ONE_PASS_EVENTS + 1))
    if len(first) <= ONE_PASS_EVENTS:
        handle = _create(app, log, header, first, strict=strict)
        if not first:
            app.save(handle.aggregate)  # the header alone is the created event
        app.close(handle)
        return ImportResult(new_id, len(first), list(log.report))
    checker = _scratch(log, header)
    for batch in _batches(itertools.chain(first, first_pass)):
        _seed(checker, log, batch, strict=strict)
        del checker.pending_events[:]
    report = list(log.report)
    stored = log.events("storing")
    handle = _create(app, log, header, next(_batches(stored), []), strict=strict)
    try:
        _store_rest(app, handle, log, _batches(stored), strict=strict)
    except BaseException:
        app.discard(handle)  # the transaction rolled back: nothing of it is stored
        raise
    count = handle.seq
    app.close(handle)
    return ImportResult(new_id, count, report)


def _store_rest(
    app: Sessions,
    handle: SessionHandle,
    log: LogSource,
    batches: Iterator[list[tuple[int, Envelope]]],
    *,
    strict: bool,
) -> None:
    """Store the handle's pending events and every further batch, all or nothing."""
    aggregate = handle.aggregate
    recorder = app.recorder
    if not isinstance(recorder, StreamInserter):
        for batch in batches:
            _seed(aggregate, log, batch, strict=strict)
        app.flush(handle)
        return

    def mapped() -> list[StoredEvent]:
        rows = [app.mapper.to_stored_event(event) for event in aggregate.pending_events]
        del aggregate.pending_events[:]
        return rows

    def more() -> Iterator[list[StoredEvent]]:
        for batch in batches:
            _seed(aggregate, log, batch, strict=strict)
            yield mapped()

    try:
        with store_errors():
            recorder.insert_stream(mapped(), more())
    except IntegrityError:
        msg = f'session "{handle.id}" already exists'
        raise SessionAlreadyExistsError(msg) from None
    app.saver.snapshot_if_due(aggregate, 0)  # as a flush of these rows would


def _header_args(header: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "created_at": header.get("createdAt"),
        "cwd": header.get("cwd"),
        "parent_session": header.get("parentSession"),
        "seed_length": header.get("seedLength"),
        "delegation_depth": header.get("delegationDepth"),
        "owner": header.get("owner"),
        "origin": header.get("origin"),
    }


def _create(
    app: Sessions,
    log: LogSource,
    header: Mapping[str, Any],
    first: list[tuple[int, Envelope]],
    *,
    strict: bool,
) -> SessionHandle:
    """The live session with the first batch as its seed (nothing stored yet).

    The batch is checked on a scratch aggregate first, so a refusal names its line.
    """
    scratch = _scratch(log, header)
    _seed(scratch, log, first, strict=strict)
    del scratch.pending_events[:]  # checked; the copies are not kept
    return app.create_session(
        session_id=str(header["id"]),
        seed=[event for _, event in first],
        strict=strict,
        **_header_args(header),
    )


def _scratch(log: LogSource, header: Mapping[str, Any]) -> Session:
    """An aggregate that checks events and is never stored."""
    session_id = str(header["id"])
    try:
        checked = make_header(session_id, **_header_args(header))
    except AgentlogError as error:
        raise _at_line(error, "line 1") from None
    return Session.create(session_id, checked)


def _seed(
    aggregate: Session,
    log: LogSource,
    batch: list[tuple[int, Envelope]],
    *,
    strict: bool,
) -> None:
    """Seed the batch; a refusal names the file line of the event that failed.

    A seed records event by event, so the count recorded before the refusal is the
    failing event's index in the batch.
    """
    before = aggregate.seq
    try:
        aggregate.seed([event for _, event in batch], strict=strict, extend=True)
    except AgentlogError as error:
        line = batch[min(aggregate.seq - before, len(batch) - 1)][0]
        raise _at_line(error, f"line {line}") from None


def _at_line(error: AgentlogError, where: str) -> AgentlogError:
    """The same error (same class, for callers that catch it), its message located.

    The error was raised by the domain for this import alone and is not shared, so
    its message can be rewritten in place.
    """
    error.args = (f"{where}: {error}", *error.args[1:])
    return error


def _batches(
    events: Iterator[tuple[int, Envelope]],
) -> Iterator[list[tuple[int, Envelope]]]:
    while batch := list(itertools.islice(events, BATCH_EVENTS)):
        yield batch


def export_events(app: Sessions, session_id: str) -> Iterator[Envelope]:
    """The session's events in order, read a page at a time (unflushed included)."""
    after: int | None = None
    while page := app.read_events(session_id, after=after, limit=EXPORT_PAGE):
        yield from page
        after = int(page[-1]["seq"])
