"""The ``VACUUM`` that docs/erasure.md gives for PostgreSQL runs as written and
names every table that holds a session's data (it named tables of an earlier
layout, ``agentlog_listing_v2`` and ``agentlog_search_v1``: 'relation does not
exist')."""

from __future__ import annotations

import re
from pathlib import Path

import psycopg

from agentlog.application import Sessions
from agentlog.application.query import SessionQuery
from tests.conftest import pg_params, postgres_schema_env

DOC = Path(__file__).resolve().parents[2] / "docs" / "erasure.md"
NO_SESSION_DATA = {"agentlog_view_tracking", "agentlog_erase_pending"}
"""Tracking positions, and the ids of erasures whose work is pending (no content)."""


def documented_vacuum() -> str:
    text = re.sub(r"\s+", " ", DOC.read_text(encoding="utf-8"))
    (statement,) = re.findall(r"`(VACUUM [^`]*;)`", text)
    return str(statement)


def test_the_documented_vacuum_names_the_store_tables_and_runs() -> None:
    statement = documented_vacuum()
    assert statement.startswith("VACUUM FULL ")  # a plain VACUUM leaves the bytes
    named = set(re.findall(r"\w+", statement.removeprefix("VACUUM FULL")))
    for env in postgres_schema_env():
        app = Sessions(env=env)
        try:
            user = {"kind": "user"}
            handle = app.create_session(cwd="/w")
            handle.append(
                "turn/start",
                {"turn": 1, "trigger": {"kind": "message", "source": user}},
            )
            app.flush(handle)
            SessionQuery(app).search_sessions("anything")  # the index's tables
            app.erase(handle.id, reason="test")
        finally:
            app.close()
        schema = env["POSTGRES_SCHEMA"]
        with psycopg.connect(**pg_params()) as connection:
            tables = {
                row[0]
                for row in connection.execute(
                    "SELECT table_name FROM information_schema.tables "
                    "WHERE table_schema = %s",
                    (schema,),
                )
            }
            assert named == tables - NO_SESSION_DATA
            connection.execute(f'SET search_path TO "{schema}"')
            connection.execute(statement)
