"""``stream_surface`` equals ``read_surface``, reading a chunk of rows at a time."""

from __future__ import annotations

from typing import Any

import pytest

from agentlog.application import SessionQuery, Sessions, surface_stream
from tests.scenarios.harness import SE, SS, TE, TS, A, Append, U, add


def compacted(app: Sessions, session_id: str) -> None:
    """Three turns, then a replace that moves a late seq to the head."""
    handle = app.create_session(cwd="/w", session_id=session_id)
    for turn in (1, 2, 3):
        add(handle, TS(turn), U(f"u{turn}"), SS(turn, 1), A(f"a{turn}", turn=turn))
        add(handle, SE(turn, 1), TE(turn))
    add(handle, TS(4), SS(4, 1))
    summary = Append(
        "assistant/message",
        {"turn": 4, "step": 1, "content": [{"type": "text", "text": "summary"}]},
        {"op": "replace", "start": 1, "end": 9},
        [1, 3, 7, 9],
    )
    add(handle, summary)
    add(handle, SE(4, 1), TE(4))
    app.close(handle)


def as_json(stream: Any) -> dict[str, Any]:
    return {
        "session": stream.session,
        "capturedThroughSeq": stream.captured_through_seq,
        "events": list(stream.events),
    }


def test_the_stream_equals_the_read_in_surface_order(
    app: Sessions, monkeypatch: pytest.MonkeyPatch
) -> None:
    compacted(app, "s")
    query = SessionQuery(app)
    expected = query.read_surface("s").to_json()
    assert [e["seq"] for e in expected["events"]] != sorted(
        e["seq"] for e in expected["events"]
    )
    monkeypatch.setattr(surface_stream, "CHUNK", 2)
    sizes: list[int] = []
    rows_at = app.history.rows_at

    def counted(session_id: str, seqs: list[int]) -> Any:
        rows = rows_at(session_id, seqs)
        sizes.append(len(rows))
        return rows

    monkeypatch.setattr(app.history, "rows_at", counted)
    assert as_json(query.stream_surface("s")) == expected
    assert sizes and max(sizes) <= 2
    live = app.get_session("s")
    assert as_json(query.stream_surface(live.id)) == expected
