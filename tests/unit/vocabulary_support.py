"""Payload pieces and helpers the vocabulary tests share."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentlog.domain.errors import PayloadError
from agentlog.domain.vocabulary import check_payload

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "fixtures" / "seed-era"
USER = {"kind": "user"}
TEXT = {"type": "text", "text": "hi"}
USAGE = {"inputTokens": 10, "outputTokens": 5}
TRIGGER = {"kind": "message", "source": USER}


def result(*content: Any, **extra: Any) -> dict[str, Any]:
    """A ``tool/result`` payload in turn 1, step 1, for call ``c``."""
    return {
        "turn": 1,
        "step": 1,
        "callId": "c",
        "content": list(content),
        "isError": False,
        **extra,
    }


def fixture_lines() -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = []
    for path in sorted(FIXTURES.glob("*.jsonl")):
        lines.extend(json.loads(line) for line in path.read_text().splitlines() if line)
    return lines


def invalid(event_type: str, data: Any) -> str:
    """The reason part of the PayloadError ``check_payload`` raises."""
    with pytest.raises(PayloadError) as caught:
        check_payload(event_type, data)
    prefix = f'session event "{event_type}" has an invalid payload: '
    message = str(caught.value)
    assert message.startswith(prefix)
    return message.removeprefix(prefix)
