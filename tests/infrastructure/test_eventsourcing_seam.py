"""Pins the library behaviour ``agentlog.infrastructure.eventsourcing_seam`` relies on.

The seam is the only module that names an ``eventsourcing`` private (a protected
hook or attribute). Each test here states one thing the seam assumes about the
library; a library upgrade that changes it fails here, in one place.
"""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path
from typing import Any

import pytest
from eventsourcing.persistence import ConnectionPoolClosedError, StoredEvent, Tracking
from eventsourcing.popo import POPOAggregateRecorder, POPOTrackingRecorder

from agentlog.infrastructure import eventsourcing_seam as seam

ROOT = Path(__file__).resolve().parents[2]
PRIVATE = re.compile(
    r"\b(_insert_events|_insert_stored_events|_create_table|_insert_tracking|"
    r"_max_tracking_ids?|_assert_uniqueness|_assert_tracking_uniqueness|"
    r"_stored_events(_index)?|_database_lock|_notify_listeners|_lock_table|"
    r"_create_connection|_sqlite_conn|_notification_log|__base_init__|_listen|"
    r"_has_been_notified|_has_been_stopped|_thread_error)\b"
)


def row(originator_id: str, version: int, topic: str = "t") -> StoredEvent:
    return StoredEvent(originator_id, version, topic, b"{}")


def test_the_library_is_the_version_the_seam_was_checked_against() -> None:
    version = importlib.metadata.version("eventsourcing")
    major, minor = (int(part) for part in version.split(".")[:2])
    assert (major, minor) == (9, 5), "re-check every test of this module, then pin"


def test_no_other_module_names_a_library_private() -> None:
    """Nor do the tests: they build stores through supported constructors."""
    offenders = [
        f"{path.relative_to(ROOT)}:{number}"
        for folder in ("domain", "application", "infrastructure", "tests", "bench")
        for path in sorted((ROOT / folder).rglob("*.py"))
        if not path.name.startswith("eventsourcing_seam")
        and path.name != Path(__file__).name
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if PRIVATE.search(line)
    ]
    assert offenders == []


# ------------------------------------------------------------------ SQLite


def test_a_secure_delete_pool_makes_every_connection_zero_freed_pages(
    tmp_path: Path,
) -> None:
    """The pool's ``_create_connection`` is called for each new connection."""
    datastore = seam.SecureDeleteDatastore(str(tmp_path / "a.db"))
    try:
        for commit in (True, False):
            with datastore.get_connection(commit=commit) as connection:
                cursor = connection.cursor()
                cursor.execute("PRAGMA secure_delete")
                assert cursor.fetchone()[0] == 1
        assert isinstance(datastore.pool, seam.SecureDeletePool)
    finally:
        datastore.close()


def test_like_copies_the_library_datastore_settings(tmp_path: Path) -> None:
    from eventsourcing.sqlite import SQLiteDatastore

    library = SQLiteDatastore(
        str(tmp_path / "a.db"), lock_timeout=7, originator_id_type="text"
    )
    ours = seam.SecureDeleteDatastore.like(library)
    try:
        assert ours.pool.db_name == library.pool.db_name
        assert ours.pool.lock_timeout == 7
        assert ours.originator_id_type == "text"
        assert ours.single_row_tracking == library.single_row_tracking
    finally:
        library.close()
        ours.close()


class KeywordSQLiteRecorder(seam.SQLiteRecorderSeam):
    seen: list[dict[str, Any]]

    def insert_in_transaction(self, c: Any, stored_events: Any, **kwargs: Any) -> Any:
        self.seen.append(dict(kwargs))
        extra = kwargs.pop("extra", ())
        ids = self.library_insert(c, stored_events, **kwargs)
        if extra:
            self.library_insert(c, extra)
        return ids


def test_sqlite_insert_events_passes_keywords_to_the_hook_in_one_transaction(
    tmp_path: Path,
) -> None:
    datastore = seam.SecureDeleteDatastore(
        str(tmp_path / "a.db"), originator_id_type="text"
    )
    recorder = KeywordSQLiteRecorder(datastore)
    recorder.seen = []
    recorder.create_table()
    try:
        ids = recorder.insert_events([row("a", 1)], extra=[row("b", 1)])
        assert recorder.seen == [{"extra": [row("b", 1)]}]
        assert ids == [1]  # the first rows' notification ids
        assert [n.originator_id for n in recorder.select_notifications(1, 10)] == [
            "a",
            "b",
        ]
        with pytest.raises(Exception):
            recorder.insert_events([row("c", 1)], extra=[row("a", 1)])
        assert recorder.select_events("c") == []  # the hook's failure rolled back
    finally:
        datastore.close()


# ------------------------------------------------------------------ POPO


class GuardedPOPORecorder(seam.POPORecorderSeam):
    def check_writes(self, stored_events: Any) -> None:
        if any(event.originator_id == "refused" for event in stored_events):
            raise ValueError("refused")


def test_popo_check_writes_runs_before_anything_is_stored() -> None:
    recorder = GuardedPOPORecorder()
    recorder.insert_events([row("a", 1), row("a", 2)])
    with pytest.raises(ValueError, match="refused"):
        recorder.insert_events([row("b", 1), row("refused", 1)])
    assert recorder.row_count() == 2
    assert recorder.select_events("b") == []


def test_popo_rows_are_a_list_indexed_by_stream_and_version() -> None:
    recorder = GuardedPOPORecorder()
    recorder.insert_events([row("a", 1), row("b", 1), row("a", 2)])
    assert seam.popo_stream_index(recorder, "a") == {1: 0, 2: 2}
    assert seam.popo_stream_index(recorder, "none") == {}
    stored = recorder.row_at(2)
    assert stored is not None and stored.originator_version == 2
    with seam.popo_lock(recorder):
        seam.popo_drop_below(recorder, "a", 2)
    assert recorder.row_at(0) is None
    assert seam.popo_stream_index(recorder, "a") == {2: 2}
    with recorder.database_lock:
        recorder.insert_locked([row("c", 1)])
    assert recorder.row_count() == 4


def test_popo_notify_wakes_the_library_listeners() -> None:
    recorder = GuardedPOPORecorder()
    with recorder.subscribe(gt=None) as subscription:
        recorder.insert_events([row("a", 1)])
        recorder.notify()
        notification = next(iter(subscription))
        assert notification.originator_id == "a"


def test_a_closed_popo_recorder_refuses_every_read_and_write() -> None:
    """Every POPO recorder method takes ``_database_lock`` first."""
    recorder = GuardedPOPORecorder()
    recorder.insert_events([row("a", 1)])
    snapshots = POPOAggregateRecorder()
    tracking = POPOTrackingRecorder()
    for closed in (recorder, snapshots, tracking):
        seam.popo_close(closed)
    for call in (
        lambda: recorder.insert_events([row("b", 1)]),
        lambda: recorder.select_events("a"),
        lambda: recorder.select_notifications(None, 10),
        recorder.max_notification_id,
        lambda: snapshots.insert_events([row("a", 1)]),
        lambda: snapshots.select_events("a"),
        lambda: tracking.insert_tracking(Tracking("app", 1)),
        lambda: tracking.max_tracking_id("app"),
    ):
        with pytest.raises(ConnectionPoolClosedError):
            call()
    with pytest.raises(ConnectionPoolClosedError), seam.popo_lock(snapshots):
        pass


def test_a_popo_connection_shares_the_rows_and_closes_on_its_own() -> None:
    recorder = GuardedPOPORecorder()
    recorder.insert_events([row("a", 1)])
    seam.popo_close(recorder)
    other = seam.popo_connection(recorder)  # made from a closed handle: open
    third = seam.popo_connection(other)
    other.insert_events([row("a", 2)])
    seam.popo_close(other)
    assert [e.originator_version for e in third.select_events("a")] == [1, 2]
    with third.subscribe(gt=2) as subscription:
        third.insert_events([row("b", 1)])
        assert next(iter(subscription)).originator_id == "b"
    assert seam.popo_stream_index(third, "b") == {1: 2}


# ------------------------------------------------------------------ tracking


class KeyedPOPO(seam.KeyedPOPOTracking):
    def tracking_key(self, application_name: str) -> str:
        return f"{application_name}/view"


def test_popo_tracking_is_kept_under_the_views_key() -> None:
    recorder = KeyedPOPO()
    recorder.insert_tracking(Tracking("app", 3))
    assert recorder.max_tracking_id("app") == 3
    with recorder.database_lock:
        recorder.insert_tracking_locked(Tracking("app", 4))
    assert recorder.max_tracking_id("app") == 4
    recorder.forget_tracking("app")
    assert recorder.max_tracking_id("app") is None


class KeyedSQLite(seam.KeyedSQLiteTracking):
    def tracking_key(self, application_name: str) -> str:
        return f"{application_name}/view"


def test_sqlite_tracking_is_kept_under_the_views_key(tmp_path: Path) -> None:
    datastore = seam.SecureDeleteDatastore(
        str(tmp_path / "a.db"), single_row_tracking=True
    )
    recorder = KeyedSQLite(datastore)
    try:
        with datastore.transaction(commit=True) as cursor:
            seam.create_tables_in(recorder, cursor)
        recorder.insert_tracking(Tracking("app", 5))
        assert recorder.max_tracking_id("app") == 5
        with datastore.transaction(commit=True) as cursor:
            seam.insert_tracking(recorder, cursor, Tracking("app", 6))
            assert seam.max_tracking_id_in(recorder, "app", cursor) == 6
        with datastore.transaction(commit=False) as cursor:
            cursor.execute("SELECT application_name FROM tracking")
            names = {found[0] for found in cursor.fetchall()}
        assert "app/view" in names and "app" not in names
    finally:
        datastore.close()


def test_postgres_hooks_exist_with_the_signatures_the_seam_calls() -> None:
    """The PostgreSQL hooks are exercised by the library's own recorder cases
    (``test_library_cases``); here, that they are still where the seam looks."""
    import inspect

    from eventsourcing.postgres import (
        PostgresAggregateRecorder,
        PostgresApplicationRecorder,
        PostgresTrackingRecorder,
    )

    def parameters(function: Any) -> list[str]:
        return list(inspect.signature(function).parameters)

    assert parameters(PostgresAggregateRecorder._insert_stored_events)[:3] == [
        "self",
        "curs",
        "stored_events",
    ]
    assert "_insert_stored_events" in vars(PostgresApplicationRecorder)
    assert parameters(PostgresApplicationRecorder._lock_table) == ["self", "curs"]
    assert parameters(PostgresTrackingRecorder._insert_tracking) == [
        "self",
        "curs",
        "tracking",
    ]
    assert parameters(PostgresTrackingRecorder._max_tracking_id)[:2] == [
        "self",
        "application_name",
    ]


def test_a_polling_subscription_overrides_the_listen_thread_the_pull_thread_waits_on() -> (
    None
):
    """The library's PostgreSQL subscription runs ``_listen`` in a thread of its
    own, and its pull thread waits on ``_has_been_notified``; both threads stop
    on ``_has_been_stopped``, and a listen error goes to ``_thread_error``."""
    import inspect

    from eventsourcing.persistence import ListenNotifySubscription
    from eventsourcing.postgres import PostgresSubscription

    init = inspect.getsource(PostgresSubscription.__init__)
    assert "Thread(target=self._listen)" in init
    pull = inspect.getsource(ListenNotifySubscription._loop_on_pull)
    assert "self._has_been_notified.wait()" in pull
    assert "while not self._has_been_stopped" in pull
    assert "_thread_error" in inspect.getsource(PostgresSubscription._listen)
    from agentlog.infrastructure.eventsourcing_seam_postgres import (
        PollingPostgresSubscription,
    )

    assert "_listen" in vars(PollingPostgresSubscription)


# ------------------------------------------------------------------ save


def test_application_save_is_collect_record_snapshots_notify() -> None:
    """``application/save_pipeline.py`` reproduces ``Application.save`` for a
    session (collect, record, notify): the library's pipeline must still be these
    steps, with a ``_notify`` that does nothing and a snapshot step that does
    nothing without ``snapshotting_intervals`` (the override falls back when set)."""
    import inspect

    from eventsourcing.application import Application

    from agentlog.application import Sessions

    save = inspect.getsource(Application.save)
    assert "processing_event.collect_events(*objs, **kwargs)" in save
    assert re.findall(r"self\.(\w+)\(", save) == [
        "_record",
        "_take_snapshots",
        "_notify",
        "notify",
    ]
    record = inspect.getsource(Application._record)
    assert re.findall(r"self\.(\w+(?:\.\w+)*)\(", record) == [
        "events.put",
        "repository.cache.put",
    ]
    assert "if self.snapshots and self.snapshotting_intervals:" in inspect.getsource(
        Application._take_snapshots
    )
    body = inspect.getsource(Application._notify).split('"""')[-1]
    assert body.strip() == ""
    assert Sessions._notify is Application._notify
