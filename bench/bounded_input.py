"""Peak memory of hostile inputs: a huge line, a Zstandard bomb, a huge query.

Each case runs in a fresh process and prints the process's maximum resident set
(``VmHWM``; ``ru_maxrss`` would count the parent's RSS at fork) and what it raised; docs/persistence.md#line-length and
docs/search.md#queries-are-literal quote the figures. Run::

    python bench/bounded_input.py [--postgres] [--line-mb 200] [--bomb-mb 1024]
"""

from __future__ import annotations

import argparse
import io
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import zstandard

CHILD = r"""
import sys, time
case, arg = sys.argv[1], sys.argv[2]
started = time.perf_counter()
outcome = "no error"
try:
    if case == "import":
        from agentlog.application import Sessions
        from agentlog.infrastructure.formats.jsonl import import_log
        import_log(Sessions(), arg)
    else:
        from agentlog.application import Sessions
        from agentlog.application.query import SessionQuery
        app = Sessions(store=arg)
        SessionQuery(app).search_sessions("word " * 200_000)
except Exception as error:
    outcome = f"{type(error).__name__}: {str(error)[:90]}"
seconds = time.perf_counter() - started
peak = int(open('/proc/self/status').read().split('VmHWM:')[1].split()[0])
print(f"{peak / 1024:.0f} MB peak, {seconds:.2f} s, {outcome}")
"""

HEADER = {"type": "session", "version": 0, "id": "big", "createdAt": 1}


def header_line() -> bytes:
    return json.dumps(HEADER, separators=(",", ":")).encode() + b"\n"


def long_line_file(path: Path, megabytes: int) -> None:
    with path.open("wb") as sink:
        sink.write(header_line())
        sink.write(b'{"type":"user/message","seq":0,"time":1,"data":{"pad":"')
        block = b"x" * (1 << 20)
        for _ in range(megabytes):
            sink.write(block)
        sink.write(b'"}}\n')


def bomb_file(path: Path, megabytes: int) -> None:
    sink = io.BytesIO()
    compressor = zstandard.ZstdCompressor(level=19)
    with compressor.stream_writer(sink, closefd=False) as writer:
        writer.write(header_line())
        block = b"x" * (1 << 20)
        for _ in range(megabytes):
            writer.write(block)
        writer.write(b"\n")
    path.write_bytes(sink.getvalue())


def run(case: str, arg: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, case, arg],
        capture_output=True,
        text=True,
        check=True,
        env=dict(os.environ),
    )
    return done.stdout.strip() or done.stderr.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--line-mb", type=int, default=200)
    parser.add_argument("--bomb-mb", type=int, default=1024)
    parser.add_argument("--postgres", default="")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        line = root / "line.jsonl"
        long_line_file(line, options.line_mb)
        print(f"a {options.line_mb} MB line: {run('import', str(line))}")
        line.unlink()
        bomb = root / "bomb.jsonl.zst"
        bomb_file(bomb, options.bomb_mb)
        size = bomb.stat().st_size
        print(
            f"a {size:,}-byte .zst of one {options.bomb_mb} MiB line:"
            f" {run('import', str(bomb))}"
        )
        store = f"sqlite:///{root / 'q.db'}"
        print(f"a 1.2 MB query, SQLite: {run('query', store)}")
        if options.postgres:
            print(f"a 1.2 MB query, PostgreSQL: {run('query', options.postgres)}")


if __name__ == "__main__":
    main()
