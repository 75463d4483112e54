"""The live event stream: a flushed event reaches an open session page's stream.

The server runs in this process (uvicorn in a thread), so the test sees its
:class:`~agentlog.infrastructure.web.live.LiveSignal`. On PostgreSQL the stream
is woken by the store (``LISTEN``): the test stretches the look-without-wake-up
interval to ten minutes, so the event can only arrive through a notification.
On SQLite the stream polls, as it always did. Behind a transaction-mode pooler
there is no listener (``tests/pooler``).
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
import time
from typing import TYPE_CHECKING
from urllib.parse import quote

import pytest

from agentlog.application.browse import Browser
from agentlog.infrastructure.cli.demo.agent import ScriptedAgent
from agentlog.infrastructure.web import live
from agentlog.infrastructure.web.server import build_app
from tests.viewer.support import scripted

if TYPE_CHECKING:
    from collections.abc import Iterator

    from agentlog.application import Sessions

pytestmark = [
    pytest.mark.slow,  # a server in a thread, and PostgreSQL
    pytest.mark.parametrize("backend", ["sqlite", "postgres"], indirect=True),
]


@contextlib.contextmanager
def serving(app: Sessions, signal: live.LiveSignal) -> Iterator[int]:
    import uvicorn

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = int(probe.getsockname()[1])
    config = uvicorn.Config(
        build_app(Browser(app), signal=signal),
        host="127.0.0.1",
        port=port,
        log_level="warning",
        lifespan="off",
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(30)
        signal.close()


def test_a_flushed_event_reaches_the_stream(
    app: Sessions, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(live, "LISTENING_SECONDS", 600.0)
    sid = scripted(app, words="live")
    signal = live.LiveSignal(app)
    with serving(app, signal) as port:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        connection.request("GET", f"/s/{quote(sid, safe='')}/live")
        stream = connection.getresponse()
        assert stream.status == 200
        assert stream.read1(4096).startswith(b"retry:")
        deadline = time.monotonic() + 30  # bounds a hang: the stream's first look
        while backend == "postgres" and not signal.listening:
            assert time.monotonic() < deadline
            time.sleep(0.05)
        assert signal.listening is (backend == "postgres")
        handle = app.get_session(sid)
        agent = ScriptedAgent(handle)
        agent.start_turn("are you there?")
        agent.model_step(text="yes")
        agent.end_step()
        agent.end_turn()
        app.flush(handle)
        received = b""
        while b"turn/end" not in received:
            piece = stream.read1(4096)  # the 60 s timeout bounds a hang
            assert piece, received
            received += piece
        connection.close()
    assert b"event: append" in received
    assert f'"count":{handle.seq}'.encode() in received
