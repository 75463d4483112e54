"""Store selection and the ways a store can fail: one line on stderr, exit 1."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.cli.conftest import Store, cli_env, run_cli
from tests.formats.samples import FIXTURES

pytestmark = pytest.mark.slow  # every test runs the agentlog command in a process

TODO_PLAN = FIXTURES / "seed-era" / "todo-plan--session.jsonl"
TODO_PLAN_ID = "b0f1f758-dcf0-474e-851d-e62c11ec0a09"


def one_line_error(result: object) -> str:
    from tests.cli.conftest import Result

    assert isinstance(result, Result)
    assert result.returncode == 1, result
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    return result.stderr.rstrip("\n")


def test_the_default_store_is_agentlog_db_here(tmp_path: Path) -> None:
    run_cli("import", str(TODO_PLAN), cwd=tmp_path).ok()
    assert (tmp_path / "agentlog.db").is_file()
    assert TODO_PLAN_ID in run_cli("ls", cwd=tmp_path).ok().stdout


def test_agentlog_store_names_the_store_and_store_wins(tmp_path: Path) -> None:
    env = cli_env(AGENTLOG_STORE="sqlite:///from-env.db")
    run_cli("import", str(TODO_PLAN), cwd=tmp_path, env=env).ok()
    assert (tmp_path / "from-env.db").is_file()
    assert not (tmp_path / "agentlog.db").exists()
    listed = run_cli("ls", "--json", cwd=tmp_path, env=env).json()["items"]
    assert [item["id"] for item in listed] == [TODO_PLAN_ID]
    elsewhere = run_cli("--store", "sqlite:///other.db", "ls", cwd=tmp_path, env=env)
    assert one_line_error(elsewhere).startswith("no store at sqlite:///other.db")
    assert not (tmp_path / "other.db").exists()


def test_memory_store_starts_empty(tmp_path: Path) -> None:
    result = run_cli("--store", "memory:", "ls", "--json", cwd=tmp_path)
    assert result.json() == {"items": [], "nextCursor": None}


@pytest.mark.parametrize(
    ("url", "message"),
    [
        (
            "mysql://localhost/db",
            "invalid store URL 'mysql://localhost/db': expected memory:, "
            "sqlite:///path.db or postgresql://user:password@host:port/db?schema=name",
        ),
        (
            "sqlite://host/x.db",
            "invalid store URL 'sqlite://host/x.db': use sqlite:///relative.db or "
            "sqlite:////absolute/path.db",
        ),
        (
            "postgresql://127.0.0.1:5432/",
            "invalid store URL 'postgresql://127.0.0.1:5432/': the database name is "
            "missing",
        ),
    ],
)
def test_a_bad_url_is_one_line(tmp_path: Path, url: str, message: str) -> None:
    assert one_line_error(run_cli("--store", url, "ls", cwd=tmp_path)) == message
    env = cli_env(AGENTLOG_STORE=url)
    assert one_line_error(run_cli("show", "x", cwd=tmp_path, env=env)) == message


def test_an_unopenable_sqlite_file_is_one_line(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/missing/dir/agentlog.db"
    line = one_line_error(
        run_cli("--store", url, "import", str(TODO_PLAN), cwd=tmp_path)
    )
    assert line == (
        f"cannot open the store {url}: unable to open database file:"
        f" no such folder: {tmp_path / 'missing' / 'dir'}"
    )
    line = one_line_error(run_cli("--store", url, "ls", cwd=tmp_path))
    assert line.startswith(f"no store at {url}")


def test_an_unreachable_postgres_is_one_line(tmp_path: Path) -> None:
    url = "postgresql://postgres:secret@127.0.0.1:1/test?schema=s&connect_timeout=1"
    line = one_line_error(run_cli("--store", url, "ls", cwd=tmp_path))
    assert line.startswith(
        "cannot reach the PostgreSQL store postgresql://postgres:***@127.0.0.1:1/test"
    )
    assert "secret" not in line
    without_schema = "postgresql://postgres@127.0.0.1:1/test?connect_timeout=1"
    line = one_line_error(run_cli("--store", without_schema, "ls", cwd=tmp_path))
    assert line.startswith(
        "cannot reach the PostgreSQL store postgresql://postgres@127.0.0.1:1/test: "
    )


def test_the_installed_script_and_the_module_agree(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("agentlog")
    assert script.is_file(), "install the project: pip install -e '.[dev]'"
    by_script = run_cli("--help", cwd=tmp_path, program=[str(script)]).ok()
    by_module = run_cli("--help", cwd=tmp_path).ok()
    assert by_script.stdout == by_module.stdout
    for command in [
        "demo",
        "import",
        "export",
        "ls",
        "show",
        "messages",
        "surface",
        "event",
        "trace",
        "trace-event",
        "fork",
        "repair",
    ]:
        assert f" {command} " in by_module.stdout, command
    assert "AGENTLOG_STORE" in by_module.stdout


def test_migrate_rebuild_views_repairs_views_that_lost_rows(store: Store) -> None:
    """Views are projections: when their rows are lost while their position stays
    (a damaged store), ``migrate --rebuild-views`` folds the whole log again."""
    from agentlog.application.catch_up import views_of
    from agentlog.infrastructure.store import open_sessions

    store("demo").ok()
    listed = store("ls", "--json").ok().stdout
    ids = [row["id"] for row in json.loads(listed)["items"]]
    assert ids
    app = open_sessions(store.url, create=False)
    try:
        views = views_of(app)
        views.catch_up()
        for projection in views.projections:
            projection.view.purge(ids)  # rows gone, tracking position kept
    finally:
        app.close()
    assert "no sessions yet" in store("ls").ok().stdout
    rebuilt = store("migrate", "--rebuild-views").ok().stdout
    assert "views rebuilt from" in rebuilt
    assert store("ls", "--json").ok().stdout == listed
    assert store("search", "health", "--json").ok().stdout.count('"sessionId"') >= 1
