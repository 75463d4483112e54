"""Bounded input: no import line grows past the limit while it is read (issue 21).

A line longer than ``AGENTLOG_MAX_LINE_BYTES`` (default 64 MiB) is refused as soon
as the reader has seen that much of it, naming the file line; Zstandard text is
decoded in slices, so a small file that expands to a huge line is refused the same
way. The peak-memory figures are in docs/persistence.md (``bench/bounded_input.py``).
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard

from agentlog.application import Sessions
from agentlog.domain.errors import AgentlogError, LineTooLongError, LogImportError
from agentlog.infrastructure.formats import logscan
from agentlog.infrastructure.formats.jsonl import decode_log, encode_log, import_log
from tests.formats.samples import HEADER, lines, turn1

LIMIT = 4096


@pytest.fixture(autouse=True)
def small_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(logscan.MAX_LINE_ENV, str(LIMIT))


def long_user_line(seq: int, size: int) -> bytes:
    body = {"type": "user/message", "seq": seq, "time": 5, "data": {"content": []}}
    text = json.dumps(body, separators=(",", ":")).encode()
    pad = size - len(text) - len(',"pad":""')
    return text[:-1] + b',"pad":"' + b"x" * pad + b'"}'


def test_a_line_at_the_limit_is_read() -> None:
    log = lines(json.dumps({"type": "session", **HEADER}).encode(), b"y" * LIMIT)
    found = list(logscan.LogLines(io.BytesIO(log), source="f"))
    assert [len(line.text) for line in found][1] == LIMIT


@pytest.mark.parametrize("compress", [False, True])
def test_a_line_past_the_limit_is_refused_naming_it(compress: bool) -> None:
    data = encode_log(HEADER, turn1()[:2]) + long_user_line(2, LIMIT + 1) + b"\n"
    if compress:
        data = zstandard.ZstdCompressor().compress(data)
    with pytest.raises(LineTooLongError) as caught:
        decode_log(data, source="big.jsonl")
    assert caught.value.line == 4
    assert caught.value.limit == LIMIT
    assert str(caught.value) == (
        f"big.jsonl: line 4 is longer than {LIMIT:,} bytes"
        " (AGENTLOG_MAX_LINE_BYTES); refused"
    )


def test_a_torn_final_line_past_the_limit_is_refused_too() -> None:
    data = encode_log(HEADER, turn1()) + b"z" * (LIMIT + 1)
    with pytest.raises(LineTooLongError):
        decode_log(data, source="torn")


def test_an_import_of_a_long_line_stores_nothing(tmp_path: Path) -> None:
    app = Sessions()
    path = tmp_path / "big.jsonl"
    path.write_bytes(
        encode_log(HEADER, turn1()[:2]) + long_user_line(2, LIMIT * 3) + b"\n"
    )
    with pytest.raises(AgentlogError):
        import_log(app, path)
    assert not app.is_stored(HEADER["id"])


def test_pieces_of_any_size_make_the_same_lines() -> None:
    text = b"a\nbb\n\nccc\n" + b"d" * 100 + b"\ne"
    for size in (1, 2, 3, 7, 64, len(text)):
        splitter = logscan.LineSplitter("f", 200)
        found = [
            line.text
            for start in range(0, len(text), size)
            for line in splitter.feed(text[start : start + size])
        ]
        assert found == [b"a", b"bb", b"", b"ccc", b"d" * 100]
        assert splitter.partial == b"e"
        assert splitter.number == 5


@pytest.mark.parametrize("value", ["0", "-1", "1e6", "lots", "٣"])
def test_a_malformed_limit_is_a_typed_error(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv(logscan.MAX_LINE_ENV, value)
    with pytest.raises(LogImportError, match="AGENTLOG_MAX_LINE_BYTES must be"):
        decode_log(encode_log(HEADER, turn1()), source="f")


def zstd_bomb(size: int) -> bytes:
    """One frame whose text is a header, then one line of ``size`` bytes."""
    sink = io.BytesIO()
    with zstandard.ZstdCompressor(level=19).stream_writer(
        sink, closefd=False
    ) as writer:
        writer.write(encode_log(HEADER, []))
        block = b"x" * (1 << 20)
        for _ in range(size >> 20):
            writer.write(block)
        writer.write(b"\n")
    return sink.getvalue()


def test_a_zstd_bomb_is_refused_before_it_is_expanded() -> None:
    bomb = zstd_bomb(64 << 20)
    assert len(bomb) < 64 << 10
    with pytest.raises(LineTooLongError) as caught:
        decode_log(bomb, source="bomb.jsonl.zst")
    assert caught.value.line == 2


@pytest.mark.slow
def test_a_gibibyte_bomb_peaks_under_400_mb(tmp_path: Path) -> None:
    """The issue's case in a fresh process: 1 GiB of text from a small file.

    The peak is the child's ``VmHWM``: ``ru_maxrss`` would start at the RSS of the
    (large) test worker it was forked from.
    """
    path = tmp_path / "bomb.jsonl.zst"
    path.write_bytes(zstd_bomb(1 << 30))
    script = (
        "import sys\n"
        "from agentlog.application import Sessions\n"
        "from agentlog.domain.errors import LineTooLongError\n"
        "from agentlog.infrastructure.formats.jsonl import import_log\n"
        "try:\n"
        "    import_log(Sessions(), sys.argv[1])\n"
        "except LineTooLongError as e:\n"
        "    status = open('/proc/self/status').read()\n"
        "    print(e.line, status.split('VmHWM:')[1].split()[0])\n"
    )
    env = {"PATH": "/usr/bin:/bin", "AGENTLOG_MAX_LINE_BYTES": str(64 << 20)}
    done = subprocess.run(
        [sys.executable, "-c", script, str(path)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
        timeout=300,
    )
    line, peak_kib = done.stdout.split()
    assert line == "2"
    assert int(peak_kib) < 400 * 1024
