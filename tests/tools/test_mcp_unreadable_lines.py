"""``agentlog mcp`` over stdio answers a line that is no JSON-RPC message as
JSON-RPC 2.0 says (the SDK alone drops it unanswered), and keeps serving.

A raw client over real pipes: each hostile line is followed by a ``ping``, so
every reply is matched to the line before it whatever the server's speed.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from typing import TYPE_CHECKING, Any

import pytest

from tests.tools.test_mcp import COMMAND, INITIALIZE
from tests.tools.test_mcp import store as store  # the fixture

if TYPE_CHECKING:
    from collections.abc import Iterator


pytestmark = pytest.mark.slow  # an agentlog mcp server in a process

PARSE_ERROR = {"code": -32700, "message": "Parse error"}
INVALID_REQUEST = {"code": -32600, "message": "Invalid Request"}
BIG = 50_000_000
HOSTILE: list[tuple[str, bytes, dict[str, Any]]] = [
    ("not JSON", b"nonsense", PARSE_ERROR),
    ("blank", b"", PARSE_ERROR),
    ("NUL", b'{"jsonrpc":"2.0","id":5,"method":"p\x00ing"}', PARSE_ERROR),
    ("invalid UTF-8", b'\xff\xfe{"jsonrpc":"2.0"', PARSE_ERROR),
    (
        "lone surrogate escape",
        b'{"jsonrpc":"2.0","id":5,"method":"ping","params":{"q":"\\ud800"}}',
        PARSE_ERROR,
    ),
    ("20,000-deep array", b"[" * 20_000 + b"]" * 20_000, PARSE_ERROR),
    ("truncated object", b'{"jsonrpc":"2.0","id":5,"method":', PARSE_ERROR),
    ("a number", b"42", INVALID_REQUEST),
    ("an array", b"[1]", INVALID_REQUEST),
    # Undecodable bytes read as U+FFFD inside a string: JSON, not a message.
    ("surrogate bytes in a string", b'"\xed\xa0\x80"', INVALID_REQUEST),
    ("no method", b'{"jsonrpc":"2.0","id":5}', INVALID_REQUEST),
    ("wrong version", b'{"jsonrpc":"1.0","id":5,"method":"ping"}', INVALID_REQUEST),
    ("method not a string", b'{"jsonrpc":"2.0","method":1}', INVALID_REQUEST),
    (
        "50 MB line",
        b'{"jsonrpc":"2.0","junk":"' + b"x" * BIG + b'"}',
        INVALID_REQUEST,
    ),
]


class RawClient:
    """One ``agentlog mcp`` process and the lines it writes, read by a thread."""

    def __init__(self, store: str) -> None:
        self.process = subprocess.Popen(
            [*COMMAND, "--caller", "me", "--store", store],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.put(line)

    def send(self, line: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(line + b"\n")
        self.process.stdin.flush()

    def reply(self) -> Any:
        return json.loads(self.lines.get(timeout=120))  # a bound, not a measurement

    def ping(self, request_id: int) -> Any:
        self.send(b'{"jsonrpc":"2.0","id":%d,"method":"ping"}' % request_id)
        return self.reply()

    def finish(self) -> tuple[int, str]:
        assert self.process.stdin is not None and self.process.stderr is not None
        self.process.stdin.close()
        code = self.process.wait(timeout=120)
        return code, self.process.stderr.read().decode("utf-8", "replace")


@pytest.fixture
def client(store: str) -> Iterator[RawClient]:
    raw = RawClient(store)
    try:
        yield raw
    finally:
        if raw.process.poll() is None:
            raw.process.kill()
            raw.process.wait()


def test_a_hostile_line_before_initialize_is_answered(client: RawClient) -> None:
    client.send(b"\x00\xff not json")
    assert client.reply() == {"jsonrpc": "2.0", "id": None, "error": PARSE_ERROR}
    client.send(INITIALIZE.strip().encode())
    assert client.reply()["id"] == 1
    assert client.finish() == (0, "")


def test_every_unreadable_line_gets_its_error_and_serving_goes_on(
    client: RawClient,
) -> None:
    client.send(INITIALIZE.strip().encode())
    assert client.reply()["id"] == 1
    client.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}')
    answers = []
    for number, (name, line, _) in enumerate(HOSTILE, start=100):
        client.send(line)
        answers.append((name, client.reply(), client.ping(number)))
    expected = [
        (
            name,
            {"jsonrpc": "2.0", "id": None, "error": error},
            {"jsonrpc": "2.0", "id": number, "result": {}},
        )
        for number, (name, _, error) in enumerate(HOSTILE, start=100)
    ]
    assert answers == expected
    client.send(b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}')
    assert len(client.reply()["result"]["tools"]) == 5
    code, stderr = client.finish()
    assert "Traceback" not in stderr
    assert (code, stderr) == (0, "")
