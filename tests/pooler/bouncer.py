"""A PgBouncer of the tests' own, in transaction mode, in front of the test server.

It runs from a temporary folder (configuration, user list) on a free loopback
port, as ``nobody`` when the tests run as root (PgBouncer refuses root). The
pool is small on purpose: four server sessions are lent to every client in
turn, so a client that relied on keeping one would meet another's.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping

SERVER_SESSIONS = 4
STARTUP_SECONDS = 10.0


def executable() -> str | None:
    """PgBouncer's path (Debian puts it in ``/usr/sbin``, often off ``PATH``)."""
    return shutil.which("pgbouncer") or shutil.which("pgbouncer", path="/usr/sbin")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def accepts(port: int) -> bool:
    with (
        contextlib.suppress(OSError),
        socket.create_connection(("127.0.0.1", port), timeout=0.2),
    ):
        return True
    return False


def configuration(server: Mapping[str, str], port: int, users: Path) -> str:
    return "\n".join(
        [
            "[databases]",
            f"* = host={server['POSTGRES_HOST']} port={server['POSTGRES_PORT']}",
            "[pgbouncer]",
            "listen_addr = 127.0.0.1",
            f"listen_port = {port}",
            "unix_socket_dir =",
            "auth_type = trust",
            f"auth_file = {users}",
            "pool_mode = transaction",
            f"default_pool_size = {SERVER_SESSIONS}",
            "max_client_conn = 1000",
            "",
        ]
    )


@contextlib.contextmanager
def running(server: Mapping[str, str]) -> Iterator[int]:
    """A PgBouncer in transaction mode before ``server`` (a store URL's
    environment, trust authentication); yields its port, stops it after."""
    program = executable()
    assert program is not None
    with tempfile.TemporaryDirectory(prefix="pgbouncer-") as folder:
        os.chmod(folder, 0o755)
        users = Path(folder) / "users.txt"
        users.write_text(f'"{server["POSTGRES_USER"]}" ""\n')
        port = free_port()
        config = Path(folder) / "pgbouncer.ini"
        config.write_text(configuration(server, port, users))
        for path in (users, config):
            path.chmod(0o644)
        command = [program, str(config)]
        if os.geteuid() == 0:
            command[1:1] = ["-u", "nobody"]
        log = Path(folder) / "pgbouncer.log"
        with log.open("wb") as output:
            process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + STARTUP_SECONDS
            while not accepts(port):
                if process.poll() is not None or time.monotonic() > deadline:
                    msg = f"PgBouncer did not start: {log.read_text()[-2000:]}"
                    raise RuntimeError(msg)
                time.sleep(0.05)
            yield port
        finally:
            process.terminate()
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
