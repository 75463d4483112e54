"""What one PostgreSQL operation costs: round trips, and latency beside SQLite.

``python -m bench.round_trips [--sessions 200] [--turns 5] [--repeat 30]``

Round trips are counted by a TCP relay put between agentlog and PostgreSQL
(:class:`RoundTripRelay`): one round trip is one time the server says it is
ready for the next query, so the statements of one pipeline count once,
whatever driver hook they go through. Latency is timed without the relay, on
loopback, and SQLite runs the same operations in the same run, each sample of
one beside one of the other; figures are medians and 95th percentiles of
``--repeat`` samples (docs/scale.md).
"""

from __future__ import annotations

import argparse
import contextlib
import socket
import statistics
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agentlog.application import SessionQuery, Sessions
from bench.base import drop_schema, env_for, versions
from tests.builders import SE, SS, TE, TS, A, U
from tests.scenarios.harness import add

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator


class RoundTripRelay:
    """A loopback TCP relay to ``host:port`` that counts round trips.

    A round trip is one ReadyForQuery message from the server: the point where
    it has answered everything the client asked and the client must speak
    again. So the statements of one pipeline count once however the server's
    answers interleave with the client's sends, and opening a connection
    counts one. The relay reads the protocol's framing, so it needs a
    connection without TLS (PostgreSQL's ``ssl = off``, or ``sslmode=disable``);
    a connection that turns to TLS is refused with :class:`EncryptedWireError`.
    The count is over every connection, so it includes a pool's, and
    :meth:`counted` gives what one block of code cost.
    """

    def __init__(self, host: str, port: int) -> None:
        self.upstream = (host, port)
        self.trips = 0
        self.connections = 0
        """Connections made through the relay so far."""
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._open = True
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while self._open:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            with self._lock:
                self.connections += 1
            server = socket.create_connection(self.upstream)
            for sock in (client, server):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            wire = _Wire()
            threading.Thread(
                target=self._pump, args=(client, server, wire.from_client), daemon=True
            ).start()
            threading.Thread(
                target=self._pump, args=(server, client, wire.from_server), daemon=True
            ).start()

    def _pump(
        self,
        source: socket.socket,
        sink: socket.socket,
        read: Callable[[bytes], int],
    ) -> None:
        with contextlib.suppress(OSError, EncryptedWireError):
            while data := source.recv(65536):
                with self._lock:
                    self.trips += read(data)
                sink.sendall(data)
        with contextlib.suppress(OSError):
            sink.shutdown(socket.SHUT_WR)
            source.shutdown(socket.SHUT_RD)

    @contextlib.contextmanager
    def counted(self) -> Iterator[list[int]]:
        """The round trips made inside the block (the list's one item, after)."""
        result: list[int] = []
        time.sleep(0.01)  # let a previous answer's bytes settle
        before = self.trips
        yield result
        time.sleep(0.01)
        result.append(self.trips - before)

    def close(self) -> None:
        self._open = False
        self._listener.close()


class EncryptedWireError(Exception):
    """The connection turned to TLS, so the relay cannot read its messages."""


#: The codes of the untyped requests a client may send before its startup
#: message, each answered by one byte ('S'/'G' to encrypt, 'N' not to).
_NEGOTIATIONS = frozenset({80877103, 80877104})  # SSLRequest, GSSENCRequest


class _Wire:
    """Reads one connection's PostgreSQL framing in both directions and
    counts the server's ReadyForQuery ('Z') messages."""

    def __init__(self) -> None:
        self.started = False
        self.client = bytearray()
        self.server = bytearray()
        self.single_bytes = 0  # negotiation answers the server still owes
        self.skip = 0  # bytes of the server's current message not yet seen

    def from_client(self, data: bytes) -> int:
        """Follows the untyped start of a connection: negotiations, then the
        startup message, after which the client's side no longer matters."""
        if self.started:
            return 0
        self.client += data
        while len(self.client) >= 8:
            length = int.from_bytes(self.client[:4], "big")
            if len(self.client) < length:
                break
            code = int.from_bytes(self.client[4:8], "big")
            del self.client[:length]
            if code in _NEGOTIATIONS:
                self.single_bytes += 1
            else:
                self.started = True
                self.client.clear()
                break
        return 0

    def from_server(self, data: bytes) -> int:
        """The ReadyForQuery messages completed by ``data``."""
        buffer = self.server
        buffer += data
        ready = 0
        position = 0
        while position < len(buffer):
            if self.skip:
                taken = min(self.skip, len(buffer) - position)
                position += taken
                self.skip -= taken
            elif self.single_bytes:
                if buffer[position] in b"SG":
                    raise EncryptedWireError
                position += 1
                self.single_bytes -= 1
            elif len(buffer) - position >= 5:
                ready += buffer[position] == ord("Z")
                self.skip = (
                    int.from_bytes(buffer[position + 1 : position + 5], "big") - 4
                )
                position += 5
            else:
                break
        del buffer[:position]
        return ready


@dataclass
class Figure:
    name: str
    trips: int | None
    sqlite: list[float]
    postgres: list[float]
    sqlite_cpu: list[float]
    postgres_cpu: list[float]


def quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def populate(app: Sessions, sessions: int, turns: int) -> list[str]:
    """``sessions`` stored sessions of ``turns`` turns (a prompt, an answer)."""
    ids = [f"s{n:05d}" for n in range(sessions)]
    for sid in ids:
        handle = app.create_session(session_id=sid, cwd="/srv/app")
        for turn in range(1, turns + 1):
            add(
                handle,
                TS(turn),
                U(f"question {turn} about zebra{sid[-2:]} and tables"),
                SS(turn, 1),
                A(f"answer {turn} common words here", turn=turn, step=1),
                SE(turn, 1),
                TE(turn),
            )
        app.flush(handle)
    return ids


class Operations:
    """The operations measured, on a writer ``Sessions`` and a reader's."""

    def __init__(
        self, writer: Sessions, reader: Sessions, ids: list[str], tag: str = ""
    ) -> None:
        self.writer = writer
        self.reader = reader
        self.ids = ids
        self.query = SessionQuery(reader)
        self.handle = writer.create_session(session_id=f"appender{tag}", cwd="/srv/app")
        self.turn = 0
        writer.flush(self.handle)
        self.turn_handle = writer.create_session(
            session_id=f"turns{tag}", cwd="/srv/app"
        )
        writer.flush(self.turn_handle)
        self.next = 0

    def _sid(self) -> str:
        self.next += 1
        return self.ids[self.next % len(self.ids)]

    def append_one(self) -> None:
        """One event appended to a live handle and flushed (a turn/start or end)."""
        if self.turn and self.handle.seq % 2:
            add(self.handle, TE(self.turn))
        else:
            self.turn += 1
            add(self.handle, TS(self.turn))
        self.writer.flush(self.handle)

    def write_turn(self) -> None:
        """A six-event turn appended and flushed at once."""
        turn = self.turn_handle.seq // 6 + 1
        add(
            self.turn_handle,
            TS(turn),
            U("a prompt"),
            SS(turn, 1),
            A("an answer", turn=turn, step=1),
            SE(turn, 1),
            TE(turn),
        )
        self.writer.flush(self.turn_handle)

    def messages(self) -> None:
        self.reader.messages(self._sid())

    def read_events(self) -> None:
        self.reader.read_events(self._sid())

    def listing_page(self) -> None:
        self.query.list_summaries(limit=50)

    def search_rare(self) -> None:
        self.query.search_sessions(f"zebra{self._sid()[-2:]}")

    def search_common(self) -> None:
        self.query.search_sessions("common words")

    def all(self) -> list[tuple[str, Callable[[], None]]]:
        return [
            ("append one event + flush", self.append_one),
            ("a 6-event turn + flush", self.write_turn),
            ("messages of a stored session", self.messages),
            ("read_events of a stored session", self.read_events),
            ("listing, first page of 50", self.listing_page),
            ("search first page, a rare word", self.search_rare),
            ("search first page, a 2-word phrase in every session", self.search_common),
        ]


Samples = tuple[list[float], list[float], list[float], list[float]]
"""Wall-clock times on SQLite and PostgreSQL, then this process's CPU times."""


def sample(sqlite: Operations, postgres: Operations, repeat: int) -> dict[str, Samples]:
    """Each operation's times on SQLite and PostgreSQL, the two interleaved
    (the order swapped every sample), so a change of the machine's load falls
    on both and the ratio holds. The CPU time is this process's (all its
    threads): what the load does not change, unlike the waits for the
    server, which a round trip adds."""
    times: dict[str, Samples] = {}
    pairs = zip(sqlite.all(), postgres.all(), strict=True)
    for (name, on_sqlite), (_, on_postgres) in pairs:
        on_sqlite()  # warm: statements, caches, the views caught up
        on_postgres()
        found: Samples = ([], [], [], [])
        for n in range(repeat):
            order = [(on_sqlite, found[0], found[2]), (on_postgres, found[1], found[3])]
            for operation, values, cpu in order if n % 2 else order[::-1]:
                started = time.perf_counter()
                used = time.process_time()
                operation()
                cpu.append(time.process_time() - used)
                values.append(time.perf_counter() - started)
        times[name] = found
    return times


WARM_RUNS = 12
"""Runs of an operation before its round trips are counted: enough for each
of the pool's connections (5 by default, handed out in turn) to have
prepared its statements, so the count is a warm service's, not the one extra
round trip of a statement's first use on a connection."""


def count_trips(relay: RoundTripRelay, operations: Operations) -> dict[str, int]:
    trips: dict[str, int] = {}
    for name, operation in operations.all():
        for _ in range(WARM_RUNS):
            operation()
        with relay.counted() as counted:
            operation()
        trips[name] = counted[0]
    return trips


def open_trips(relay: RoundTripRelay, env: dict[str, str]) -> tuple[int, int]:
    """The round trips and connections of opening a ``Sessions`` and closing
    it (the pool's connections made meanwhile included, so they vary with
    how many it opened before the close)."""
    connections = relay.connections
    with relay.counted() as counted:
        Sessions(env=env).close()
    return counted[0], relay.connections - connections


def measure(
    sessions: int, turns: int, repeat: int
) -> tuple[list[Figure], tuple[int, int]]:
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        operations: list[Operations] = []
        pg_env: dict[str, str] = {}
        ids: list[str] = []
        for backend in ("sqlite", "postgres"):
            env, where = env_for(backend, Path(tmp))
            if isinstance(where, str):
                stack.callback(drop_schema, where)  # after the apps close
                pg_env = env
            writer = Sessions(env=env)
            stack.callback(writer.close)
            ids = populate(writer, sessions, turns)
            reader = Sessions(env=env)
            stack.callback(reader.close)
            operations.append(Operations(writer, reader, ids))
        times = sample(operations[0], operations[1], repeat)
        relay = RoundTripRelay(pg_env["POSTGRES_HOST"], int(pg_env["POSTGRES_PORT"]))
        stack.callback(relay.close)
        relayed = {**pg_env, "POSTGRES_HOST": "127.0.0.1"}
        relayed["POSTGRES_PORT"] = str(relay.port)
        relayed_writer = Sessions(env=relayed)
        stack.callback(relayed_writer.close)
        relayed_reader = Sessions(env=relayed)
        stack.callback(relayed_reader.close)
        relayed_ops = Operations(relayed_writer, relayed_reader, ids, "-r")
        trips = count_trips(relay, relayed_ops)
        opened = open_trips(relay, relayed)
    figures = [
        Figure(name, trips.get(name), *samples) for name, samples in times.items()
    ]
    return figures, opened


def render(figures: list[Figure], opened: tuple[int, int]) -> str:
    lines = [
        "| operation | PostgreSQL round trips | SQLite p50 / p95 | PostgreSQL p50 / p95 "
        "| ratio (p50) | CPU p50 SQLite / PostgreSQL |",
        "|---|---|---|---|---|---|",
    ]
    for f in figures:
        sqlite = statistics.median(f.sqlite) * 1000
        postgres = statistics.median(f.postgres) * 1000
        lines.append(
            f"| {f.name} | {f.trips} | {sqlite:.2f} / {quantile(f.sqlite, 0.95) * 1000:.2f}"
            f" ms | {postgres:.2f} / {quantile(f.postgres, 0.95) * 1000:.2f} ms | "
            f"{postgres / sqlite:.1f}× | {statistics.median(f.sqlite_cpu) * 1000:.2f}"
            f" / {statistics.median(f.postgres_cpu) * 1000:.2f} ms |"
        )
    lines.append(
        "\nOpening a `Sessions` on PostgreSQL (tables present) and closing it: "
        f"{opened[0]} round trips, {opened[1]} connections."
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args(argv)
    print(versions())
    figures, opened = measure(args.sessions, args.turns, args.repeat)
    print(render(figures, opened))


if __name__ == "__main__":
    main()
