"""What ``agentlog --help`` and ``agentlog ls`` import: pinned, so start-up cannot
creep back (issue 22; the figures are in docs/performance.md).

A test on modules, not on time: each command runs in a fresh interpreter, which
then lists ``sys.modules``. ``--help`` is click and the command table; ``ls`` on
SQLite is the store, the listing view and a rich table, never PostgreSQL's driver,
search, scope, the servers or typer (which built a pydantic adapter per option);
nor pydantic, the event vocabulary and its payload models, the session aggregate
or ``cryptography`` with encryption off: the listing's rows are plain objects,
read through the store without the session machinery.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

from agentlog.application import Sessions
from agentlog.infrastructure.formats.jsonl import import_log
from tests.formats.samples import SEED_ERA, substituted

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.slow  # a fresh interpreter per command

RUN = """
import json, sys
sys.argv = ["agentlog", *json.loads(sys.argv[1])]
from agentlog.infrastructure.cli import main
try:
    main()
except SystemExit:
    pass
sys.stderr.write("\\nMODULES " + json.dumps(sorted(sys.modules)) + "\\n")
"""

NEVER = (
    "typer",
    "psycopg",
    "psycopg_pool",
    "eventsourcing.postgres",
    "mcp",
    "starlette",
    "uvicorn",
    "markdown_it",
    "rich.markdown",
    "rich.traceback",
    "pygments",
    "zstandard",
    "agentlog.infrastructure.eventsourcing_seam_postgres",
    "agentlog.infrastructure.web",
    "agentlog.infrastructure.mcp_server",
    "agentlog.application.async_sessions",
    "agentlog.application.search",
    "agentlog.application.scope",
    "agentlog.application.lineage_corpus",
    "agentlog.infrastructure.cli.search",
    "agentlog.infrastructure.cli.writes",
    "agentlog.infrastructure.cli.erasure",
    "agentlog.infrastructure.cli.mcp",
    "agentlog.infrastructure.cli.serve",
    "agentlog.infrastructure.cli.demo",
)
"""Imported by neither command: each is another command's, or another backend's."""

NOT_FOR_HELP = (
    "rich",
    "pydantic",
    "eventsourcing",
    "cryptography",
    "orjson",
    "sqlite3",
    "agentlog.application",
    "agentlog.domain.json",
    "agentlog.infrastructure.cli.reads",
    "agentlog.infrastructure.cli.console",
    "agentlog.infrastructure.cli.storage",
)
"""``--help`` prints the command table: no store, no output library, no models."""


NOT_FOR_LS = (
    "pydantic",
    "pydantic_core",
    "cryptography",
    "hashlib",
    "agentlog.domain.payloads",
    "agentlog.domain.vocabulary",
    "agentlog.domain.json_model",
    "agentlog.domain.title",
    "agentlog.domain.events",
    "agentlog.domain.session",
    "agentlog.domain.surface",
    "agentlog.application.sessions",
    "agentlog.application.query",
    "agentlog.application.query_models",
    "agentlog.application.erasure",
    "agentlog.application.search_index",
    "agentlog.infrastructure.cli.reads",
)
"""An unfiltered ``ls`` with encryption off: the listing reads plain rows through
the store (``open_views``), not the query service's models or the aggregate."""

NOT_FOR_CURRENT_VIEWS = (
    "eventsourcing.projection",
    "agentlog.application.session_projections",
)
"""The projections, when the views are current: they fold only what is new."""


def imported(*args: str, cwd: Path) -> tuple[list[str], str]:
    """The modules loaded by one run of the command line, and what it printed."""
    done = subprocess.run(
        [sys.executable, "-c", RUN, json.dumps(args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=True,
    )
    printed, _, modules = done.stderr.rpartition("\nMODULES ")
    return json.loads(modules), done.stdout + printed


def loaded(modules: list[str], names: tuple[str, ...]) -> list[str]:
    """The ``names`` (packages count with every submodule) that are loaded."""
    return sorted(
        name
        for name in names
        if any(module == name or module.startswith(name + ".") for module in modules)
    )


def test_help_imports_click_and_the_command_table_only(tmp_path: Path) -> None:
    modules, printed = imported("--help", cwd=tmp_path)
    assert "ls           List sessions, newest first." in printed
    assert loaded(modules, NEVER + NOT_FOR_HELP) == []
    assert "click" in modules


def test_ls_on_sqlite_imports_the_listing_and_nothing_else(tmp_path: Path) -> None:
    database = tmp_path / "agentlog.db"
    app = Sessions(
        env={
            "PERSISTENCE_MODULE": "eventsourcing.sqlite",
            "SQLITE_DBNAME": str(database),
        }
    )
    for path in SEED_ERA[-3:]:  # three distinct header ids
        import_log(app, substituted(path))
    app.close()
    modules, printed = imported("ls", cwd=tmp_path)  # the views catch up first
    assert printed.count("  seed-") + printed.count("Sessions") >= 1, printed
    assert "Traceback" not in printed
    assert loaded(modules, NEVER + NOT_FOR_LS) == []
    assert "agentlog.application.summaries" in modules  # it did list
    assert "agentlog.application.session_projections" in modules  # and fold
    json_modules, json_printed = imported("ls", "--json", cwd=tmp_path)
    assert len(json.loads(json_printed)["items"]) == 3
    assert loaded(json_modules, NEVER + NOT_FOR_LS + NOT_FOR_CURRENT_VIEWS) == []
