"""A PostgreSQL primary and a streaming hot standby of the tests' own.

Both run from a temporary folder on free loopback ports, with the server
binaries of the installed PostgreSQL (Debian's ``/usr/lib/postgresql/N/bin``),
as ``postgres`` when the tests run as root (PostgreSQL refuses root). The
primary is made with ``initdb`` (trust authentication, no fsync: a test
cluster), the standby with ``pg_basebackup -R`` from it, so it replays the
primary's write-ahead log as a read replica does. About a second to start.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tests.pooler.bouncer import free_port

if TYPE_CHECKING:
    from collections.abc import Iterator

REPLAY_SECONDS = 30.0


PROGRAMS = ("initdb", "pg_ctl", "pg_basebackup")


def binaries() -> Path | None:
    """The folder holding ``initdb``, ``pg_ctl`` and ``pg_basebackup``:
    Debian's newest ``/usr/lib/postgresql/N/bin``, else one on ``PATH``."""
    folders = sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    found = shutil.which("initdb")
    if found:
        folders.append(str(Path(found).parent))
    for folder in map(Path, folders):
        if all((folder / program).is_file() for program in PROGRAMS):
            return folder
    return None


@dataclass(frozen=True)
class Pair:
    """A running primary and its standby."""

    primary_port: int
    standby_port: int

    def url(self, port: int, schema: str) -> str:
        return f"postgresql://postgres@127.0.0.1:{port}/postgres?schema={schema}"

    def primary(self, schema: str) -> str:
        return self.url(self.primary_port, schema)

    def standby(self, schema: str) -> str:
        return self.url(self.standby_port, schema)

    def wait_for_replay(self) -> float:
        """Wait until the standby has replayed everything the primary wrote
        so far; returns the seconds it took."""
        import psycopg

        started = time.monotonic()
        primary = (
            f"host=127.0.0.1 port={self.primary_port} user=postgres dbname=postgres"
        )
        standby = (
            f"host=127.0.0.1 port={self.standby_port} user=postgres dbname=postgres"
        )
        with psycopg.connect(primary, autocommit=True) as connection:
            row = connection.execute("SELECT pg_current_wal_lsn()").fetchone()
            assert row is not None
            target = row[0]
        with psycopg.connect(standby, autocommit=True) as connection:
            while True:
                row = connection.execute(
                    "SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (target,)
                ).fetchone()
                if row is not None and row[0]:
                    return time.monotonic() - started
                if time.monotonic() - started > REPLAY_SECONDS:
                    msg = (
                        f"the standby did not replay to {target} in {REPLAY_SECONDS} s"
                    )
                    raise TimeoutError(msg)
                time.sleep(0.01)


def _as_postgres() -> dict[str, object]:
    """``subprocess`` arguments running a server program as ``postgres`` when
    we are root, and as ourselves otherwise."""
    if os.geteuid() != 0:
        return {}
    user = pwd.getpwnam("postgres")
    return {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}


def _run(folder: Path, *command: str) -> None:
    done = subprocess.run(
        command, capture_output=True, text=True, cwd=folder, **_as_postgres()
    )  # type: ignore[call-overload]
    if done.returncode != 0:
        msg = f"{Path(command[0]).name} failed: {(done.stdout + done.stderr)[-2000:]}"
        raise RuntimeError(msg)


@contextlib.contextmanager
def running() -> Iterator[Pair]:
    """Start a primary and its standby; stop both and remove them after."""
    bin_folder = binaries()
    assert bin_folder is not None
    with tempfile.TemporaryDirectory(prefix="pgpair-") as name:
        folder = Path(name)
        if os.geteuid() == 0:
            user = pwd.getpwnam("postgres")
            os.chown(folder, user.pw_uid, user.pw_gid)
        primary, standby = folder / "primary", folder / "standby"
        pair = Pair(free_port(), free_port())
        _run(folder, str(bin_folder / "initdb"), "-D", str(primary), "-A", "trust",
             "-U", "postgres", "--no-sync")  # fmt: skip
        settings = "\n".join(
            [
                f"port = {pair.primary_port}",
                "listen_addresses = '127.0.0.1'",
                f"unix_socket_directories = '{folder}'",
                "fsync = off",
                "wal_level = replica",
                "max_wal_senders = 4",
                "hot_standby_feedback = on",
                "",
            ]
        )
        with (primary / "postgresql.conf").open("a") as config:
            config.write(settings)
        with (primary / "pg_hba.conf").open("a") as hba:
            hba.write("host replication all 127.0.0.1/32 trust\n")
        started: list[Path] = []
        try:
            _start(bin_folder, primary, folder / "primary.log")
            started.append(primary)
            _run(folder, str(bin_folder / "pg_basebackup"), "-h", "127.0.0.1",
                 "-p", str(pair.primary_port), "-U", "postgres", "-D", str(standby),
                 "-R", "-X", "stream", "-c", "fast")  # fmt: skip
            with (standby / "postgresql.conf").open("a") as config:
                config.write(f"port = {pair.standby_port}\n")
            _start(bin_folder, standby, folder / "standby.log")
            started.append(standby)
            yield pair
        finally:
            for data in reversed(started):
                _run(folder, str(bin_folder / "pg_ctl"), "-D", str(data),
                     "-m", "immediate", "-w", "stop")  # fmt: skip


def _start(bin_folder: Path, data: Path, log: Path) -> None:
    _run(data.parent, str(bin_folder / "pg_ctl"), "-D", str(data), "-l", str(log),
         "-w", "-t", "60", "start")  # fmt: skip
