"""Byte scans of a store's copies for marker strings (docs/encryption.md).

A scenario writes distinctive markers as a session's cwd, owner, first prompt,
title, a forked child's lineage, and an answer; the scan reads every byte a copy
holds (a SQLite file with its WAL and key store file, or a ``pg_dump``) and says
which markers it still finds. Each marker is one word, so a search index that stored
words would show it too; the scans run with search on (views and index) and off
(the views alone).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from typing import TYPE_CHECKING, Any

import pytest

from agentlog.domain.title import TITLE_EVENT
from tests.conftest import pg_params
from tests.scenarios.harness import SE, SS, TE, TS, A, U

if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

    from agentlog.application import Sessions

VIEW_MARKERS = {
    "cwd": "/srv/qcwdmark7a1",
    "owner": "qownermark7a2",
    "prompt": "qpromptmark7a3",
    "title": "qtitlemark7a4",
    "lineage": "/srv/qlineagemark7a5",
}
"""Written where the listing, titles and lineage views hold them."""
EVENT_MARKERS = {"answer": "qanswermark7a6"}
"""Only in the log's events (sealed, and indexed by search)."""
MARKERS = {**VIEW_MARKERS, **EVENT_MARKERS}


def write_markers(app: Sessions, session_id: str = "marked") -> None:
    """The scenario: a session with every marker, and a forked child."""
    handle = app.create_session(
        cwd=VIEW_MARKERS["cwd"],
        session_id=session_id,
        owner=VIEW_MARKERS["owner"],
        created_at=10,
    )
    for item in (
        TS(1),
        U(VIEW_MARKERS["prompt"]),
        SS(1, 1),
        A(EVENT_MARKERS["answer"], turn=1, step=1),
        SE(1, 1),
        TE(1),
    ):
        item.to(handle)  # type: ignore[attr-defined]
    data = {
        "title": VIEW_MARKERS["title"],
        "messageSeqs": [1],
        "source": {"kind": "fallback"},
    }
    app.append_out_of_band(handle, TITLE_EVENT, data)
    app.close(handle)
    child = app.create_session(
        cwd=VIEW_MARKERS["lineage"],
        session_id=f"{session_id}-child",
        parent_session=session_id,
        owner=VIEW_MARKERS["owner"],
        created_at=11,
    )
    app.close(child)


def found(blobs: Iterable[bytes], markers: dict[str, str] = MARKERS) -> set[str]:
    """The names of the markers any blob holds (case-insensitively)."""
    lowered = [blob.lower() for blob in blobs]
    return {
        name
        for name, marker in markers.items()
        if any(needle(marker) in blob for blob in lowered)
    }


def needle(marker: str) -> bytes:
    """What a scan looks for: the marker's last ten characters, lowercase. An
    index stores a word after the prefix it shares with the word before it
    (FTS5's leaves do), so a whole marker would escape the scan there."""
    return marker[-10:].lower().encode()


def sqlite_copy(database: str, keys: str | None = None) -> list[bytes]:
    """Every byte of a SQLite store as a copy of its folder would hold them."""
    paths = [database, f"{database}-wal", f"{database}-shm"]
    if keys is not None:
        paths += [keys, f"{keys}-wal"]
    return [_read(path) for path in paths if os.path.exists(path)]


def _read(path: str) -> bytes:
    with open(path, "rb") as file:
        return file.read()


def pg_dump(*schemas: str, tmp_path: Path) -> bytes:
    """A plain-text ``pg_dump`` of these schemas of the test database, and the
    bytes of its ``bytea`` values."""
    tool = shutil.which("pg_dump")
    if tool is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("pg_dump is not installed")
        pytest.skip("pg_dump is not installed")
    params: dict[str, Any] = pg_params()
    out = tmp_path / "dump.sql"
    command = [
        tool,
        "-h",
        str(params["host"]),
        "-p",
        str(params["port"]),
        "-U",
        str(params["user"]),
        "-d",
        str(params["dbname"]),
        "-f",
        str(out),
    ]
    for schema in schemas:
        command += ["-n", schema]
    env = {**os.environ, "PGPASSWORD": str(params.get("password") or "")}
    subprocess.run(command, check=True, env=env, timeout=120)
    dump = out.read_bytes()
    return b"\n".join([dump, *unhexed(dump)])


BYTEA = re.compile(rb"\\x((?:[0-9a-f]{2})+)")


def unhexed(dump: bytes) -> list[bytes]:
    """The bytes of every ``bytea`` value of a dump (``COPY`` writes them as
    ``\\x`` and hex digits, which a scan of the text alone would miss)."""
    return [bytes.fromhex(match.decode()) for match in BYTEA.findall(dump)]
