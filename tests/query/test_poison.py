"""Every string JavaScript can hold survives every read, and poisons nothing else.

Lone surrogates, NUL and astral characters go through append, flush, every read
of the query service (and its ``to_json``), export and import, on every backend;
a session holding them never changes what the reads of the others return; and
every output handles 20,000-deep data (docs/strings.md).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from agentlog.application import SessionQuery, Sessions
from agentlog.application.catch_up import views_of
from agentlog.domain.errors import SessionNotFoundError, SessionQueryError
from agentlog.domain.json import dumps, loads
from agentlog.infrastructure.formats.jsonl import export_session, import_log
from tests.query.support import CountingReader, session
from tests.scenarios.harness import SE, SS, TE, TS, A, Append, U

# Characters a JavaScript string holds that UTF-8 text or PostgreSQL text cannot,
# and their neighbours in code-point order.
AWKWARD = ["\ud83d", "\ude00", "\udfff", "\ud800", "\x00", "\x1b", "😀", "\U0010ffff"]
AWKWARD += ["\ud7ff", "\ue000", "\\", '"', "\n", "é", "a", "~"]
EXTRA = "x-"
"""The prefix of the hostile extra key (an unknown field, kept as written)."""
HOSTILE_TEXT = st.text(
    st.one_of(st.sampled_from(AWKWARD), st.characters(codec=None)),
    min_size=1,
    max_size=10,
)
SETTINGS = settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


def title(value: str) -> Append:
    data = {"title": value, "messageSeqs": [1], "source": {"kind": "fallback"}}
    return Append("session/title", data)


def hostile_session(app: Sessions, text: str, *, created_at: int = 5) -> str:
    """A session whose cwd, parent, prompt, reply, title and keys hold ``text``."""
    session_id = str(uuid.uuid4())
    handle = app.create_session(
        cwd="/" + text,
        session_id=session_id,
        created_at=created_at,
        parent_session=text,
    )
    reply = A(text)
    # Keys too; prefixed, so the text "turn" cannot overwrite the payload's own.
    reply.data[EXTRA + text] = {text: [text, {"deep": text}]}
    for append in (TS(1), U(text), SS(1, 1), reply, SE(1, 1), title(text), TE(1)):
        append.to(handle)  # type: ignore[arg-type]
    app.close(handle)
    return session_id


def reads(query: SessionQuery, session_id: str) -> dict[str, Any]:
    """Every read of one session as JSON (what ``--json`` prints)."""
    title_snapshot = query.read_title(session_id)
    return {
        "title": None if title_snapshot is None else title_snapshot.to_json(),
        "events": [record.to_json() for record in query.list_events(session_id)],
        "surface": query.read_surface(session_id).to_json(),
        "event": query.read_event(session_id, 1, before=1, after=3).to_json(),
        "trace-event": query.trace_event(session_id, 3).to_json(),
        "trace": query.trace_session(session_id).to_json(),
    }


def listed(query: SessionQuery, session_id: str) -> dict[str, Any]:
    (record,) = [
        r.to_json() for r in query.list_sessions() if r.header["id"] == session_id
    ]
    (summary,) = [
        s.to_json()
        for s in query.list_summaries(limit=1000).items
        if s.id == session_id
    ]
    return {"record": record, "summary": summary}


def through_output(value: Any) -> Any:
    """What a reader of ``--json`` gets back: our bytes, decoded as JSON."""
    return loads(dumps(value))


@SETTINGS
@given(text=HOSTILE_TEXT)
@example(text="turn")  # a payload field's own name, as a key
def test_hostile_strings_survive_every_read_export_and_import(
    app: Sessions, text: str
) -> None:
    session_id = hostile_session(app, text)
    stored = app.read_events(session_id)
    assert stored[1]["data"]["content"][0]["text"] == text
    assert stored[3]["data"][EXTRA + text] == {text: [text, {"deep": text}]}

    query = SessionQuery(app)
    # The log-folding reader is the oracle for what the views must return.
    oracle = SessionQuery(app, persistence=CountingReader(query.persistence))
    got = listed(query, session_id)
    assert got == listed(oracle, session_id)
    summary = got["summary"]
    assert summary["cwd"] == "/" + text
    assert summary["parentSession"] == text
    assert summary["title"] == text
    assert summary["header"] == app.header(session_id)
    assert query.read_surface(session_id).events == [stored[1], stored[3]]
    assert reads(query, session_id) == reads(oracle, session_id)
    assert through_output(reads(query, session_id)) == reads(query, session_id)
    assert through_output(got) == got
    if views_of(app).lineage.view.select_children(text):
        (child,) = views_of(app).lineage.view.select_children(text)
        assert child.session_id == session_id

    exported = export_session(app, session_id)
    target = Sessions(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})
    try:
        imported = import_log(target, exported).session_id
        assert export_session(target, imported) == exported
    finally:
        target.close()


@SETTINGS
@given(texts=st.lists(HOSTILE_TEXT, min_size=1, max_size=3))
def test_a_hostile_session_never_changes_the_reads_of_others(
    app: Sessions, texts: list[str]
) -> None:
    plain = [str(uuid.uuid4()) for _ in range(2)]
    for number, session_id in enumerate(plain):
        session(app, session_id, TS(1), U(f"hi {number}"), title("T"), TE(1))
    query = SessionQuery(app)
    before = {sid: (reads(query, sid), listed(query, sid)) for sid in plain}
    for text in texts:
        hostile_session(app, text)
    after = {sid: (reads(query, sid), listed(query, sid)) for sid in plain}
    assert after == before


@pytest.mark.slow
def test_20000_deep_data_serialises_through_every_output(app: Sessions) -> None:
    deep: Any = "bottom"
    for _ in range(20_000):
        deep = {"d": [deep]}
    session_id = str(uuid.uuid4())
    handle = app.create_session(cwd="/w", session_id=session_id, created_at=5)
    reply = A("deep")
    reply.data["extra"] = deep
    for append in (TS(1), U("hi"), SS(1, 1), reply, SE(1, 1), TE(1)):
        append.to(handle)  # type: ignore[arg-type]
    app.close(handle)
    query = SessionQuery(app)
    out = reads(query, session_id)
    expected = dumps(deep)  # == on 20,000-deep values would recurse
    assert dumps(out["event"]["events"][3]["data"]["extra"]) == expected
    assert dumps(out["surface"]["events"][1]["data"]["extra"]) == expected
    assert dumps(loads(dumps(out))) == dumps(out)


def test_an_id_no_store_can_hold_reads_as_missing(app: Sessions) -> None:
    # NUL and lone surrogates cannot be sent to SQLite or PostgreSQL as text;
    # such an id was never stored, so every read says "not found", typed.
    for bad in ("\udfff", "a\x00b", "\ud83d!"):
        assert app.is_stored(bad) is False
        assert app.is_erased(bad) is False
        for read in (
            app.get_session,
            app.read_events,
            app.header,
            app.messages,
            app.repair,
            app.stored_header,
        ):
            with pytest.raises(SessionNotFoundError, match="not found"):
                read(bad)
        with pytest.raises(SessionNotFoundError), app.command(bad):
            pass
        with pytest.raises(SessionNotFoundError):
            app.fork(bad)
        query = SessionQuery(app)
        for query_read in (query.read_surface, query.list_events, query.trace_session):
            with pytest.raises(SessionQueryError) as caught:
                query_read(bad)
            assert caught.value.code == "SESSION_QUERY_SESSION_NOT_FOUND"
