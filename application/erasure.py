"""Erasing sessions: the erase itself, the audit of erasures, and retention.

See docs/erasure.md. An erase is one transaction of the store: a content-free
tombstone (:class:`~agentlog.domain.events.Erased`) is written one version above
the session's last event, every view row about the session is purged while its
events are still readable, then its events and snapshots are deleted. The
tombstone's version is the check: a concurrent append takes that version first and
the erase changes nothing. Afterwards the tombstone keeps the stream occupied, so
a stale writer anywhere fails with :class:`SessionErasedError` instead of
recreating the session, and projections running elsewhere purge the session when
they reach the tombstone in the notification log.
"""

from __future__ import annotations

import contextlib
import logging
import time
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from eventsourcing.persistence import IntegrityError

from agentlog.application.catch_up import views_of
from agentlog.application.locks import thread_owner
from agentlog.application.search_index import search_index_of
from agentlog.domain.errors import (
    SessionConflictError,
    SessionErasedError,
    SessionError,
    SessionNotFoundError,
)
from agentlog.domain.events import Erased
from agentlog.domain.session import check_known_session_id, check_session_id

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Sequence

    from eventsourcing.persistence import StoredEvent

    from agentlog.application.sessions import Sessions

logger = logging.getLogger(__name__)

REASON_MAX_CHARS = 1000
ERASE_ATTEMPTS = 5
"""An explicit erase re-reads the session this often when appends keep winning."""
GC_BATCH = 100
"""Sessions erased per transaction by ``erase_older_than`` (one by one on a
conflict, so a session appended to during the run is kept and the rest go)."""
PAGE = 1000


@runtime_checkable
class StreamEraser(Protocol):
    """A recorder that erases streams (``agentlog.infrastructure.recorders``)."""

    def erase_streams(
        self,
        tombstones: Sequence[StoredEvent],
        purge: Callable[[Any], None],
        snapshots: Any | None,
    ) -> None: ...

    def erase_snapshots(self, snapshots: Any, session_ids: Sequence[str]) -> None: ...


@runtime_checkable
class PendingErasures(Protocol):
    """A recorder that records erasures whose after-commit work is pending."""

    def erase_pending(self, limit: int) -> list[str]: ...

    def erase_done(self, session_ids: Sequence[str]) -> None: ...


@dataclass(frozen=True, slots=True)
class Erasure:
    """One audit record: which session, when (epoch ms) and why. No content.

    ``pending`` (from :meth:`SessionEraser.erase` only) names the work after the
    commit that could not be done yet (``"keys"``, ``"scrub"``, ``"hooks"``): the
    session is erased, and that work is resumed (docs/erasure.md#after-the-commit).
    """

    session_id: str
    erased_at: int
    reason: str
    pending: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": self.session_id,
            "erasedAt": self.erased_at,
            "reason": self.reason,
        }
        if self.pending:
            out["pending"] = list(self.pending)
        return out


@dataclass(slots=True)
class RetentionReport:
    """What ``erase_older_than`` found and did."""

    cutoff: int
    dry_run: bool
    candidates: list[str] = field(default_factory=list)
    erased: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    """Candidates appended to (or erased by someone else) during the run."""
    scrubbed: bool = True
    """False when the store could not drop every old page (SQLite: a reader held
    the WAL); the erased rows are gone either way."""
    pending: list[str] = field(default_factory=list)
    """Erased sessions whose work after the commit (keys, scrub, hooks) is still
    not done at the end of the run; the next open, erase or gc resumes it."""

    def to_json(self) -> dict[str, Any]:
        return {
            "cutoff": self.cutoff,
            "dryRun": self.dry_run,
            "candidates": self.candidates,
            "erased": self.erased,
            "kept": self.kept,
            "scrubbed": self.scrubbed,
            "pending": self.pending,
        }


def check_reason(reason: object) -> str:
    if type(reason) is not str or not reason or len(reason) > REASON_MAX_CHARS:
        msg = (
            "erase reason must be a non-empty string of at most "
            f"{REASON_MAX_CHARS} characters"
        )
        raise SessionError(msg)
    return reason


class SessionEraser:
    """The erase use cases of one :class:`Sessions` (``app.eraser``).

    After every committed erase the erased sessions' data keys are forgotten
    (crypto-shredding), the store is scrubbed and ``hooks`` run with the erased
    ids, in order. None of that makes a committed erase fail: what fails stays
    recorded in the store and is resumed (docs/erasure.md#after-the-commit).
    """

    def __init__(self, app: Sessions) -> None:
        self.app = app
        self.hooks: list[Callable[[tuple[str, ...]], None]] = []

    def add_hook(self, hook: Callable[[tuple[str, ...]], None]) -> Callable[[], None]:
        """Run ``hook(ids)`` after each erase commits; returns a remover."""
        self.hooks.append(hook)

        def remove() -> None:
            if hook in self.hooks:
                self.hooks.remove(hook)

        return remove

    # ------------------------------------------------------------- erase

    def erase(
        self, session_id: str, *, reason: str, descendants: bool = False
    ) -> list[Erasure]:
        """Erase one stored session (and its stored subtree with ``descendants``).

        A missing or already erased id raises :class:`SessionNotFoundError`,
        exactly as every read does; with ``descendants``, only when no fork
        below it is stored either (its forks are erased when it is gone). A
        session appended to while it is being erased is read again and erased
        with the append (up to
        :data:`ERASE_ATTEMPTS` times, then :class:`SessionConflictError`).
        """
        check_session_id(session_id)
        reason = check_reason(reason)
        check_known_session_id(session_id)  # an id no store can hold: not found
        for attempt in range(ERASE_ATTEMPTS):
            ids = [session_id]
            if descendants:
                ids += self.descendants(session_id)
            with self._holding(ids, wait=True):
                lasts = self._last_versions(ids)
                # Gone already (erased before its forks): its stored forks still
                # go with ``descendants``; with none either, it is not found.
                if not lasts or (session_id not in lasts and not descendants):
                    raise SessionNotFoundError(session_id)
                try:
                    erased = self._erase(lasts, reason)
                except IntegrityError:
                    logger.info(
                        "erase of %r lost to a concurrent append; reading it again",
                        session_id,
                    )
                    if attempt == ERASE_ATTEMPTS - 1:
                        seq = lasts[session_id] - 1
                        raise SessionConflictError(session_id, seq) from None
                    continue
                except SessionErasedError:
                    # Another process erased it (or part of the subtree) first.
                    if attempt == ERASE_ATTEMPTS - 1:
                        raise SessionNotFoundError(session_id) from None
                    continue
            pending = self.finish([e.session_id for e in erased])
            return [replace(e, pending=pending) for e in erased]
        raise AssertionError("unreachable")  # pragma: no cover

    # -------------------------------------------------- after the commit

    def finish(
        self, session_ids: Sequence[str], *, scrub: bool = True, record: bool = True
    ) -> tuple[str, ...]:
        """The work after a committed erase: keys, scrub, hooks; never raises.

        Each step runs even if an earlier one failed. When all succeed (and
        ``record``), the store's record that the work is pending is deleted;
        otherwise it stays and :meth:`resume` finishes it later (at the next
        open, erase or gc). Returns the steps still pending (empty when done).
        """
        if not session_ids:
            return ()
        ids = tuple(session_ids)
        pending: list[str] = []
        steps: list[tuple[str, Callable[[], object]]] = [
            ("keys", lambda: self.app.forget_keys(ids))
        ]
        if scrub:
            steps.append(("scrub", self._scrub_or_warn))
        steps.append(("hooks", lambda: self._run_hooks(ids)))
        for name, step in steps:
            try:
                step()
            except Exception as error:  # reported, then resumed
                logger.warning(
                    "erased %d session(s); their %s are pending (%s), resumed at "
                    "the next open, erase or gc",
                    len(ids),
                    name,
                    type(error).__name__,
                )
                pending.append(name)
        if not pending and record:
            self._done(ids)
        return tuple(pending)

    def _done(self, ids: Sequence[str]) -> None:
        """Delete the record that these erasures' work is pending."""
        if not ids:
            return
        try:
            self._recorder_pending().erase_done(ids)
        except Exception as error:  # done again next time
            logger.warning(
                "erased %d session(s) and finished their work, but could not "
                "record it (%s): it runs again at the next open",
                len(ids),
                type(error).__name__,
            )

    def resume(self) -> list[str]:
        """Finish the after-commit work of every erase that left it pending.

        Returns the erased ids whose work is still pending. Never raises: a
        store that cannot be read now (or holds no record yet) is tried again
        next time.
        """
        recorder = self._recorder_pending()
        still: list[str] = []
        seen: set[str] = set()
        while True:
            try:
                ids = [i for i in recorder.erase_pending(PAGE) if i not in seen]
            except Exception as error:  # tried again next time
                # A store made before the record existed has no table until it
                # is opened with create_tables (or migrated): nothing pending.
                missing = "no such table" in str(error) or "does not exist" in str(
                    error
                )
                logger.log(
                    logging.DEBUG if missing else logging.WARNING,
                    "could not read the erasures pending completion (%s)",
                    type(error).__name__,
                )
                return still
            if not ids:
                return still
            seen.update(ids)
            if self.finish(ids):
                still += ids

    def _recorder_pending(self) -> PendingErasures:
        recorder = self.app.recorder
        if not isinstance(recorder, PendingErasures):
            msg = f"{type(recorder).__qualname__} cannot erase sessions"
            raise SessionError(msg)
        return recorder

    def _scrub_or_warn(self) -> None:
        if not self.scrub():
            logger.warning(
                "erased, but the WAL could not be truncated (a reader holds an "
                "old snapshot): old page copies stay in it until the next "
                "checkpoint"
            )

    def descendants(self, session_id: str) -> list[str]:
        """The stored subtree below ``session_id`` (the lineage view, caught up)."""
        views = views_of(self.app)
        views.catch_up()
        rows = views.lineage_view.select_subtree(session_id)
        return sorted({row.session_id for row in rows} - {session_id})

    def _last_versions(self, ids: Sequence[str]) -> dict[str, int]:
        """Each stored, not erased session's last version (others left out)."""
        found: dict[str, int] = {}
        for session_id in ids:
            rows = self.app.recorder.select_events(session_id, desc=True, limit=1)
            if rows and rows[0].topic != Erased.TOPIC:
                found[session_id] = rows[0].originator_version
        return found

    def _erase(self, lasts: dict[str, int], reason: str) -> list[Erasure]:
        """One transaction: tombstones at ``last + 1``, views purged, rows gone."""
        app = self.app
        recorder = app.recorder
        if not isinstance(recorder, StreamEraser):
            msg = f"{type(recorder).__qualname__} cannot erase sessions"
            raise SessionError(msg)
        now = app.clock()
        tombstones = [
            Erased(session_id, last + 1, now, reason)
            for session_id, last in sorted(lasts.items())
        ]
        ids = [t.originator_id for t in tombstones]
        views = list(views_of(app).views)
        index = search_index_of(app)
        if index is not None:
            views.append(index.search.view)

        def purge(cursor: Any) -> None:
            for view in views:
                view.purge(ids, cursor)

        snapshots = None if app.snapshots is None else app.snapshots.recorder
        recorder.erase_streams(
            [app.mapper.to_stored_event(t) for t in tombstones], purge, snapshots
        )
        for session_id in ids:
            app.drop_erased(session_id)
        logger.info("erased %d session(s): %s", len(ids), ", ".join(ids))
        return [Erasure(t.originator_id, t.erased_at, t.reason) for t in tombstones]

    def after_snapshot(self, session_id: str) -> None:
        """Delete a snapshot a writer stored after the session was erased.

        A writer saves a snapshot after its flush; an erase elsewhere can commit
        in between and find no snapshot to delete. The writer checks for the
        tombstone after each snapshot it stores: whichever comes second deletes
        the snapshot, so none outlives the erase.
        """
        recorder = self.app.recorder
        snapshots = None if self.app.snapshots is None else self.app.snapshots.recorder
        if snapshots is None or not isinstance(recorder, StreamEraser):
            return
        if self.app.is_erased(session_id):
            recorder.erase_snapshots(snapshots, [session_id])
            logger.info("dropped the snapshot of erased session %r", session_id)

    @contextlib.contextmanager
    def _holding(self, ids: Sequence[str], *, wait: bool) -> Iterator[list[str]]:
        """Hold each session's in-process lock (sorted: no lock-order deadlock).

        With ``wait`` a session a command holds is waited for (then
        :class:`SessionBusyError`); without, it is left out of the yielded ids.
        """
        owner = thread_owner()
        held: list[str] = []
        try:
            for session_id in sorted(set(ids)):
                if wait:
                    self.app.locks.acquire(session_id, owner, self.app.command_timeout)
                elif not self.app.locks.try_hold(session_id, owner):
                    continue
                held.append(session_id)
            yield held
        finally:
            for session_id in held:
                self.app.locks.release(session_id, owner)

    def _run_hooks(self, ids: tuple[str, ...]) -> None:
        """Every hook runs; the first failure is raised after the others ran."""
        failure: Exception | None = None
        for hook in list(self.hooks):
            try:
                hook(ids)
            except Exception as error:  # raised below
                failure = failure or error
        if failure is not None:
            raise failure

    def scrub(self) -> bool:
        """Drop the old copies the store keeps of deleted rows, where it can.

        SQLite: the search index's segments are merged (no erased token
        survives) and the WAL is checkpointed and truncated. Returns False when
        the WAL could not be truncated (a reader held an old snapshot).
        """
        index = search_index_of(self.app)
        if index is not None:
            index.search.view.optimize()
        checkpoint = getattr(self.app.recorder, "checkpoint", None)
        return bool(checkpoint()) if callable(checkpoint) else True

    # ------------------------------------------------------------- audit

    def erasures(self) -> list[Erasure]:
        """Every erasure recorded in the store, oldest first (id, time, reason)."""
        found: list[Erasure] = []
        recorder = self.app.recorder
        position = 0
        while True:
            page = recorder.select_notifications(
                position, PAGE, topics=(Erased.TOPIC,), inclusive_of_start=False
            )
            for notification in page:
                event = self.app.mapper.to_domain_event(notification)
                if isinstance(event, Erased):
                    found.append(
                        Erasure(event.originator_id, event.erased_at, event.reason)
                    )
            if len(page) < PAGE:
                return found
            position = page[-1].id

    # ---------------------------------------------------------- retention

    def erase_older_than(
        self,
        cutoff: int,
        *,
        reason: str,
        dry_run: bool = False,
        progress: Callable[[int, int], None] | None = None,
        vacuum_full: bool = False,
    ) -> RetentionReport:
        """Erase every stored session whose last event is older than ``cutoff``.

        ``cutoff`` is epoch ms; a session's last event time is the listing's
        ``updated_at``. Each erase is checked against the version the listing
        showed, so a session appended to meanwhile is kept (``kept``). Sessions
        go ``GC_BATCH`` per transaction; an interruption leaves each session
        fully erased or untouched. ``progress(done, total)`` is called after
        each batch. The store is scrubbed once at the end, even when nothing
        was erased; with ``vacuum_full`` a PostgreSQL store's tables are then
        rewritten (``VACUUM FULL``), which removes the erased rows' bytes.
        """
        if type(cutoff) is not int:
            msg = "erase_older_than needs a cutoff in epoch milliseconds (an int)"
            raise SessionError(msg)
        reason = check_reason(reason)
        report = RetentionReport(cutoff, dry_run)
        search_index_of(self.app)  # its tables exist before the first erase
        expected = self._old_sessions(cutoff)
        report.candidates = sorted(expected)
        if dry_run:
            return report
        total = len(expected)
        ids = report.candidates
        finished: list[str] = []
        for start in range(0, total, GC_BATCH):
            batch = {key: expected[key] for key in ids[start : start + GC_BATCH]}
            erased = self._erase_batch(batch, reason, report)
            # Keys and hooks per batch; the scrub once, below.
            if not self.finish(erased, scrub=False, record=False):
                finished += erased
            if progress is not None:
                progress(min(start + GC_BATCH, total), total)
        # Even with nothing erased: a stop may have cut an earlier erase off
        # before its scrub, and this is how a user finishes it (docs/erasure.md).
        try:
            report.scrubbed = self.scrub()
        except Exception as error:  # pending, resumed below
            logger.warning("gc: the scrub failed (%s)", type(error).__name__)
            report.scrubbed = False
        else:
            self._done(finished)
        report.pending = self.resume()
        vacuum = getattr(self.app.recorder, "vacuum_full", None)
        if vacuum_full and callable(vacuum):
            vacuum()
        return report

    def _old_sessions(self, cutoff: int) -> dict[str, int]:
        """Stored sessions last written before ``cutoff``: id -> expected version."""
        views = views_of(self.app)
        views.catch_up()
        listing = views.listing_view
        found: dict[str, int] = {}
        after = None
        while True:
            rows = listing.select_page(limit=PAGE, after=after)
            for row in rows:
                updated = row.updated_at
                if updated is not None and updated < cutoff and row.event_count > 0:
                    found[row.session_id] = row.event_count + 1
            if len(rows) < PAGE:
                return found
            last = rows[-1]
            after = (
                last.created_at if last.created_at is not None else 0,
                last.session_id,
            )

    def _erase_batch(
        self, batch: dict[str, int], reason: str, report: RetentionReport
    ) -> list[str]:
        """Erase a batch in one transaction; after a conflict, one at a time."""
        with self._holding(list(batch), wait=False) as held:
            busy = sorted(set(batch) - set(held))
            mine = {key: batch[key] for key in held if not self._unflushed(key)}
            busy += sorted(set(held) - set(mine))
            report.kept += busy
            if not mine:
                return []
            try:
                erased = self._erase(mine, reason)
            except (IntegrityError, SessionErasedError):
                erased = []
                for key, version in sorted(mine.items()):
                    try:
                        erased += self._erase({key: version}, reason)
                    except (IntegrityError, SessionErasedError):
                        report.kept.append(key)
        report.erased += [e.session_id for e in erased]
        return [e.session_id for e in erased]

    def _unflushed(self, session_id: str) -> bool:
        handle = self.app.live_session(session_id)
        return handle is not None and handle.unflushed > 0


def parse_duration(text: str) -> int:
    """``30d``, ``12h``, ``90m``, ``45s`` as milliseconds; ValueError otherwise."""
    units = {"d": 86_400_000, "h": 3_600_000, "m": 60_000, "s": 1_000}
    value, unit = text[:-1], text[-1:]
    if unit not in units or not value.isascii() or not value.isdigit():
        msg = f"a duration is a whole number and a unit (d, h, m or s), got {text!r}"
        raise ValueError(msg)
    return int(value) * units[unit]


def cutoff_before(duration_ms: int, now_ms: int | None = None) -> int:
    """The epoch-ms cutoff ``duration_ms`` before now."""
    now = int(time.time() * 1000) if now_ms is None else now_ms
    return now - duration_ms


__all__ = [
    "Erasure",
    "RetentionReport",
    "SessionEraser",
    "check_reason",
    "cutoff_before",
    "parse_duration",
]
