"""Tracing on every backend: persistence scenarios 108–116."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from agentlog.application import Sessions
from agentlog.application.query import SessionLineageTrace, SessionQuery
from agentlog.domain.errors import SessionQueryError
from tests.query.support import (
    TURN1,
    CountingReader,
    CountingRecorder,
    ev,
    header,
    raw_write,
    raw_write_many,
    session,
)
from tests.scenarios.harness import SE, SS, TS, Append, chunk, text

MakeApp = Callable[..., Sessions]


def code_of(call: Callable[[], object]) -> str | None:
    with pytest.raises(SessionQueryError) as caught:
        call()
    return caught.value.code


def ids(trace_nodes: Any) -> list[str]:
    return [node.session.header["id"] for node in trace_nodes]


def family(app: Sessions, *, stored: bool) -> None:
    """root(0) <- parent(1) <- target(2); b(4), a(4), older(3); a <- grandchild(5)."""
    for session_id, created, parent in (
        ("root", 0, None),
        ("parent", 1, "root"),
        ("target", 2, "parent"),
        ("b", 4, "target"),
        ("a", 4, "target"),
        ("older", 3, "target"),
        ("grandchild", 5, "a"),
    ):
        session(
            app,
            session_id,
            *TURN1,
            created_at=created,
            parent=parent,
            close=stored,
            flush=stored,
        )


@pytest.mark.parametrize("stored", [False, True])
def test_pq_108_trace_session(app: Sessions, stored: bool) -> None:
    family(app, stored=stored)
    query = SessionQuery(app)
    trace = query.trace_session("target")
    assert trace.target.header["id"] == "target"
    assert [r.header["id"] for r in trace.ancestors] == ["parent", "root"]
    assert trace.complete
    assert trace.root is not None
    assert trace.root.header["id"] == "root"
    assert ids(trace.descendants) == ["older", "a", "b"]
    assert ids(trace.descendants[1].descendants) == ["grandchild"]
    assert all(r.live is not stored and r.persisted is stored for r in trace.ancestors)
    # Results are detached: mutate everything, trace again.
    trace.ancestors[0].header["id"] = "mutated"
    trace.root.header["createdAt"] = -1
    trace.descendants.clear()
    again = query.trace_session("target")
    assert [r.header["id"] for r in again.ancestors] == ["parent", "root"]
    assert again.root is not None
    assert again.root.header["createdAt"] == 0
    assert ids(again.descendants) == ["older", "a", "b"]
    assert list(again.to_json()) == [
        "target",
        "ancestors",
        "descendants",
        "complete",
        "root",
    ]


def test_lineage_mixes_live_and_stored_sessions(app: Sessions) -> None:
    session(app, "root", *TURN1, created_at=0)
    session(app, "mid", *TURN1, created_at=1, parent="root", close=False, flush=False)
    session(app, "leaf", *TURN1, created_at=2, parent="mid")
    trace = SessionQuery(app).trace_session("root")
    assert ids(trace.descendants) == ["mid"]
    mid = trace.descendants[0]
    assert (mid.session.live, mid.session.persisted) == (True, False)
    assert ids(mid.descendants) == ["leaf"]
    assert (mid.descendants[0].session.live, mid.descendants[0].session.persisted) == (
        False,
        True,
    )


def test_pq_109_roots_and_unresolved_parents(app: Sessions) -> None:
    session(app, "alone", *TURN1)
    session(app, "orphan", *TURN1, parent="outside")
    query = SessionQuery(app)
    alone = query.trace_session("alone")
    assert alone.complete
    assert alone.root is not None
    assert alone.root.header["id"] == "alone"
    assert alone.ancestors == []
    orphan = query.trace_session("orphan")
    assert orphan.to_json() == {
        "target": orphan.target.to_json(),
        "ancestors": [],
        "descendants": [],
        "complete": False,
        "unresolvedParentId": "outside",
    }


@pytest.mark.parametrize("stored", [False, True])
def test_pq_110_cycles_and_missing_targets(app: Sessions, stored: bool) -> None:
    session(app, "a", *TURN1, parent="b", close=stored, flush=stored)
    session(app, "b", *TURN1, parent="a", close=stored, flush=stored)
    query = SessionQuery(app)
    with pytest.raises(SessionQueryError) as caught:
        query.trace_session("a")
    assert caught.value.code == "SESSION_QUERY_INVALID_LINEAGE"
    assert str(caught.value) == 'session lineage contains a cycle at "a"'
    assert code_of(lambda: query.trace_session("missing")) == (
        "SESSION_QUERY_SESSION_NOT_FOUND"
    )


def test_pq_111_persisted_target_one_list_no_loads(app: Sessions) -> None:
    session(app, "p", *TURN1)
    query = SessionQuery(app)
    counting = CountingReader(query.store_reader())
    query.mount(counting)
    trace = query.trace_session("p")
    assert trace.target.to_json()["live"] is False
    assert trace.target.persisted
    assert trace.complete
    assert (counting.lists, counting.loads) == (1, 0)
    query.mount(CountingReader(None, fail_list=OSError("down")))
    assert (
        code_of(lambda: query.trace_session("p")) == "SESSION_QUERY_PERSISTENCE_FAILED"
    )


def test_trace_session_with_the_store_reader_reads_no_log(app: Sessions) -> None:
    family(app, stored=True)
    query = SessionQuery(app)
    query.list_sessions()  # catch the views up
    reads = CountingRecorder(app)
    try:
        trace = query.trace_session("target")
    finally:
        reads.restore()
    assert ids(trace.descendants) == ["older", "a", "b"]
    assert reads["select_events"] == 0


@pytest.mark.parametrize("stored", [False, True])
def test_pq_112_a_3000_deep_chain(app: Sessions, stored: bool) -> None:
    depth = 3000
    if stored:
        raw_write_many(
            app,
            [
                (
                    header(f"s{i}", i, **({"parentSession": f"s{i - 1}"} if i else {})),
                    [ev(0, TS(1))],
                )
                for i in range(depth)
            ],
        )
    else:
        for i in range(depth):
            parent = f"s{i - 1}" if i else None
            app.create_session(session_id=f"s{i}", created_at=i, parent_session=parent)
    trace = SessionQuery(app).trace_session("s0")
    deepest, nodes = 0, [(1, node) for node in trace.descendants]
    while nodes:
        level, node = nodes.pop()
        deepest = max(deepest, level)
        nodes.extend((level + 1, child) for child in node.descendants)
    assert deepest == depth - 1
    data = trace.to_json()
    chain = data["descendants"]
    for _ in range(depth - 2):
        chain = chain[0]["descendants"]
    assert chain[0]["session"]["header"]["id"] == f"s{depth - 1}"
    assert isinstance(trace, SessionLineageTrace)


# ------------------------------------------------------------- trace_event


def user(value: str, surface_op: Any = "append", sources: Any = None) -> Append:
    data = {"content": [text(value)], "source": {"kind": "user"}}
    return Append("user/message", data, surface_op, sources)


def replace(start: int, end: int, sources: Any, value: str = "r") -> Append:
    return user(value, {"op": "replace", "start": start, "end": end}, sources)


def fixture_113() -> tuple[Append, ...]:
    context = Append(
        "context/message",
        {"content": [text("ctx")], "source": {"kind": "user"}},
        "append",
    )
    return (
        TS(1),
        SS(1, 1),
        chunk(),
        user("q", sources=[2]),
        replace(3, 3, [3, 2]),
        context,
        SE(1, 1),
        chunk(),
        replace(4, 4, [2, 4]),
    )


@pytest.mark.parametrize("stored", [False, True])
def test_pq_113_trace_event(make_app: MakeApp, stored: bool) -> None:
    app = make_app(invariants=False)
    session(app, "s", *fixture_113(), close=stored, flush=stored)
    query = SessionQuery(app)
    three = query.trace_event("s", 3)
    assert three.to_json() == {
        "target": {
            "sessionId": "s",
            "seq": 3,
            "type": "user/message",
            "time": three.target.time,
            "surface": "shadowed",
        },
        "replacedBy": 4,
        "replacementChain": [4, 8],
        "replacedEventSeqs": [],
        "sourceEventSeqs": [2],
        "derivedEventSeqs": [4],
    }
    four = query.trace_event("s", 4)
    assert (four.replaced_by, four.replacement_chain) == (8, [8])
    assert (four.replaced_event_seqs, four.source_event_seqs) == ([3], [3, 2])
    assert four.derived_event_seqs == [8]
    two = query.trace_event("s", 2)
    assert two.target.surface == "log-only"
    assert "replacedBy" not in two.to_json()
    assert (two.replacement_chain, two.derived_event_seqs) == ([], [3, 4, 8])
    eight = query.trace_event("s", 8)
    assert eight.target.surface == "current"
    assert (eight.replacement_chain, eight.replaced_event_seqs) == ([], [4])
    assert (eight.source_event_seqs, eight.derived_event_seqs) == ([2, 4], [])
    four.replaced_event_seqs.append(99)
    four.target.seq = 77
    again = query.trace_event("s", 4)
    assert again.replaced_event_seqs == [3]
    assert again.target.seq == 4


def test_pq_114_persisted_trace_event_reads(app: Sessions) -> None:
    session(app, "s", *TURN1)
    query = SessionQuery(app)
    counting = CountingReader(query.store_reader())
    query.mount(counting)
    assert query.trace_event("s", 1).target.surface == "current"
    assert (counting.lists, counting.loads) == (1, 1)
    handle = app.get_session("s")
    failing = CountingReader(None, fail_list=OSError("x"), fail_load=OSError("y"))
    query.mount(failing)
    assert query.trace_event("s", 3).target.type == "assistant/message"
    assert failing.calls == 0
    app.close(handle)
    assert (
        code_of(lambda: query.trace_event("s", 1)) == "SESSION_QUERY_PERSISTENCE_FAILED"
    )
    query.mount(CountingReader(query.store_reader(), fail_load=OSError("y")))
    assert (
        code_of(lambda: query.trace_event("s", 1)) == "SESSION_QUERY_PERSISTENCE_FAILED"
    )

    def move(head: dict[str, Any]) -> None:
        head["createdAt"] = 12345

    query.mount(CountingReader(query.store_reader(), alter_loaded=move))
    assert code_of(lambda: query.trace_event("s", 1)) == "SESSION_QUERY_SOURCE_CONFLICT"


def test_pq_115_the_target_is_checked_before_the_fold(app: Sessions) -> None:
    log = [ev(0, user("q")), ev(1, replace(9, 9, [0]))]
    raw_write(app, header("s"), log)
    query = SessionQuery(app)
    with pytest.raises(SessionQueryError) as missing:
        query.trace_event("s", 9)
    assert missing.value.code == "SESSION_QUERY_EVENT_NOT_FOUND"
    assert str(missing.value) == 'session "s" has no event at seq 9'
    with pytest.raises(SessionQueryError) as invalid:
        query.trace_event("s", 0)
    assert invalid.value.code == "SESSION_QUERY_INVALID_SURFACE"
    assert str(invalid.value) == (
        "invalid session surface: surface replace: start seq 9 not found in surface"
    )


def raw_event(seq: int, append: Append, **override: Any) -> dict[str, Any]:
    event = ev(seq, append)
    for key, value in override.items():
        if value is None:
            event.pop(key, None)
        else:
            event[key] = value
    return event


INVALID_LOGS: dict[str, list[dict[str, Any]]] = {
    "sources on turn/start": [
        raw_event(0, TS(1)),
        raw_event(1, TS(2), sourceEventSeqs=[0]),
    ],
    "sources not an array": [
        raw_event(0, user("a")),
        raw_event(1, user("b"), sourceEventSeqs="invalid"),
    ],
    "empty sources on a user message": [
        raw_event(0, user("a")),
        raw_event(1, user("b"), sourceEventSeqs=[]),
    ],
    "sparse sources": [
        raw_event(0, user("a")),
        raw_event(1, user("b"), sourceEventSeqs=[0, None]),
    ],
    "duplicate sources": [
        raw_event(0, user("a")),
        raw_event(1, user("b"), sourceEventSeqs=[0, 0]),
    ],
    "negative source": [
        raw_event(0, user("a")),
        raw_event(1, user("b"), sourceEventSeqs=[-1]),
    ],
    "future source": [
        raw_event(0, user("a")),
        raw_event(1, user("b"), sourceEventSeqs=[5]),
    ],
    "replace without sources": [
        raw_event(0, user("a")),
        raw_event(1, replace(0, 0, None)),
    ],
    "replace missing a shadowed seq": [
        raw_event(0, user("a")),
        raw_event(1, user("b")),
        raw_event(2, replace(0, 1, [0])),
    ],
    "surfaceOp on turn/start": [raw_event(0, TS(1), surfaceOp="append")],
}


@pytest.mark.parametrize("case", sorted(INVALID_LOGS))
def test_pq_116_invalid_logs_are_invalid_surfaces(app: Sessions, case: str) -> None:
    raw_write(app, header("bad"), INVALID_LOGS[case])
    query = SessionQuery(app)
    for read in (lambda: query.trace_event("bad", 0), lambda: query.list_events("bad")):
        with pytest.raises(SessionQueryError) as caught:
            read()
        assert caught.value.code == "SESSION_QUERY_INVALID_SURFACE", case
        assert str(caught.value).startswith("invalid session surface: ")
