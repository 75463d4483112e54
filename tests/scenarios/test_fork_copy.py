"""A fork of a stored session copies its rows in the store (docs/fork.md#fork).

On SQLite and PostgreSQL the child's rows are the parent's bytes with the seqs
unchanged, written with the child's header in one transaction; the child is
live, announced, loadable from a snapshot at the boundary, and indexed by the
views. POPO has no copy and seeds the child as before; the result is the same.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from agentlog.application import SessionQuery, Sessions, fork_copy
from agentlog.domain.errors import SessionForkError
from agentlog.infrastructure.formats.jsonl import export_session
from tests.scenarios.harness import SE, SS, TE, TS, A, U, add

MakeApp = Callable[..., Sessions]


def stored_parent(app: Sessions, turns: int = 3) -> str:
    """A closed, flushed and released session of ``turns`` turns."""
    parent = app.create_session(cwd="/w", session_id=str(uuid.uuid4()))
    for turn in range(1, turns + 1):
        add(
            parent,
            TS(turn),
            U(f"prompt {turn}"),
            SS(turn, 1),
            A(f"reply {turn}", turn=turn),
            SE(turn, 1),
            TE(turn),
        )
    app.close(parent)
    return parent.id


def lines(app: Sessions, session_id: str) -> list[bytes]:
    return export_session(app, session_id).splitlines()


def test_a_stored_fork_copies_the_rows_exactly(make_app: MakeApp) -> None:
    app = make_app()
    parent = stored_parent(app)
    created: list[str] = []
    app.subscribe(created=lambda handle: created.append(handle.id))
    child = app.fork(parent, boundary=11)
    assert created == [child.id]
    assert child.header["parentSession"] == parent
    assert child.header["seedLength"] == 12
    assert child.header["cwd"] == "/w"
    assert lines(app, child.id)[1:] == lines(app, parent)[1:13]
    assert app.messages(child.id) == app.messages(parent)[:4]
    child.append("turn/start", TS(3).data)
    app.close(child)
    assert app.read_events(child.id)[-1]["seq"] == 12


def test_the_child_reloads_and_is_listed_in_another_process(
    make_app: MakeApp, backend: str
) -> None:
    app = make_app()
    parent = stored_parent(app)
    child = app.fork(parent, boundary=5, child_session_id="child")
    app.close(child)
    if fork_copy.can_copy(app):
        assert app.snapshots is not None
        (snapshot,) = app.snapshots.recorder.select_events("child", desc=True, limit=1)
        assert snapshot.originator_version == 7  # the boundary's version
    other = make_app()
    reloaded = other.get_session("child")
    assert reloaded.seq == 6
    add(reloaded, TS(2), U("again"), TE(2))
    other.close(reloaded)
    summaries = {s.id: s for s in SessionQuery(other).list_summaries().items}
    assert summaries["child"].event_count == 9
    assert summaries["child"].parent_session == parent
    lineage = SessionQuery(other).trace_session(parent)
    assert [node.session.header["id"] for node in lineage.descendants] == ["child"]


def test_a_taken_child_id_is_refused_and_nothing_is_written(
    make_app: MakeApp, backend: str
) -> None:
    app = make_app()
    parent = stored_parent(app)
    if not fork_copy.can_copy(app):
        pytest.skip("this backend seeds forks instead of copying rows")
    taken = stored_parent(app, turns=1)
    before = lines(app, taken)
    with pytest.raises(SessionForkError) as raised:
        # Past the up-front check: another writer took the id in between.
        fork_copy.fork_by_copy(
            app,
            parent,
            5,
            cwd=None,
            child_id=taken,
            project=app.loader.project,
            clock=app.clock,
            snapshot=True,
        )
    assert raised.value.code == SessionForkError.SESSION_ALREADY_EXISTS
    assert lines(app, taken) == before


def test_the_boundary_state_is_read_a_page_at_a_time(
    make_app: MakeApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = make_app(AGENTLOG_SNAPSHOT_INTERVAL="0")
    parent = stored_parent(app, turns=5)
    monkeypatch.setattr(fork_copy, "PAGE", 4)
    largest: list[int] = []
    select = app.recorder.select_events

    def counted(*args: Any, **kwargs: Any) -> Any:
        rows = select(*args, **kwargs)
        largest.append(len(rows))
        return rows

    monkeypatch.setattr(app.recorder, "select_events", counted)
    child = app.fork(parent, boundary=23)
    monkeypatch.undo()
    assert lines(app, child.id)[1:] == lines(app, parent)[1:25]
    if fork_copy.can_copy(app):
        assert max(largest) <= 4
