"""Loading a long session reads only its tail; reading messages decodes only the
surface; every read equals a fold from scratch. Shown by counting, not by timing.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agentlog.application import Sessions
from agentlog.domain.errors import SessionConflictError
from agentlog.domain.messages import derive_messages
from tests.scenarios.harness import SE, SS, TE, TS, A, U, add, chunk

MakeApp = Callable[..., Sessions]


def long_session(app: Sessions, turns: int, session_id: str = "long") -> Any:
    handle = app.create_session(session_id=session_id)
    for turn in range(1, turns + 1):
        add(handle, TS(turn), U(f"question {turn}"), SS(turn, 1))
        add(handle, *[chunk(turn, 1) for _ in range(5)])
        add(handle, A(f"answer {turn}", turn=turn, step=1), SE(turn, 1), TE(turn))
        app.flush(handle)
    return handle


class CountingMapper:
    """Counts how many stored events the mapper decodes."""

    def __init__(self, app: Sessions) -> None:
        self.count = 0
        mapper: Any = app.mapper
        original = mapper.to_domain_event

        def counting(stored: Any) -> Any:
            self.count += 1
            return original(stored)

        mapper.to_domain_event = counting


def test_loading_reads_the_latest_snapshot_and_only_the_tail(make_app: MakeApp) -> None:
    writer = make_app(AGENTLOG_SNAPSHOT_INTERVAL="100")
    handle = long_session(writer, turns=100)  # 1,100 events
    assert handle.seq == 1100
    reader = make_app(AGENTLOG_SNAPSHOT_INTERVAL="100")
    counter = CountingMapper(reader)
    aggregate = reader.load_aggregate("long")
    assert aggregate.seq == 1100
    # one snapshot plus at most one interval of events
    assert counter.count <= 1 + 100
    assert aggregate.surface.seqs == handle.aggregate.surface.seqs
    assert aggregate.decision_state() == handle.aggregate.decision_state()


def test_one_snapshot_per_interval_is_kept_and_the_latest_is_near_the_head(
    make_app: MakeApp,
) -> None:
    """A flush past a tenth of the interval renews the latest snapshot; it replaces
    the earlier ones of its interval, so as-of reads still find one per interval."""
    writer = make_app(AGENTLOG_SNAPSHOT_INTERVAL="100")
    handle = long_session(writer, turns=40)  # 11 events per flush, 440 events
    assert writer.snapshots is not None
    versions = [
        row.originator_version
        for row in writer.snapshots.recorder.select_events("long")
    ]
    assert len({version // 100 for version in versions}) == len(versions)
    flushed = [1 + 11 * turn for turn in range(1, 41)]  # the header is version 1
    last_of_each = {version // 100: version for version in flushed}
    assert versions == sorted(last_of_each.values())
    assert versions[-1] == handle.aggregate.version == 441
    reader = make_app(AGENTLOG_SNAPSHOT_INTERVAL="100")
    counter = CountingMapper(reader)
    assert reader.load_aggregate("long").decision_state() == (
        handle.aggregate.decision_state()
    )
    assert counter.count == 1  # the snapshot at the head: no tail
    events = reader.read_events("long")
    for seq in (5, 150, 250, 399, 420):
        counter.count = 0
        assert reader.messages("long", at=seq) == derive_messages(events[: seq + 1])


def test_a_long_surface_renews_its_snapshot_less_often(make_app: MakeApp) -> None:
    """The renewal period: a tenth of the interval, or a twentieth of the surface's
    nodes if more (a snapshot grows with them), never longer than the interval."""
    due = make_app(AGENTLOG_SNAPSHOT_INTERVAL="500").saver.snapshot_due
    assert due(50, 49, nodes=100)  # past 50
    assert not due(99, 51, nodes=100)
    assert not due(150, 120, nodes=4000)  # 4,000 nodes: every 200 events
    assert due(200, 199, nodes=4000)
    assert due(500, 499, nodes=100_000)  # the interval at most
    assert not due(999, 501, nodes=100_000)
    assert not due(1, 0, nodes=0)  # the header alone: version 1 is the header's


def test_a_flush_commits_its_snapshot_with_its_events(make_app: MakeApp) -> None:
    """On SQLite the snapshot is written in the flush's transaction: no
    transaction of its own, and none when the flush loses a conflict."""
    app, other = make_app(AGENTLOG_SNAPSHOT_INTERVAL="100"), make_app()
    if not app.saver.snapshots_with_events():
        pytest.skip("this store writes the snapshot after the flush")
    assert app.snapshots is not None
    apart: list[Any] = []
    app.recorder.replace_snapshot = lambda *args: apart.append(args)  # type: ignore[attr-defined]
    handle = long_session(app, turns=1)  # versions 1 to 12: past 10
    stored = app.snapshots.recorder.select_events
    assert apart == [] and [r.originator_version for r in stored("long")] == [12]
    add(other.get_session("long"), TS(2), U("elsewhere"))
    other.flush(other.get_session("long"))
    add(handle, TS(2), U("q"), SS(2, 1), *[chunk(2, 1) for _ in range(7)])
    with pytest.raises(SessionConflictError):
        app.flush(handle)  # 13 to 22: past 20, but lost
    assert [r.originator_version for r in stored("long")] == [12]


def test_cold_messages_decode_only_surface_events(make_app: MakeApp) -> None:
    writer = make_app(AGENTLOG_SNAPSHOT_INTERVAL="100")
    long_session(writer, turns=50)  # 550 events, 100 on the surface
    reader = make_app(AGENTLOG_SNAPSHOT_INTERVAL="100")
    counter = CountingMapper(reader)
    messages = reader.messages("long")
    assert len(messages) == 100
    assert counter.count <= 1 + 100 + 100  # snapshot, tail, surface events
    assert messages == derive_messages(reader.read_events("long"))
    counter.count = 0
    assert reader.messages("long", last=4) == messages[-4:]
    assert counter.count <= 1 + 100  # the aggregate again; messages are cached


@pytest.mark.parametrize("last", [0, 1, 3, 99, 100, 500])
def test_last_messages_equal_the_tail_of_all(make_app: MakeApp, last: int) -> None:
    app = make_app()
    long_session(app, turns=50)
    fresh = make_app()
    everything = derive_messages(fresh.read_events("long"))
    assert fresh.messages("long", last=last) == (everything[-last:] if last else [])


def test_messages_of_a_live_session_include_unflushed_events(make_app: MakeApp) -> None:
    app = make_app()
    handle = long_session(app, turns=3)
    add(handle, TS(4), U("pending question"))
    messages = app.messages("long")
    assert messages[-1]["content"][0]["text"] == "pending question"
    assert messages == derive_messages(handle.events)


def test_returned_messages_are_fresh_copies(make_app: MakeApp) -> None:
    app = make_app()
    long_session(app, turns=2)
    first = app.messages("long")
    first[0]["content"][0]["text"] = "mutated"
    first.clear()
    again = app.messages("long")
    assert again[0]["content"][0]["text"] == "question 1"
