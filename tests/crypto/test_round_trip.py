"""Per-session encryption, end to end on SQLite and PostgreSQL: every read, fork,
import/export, the views and search work as without it, while every stored state
(events, headers, snapshots) is sealed and holds none of the plaintext."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from agentlog import (
    CorruptSessionLogError,
    EncryptionError,
    SessionAlreadyExistsError,
    SessionQuery,
    SessionTitles,
    TitleConfig,
    export_session,
    import_log,
)
from agentlog.application import Sessions
from agentlog.application.catch_up import views_of
from agentlog.infrastructure.crypto import OVERHEAD, SEALED_PREFIX
from agentlog.infrastructure.mapper import SessionMapper
from tests.query.support import session
from tests.scenarios.harness import SE, SS, TE, TS, A, Acall, C, R, U

if TYPE_CHECKING:
    from collections.abc import Callable

    from eventsourcing.persistence import StoredEvent

SECRETS = ("MARKER-prompt-7f3a", "MARKER-answer-91bc", "MARKER-tool-output-c0de")


def turn(n: int, prompt: str, answer: str, output: str) -> list[object]:
    call = f"c{n}"
    return [
        TS(n),
        U(prompt),
        SS(n, 1),
        Acall(call, n, 1),
        C(call, n, 1),
        R(call, n, 1, content=[{"type": "text", "text": output}]),
        SE(n, 1),
        SS(n, 2),
        A(answer, turn=n, step=2),
        SE(n, 2),
        TE(n),
    ]


def write(app: Sessions, session_id: str, *secrets: str) -> None:
    prompt, answer, output = secrets or SECRETS
    session(
        app,
        session_id,
        *turn(1, prompt, answer, output),
        *turn(2, "again", "ok", "done"),
    )  # type: ignore[arg-type]


def raw_rows(app: Sessions, session_id: str) -> list[StoredEvent]:
    rows = list(app.recorder.select_events(session_id))
    assert app.snapshots is not None
    rows += app.snapshots.recorder.select_events(session_id)
    return rows


def assert_sealed(rows: list[StoredEvent]) -> None:
    assert rows
    for row in rows:
        assert row.state.startswith(SEALED_PREFIX), row
        for secret in SECRETS:
            assert secret.encode() not in row.state


def test_append_read_reopen(open_app: Callable[..., Sessions]) -> None:
    app = open_app(AGENTLOG_SNAPSHOT_INTERVAL="5")
    write(app, "s1")
    events = app.read_events("s1")
    assert events[1]["data"]["content"][0]["text"] == SECRETS[0]
    rows = raw_rows(app, "s1")
    assert any(row.topic == "session-snapshot" for row in rows)
    assert_sealed(rows)
    app.close()
    again = open_app()
    assert again.read_events("s1") == events
    assert again.messages("s1")[0]["content"][0]["text"] == SECRETS[0]
    handle = again.get_session("s1")  # loads the sealed snapshot, appends more
    for item in turn(3, "third", "fine", "x"):
        item.to(handle)  # type: ignore[attr-defined]
    again.close(handle)
    assert [e["seq"] for e in again.read_events("s1")] == list(range(len(events) + 11))


def test_an_encrypted_row_costs_a_fixed_overhead(
    open_app: Callable[..., Sessions],
) -> None:
    app = open_app()
    write(app, "s1")
    mapper = app.mapper
    assert isinstance(mapper, SessionMapper)
    for row in app.recorder.select_events("s1"):
        assert len(row.state) == len(mapper.decode_bytes(row)) + OVERHEAD


def test_fork_reseals_the_copy_under_the_childs_key(
    open_app: Callable[..., Sessions],
) -> None:
    app = open_app(AGENTLOG_SNAPSHOT_INTERVAL="5")
    write(app, "parent")
    boundary = 10  # the first turn/end
    child = app.fork("parent", boundary)
    app.close(child)
    parent_events = app.read_events("parent", limit=boundary + 1)
    assert app.read_events(child.id) == parent_events
    parent_rows = {
        r.originator_version: r for r in app.recorder.select_events("parent")
    }
    child_rows = raw_rows(app, child.id)
    assert_sealed(child_rows)
    for row in child_rows:
        if row.originator_version > 1 and row.topic != "session-snapshot":
            assert row.state != parent_rows[row.originator_version].state
    # The child's rows open only with the child's key: forgetting the parent's
    # leaves the child whole.
    app.forget_keys(["parent"])
    reopened = open_app()
    assert reopened.read_events(child.id) == parent_events
    handle = reopened.get_session(child.id)
    for item in turn(2, "child prompt", "child answer", "x"):
        item.to(handle)  # type: ignore[attr-defined]
    reopened.close(handle)
    assert reopened.read_events(child.id)[-1]["type"] == "turn/end"


def test_export_import_is_byte_identical(open_app: Callable[..., Sessions]) -> None:
    app = open_app()
    write(app, "s1")
    exported = export_session(app, "s1")
    with pytest.raises(SessionAlreadyExistsError):
        import_log(open_app(), exported)
    # Under another id the import seals every row under that session's new key.
    renamed = exported.replace(b'"s1"', b'"s2"', 1)
    assert import_log(open_app(), renamed).session_id == "s2"
    reader = open_app()
    assert export_session(reader, "s2") == renamed
    assert_sealed(raw_rows(reader, "s2"))


@pytest.mark.slow
def test_a_long_import_streams_sealed_batches(
    open_app: Callable[..., Sessions],
) -> None:
    """Past ONE_PASS_EVENTS the import writes batches through insert_stream."""
    app = open_app()
    handle = app.create_session(cwd="/w", session_id="long")
    for n in range(1, 200):
        for item in turn(n, f"p{n}", f"a{n}", f"o{n}"):
            item.to(handle)  # type: ignore[attr-defined]
    app.close(handle)
    exported = export_session(app, "long")
    result = import_log(app, exported.replace(b'"long"', b'"copy"', 1))
    assert result.events > 2000
    assert export_session(app, "copy") == exported.replace(b'"long"', b'"copy"', 1)
    assert all(
        r.state.startswith(SEALED_PREFIX) for r in app.recorder.select_events("copy")
    )


def test_listing_titles_and_search(open_app: Callable[..., Sessions]) -> None:
    app = open_app()
    write(app, "s1")
    write(app, "s2", "another prompt", "another answer", "another output")
    titles = SessionTitles(app, TitleConfig(5, 40, 80))
    titles.ensure_fallback("s1")
    query = SessionQuery(app)
    assert {record.header["id"] for record in query.list_sessions()} == {"s1", "s2"}
    title = query.read_title("s1")
    assert title is not None
    assert "MARKER" in str(title)
    page = query.search_sessions(SECRETS[1])
    assert [item.session_id for item in page.items] == ["s1"]
    # Rebuilt from the sealed log, the views are the same.
    views = views_of(app)
    before = tuple(p.view.select_all() for p in views.projections)
    views.rebuild()
    assert tuple(p.view.select_all() for p in views.projections) == before


def test_plain_sessions_stay_readable_when_encryption_is_turned_on(
    plain_env: dict[str, str], open_app: Callable[..., Sessions]
) -> None:
    plain = Sessions(env=plain_env)
    try:
        write(plain, "old")
    finally:
        plain.close()
    app = open_app()
    events = app.read_events("old")
    handle = app.get_session("old")
    for item in turn(3, "newer", "fine", "x"):
        item.to(handle)  # type: ignore[attr-defined]
    app.close(handle)
    rows = app.recorder.select_events("old")
    assert not rows[0].state.startswith(SEALED_PREFIX)
    assert rows[-1].state.startswith(SEALED_PREFIX)
    assert app.read_events("old")[: len(events)] == events
    # Without the settings, a sealed row is a typed error naming the remedy.
    plain = Sessions(env=plain_env)
    try:
        with pytest.raises(EncryptionError, match="AGENTLOG_ENCRYPTION=per-session"):
            plain.read_events("old")
    finally:
        plain.close()


def test_a_lost_commit_reply_is_recognised_under_encryption(
    open_app: Callable[..., Sessions],
) -> None:
    """The outage path compares stored rows with the pending events as plain
    bytes: sealing the same event twice never gives the same bytes."""
    app = open_app()
    handle = app.create_session(cwd="/w", session_id="s1")
    for item in turn(1, "p", "a", "o"):
        item.to(handle)  # type: ignore[attr-defined]
    pending = list(handle.aggregate.pending_events)
    app.flush(handle)
    stored = app.recorder.select_events("s1", gt=1, lte=2)[0]
    assert app.mapper.to_stored_event(pending[1]).state != stored.state
    assert app.saver.already_saved(pending)


def test_a_sealed_row_opens_only_in_place(
    crypto_env: dict[str, str], open_app: Callable[..., Sessions]
) -> None:
    """Two rows' states swapped, or one cut short, are corrupt rows, typed; the
    other sessions read on."""
    if crypto_env["PERSISTENCE_MODULE"] != "eventsourcing.sqlite":
        pytest.skip("rows are edited through SQLite here")
    import sqlite3

    app = open_app(AGENTLOG_SNAPSHOT_INTERVAL="0")
    write(app, "s1")
    write(app, "s2", "other prompt", "other answer", "other output")
    app.close()
    with sqlite3.connect(crypto_env["SQLITE_DBNAME"]) as db:
        (three,) = db.execute(
            "SELECT state FROM stored_events WHERE originator_id='s1' AND "
            "originator_version=3"
        ).fetchone()
        db.execute(
            "UPDATE stored_events SET state=? WHERE originator_id='s1' AND "
            "originator_version=5",
            (three,),
        )
        db.execute(
            "UPDATE stored_events SET state=X'000102' WHERE originator_id='s1' AND "
            "originator_version=6"
        )
    db.close()
    reader = open_app()
    with pytest.raises(CorruptSessionLogError, match="at seq 3: the sealed state"):
        reader.read_events("s1", after=2, limit=1)
    with pytest.raises(CorruptSessionLogError, match="at seq 4: the sealed state"):
        reader.read_events("s1", after=3, limit=1)
    assert reader.read_events("s2")[1]["data"]["content"][0]["text"] == "other prompt"


def test_a_damaged_key_store_row_is_typed(
    crypto_env: dict[str, str], open_app: Callable[..., Sessions]
) -> None:
    if crypto_env["PERSISTENCE_MODULE"] != "eventsourcing.sqlite":
        pytest.skip("the key store is edited through SQLite here")
    import sqlite3

    app = open_app()
    write(app, "s1")
    write(app, "s2", "other prompt", "other answer", "other output")
    app.close()
    with sqlite3.connect(crypto_env["SQLITE_DBNAME"] + ".keys") as db:
        db.execute(
            "UPDATE agentlog_data_keys SET wrapped_key=X'01' WHERE session_id='s1'"
        )
    db.close()
    reader = open_app()
    with pytest.raises(EncryptionError, match='data key of session "s1" does not open'):
        reader.read_events("s1")
    assert reader.read_events("s2")[1]["data"]["content"][0]["text"] == "other prompt"
