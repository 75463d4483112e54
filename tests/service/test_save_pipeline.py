"""``Sessions.save``: a session's events collected directly, the library's pipeline kept.

The override (``application/save_pipeline.py``) must record exactly what
``Application.save`` records and call ``notify`` the same way; anything it does not
handle goes the library's way. The library's pipeline it reproduces is pinned in
``tests/infrastructure/test_eventsourcing_seam.py``.
"""

from __future__ import annotations

from typing import Any

from eventsourcing.application import Application

from agentlog.application import Sessions
from agentlog.domain.session import Session

TRIGGER = {"kind": "message", "source": {"kind": "user"}}


class Notified(Sessions):
    """Records what ``notify`` is given."""

    def __init__(self, **kwargs: Any) -> None:
        self.notified: list[list[Any]] = []
        super().__init__(**kwargs)

    def notify(self, new_events: list[Any]) -> None:
        self.notified.append(list(new_events))


def test_a_session_is_recorded_and_notified_once_its_events_collected() -> None:
    app = Notified()
    handle = app.create_session(cwd="/w", session_id="s")
    handle.append("turn/start", {"turn": 1, "trigger": TRIGGER})
    aggregate = handle.aggregate
    pending = list(aggregate.pending_events)
    recordings = app.save(aggregate)
    assert aggregate.pending_events == []
    assert [r.domain_event for r in recordings] == pending
    assert app.notified == [pending]
    stored = app.recorder.select_events("s")
    assert [row.originator_version for row in stored] == [1, 2]
    app.close()


def test_the_library_save_still_runs_for_what_the_override_does_not_handle() -> None:
    """With the library's own snapshot intervals set, ``save`` is the library's:
    it snapshots at the interval, which the override never does."""
    app = Notified(env={"AGENTLOG_SNAPSHOT_INTERVAL": "0"})
    app.snapshotting_intervals = {Session: 2}  # type: ignore[misc]
    handle = app.create_session(cwd="/w", session_id="s")
    handle.append("turn/start", {"turn": 1, "trigger": TRIGGER})
    pending = list(handle.aggregate.pending_events)
    app.save(handle.aggregate)
    assert app.notified == [pending]
    assert app.snapshots is not None
    assert [s.originator_version for s in app.snapshots.get("s")] == [2]
    app.close()


def test_sessions_keeps_the_library_notify_hook() -> None:
    """Subclasses hook ``notify`` as on any ``Application`` (the override calls it)."""
    assert Sessions.notify is Application.notify


def test_a_leader_saves_the_librarys_way_so_its_followers_are_prompted() -> None:
    """A ``Sessions`` that leads a process system prompts its followers from the
    library's ``save``; the override must not skip that."""
    from eventsourcing.system import Leader

    prompted: list[int] = []

    class Leading(Leader[str], Sessions):
        def _notify(self, recordings: list[Any]) -> None:
            prompted.append(len(recordings))
            super()._notify(recordings)

    app = Leading()
    handle = app.create_session(cwd="/w", session_id="s")
    handle.append("turn/start", {"turn": 1, "trigger": TRIGGER})
    app.save(handle.aggregate)
    assert prompted == [2]
    assert [row.originator_version for row in app.recorder.select_events("s")] == [
        1,
        2,
    ]
    app.close()
