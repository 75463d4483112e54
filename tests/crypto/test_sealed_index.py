"""The search index of an encrypted store (issue 21): a copy of the database
holds none of the indexed words, a copy taken before an erase cannot confirm
the erased session's words with the key store as it is after, and search
answers exactly as without encryption (docs/encryption.md#the-search-index)."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
from functools import partial
from typing import TYPE_CHECKING

import pytest

from agentlog import SessionQuery, export_session, import_log
from agentlog.application import Sessions
from agentlog.application.search_hashing import hashed_token
from agentlog.application.search_index import search_index_of
from agentlog.application.search_models import EventFilter, SessionFilter
from agentlog.domain.search_text import tokens
from agentlog.infrastructure.backends.sqlite.search_tokens import NO_PAIRS, fts_token
from agentlog.infrastructure.crypto import MasterKey
from agentlog.infrastructure.key_store_setup import open_key_store
from tests.conftest import backend_env
from tests.crypto.conftest import keystore_of
from tests.crypto.test_round_trip import write
from tests.crypto.test_shredding import backup_sqlite
from tests.search.index.support import CJK_QUERIES, CJK_TEXTS, corpus, pages

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from pathlib import Path

MARKERS = ("zqxvelvetmarker", "qjwpaperclipmarker", "秘密计划书")
"""Distinctive words, indexed from answers and tool outputs (not the first
prompt, which the listing holds: its sealing is the views' own test)."""


def write_markers(app: Sessions, session_id: str = "secret") -> None:
    write(
        app,
        session_id,
        "hello there",
        f"the {MARKERS[0]} answer {MARKERS[2]}",
        f"tool said {MARKERS[1]} and {MARKERS[0]}",
    )


def marker_tokens() -> list[str]:
    """Every token of the markers of two or more characters (a single CJK
    character is three bytes, which sealed bytes hold by chance)."""
    return sorted({t for m in MARKERS for t in tokens(m) if len(t) > 1})


def forms(token: str) -> list[bytes]:
    """The bytes a token could be stored as: itself, FTS5's escape of it."""
    return sorted({token.encode(), fts_token(token).encode()})


def found_in(data: bytes) -> list[str]:
    return [t for t in marker_tokens() if any(form in data for form in forms(t))]


def index(app: Sessions) -> None:
    """Index everything, as a search does."""
    assert SessionQuery(app).search_sessions("answer").items


def sqlite_copy(database: str, target: Path) -> bytes:
    """The bytes of a file copy of a live SQLite store: the database and its WAL."""
    data = b""
    for suffix in ("", "-wal"):
        source = database + suffix
        try:
            shutil.copyfile(source, str(target) + suffix)
        except FileNotFoundError:
            continue
        data += (target.parent / (target.name + suffix)).read_bytes()
    return data


def vocabulary(database: str) -> set[str]:
    """Every term of the SQLite index, as ``fts5vocab`` lists them."""
    db = sqlite3.connect(database)
    try:
        db.execute(
            "CREATE VIRTUAL TABLE temp.v USING fts5vocab(main, "
            "agentlog_search_v5_fts, 'instance')"
        )
        return {str(term) for (term,) in db.execute("SELECT DISTINCT term FROM v")}
    finally:
        db.close()


@pytest.fixture
def sqlite_only(crypto_env: dict[str, str]) -> None:
    if crypto_env["PERSISTENCE_MODULE"] != "eventsourcing.sqlite":
        pytest.skip("a SQLite file (PostgreSQL: the pg_dump test)")


@pytest.mark.usefixtures("sqlite_only")
@pytest.mark.parametrize("sealed", [True, False], ids=["sealed", "plain"])
def test_a_copy_of_the_sqlite_store_holds_no_indexed_word(
    crypto_env: dict[str, str],
    plain_env: dict[str, str],
    tmp_path: Path,
    sealed: bool,
) -> None:
    """A byte scan of the database and its WAL, and FTS5's own vocabulary:
    no marker with encryption on; every one without (so the scan can fail)."""
    app = Sessions(env=crypto_env if sealed else plain_env)
    try:
        write_markers(app)
        index(app)
        assert SessionQuery(app).search_sessions(MARKERS[1]).items
        data = sqlite_copy(app.env["SQLITE_DBNAME"], tmp_path / "copy.db")
    finally:
        app.close()
    terms = vocabulary(str(tmp_path / "copy.db"))
    escaped = {fts_token(t) for t in marker_tokens()}
    if sealed:
        assert found_in(data) == []
        assert terms.isdisjoint(escaped)
        # Hashes, and the pairs column's "none" mark: nothing else.
        assert {term for term in terms if len(term) != 16} == {NO_PAIRS}
    else:
        assert found_in(data) == marker_tokens()
        assert escaped <= terms


@pytest.mark.usefixtures("sqlite_only")
def pg_dump(env: dict[str, str]) -> bytes:
    """A ``pg_dump`` of the store's schema (its rows as text)."""
    if shutil.which("pg_dump") is None:
        pytest.skip("pg_dump is not installed")
    return subprocess.run(
        [
            "pg_dump",
            "--no-owner",
            "-h",
            env["POSTGRES_HOST"],
            "-p",
            env["POSTGRES_PORT"],
            "-U",
            env["POSTGRES_USER"],
            "-n",
            env["POSTGRES_SCHEMA"],
            env["POSTGRES_DBNAME"],
        ],
        check=True,
        capture_output=True,
        timeout=120,
    ).stdout


def test_a_backup_and_the_current_key_store_cannot_confirm_erased_words(
    crypto_env: dict[str, str], open_app: Callable[..., Sessions], tmp_path: Path
) -> None:
    """Whoever holds a copy taken before an erase (a SQLite backup, a
    ``pg_dump``), the key store as it is after and the master key can hash any
    guess under every key left: none of the erased session's words is found.
    Before the erase, its own key confirms them (so the test can fail)."""
    app = open_app()
    write_markers(app, "erased")
    write(app, "kept", "kept prompt", "kept answer", "kept output")
    index(app)
    sqlite = crypto_env["PERSISTENCE_MODULE"] == "eventsourcing.sqlite"
    copy = tmp_path / "backup.db"
    if sqlite:
        backup_sqlite(crypto_env["SQLITE_DBNAME"], copy)
        backup = " ".join(sorted(vocabulary(str(copy)))).encode()
    else:
        backup = pg_dump(app.env)
    master = MasterKey.from_base64(crypto_env["AGENTLOG_MASTER_KEY"])

    def confirmed() -> list[str]:
        # Every session id is in the backup's rows: ask for each one's key.
        keys = open_key_store(keystore_of(crypto_env), master)
        try:
            every = keys.search_keys(["erased", "kept"]).values()
        finally:
            keys.close()
        return [
            t
            for t in marker_tokens()
            if any(hashed_token(k, t).encode() in backup for k in every)
        ]

    assert confirmed() == marker_tokens()
    app.erase("erased", reason="request")
    assert confirmed() == []
    if not sqlite:
        return
    restored = open_app(
        SQLITE_DBNAME=str(copy), AGENTLOG_KEYSTORE=keystore_of(crypto_env)
    )
    query = SessionQuery(restored)
    assert query.search_sessions(MARKERS[0]).items == []
    assert [i.session_id for i in query.search_sessions("kept answer").items] == [
        "kept"
    ]


def test_a_pg_dump_of_the_encrypted_schema_holds_no_indexed_word(
    crypto_env: dict[str, str], open_app: Callable[..., Sessions]
) -> None:
    if crypto_env["PERSISTENCE_MODULE"] != "eventsourcing.postgres":
        pytest.skip("PostgreSQL (SQLite: the file copy test)")
    app = open_app()
    write_markers(app)
    index(app)
    data = pg_dump(app.env)
    assert b"agentlog_search_v3_docs" in data
    assert found_in(data) == []


def test_a_pg_dump_of_a_plain_schema_holds_the_words(
    plain_env: dict[str, str],
) -> None:
    """The same scan without encryption finds every marker (it can fail)."""
    if plain_env["PERSISTENCE_MODULE"] != "eventsourcing.postgres":
        pytest.skip("PostgreSQL")
    app = Sessions(env=plain_env)
    try:
        write_markers(app)
        index(app)
        data = pg_dump(app.env)
    finally:
        app.close()
    assert found_in(data) == marker_tokens()


@pytest.fixture
def plain_app(crypto_backend: str, tmp_path: Path) -> Iterator[Sessions]:
    """A store without encryption beside the test's encrypted one."""
    (tmp_path / "plain").mkdir()
    for env in backend_env(crypto_backend, tmp_path / "plain"):
        app = Sessions(env=env)
        try:
            yield app
        finally:
            app.close()


def fill(app: Sessions) -> None:
    corpus(app)
    for number, text in enumerate(CJK_TEXTS):
        write(app, f"cjk{number}", "cjk prompt", text, f"{text} output")


QUERIES = ["alpha", "ai model", "x y z", "gamma delta", "nothing here", *CJK_QUERIES]


def test_search_answers_as_without_encryption(
    open_app: Callable[..., Sessions], plain_app: Sessions
) -> None:
    """Words, phrases and CJK queries, with filters and cursors: the same
    pages from the hashed index as from the plaintext one."""
    sealed = open_app()
    fill(plain_app)
    listed = SessionQuery(plain_app).list_sessions()
    for session_id in [record.header["id"] for record in listed]:  # times kept
        import_log(sealed, export_session(plain_app, session_id))
    view = search_index_of(sealed)
    assert view is not None
    assert view.search.view.hashing is not None
    assert search_index_of(plain_app).search.view.hashing is None  # type: ignore[union-attr]
    hits = 0
    for text in QUERIES:
        for options in (
            {},
            {"session_filter": SessionFilter(cwd=("/w1", "/w2"))},
            {"event_filter": EventFilter(types=("assistant/message",))},
        ):
            got = [
                pages(partial(SessionQuery(app).search_sessions, text), **options)
                for app in (sealed, plain_app)
            ]
            assert got[0] == got[1], (text, options)
            hits += len(got[0])
        for session_id in ("s03", "cjk0"):
            got = [
                pages(partial(SessionQuery(app).search_events, session_id, text))
                for app in (sealed, plain_app)
            ]
            assert got[0] == got[1], (text, session_id)
    assert hits > 50
