"""CPU time of the PostgreSQL backends serving this process, on this machine.

A shared machine's load stretches wall-clock figures several times over; the
CPU a page costs does not stretch. With the server on the same host, its
backends' CPU is readable from ``/proc``: the backends are found through this
process's own TCP sockets (their ports, as ``pg_stat_activity`` sees them).
Linux only; elsewhere :func:`backends` finds none and the figure reads 0.
"""

from __future__ import annotations

import os
import re
from typing import Any

_SOCKET = re.compile(r"socket:\[(\d+)\]")


def _our_ports() -> set[int]:
    inodes = set()
    try:
        names = os.listdir("/proc/self/fd")
    except OSError:
        return set()
    for name in names:
        try:
            found = _SOCKET.match(os.readlink(f"/proc/self/fd/{name}"))
        except OSError:
            continue
        if found:
            inodes.add(found.group(1))
    ports = set()
    for table in ("/proc/self/net/tcp", "/proc/self/net/tcp6"):
        try:
            with open(table) as file:
                lines = file.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[9] in inodes:
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def backends(conn: Any) -> set[int]:
    """The pids of the server backends connected to this process's sockets
    (``conn``: any open psycopg connection to the server, itself left out)."""
    ports = _our_ports()
    rows = conn.execute(
        "SELECT pid, client_port FROM pg_stat_activity "
        "WHERE client_port IS NOT NULL AND pid <> pg_backend_pid()"
    ).fetchall()
    return {pid for pid, port in rows if port in ports}


def cpu_seconds(pids: set[int]) -> float:
    """The user and system CPU seconds these processes have used so far."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as file:
                fields = file.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick
    return total
