"""PostgreSQL after an erase: the erased rows' bytes stay in the table and index
pages until ``VACUUM FULL`` rewrites them; ``gc --vacuum-full`` does (issue 21).

The pages are read raw, through the server (``pg_read_binary_file`` of each
relation's file, as the superuser the tests connect as)."""

from __future__ import annotations

import psycopg
import pytest

from agentlog.application import Sessions
from agentlog.application.query import SessionQuery
from tests.conftest import pg_params, postgres_schema_env
from tests.crypto.test_round_trip import write

# PostgreSQL, and VACUUM FULL waits for every other transaction on the server.
pytestmark = pytest.mark.slow

MARKERS = ("QUOKKA-prompt-5e1d", "QUOKKA-answer-77af", "QUOKKA-output-0b3c")


def raw_pages(schema: str) -> bytes:
    """Every table's and index's main file in the schema, as the disk holds it."""
    with psycopg.connect(**{**pg_params(), "autocommit": True}) as connection:
        connection.execute("CHECKPOINT")  # the dirty pages reach the files
        rows = connection.execute(
            "SELECT pg_relation_filepath(c.oid) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.relkind IN ('r', 'i', 't')",
            (schema,),
        ).fetchall()
        chunks = [
            connection.execute("SELECT pg_read_binary_file(%s)", (path,)).fetchone()[0]  # type: ignore[index]
            for (path,) in rows
            if path
        ]
        toast = connection.execute(
            "SELECT pg_relation_filepath(c.reltoastrelid) FROM pg_class c "
            "JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = %s AND c.reltoastrelid <> 0",
            (schema,),
        ).fetchall()
        chunks += [
            connection.execute("SELECT pg_read_binary_file(%s)", (path,)).fetchone()[0]  # type: ignore[index]
            for (path,) in toast
            if path
        ]
    return b"".join(bytes(chunk) for chunk in chunks)


def found(schema: str) -> list[str]:
    pages = raw_pages(schema).lower()
    return [marker for marker in MARKERS if marker.lower().encode() in pages]


def test_only_vacuum_full_removes_the_erased_bytes_from_the_pages() -> None:
    for env in postgres_schema_env():
        schema = env["POSTGRES_SCHEMA"]
        app = Sessions(env=env)
        try:
            write(app, "erased", *MARKERS)
            write(app, "kept", "kept prompt", "kept answer", "kept output")
            SessionQuery(app).search_sessions("kept")  # every index caught up
            app.erase("erased", reason="request")
            assert found(schema)  # the dead tuples hold them: the check can fail
            report = app.erase_older_than(0, reason="retention", vacuum_full=True)
            assert report.erased == []
            assert found(schema) == []
            assert SessionQuery(app).search_sessions("kept").items
        finally:
            app.close()
