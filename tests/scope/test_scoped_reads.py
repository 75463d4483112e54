"""Scoped reads, adversarially (docs/scope.md): two workspaces, two owners,
forks and delegations across them. Every read, trace, search and filter called
with ids, parent filters, cursors and guesses from outside the scope behaves as
for an id that never existed, and no returned byte names, titles or quotes a
session outside the scope. On POPO, SQLite and PostgreSQL.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentlog import (
    AsyncSessions,
    EventFilter,
    Scope,
    ScopedSessionQuery,
    SessionFilter,
    SessionQuery,
    SessionQueryError,
    Sessions,
)
from agentlog.application.scope import ANY
from tests.query.support import CountingReader
from tests.scope.paths import TARGETED, outcome, same_but_for_the_id, text
from tests.scope.world import (
    NEVER,
    NEVER_PARENT,
    O1,
    O2,
    SCOPE_A,
    W1,
    W2,
    World,
    build,
)

MakeApp = Callable[..., Sessions]
NOT_FOUND = SessionQueryError.SESSION_NOT_FOUND
BELOW = {"trace_session", "filter_sessions(parent)", "search_sessions(parent)"}
"""Reads whose answer names a session's children (a-root has one out of scope)."""


@pytest.fixture
def world(make_app: MakeApp) -> Iterator[World]:
    app = make_app()
    built = build(app)
    yield built
    for handle in built.handles:
        app.discard(handle)


def scoped(world: World, scope: Scope = SCOPE_A) -> ScopedSessionQuery:
    return SessionQuery(world.app).scoped(scope)


def every_listing(query: ScopedSessionQuery, world: World) -> list[Any]:
    """Each list, filter and search, with every parent filter and cursor page."""
    results: list[Any] = [query.list_sessions()]
    cursor = None
    while True:
        page = query.list_summaries(2, cursor=cursor)
        results.append(page)
        cursor = page.next_cursor
        if cursor is None:
            break
    results.append(query.list_summaries(3, offset=2))
    all_ids = tuple(world.ids.values())
    filters = [
        None,
        SessionFilter(),
        SessionFilter(ids=all_ids),
        SessionFilter(cwd=(W1, W2, None)),
        SessionFilter(cwd=(W2,)),
        SessionFilter(owner=(O1, O2, None)),
        SessionFilter(owner=(O2,)),
        SessionFilter(parent=(None,)),
        SessionFilter(parent=(*all_ids, NEVER_PARENT)),
        SessionFilter(parent=(world.ids["b-root"], world.ids["b-of-a"])),
        SessionFilter(availability=("live",)),
        SessionFilter(availability=("persisted",)),
    ]
    for wanted in filters:
        results.append(query.filter_sessions(wanted))
        cursor = None
        while True:
            page = query.search_sessions(
                "needle", session_filter=wanted, limit=2, cursor=cursor
            )
            results.append(page)
            cursor = page.next_cursor
            if cursor is None:
                break
    for word in ("Title", "reply", "tok"):
        results.append(query.search_sessions(word, limit=100))
    return results


def listed_ids(results: list[Any]) -> set[str]:
    """The session ids the listings and searches returned."""
    found: set[str] = set()
    for result in results:
        items = result if isinstance(result, list) else result.items
        for item in items:
            if hasattr(item, "header"):
                found.add(str(item.header["id"]))
            else:
                found.add(item.session_id)
    return found


# ------------------------------------------------------------ not found


def test_every_targeted_read_of_an_unseen_session_is_a_missing_one(
    world: World,
) -> None:
    """Each read of ``TARGETED`` (one store for all: failures are collected)."""
    query = scoped(world)
    unseen = sorted(set(world.ids) - world.names_in(SCOPE_A))
    assert len(unseen) == 10
    failures = []
    for read, call in sorted(TARGETED.items()):
        missing = outcome(lambda c=call: c(query, NEVER))  # type: ignore[misc]
        plain = outcome(lambda c=call: c(SessionQuery(world.app), NEVER))  # type: ignore[misc]
        if missing != plain:
            failures.append((read, "never-stored", missing, plain))
        for name in unseen:
            session_id = world.ids[name]
            found = outcome(lambda c=call, s=session_id: c(query, s))  # type: ignore[misc]
            if not same_but_for_the_id(found, session_id, missing, NEVER):
                failures.append((read, name, found, missing))
    assert failures == []


def test_unseen_and_missing_fail_with_the_not_found_code(world: World) -> None:
    query = scoped(world)
    for session_id in (world.ids["b-root"], world.ids["c-live"], NEVER):
        with pytest.raises(SessionQueryError) as caught:
            query.read_surface(session_id)
        assert caught.value.code == NOT_FOUND
        assert str(caught.value) == f'session "{session_id}" not found'


def test_an_in_scope_session_reads_as_unscoped(world: World) -> None:
    """The scope changes nothing for a session inside it (but withheld parents)."""
    query, plain = scoped(world), SessionQuery(world.app)
    failures = []
    for read, call in sorted(TARGETED.items()):
        below = read in BELOW
        names = ("a-fork", "a-live") if below else ("a-root", "a-fork", "a-live")
        for name in names:
            session_id = world.ids[name]
            found = outcome(lambda c=call, s=session_id: c(query, s))  # type: ignore[misc]
            expected = outcome(lambda c=call, s=session_id: c(plain, s))  # type: ignore[misc]
            if found != expected:
                failures.append((read, name, found, expected))
    assert failures == []


# ------------------------------------------------------------ the byte scan


def test_no_returned_byte_names_an_unseen_session(world: World) -> None:
    query = scoped(world)
    results = every_listing(query, world)
    for name in world.names_in(SCOPE_A):
        session_id = world.ids[name]
        for read in TARGETED.values():
            results.append(outcome(lambda: read(query, session_id)))  # noqa: B023
    dump = "".join(text(result) for result in results)
    leaks = sorted(
        secret for secret in world.secrets_outside(SCOPE_A) if secret in dump
    )
    assert leaks == []
    # Not vacuous: every in-scope session was listed, with its title and text.
    assert listed_ids(results[:1]) == world.ids_in(SCOPE_A)
    for name in world.names_in(SCOPE_A):
        assert world.title_of(name) in dump
        assert world.token(name) in dump


@pytest.mark.parametrize(
    "scope",
    [
        Scope(cwd=W2, owner=O1),
        Scope(cwd=W1),
        Scope(owner=O2),
        Scope(cwd=W1, owner=None),
        Scope(cwd=None),
        Scope(cwd=None, owner=None),
    ],
)
def test_every_scope_lists_exactly_its_sessions(world: World, scope: Scope) -> None:
    query = scoped(world, scope)
    results = every_listing(query, world)
    assert listed_ids(results) <= world.ids_in(scope)
    assert {str(r.header["id"]) for r in query.list_sessions()} == world.ids_in(scope)
    summaries = query.list_summaries(100)
    assert {item.id for item in summaries.items} == world.ids_in(scope)
    dump = "".join(text(result) for result in results)
    assert sorted(s for s in world.secrets_outside(scope) if s in dump) == []


# ------------------------------------------------------------ lineage


def test_lineage_stops_at_an_unseen_session_as_at_a_missing_one(world: World) -> None:
    query = scoped(world)
    ids = world.ids
    root = query.trace_session(ids["a-root"])
    assert root.complete
    assert [n.session.header["id"] for n in root.descendants] == [ids["a-fork"]]
    for name in ("a-from-b", "a-orphan", "a-under-b"):
        trace = query.trace_session(ids[name]).to_json()
        assert trace["complete"] is False
        assert "unresolvedParentId" not in trace
        assert "root" not in trace
        assert trace["ancestors"] == []
        assert "parentSession" not in trace["target"]["header"]
    # The delegation from another workspace and the orphan read alike.
    from_b = query.trace_session(ids["a-from-b"]).to_json()
    orphan = query.trace_session(ids["a-orphan"]).to_json()
    assert from_b["target"]["header"].keys() == orphan["target"]["header"].keys()
    fork = query.trace_session(ids["a-fork"])
    assert fork.complete and fork.root is not None
    assert fork.target.header["parentSession"] == ids["a-root"]
    # Unscoped, the same store names the parents.
    plain = SessionQuery(world.app).trace_session(ids["a-orphan"])
    assert plain.unresolved_parent_id == NEVER_PARENT


def test_headers_withhold_only_parents_the_scope_cannot_see(world: World) -> None:
    query = scoped(world)
    ids = world.ids
    summaries = {item.id: item for item in query.list_summaries(100).items}
    assert summaries[ids["a-fork"]].parent_session == ids["a-root"]
    for name in ("a-from-b", "a-orphan", "a-under-b"):
        assert summaries[ids[name]].parent_session is None
        assert "parentSession" not in summaries[ids[name]].header
        assert "parentSession" not in query.read_surface(ids[name]).session
        assert "parentSession" not in query.read_event(ids[name], 0).session
        assert "parentSession" not in query.stream_surface(ids[name]).session
    # The parent filter names only parents inside the scope.
    children = query.filter_sessions(SessionFilter(parent=(ids["a-root"],)))
    assert [r.header["id"] for r in children] == [ids["a-fork"]]
    assert query.filter_sessions(SessionFilter(parent=(ids["b-root"],))) == []
    assert query.filter_sessions(SessionFilter(parent=(NEVER_PARENT,))) == []


# ------------------------------------------------------------ cursors


def test_a_search_cursor_from_another_scope_is_refused(world: World) -> None:
    page = scoped(world).search_sessions("needle", limit=1)
    assert page.next_cursor is not None
    for other in (
        scoped(world, Scope(cwd=W2, owner=O1)),
        scoped(world, Scope(cwd=W1)),
    ):
        with pytest.raises(SessionQueryError) as caught:
            other.search_sessions("needle", limit=1, cursor=page.next_cursor)
        assert caught.value.code == SessionQueryError.INVALID_CURSOR
    unscoped = SessionQuery(world.app).search_sessions("needle", limit=1)
    with pytest.raises(SessionQueryError) as caught:
        scoped(world).search_sessions("needle", limit=1, cursor=unscoped.next_cursor)
    assert caught.value.code == SessionQueryError.INVALID_CURSOR
    token = world.token("a-root")
    events = scoped(world).search_events(world.ids["a-root"], token, limit=1)
    assert events.next_cursor is not None
    with pytest.raises(SessionQueryError) as caught:
        scoped(world).search_events(
            world.ids["a-fork"], token, cursor=events.next_cursor
        )
    assert caught.value.code == SessionQueryError.INVALID_CURSOR


def test_a_listing_cursor_replayed_in_another_scope_yields_only_that_scope(
    world: World,
) -> None:
    page = SessionQuery(world.app).list_summaries(3)
    assert page.next_cursor is not None
    other = Scope(cwd=W2, owner=O1)
    replayed = scoped(world, other).list_summaries(100, cursor=page.next_cursor)
    assert {item.id for item in replayed.items} <= world.ids_in(other)
    assert replayed.items


# ------------------------------------------------------------ callers


def test_a_caller_sees_its_workspace_and_owner(world: World) -> None:
    query = SessionQuery(world.app)
    for caller in ("a-root", "a-live", "a-under-b"):
        seen = query.for_caller(world.ids[caller])
        assert seen.scope == SCOPE_A
        assert {str(r.header["id"]) for r in seen.list_sessions()} == world.ids_in(
            SCOPE_A
        )
    assert query.for_caller(world.ids["d-root"]).scope == Scope(cwd=W1, owner=None)
    assert query.for_caller(world.ids["c-live"]).scope == Scope(cwd=W1, owner=O2)


@pytest.mark.parametrize("caller", ["e-nocwd", "f-nothing"])
def test_a_caller_without_a_cwd_sees_only_itself(world: World, caller: str) -> None:
    session_id = world.ids[caller]
    seen = SessionQuery(world.app).for_caller(session_id)
    assert seen.scope == Scope(session_id=session_id)
    assert [r.header["id"] for r in seen.list_sessions()] == [session_id]
    assert [i.id for i in seen.list_summaries().items] == [session_id]
    hits = seen.search_sessions("needle", limit=100)
    assert [hit.session_id for hit in hits.items] == [session_id]
    with pytest.raises(SessionQueryError) as caught:
        seen.read_surface(world.ids["a-root"])
    assert caught.value.code == NOT_FOUND


@pytest.mark.parametrize("caller", [NEVER, "", None, 7])
def test_an_unknown_caller_fails_closed(world: World, caller: Any) -> None:
    with pytest.raises(SessionQueryError) as caught:
        SessionQuery(world.app).for_caller(caller)
    assert caught.value.code == SessionQueryError.UNKNOWN_CALLER
    assert str(caught.value) == (
        f'caller session "{caller}" not found; no scope can be derived'
    )


@pytest.mark.parametrize(
    "fields", [{"cwd": 3}, {"owner": b"x"}, {"session_id": None}, {"cwd": ["/w"]}]
)
def test_a_scope_of_wrong_types_is_a_typed_error(fields: dict[str, Any]) -> None:
    with pytest.raises(SessionQueryError) as caught:
        Scope(**fields)
    assert caught.value.code == SessionQueryError.INVALID_SCOPE


def test_scoped_needs_a_scope(world: World) -> None:
    with pytest.raises(SessionQueryError) as caught:
        SessionQuery(world.app).scoped({"cwd": W1})  # type: ignore[arg-type]
    assert caught.value.code == SessionQueryError.INVALID_SCOPE


# ------------------------------------------------------------ one observation


def test_the_scope_is_checked_on_the_header_that_is_read(world: World) -> None:
    """A session replaced between its listing and its load (here: a reader whose
    loaded header moved to another workspace) is not read: the check applies to
    the header that came with the events."""
    session_id = world.ids["a-root"]
    query = SessionQuery(world.app)
    moved = CountingReader(
        query.store_reader(), alter_loaded=lambda header: header.update(cwd=W2)
    )
    query.mount(moved)
    scoped_query = query.scoped(SCOPE_A)
    for read in ("list_events", "read_surface", "trace_event(1)", "read_event(0)"):
        found = outcome(lambda r=read: TARGETED[r](scoped_query, session_id))  # type: ignore[misc]
        assert found == (
            "error",
            "SessionQueryError",
            NOT_FOUND,
            f'session "{session_id}" not found',
        )
    assert moved.loads == 4


# ------------------------------------------------------------ hypothesis

SCOPES = st.builds(
    Scope,
    cwd=st.sampled_from([ANY, W1, W2, None, "/ws"]),
    owner=st.sampled_from([ANY, O1, O2, None, "alice "]),
)


def test_any_guess_from_any_scope_reads_as_missing_or_as_unscoped(
    world: World,
) -> None:
    names = sorted(world.ids)
    plain = SessionQuery(world.app)

    @settings(
        max_examples=60,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
    @given(
        scope=SCOPES,
        target=st.sampled_from([*names, NEVER]),
        read=st.sampled_from(sorted(TARGETED)),
    )
    def check(scope: Scope, target: str, read: str) -> None:
        query = SessionQuery(world.app).scoped(scope)
        call = TARGETED[read]
        session_id = world.ids.get(target, target)
        found = outcome(lambda: call(query, session_id))
        if session_id in world.ids_in(scope):
            expected = outcome(lambda: call(plain, session_id))
            parent = world.headers[target].get("parentSession")
            whole = parent is None or parent in world.ids_in(scope)
            if whole and read not in BELOW:
                assert found == expected
            else:
                assert found[0] == expected[0]
        else:
            missing = outcome(lambda: call(query, NEVER))
            assert same_but_for_the_id(found, session_id, missing, NEVER)
            secrets = world.secrets_outside(scope) - {session_id}
            assert not any(secret in str(found) for secret in secrets)

    check()


def test_search_with_every_filter_stays_in_scope(world: World) -> None:
    query = scoped(world)
    for filter_ in (
        EventFilter(),
        EventFilter(types=("user/message",)),
        EventFilter(text="needle"),
    ):
        page = query.search_sessions("needle", event_filter=filter_, limit=100)
        assert {hit.session_id for hit in page.items} == world.ids_in(SCOPE_A)


HOSTILE = ["", "\x00", "a\x00b", "\udcff", "x" * 5000, "../../etc/passwd", "%", "'"]


def test_hostile_ids_read_as_missing_in_and_out_of_a_scope(world: World) -> None:
    query, plain = scoped(world), SessionQuery(world.app)
    failures = []
    for read, call in sorted(TARGETED.items()):
        for session_id in HOSTILE:
            found = outcome(lambda c=call, s=session_id: c(query, s))  # type: ignore[misc]
            expected = outcome(lambda c=call, s=session_id: c(plain, s))  # type: ignore[misc]
            if found != expected:
                failures.append((read, session_id[:20], found, expected))
    assert failures == []


@pytest.mark.parametrize("caller", ["a\x00b", "\udcff", "'; DROP TABLE x; --"])
def test_a_hostile_caller_id_is_an_unknown_caller(world: World, caller: str) -> None:
    with pytest.raises(SessionQueryError) as caught:
        SessionQuery(world.app).for_caller(caller)
    assert caught.value.code == SessionQueryError.UNKNOWN_CALLER


def test_any_scope_strings_select_exactly_their_sessions(world: World) -> None:
    """Scope values are data, never SQL: any text selects the headers that hold
    exactly it (here: none), and a real value still works beside it."""

    @settings(
        max_examples=40,
        deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture],
    )
    @given(cwd=st.text(max_size=20), owner=st.one_of(st.none(), st.text(max_size=20)))
    def check(cwd: str, owner: str | None) -> None:
        scope = Scope(cwd=cwd, owner=owner)
        query = SessionQuery(world.app).scoped(scope)
        expected = world.ids_in(scope)
        assert {str(r.header["id"]) for r in query.list_sessions()} == expected
        assert {i.id for i in query.list_summaries(100).items} == expected
        hits = query.search_sessions("needle", limit=100)
        assert {hit.session_id for hit in hits.items} == expected

    check()


def test_async_queries_scope_alike(world: World) -> None:
    async def run() -> None:
        sessions = AsyncSessions(world.app)
        reads = sessions.query()
        mine = await reads.for_caller(world.ids["a-root"])
        listed = await mine.list_sessions()
        assert {str(r.header["id"]) for r in listed} == world.ids_in(SCOPE_A)
        with pytest.raises(SessionQueryError) as caught:
            await mine.read_surface(world.ids["b-root"])
        assert caught.value.code == NOT_FOUND
        other = reads.scoped(Scope(cwd=W2, owner=O1))
        page = await other.list_summaries(100)
        assert {i.id for i in page.items} == world.ids_in(Scope(cwd=W2, owner=O1))
        with pytest.raises(SessionQueryError) as caught:
            mine.scoped(Scope())
        assert caught.value.code == SessionQueryError.INVALID_SCOPE
        with pytest.raises(SessionQueryError) as caught:
            await reads.for_caller(NEVER)
        assert caught.value.code == SessionQueryError.UNKNOWN_CALLER
        sessions.executor.shutdown(wait=True)

    asyncio.run(run())


def test_a_reader_without_views_is_scoped_alike(world: World) -> None:
    """Mounted readers other than the store's own (no views, no index) take the
    scan paths: the listing folds logs, lineage walks the listed corpus, search
    scans. The scope holds on every one of them."""
    query = SessionQuery(world.app)
    counting = CountingReader(query.store_reader())
    query.mount(counting)
    reads = query.scoped(SCOPE_A)
    results = every_listing(reads, world)
    for name in world.names_in(SCOPE_A):
        session_id = world.ids[name]
        for read in TARGETED.values():
            results.append(outcome(lambda r=read, s=session_id: r(reads, s)))  # type: ignore[misc]
    dump = "".join(text(result) for result in results)
    assert sorted(s for s in world.secrets_outside(SCOPE_A) if s in dump) == []
    assert {str(r.header["id"]) for r in reads.list_sessions()} == world.ids_in(SCOPE_A)
    assert {i.id for i in reads.list_summaries(100).items} == world.ids_in(SCOPE_A)
    trace = reads.trace_session(world.ids["a-root"])
    assert [n.session.header["id"] for n in trace.descendants] == [world.ids["a-fork"]]
    assert counting.lists > 0
    loads = counting.loads
    for name in sorted(set(world.ids) - world.names_in(SCOPE_A)):
        session_id = world.ids[name]
        found = outcome(lambda s=session_id: reads.read_surface(s))  # type: ignore[misc]
        assert same_but_for_the_id(
            found, session_id, outcome(lambda: reads.read_surface(NEVER)), NEVER
        )
    assert counting.loads == loads  # no outside log was ever loaded
