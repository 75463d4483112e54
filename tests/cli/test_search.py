"""``agentlog search``: human output escaped and highlighted, ``--json``, errors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentlog.infrastructure.store import open_sessions
from tests.cli.conftest import Store, cli_env
from tests.scenarios.harness import SS, TS, A, U

pytestmark = pytest.mark.slow  # every test runs the agentlog command in a process


def filled(tmp_path: Path) -> Store:
    store = Store("sqlite", f"sqlite:///{tmp_path / 'agentlog.db'}", tmp_path)
    app = open_sessions(store.url, create=True)
    try:
        for name, words in (("one", "find me \x1b[2J"), ("two", "find \ud83d me")):
            handle = app.create_session(session_id=name, created_at=1, cwd="/w")
            for append in (TS(1), U(words), SS(1, 1), A(f"{name} answer")):
                append.to(handle)  # type: ignore[arg-type]
            app.close(handle)
    finally:
        app.close()
    return store


def test_search_human_output_is_escaped(tmp_path: Path) -> None:
    store = filled(tmp_path)
    result = store("search", "find me").ok()
    assert "\x1b" not in result.stdout
    assert "\\x1b[2J" in result.stdout and "\\ud83d" in result.stdout
    assert "one" in result.stdout and "two" in result.stdout


def test_search_json_pages_and_filters(tmp_path: Path) -> None:
    store = filled(tmp_path)
    first = store("search", "find", "--limit", "1", "--json").json()
    assert len(first["items"]) == 1 and first["nextCursor"]
    rest = store(
        "search", "find", "--limit", "1", "--cursor", first["nextCursor"], "--json"
    ).json()
    ids = {first["items"][0]["sessionId"], rest["items"][0]["sessionId"]}
    assert ids == {"one", "two"}
    events = store("search", "answer", "--session", "one", "--json").json()
    assert [(h["seq"], h["type"]) for h in events["items"]] == [
        (3, "assistant/message")
    ]
    typed = store("search", "find", "--type", "assistant/message", "--json").json()
    assert typed["items"] == []
    assert store("search", "find", "--cwd", "/x", "--json").json()["items"] == []


def test_search_errors_are_one_line(tmp_path: Path) -> None:
    store = filled(tmp_path)
    empty = store("search", "  ")
    assert empty.returncode == 1
    assert empty.stderr.strip() == "invalid search: the query is empty"
    bad = store("search", "find", "--cursor", "nope")
    assert bad.returncode == 1 and "cursor" in bad.stderr
    off = store("search", "find", env=cli_env(AGENTLOG_SEARCH="off"))
    assert off.returncode == 1 and "disabled" in off.stderr
    assert json.loads(store("ls", "--json", env=cli_env(AGENTLOG_SEARCH="off")).stdout)


def test_search_usage_errors_exit_2_and_any_integer_bound_is_a_filter(
    tmp_path: Path,
) -> None:
    store = filled(tmp_path)
    for bad in (
        ["--limit", "0"],
        ["--limit", "1001"],
        ["--since", "soon"],
        ["--surface", "bogus"],
        ["--session", "one", "--cwd", "/x"],  # it ignored the --cwd
        ["--session", "one", "--owner", "o"],
    ):
        result = store("search", "find", *bad)
        assert result.returncode == 2, bad
        assert result.stdout == "" and "Traceback" not in result.stderr
    # Past 64 bits (it was 'session persistence listing failed: Python int too
    # large to convert to SQLite INTEGER', exit 1).
    for bound in (["--since", "9" * 30], ["--until", "-" + "9" * 30]):
        assert store("search", "find", *bound, "--json").json()["items"] == []
    assert (
        len(store("search", "find", "--until", "9" * 30, "--json").json()["items"]) == 2
    )
