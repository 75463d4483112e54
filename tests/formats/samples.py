"""Logs for the codec tests: the spec's ``turn1``, fixture paths, substitutions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentlog.domain.json import dumps
from tests.builders import turn1 as _turn1

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "fixtures"
SEED_ERA = sorted((FIXTURES / "seed-era").glob("*.jsonl"))
HARNESS_HEAD = sorted((FIXTURES / "harness-head").glob("*.jsonl"))
CWD = "/srv/agentlog fixtures/ü"
SUBSTITUTIONS = {"cwd": CWD, "sessionId": "imported-session"}

HEADER: dict[str, Any] = {
    "version": 0,
    "id": "s1",
    "createdAt": 1000,
    "cwd": "/srv/app",
}


def text(value: str) -> list[dict[str, str]]:
    return [{"type": "text", "text": value}]


def turn1(start_time: int = 1000) -> list[dict[str, Any]]:
    """The persistence scenarios' ``turn1`` with times ``start_time + seq``."""
    return _turn1(start_time, tick=1)


def envelope(seq: int, event: dict[str, Any], time: int) -> dict[str, Any]:
    """An event in the key order ``append`` writes: type, seq, time, data, markers."""
    out = {"type": event["type"], "seq": seq, "time": time, "data": event["data"]}
    out.update({k: v for k, v in event.items() if k not in out})
    return out


def event(seq: int, kind: str, data: Any, time: int = 5) -> dict[str, Any]:
    return {"type": kind, "seq": seq, "time": time, "data": data}


def header_line(**fields: Any) -> bytes:
    return dumps(
        {"type": "session", "version": 0, "id": "s1", "createdAt": 1, **fields}
    )


def lines(*rows: bytes | dict[str, Any]) -> bytes:
    """A log body: each row (bytes as they are, dicts as compact JSON) plus a newline."""
    return b"".join(
        (row if isinstance(row, bytes) else dumps(row).removeprefix(b" ")) + b"\n"
        for row in rows
    )


def substituted(path: Path) -> bytes:
    """A fixture with ``{{cwd}}``/``{{sessionId}}`` replaced inside its JSON strings."""
    data = path.read_bytes()
    for name, value in SUBSTITUTIONS.items():
        escaped = json.dumps(value, ensure_ascii=False)[1:-1].encode()
        data = data.replace(b"{{" + name.encode() + b"}}", escaped)
    return data
