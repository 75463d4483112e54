"""Sealed views (issue 21): with encryption on, the listing, titles and lineage
rows hold no session content a copy could read, every read answers as without
encryption, and an erase leaves nothing of the session readable in an older copy
(docs/encryption.md#the-views)."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from typing import TYPE_CHECKING, Any

import pytest

from agentlog import SessionQuery, SessionQueryError
from agentlog.application import Sessions
from agentlog.application.browse import Browser, ListingFilter
from agentlog.application.catch_up import views_of
from agentlog.application.scope import Scope
from agentlog.application.search_models import SessionFilter
from agentlog.infrastructure.key_store_setup import rotate_master_key
from tests.cli.conftest import CONSOLE_SCRIPT
from tests.conftest import PG_URL, backend_env, postgres_schema
from tests.crypto.byte_scan import (
    MARKERS,
    VIEW_MARKERS,
    found,
    pg_dump,
    sqlite_copy,
    write_markers,
)
from tests.crypto.conftest import keystore_of, new_master_key
from tests.crypto.test_shredding import backup_sqlite

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

SEARCH_OFF = {"AGENTLOG_SEARCH": "off"}


def sealed(env: dict[str, str], keystore: str = "", master: str = "") -> dict[str, str]:
    out = {
        **env,
        "AGENTLOG_ENCRYPTION": "per-session",
        "AGENTLOG_MASTER_KEY": master or new_master_key(),
    }
    if keystore:
        out["AGENTLOG_KEYSTORE"] = keystore
    return out


@pytest.fixture(params=["popo", "sqlite", "postgres"])
def stores(
    request: pytest.FixtureRequest, tmp_path: Path
) -> Iterator[tuple[dict[str, str], dict[str, str]]]:
    """Two fresh stores of one backend: plaintext, and encrypted."""
    backend = str(request.param)
    (tmp_path / "plain").mkdir()
    (tmp_path / "sealed").mkdir()
    for plain in backend_env(backend, tmp_path / "plain"):
        for other in backend_env(backend, tmp_path / "sealed"):
            if backend != "postgres":
                yield plain, sealed(other)
                continue
            for schema in postgres_schema("k_"):
                yield plain, sealed(other, f"{PG_URL}?schema={schema}")


def write_more(app: Sessions) -> None:
    """The markers, and sessions around them to page and filter through."""
    write_markers(app)
    for n in range(6):
        handle = app.create_session(
            cwd=f"/w/{n % 2}",
            session_id=f"other-{n}",
            owner=None if n % 3 else "someone",
            created_at=20 + n,
        )
        app.close(handle)


def reads(app: Sessions) -> dict[str, Any]:
    """What every read path answers, without the times the clock wrote."""
    query = SessionQuery(app)
    marked_cwd, owner = VIEW_MARKERS["cwd"], VIEW_MARKERS["owner"]
    browser = Browser(app)

    def ids(records: Any) -> list[str]:
        return [record.header["id"] for record in records]

    def summaries(page: Any) -> list[Any]:
        return [item.model_dump(exclude={"updated_at"}) for item in page.items] + [
            page.next_cursor
        ]

    title = query.read_title("marked")
    trace = query.trace_session("marked-child")
    return {
        "list": [record.header for record in query.list_sessions()],
        "by cwd": ids(query.filter_sessions(SessionFilter(cwd=(marked_cwd,)))),
        "by owner": ids(query.filter_sessions(SessionFilter(owner=(owner,)))),
        "no owner": ids(query.filter_sessions(SessionFilter(owner=(None,)))),
        "scope owner": ids(query.scoped(Scope(owner=owner)).list_sessions()),
        "scope cwd": ids(query.scoped(Scope(cwd="/w/1", owner=None)).list_sessions()),
        "scope none": ids(query.scoped(Scope(cwd="/nowhere")).list_sessions()),
        "title": None if title is None else title.title,
        "trace": (ids(trace.ancestors), ids(trace.descendants), trace.complete),
        "viewer": summaries(browser.listing(ListingFilter(owner=owner), 5, None)),
        "viewer cwd": summaries(browser.listing(ListingFilter(cwd="/w/0"), 2, None)),
        "page": summaries(query.list_summaries(3)),
    }


def test_every_read_answers_as_without_encryption(
    stores: tuple[dict[str, str], dict[str, str]],
) -> None:
    answers = []
    for env in stores:
        app = Sessions(env=env)
        try:
            write_more(app)
            answers.append(reads(app))
            names = {type(p.view).__name__ for p in views_of(app).projections}
            assert all(name.startswith("Sealed") for name in names) is (
                "AGENTLOG_ENCRYPTION" in env
            ), names
        finally:
            app.close()
    plain, encrypted = answers
    assert encrypted == plain
    assert plain["by cwd"] == ["marked"]
    assert plain["scope owner"] == ["marked-child", "marked"]
    assert plain["title"] == VIEW_MARKERS["title"]
    assert plain["trace"] == (["marked"], [], True)


def test_a_sqlite_copy_holds_no_view_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The database file, its WAL and the key store file, byte by byte."""
    scans = {}
    for name, search in (("plain", SEARCH_OFF), ("sealed", SEARCH_OFF), ("search", {})):
        monkeypatch.setenv("AGENTLOG_SEARCH", search.get("AGENTLOG_SEARCH", "on"))
        (tmp_path / name).mkdir()
        env = next(backend_env("sqlite", tmp_path / name))
        env = {**(env if name == "plain" else sealed(env)), **search}
        app = Sessions(env=env)
        try:
            write_markers(app)
            SessionQuery(app).list_sessions()  # the views caught up
            if not search:
                assert SessionQuery(app).search_sessions(MARKERS["answer"]).items
            keys = (
                keystore_of(env).removeprefix("sqlite:///") if name != "plain" else None
            )
            scans[name] = found(sqlite_copy(env["SQLITE_DBNAME"], keys))
        finally:
            app.close()
    assert scans["plain"] == set(MARKERS)  # the scan finds what is there
    assert scans["sealed"] == set()
    assert scans["search"] == set()  # the index holds keyed hashes, no words


def test_a_pg_dump_holds_no_view_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    master = new_master_key()
    for schema in postgres_schema("k_"):
        for search in (SEARCH_OFF, {}):
            monkeypatch.setenv("AGENTLOG_SEARCH", search.get("AGENTLOG_SEARCH", "on"))
            for env in backend_env("postgres", tmp_path):
                keys = f"{PG_URL}?schema={schema}"
                env = {**sealed(env, keys, master), **search}
                app = Sessions(env=env)
                try:
                    write_markers(app)
                    SessionQuery(app).list_sessions()
                    if not search:
                        SessionQuery(app).search_sessions(MARKERS["answer"])
                finally:
                    app.close()
                dump = pg_dump(env["POSTGRES_SCHEMA"], schema, tmp_path=tmp_path)
                assert b"agentlog_listing_v3_sealed" in dump
                assert found([dump]) == set()
    monkeypatch.setenv("AGENTLOG_SEARCH", "off")
    for env in backend_env("postgres", tmp_path):
        app = Sessions(env={**env, **SEARCH_OFF})
        try:
            write_markers(app)
            SessionQuery(app).list_sessions()
        finally:
            app.close()
        dump = pg_dump(env["POSTGRES_SCHEMA"], tmp_path=tmp_path)
        assert found([dump]) == set(MARKERS)  # plaintext: the scan finds them


def test_a_copy_from_before_an_erase_reveals_nothing_of_the_erased_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTLOG_SEARCH", "off")
    env = {**sealed(next(backend_env("sqlite", tmp_path))), **SEARCH_OFF}
    app = Sessions(env=env)
    write_markers(app)
    kept = app.create_session(cwd="/kept", session_id="kept", created_at=30)
    app.close(kept)
    SessionQuery(app).list_sessions()
    copy = tmp_path / "before-erase.db"
    backup_sqlite(env["SQLITE_DBNAME"], copy)
    app.erase("marked", reason="test")
    app.erase("marked-child", reason="test")
    app.close()

    copy_env = {
        **env,
        "SQLITE_DBNAME": str(copy),
        "AGENTLOG_KEYSTORE": keystore_of(env),
    }
    with sqlite3.connect(copy) as db:
        stored = db.execute(
            "SELECT count(*) FROM agentlog_listing_v3_sealed WHERE session_id != ?",
            (b"kept",),
        ).fetchone()[0]
    assert stored == 2  # the erased sessions' rows are in the copy, sealed
    old = Sessions(env=copy_env)
    try:
        query = SessionQuery(old)
        assert [r.header["id"] for r in query.list_sessions()] == ["kept"]
        cwd, owner = VIEW_MARKERS["cwd"], VIEW_MARKERS["owner"]
        assert query.filter_sessions(SessionFilter(cwd=(cwd,))) == []
        assert query.scoped(Scope(owner=owner)).list_sessions() == []
        with pytest.raises(SessionQueryError, match='session "marked" not found'):
            query.read_title("marked")
        views = views_of(old)
        assert [row.session_id for row in views.lineage.view.select_all()] == ["kept"]
        assert views.titles.view.select_rows(["marked"]) == {}
    finally:
        old.close()
    assert (
        found(sqlite_copy(str(copy), keystore_of(env).removeprefix("sqlite:///")))
        == set()
    )


def test_turning_encryption_on_folds_the_views_into_sealed_tables(
    tmp_path: Path,
) -> None:
    env = next(backend_env("sqlite", tmp_path))
    plain = Sessions(env=env)
    write_more(plain)
    before = reads(plain)
    plain.close()
    app = Sessions(env=sealed(env))
    try:
        assert reads(app) == before
    finally:
        app.close()
    with sqlite3.connect(env["SQLITE_DBNAME"]) as db:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
        positions = [
            row[0] for row in db.execute("SELECT application_name FROM tracking")
        ]
    assert "agentlog_listing_v3" not in tables
    assert "agentlog_titles_v2" not in tables
    assert "agentlog_lineage_v2" not in tables
    assert "agentlog_listing_v3_sealed" in tables
    assert not [name for name in positions if name.endswith(".v3")]


def test_filters_match_after_the_master_key_is_rotated(tmp_path: Path) -> None:
    env = sealed(next(backend_env("sqlite", tmp_path)))
    app = Sessions(env=env)
    write_markers(app)
    owner = VIEW_MARKERS["owner"]
    assert len(SessionQuery(app).scoped(Scope(owner=owner)).list_sessions()) == 2
    app.close()
    new = new_master_key()
    url = "sqlite:///" + env["SQLITE_DBNAME"]
    rotate_master_key(url, {**env, "AGENTLOG_NEW_MASTER_KEY": new})
    app = Sessions(env={**env, "AGENTLOG_MASTER_KEY": new})
    try:
        later = app.create_session(cwd="/w", session_id="later", owner=owner)
        app.close(later)
        scoped = SessionQuery(app).scoped(Scope(owner=owner)).list_sessions()
        assert [r.header["id"] for r in scoped] == ["later", "marked-child", "marked"]
    finally:
        app.close()


@pytest.mark.slow  # runs the command line as a process
def test_the_command_line_lists_the_same_sealed_and_plain(tmp_path: Path) -> None:
    pages = []
    for name in ("plain", "sealed"):
        (tmp_path / name).mkdir()
        env = next(backend_env("sqlite", tmp_path / name))
        env = env if name == "plain" else sealed(env)
        app = Sessions(env=env)
        try:
            write_more(app)
        finally:
            app.close()
        process_env = {k: v for k, v in os.environ.items() if k != "AGENTLOG_STORE"}
        process_env |= {k: v for k, v in env.items() if k.startswith("AGENTLOG_")}
        url = "sqlite:///" + env["SQLITE_DBNAME"]
        listed = []
        for extra in ([], ["--owner", VIEW_MARKERS["owner"]], ["--limit", "2"]):
            result = subprocess.run(
                [str(CONSOLE_SCRIPT), "--store", url, "ls", "--json", *extra],
                capture_output=True,
                env=process_env,
                timeout=120,
                check=False,
            )
            assert result.returncode == 0, result.stderr
            listed.append(without_times(json.loads(result.stdout)))
        pages.append(listed)
    assert pages[0] == pages[1]
    assert VIEW_MARKERS["title"] in json.dumps(pages[1][1])


def without_times(value: Any) -> Any:
    """The page without the times the clock wrote."""
    if isinstance(value, dict):
        return {k: without_times(v) for k, v in value.items() if k != "updatedAt"}
    if isinstance(value, list):
        return [without_times(item) for item in value]
    return value
