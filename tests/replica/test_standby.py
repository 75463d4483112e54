"""A PostgreSQL hot standby (a read replica) as a read-only store.

The standby is a real one, replaying its primary's write-ahead log: agentlog
opens it read-only by itself (the server says it refuses writes), reads the
events, messages, listing, titles, lineage and search that the primary's
writers and views stored, and refuses every write before trying it.
"""

from __future__ import annotations

import asyncio
import base64
import subprocess
from typing import TYPE_CHECKING

import pytest

from agentlog.application import Sessions
from agentlog.application.query import SessionQuery
from tests.service.test_read_only_store import (
    check_reads_work_and_writes_are_refused,
    check_the_command_line_reads_and_refuses,
    write_store,
)

if TYPE_CHECKING:
    from tests.replica.standby import Pair

pytestmark = pytest.mark.slow  # starts two PostgreSQL servers


def test_a_standby_opens_read_only_and_reads_what_the_primary_stored(
    pair: Pair, schema: str
) -> None:
    session_id = write_store(pair.primary(schema))
    builder = Sessions(store=pair.primary(schema))
    SessionQuery(builder).search_sessions("kiwi")  # the search index too
    builder.close()
    pair.wait_for_replay()
    check_reads_work_and_writes_are_refused(pair.standby(schema), session_id)


def test_the_standby_answers_from_the_views_its_primary_keeps(
    pair: Pair, schema: str
) -> None:
    """Events are read as soon as they are replayed; listing and search show
    what the primary's views hold, and a read never tries to catch them up."""
    first = write_store(pair.primary(schema), "kiwi mango")
    second = write_store(pair.primary(schema), "quince", views=False)
    pair.wait_for_replay()
    replica = Sessions(store=pair.standby(schema))
    try:
        assert replica.read_only
        assert replica.messages(second)[0]["content"][0]["text"] == "quince"
        query = SessionQuery(replica)
        assert [r.header["id"] for r in query.list_sessions()] == [first]
        primary = Sessions(store=pair.primary(schema))
        SessionQuery(primary).search_sessions("quince")  # catches every view up
        primary.close()
        pair.wait_for_replay()
        listed = {r.header["id"] for r in query.list_sessions()}
        assert listed == {first, second}
        found = query.search_sessions("quince")
        assert [hit.session_id for hit in found.items] == [second]
    finally:
        replica.close()


def test_the_command_line_reads_a_standby_and_refuses_a_write_in_one_line(
    pair: Pair, schema: str
) -> None:
    session_id = write_store(pair.primary(schema))
    pair.wait_for_replay()
    check_the_command_line_reads_and_refuses(pair.standby(schema), session_id)


def test_the_viewer_polls_a_standby_instead_of_listening(
    pair: Pair, schema: str
) -> None:
    """A standby replays no notifications and refuses ``LISTEN``."""
    from agentlog.infrastructure.web.live import LiveSignal

    write_store(pair.primary(schema))
    pair.wait_for_replay()
    replica = Sessions(store=pair.standby(schema))
    primary = Sessions(store=pair.primary(schema))

    async def listening(app: Sessions) -> bool:
        live = LiveSignal(app)
        try:
            live.mark()
            return live.listening
        finally:
            live.close()

    try:
        assert asyncio.run(listening(primary))
        assert not asyncio.run(listening(replica))
    finally:
        replica.close()
        primary.close()


def test_an_encrypted_store_reads_through_the_standby_with_keys_on_the_primary(
    pair: Pair, schema: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Sealed views and the hashed index are read on the standby; the key store
    (a store of its own, opened writable) is the primary's."""
    monkeypatch.setenv("AGENTLOG_ENCRYPTION", "per-session")
    monkeypatch.setenv("AGENTLOG_MASTER_KEY", base64.b64encode(b"k" * 32).decode())
    monkeypatch.setenv("AGENTLOG_KEYSTORE", pair.primary(f"{schema}_keys"))
    session_id = write_store(pair.primary(schema))
    builder = Sessions(store=pair.primary(schema))
    SessionQuery(builder).search_sessions("kiwi")
    builder.close()
    pair.wait_for_replay()
    check_reads_work_and_writes_are_refused(pair.standby(schema), session_id)


def test_a_view_worker_pointed_at_the_standby_is_refused_in_one_line(
    pair: Pair, schema: str
) -> None:
    write_store(pair.primary(schema))
    pair.wait_for_replay()
    ran = subprocess.run(
        ["agentlog", "--store", pair.standby(schema), "worker", "--status-every", "0"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode == 1
    refusal = ran.stderr.splitlines()[-1]
    assert refusal.startswith(
        "a view worker writes the views, and this store is read-only"
    )
    assert "Traceback" not in ran.stderr
