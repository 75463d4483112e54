"""The session recorder's contract: what agentlog adds to the library's
application recorder (whose own cases ``test_library_cases`` runs)."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from eventsourcing.persistence import IntegrityError, StoredEvent

from agentlog.domain.errors import SessionErasedError
from agentlog.infrastructure.recorders import ERASED_TOPIC


def row(session_id: str, version: int, topic: str = "t") -> StoredEvent:
    return StoredEvent(session_id, version, topic, f"{session_id}{version}".encode())


def no_views(cursor: Any) -> None:
    """The erase's view purge (no views here)."""


def versions(recorder: Any, session_id: str) -> list[int]:
    return [event.originator_version for event in recorder.select_events(session_id)]


class SessionRecorderCases:
    """``recorder`` is the application recorder of a fresh ``Sessions``,
    ``snapshots`` its snapshot recorder."""

    def test_erase_leaves_the_tombstone_alone_and_hides_the_rows(
        self, recorder: Any
    ) -> None:
        recorder.insert_events([row("a", 1), row("a", 2), row("b", 1)])
        recorder.erase_streams([row("a", 3, ERASED_TOPIC)], no_views, None)
        assert versions(recorder, "a") == [3]
        assert versions(recorder, "b") == [1]
        topics = [n.topic for n in recorder.select_notifications(None, 100)]
        assert topics == ["t", ERASED_TOPIC]

    def test_no_write_continues_an_erased_stream(self, recorder: Any) -> None:
        """A stale writer writes from at most one above what it last saw, so at
        or below the tombstone's version, or right above it."""
        recorder.insert_events([row("a", 1)])
        recorder.erase_streams([row("a", 2, ERASED_TOPIC)], no_views, None)
        for version in (1, 2, 3):
            with pytest.raises((SessionErasedError, IntegrityError)):
                recorder.insert_events([row("a", version)])
        assert versions(recorder, "a") == [2]

    def test_a_refused_write_stores_nothing_and_the_next_one_goes_through(
        self, recorder: Any, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A write of two streams, one of them erased, stores neither; one that
        meets a stored version stores nothing either; the recorder then takes
        the next write, and nothing was left for the pool to clean up (it logs
        a warning when it must roll back a connection given back)."""
        caplog.set_level(logging.WARNING)
        recorder.insert_events([row("a", 1), row("b", 1)])
        recorder.erase_streams([row("b", 2, ERASED_TOPIC)], no_views, None)
        with pytest.raises(SessionErasedError):
            recorder.insert_events([row("a", 2), row("b", 3)])
        with pytest.raises(IntegrityError):
            recorder.insert_events([row("a", 2), row("a", 1)])
        for _ in range(3):  # more writes than the pool has connections
            with pytest.raises(SessionErasedError):
                recorder.insert_events([row("b", 3)])
        recorder.insert_events([row("a", 2), row("a", 3)])
        assert versions(recorder, "a") == [1, 2, 3]
        assert versions(recorder, "b") == [2]
        ids = [n.id for n in recorder.select_notifications(None, 100)]
        assert ids == sorted(ids)
        assert [r.getMessage() for r in caplog.records] == []

    def test_an_erase_racing_an_append_fails_whole(self, recorder: Any) -> None:
        recorder.insert_events([row("a", 1), row("a", 2), row("b", 1)])
        with pytest.raises(IntegrityError):
            recorder.erase_streams(
                [row("b", 2, ERASED_TOPIC), row("a", 2, ERASED_TOPIC)], no_views, None
            )
        assert versions(recorder, "a") == [1, 2]
        assert versions(recorder, "b") == [1]

    def test_replace_snapshot_drops_only_the_replaced_snapshots(
        self, recorder: Any, snapshots: Any
    ) -> None:
        """The snapshots of the session from ``since`` up to below the new one go;
        earlier ones and other sessions' stay (docs/persistence.md#snapshots)."""
        snapshots.insert_events([row("a", v, "s") for v in (3, 5, 7)])
        snapshots.insert_events([row("b", 6, "s")])
        recorder.replace_snapshot(snapshots, row("a", 9, "s"), 5)
        assert versions(snapshots, "a") == [3, 9]
        assert versions(snapshots, "b") == [6]
        with pytest.raises(IntegrityError):  # another writer's, at that version
            recorder.replace_snapshot(snapshots, row("a", 9, "s"), 0)
        assert versions(snapshots, "a") == [3, 9]

    def test_copy_stream_copies_the_rows_with_the_header_in_one_write(
        self, recorder: Any
    ) -> None:
        if not hasattr(recorder, "copy_stream"):
            pytest.skip("this backend forks by replaying events")
        recorder.insert_events([row("a", 1), row("a", 2), row("a", 3)])
        recorder.copy_stream(row("c", 1, "header"), "a", 2)
        copied = recorder.select_events("c")
        assert [(e.originator_version, e.state) for e in copied] == [
            (1, b"c1"),
            (2, b"a2"),
        ]
        with pytest.raises(IntegrityError):
            recorder.copy_stream(row("c", 1, "header"), "a", 3)
        assert versions(recorder, "c") == [1, 2]

    def test_insert_stream_is_all_or_nothing(self, recorder: Any) -> None:
        if not hasattr(recorder, "insert_stream"):
            pytest.skip("this backend has no whole-stream write")
        recorder.insert_stream([row("a", 1)], iter([[row("a", 2)], [row("a", 3)]]))
        assert versions(recorder, "a") == [1, 2, 3]
        with pytest.raises(IntegrityError):
            recorder.insert_stream([row("b", 1)], iter([[row("b", 2)], [row("b", 2)]]))
        assert versions(recorder, "b") == []

    def test_select_events_at_places_reads_exactly_those_rows(
        self, recorder: Any
    ) -> None:
        if not hasattr(recorder, "select_events_at_places"):
            pytest.skip("this backend reads ranges")
        recorder.insert_events([row("a", 1), row("a", 2), row("b", 1)])
        found = recorder.select_events_at_places([("b", 1), ("a", 2), ("a", 9)])
        assert sorted((e.originator_id, e.originator_version) for e in found) == [
            ("a", 2),
            ("b", 1),
        ]
        assert recorder.select_events_at_places([]) == []
