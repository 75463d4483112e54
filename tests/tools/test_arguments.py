"""Argument validation: each wrong argument named, with what was wrong."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from agentlog.application.model_tools import ModelTools
from agentlog.application.model_tools.times import format_time, parse_time

EXAMPLE = "e.g. 2026-05-01T12:00:00Z or 2026-05-01T14:00:00+02:00"
CASES = [
    ("session_search", {}, "query is required"),
    ("session_search", {"query": 7}, "query must be a string"),
    ("session_search", {"query": " \t\n"}, "query must contain non-whitespace text"),
    ("session_search", {"query": "a\x00b"}, "query must not contain NUL"),
    (
        "session_search",
        {"query": "x", "created_at_from": "2026-05-01T12:00:00"},
        f"created_at_from must name its timezone (Z or an offset), {EXAMPLE}",
    ),
    (
        "session_search",
        {"query": "x", "event_time_to": "yesterday"},
        "event_time_to must be an ISO 8601 time such as 2026-05-01T12:00:00Z or "
        "2026-05-01T14:00:00+02:00",
    ),
    (
        "session_search",
        {
            "query": "x",
            "created_at_from": "2026-05-02T00:00:00+02:00",
            "created_at_to": "2026-05-01T20:00:00Z",
        },
        "created_at_from must be less than or equal to created_at_to",
    ),
    (
        "session_search",
        {"query": "x", "event_seq_from": 5, "event_seq_to": 4},
        "event_seq_from must be less than or equal to event_seq_to",
    ),
    (
        "session_search",
        {"query": "x", "session_ids": []},
        "session_ids must not be empty when supplied",
    ),
    (
        "session_search",
        {"query": "x", "session_ids": ["a", 2]},
        "session_ids[1] must be a string",
    ),
    (
        "session_search",
        {"query": "x", "event_surfaces": ["current", "gone"]},
        "event_surfaces[1] must be one of 'current', 'shadowed' or 'log-only'",
    ),
    (
        "session_search",
        {"query": "x", "availability": ["offline"]},
        "availability[0] must be one of 'live' or 'persisted'",
    ),
    (
        "session_search",
        {"query": "x", "include_root_sessions": 1},
        "include_root_sessions must be true or false",
    ),
    (
        "session_search",
        {"query": "x", "cursor": "abc"},
        "cursor is not an argument of this tool",
    ),
    (
        "session_search",
        {"query": "x", "limit": 5},
        "limit is not an argument of this tool",
    ),
    (
        "session_event_search",
        {"query": "x", "seq_from": -1},
        "seq_from must be at least 0",
    ),
    (
        "session_event_search",
        {"query": "x", "session_id": 5},
        "session_id must be a string",
    ),
    (
        "session_event_search",
        {"query": "x", "seq_from": 3, "seq_to": 2},
        "seq_from must be less than or equal to seq_to",
    ),
    (
        "session_event_search",
        {"query": "x", "event_types": "user/message"},
        "event_types must be an array",
    ),
    ("session_trace", {"session": "a"}, "session is not an argument of this tool"),
    ("session_event_trace", {}, "seq is required"),
    ("session_event_trace", {"seq": "3"}, "seq must be an integer"),
    ("session_event_trace", {"seq": 3.0}, "seq must be an integer"),
    ("session_event_trace", {"seq": 2**63}, f"seq must be at most {2**63 - 1}"),
    ("session_event_read", {"seq": 1, "before": 51}, "before must be at most 50"),
    ("session_event_read", {"seq": 1, "after": -1}, "after must be at least 0"),
    ("session_event_read", {"seq": False}, "seq must be an integer"),
]


@pytest.mark.parametrize(("name", "arguments", "message"), CASES)
def test_messages_name_the_argument(
    tools: ModelTools, name: str, arguments: dict[str, object], message: str
) -> None:
    result = tools.call(name, arguments)
    assert result.is_error
    assert result.text == f"invalid arguments for {name}: {message}"


def test_every_problem_is_listed_once(tools: ModelTools) -> None:
    result = tools.call(
        "session_search", {"query": "", "event_seq_from": -1, "bogus\x1b": 1}
    )
    assert result.text == (
        "invalid arguments for session_search: query must contain non-whitespace "
        "text; event_seq_from must be at least 0; bogus\\x1b is not an argument of "
        "this tool"
    )


def test_arguments_that_are_not_an_object(tools: ModelTools) -> None:
    for arguments in ([1], "[1]", 3):
        result = tools.call("session_trace", arguments)
        assert (
            result.text == "invalid arguments for session_trace: expected a JSON object"
        )
    assert not tools.call("session_trace", None).is_error
    assert not tools.call("session_trace", {"session_id": None}).is_error


def test_times_parse_with_offsets_and_print_in_utc() -> None:
    assert parse_time("2026-05-01T12:00:00Z") == 1_777_636_800_000
    assert parse_time("2026-05-01T14:00:00+02:00") == 1_777_636_800_000
    assert parse_time("2026-05-01T06:30:00-05:30") == 1_777_636_800_000
    assert parse_time("2026-05-01T12:00:00.0005Z") == 1_777_636_800_000.5
    assert format_time(1_777_636_800_000) == "2026-05-01T12:00:00.000Z"
    assert format_time(1_777_636_800_123.9) == "2026-05-01T12:00:00.123Z"
    assert format_time(None) == "unknown time"
    assert format_time("1777636800000") == "unknown time"
    assert format_time(10**20) == "100000000000000000000 ms after 1970-01-01T00:00:00Z"
    shown = datetime.fromisoformat(format_time(1_777_636_800_000))
    assert shown == datetime(2026, 5, 1, 12, tzinfo=UTC)
    for value in ("2026-05-01", "2026-05-01T12:00:00", "now", "2026-13-01T00:00:00Z"):
        with pytest.raises(ValueError, match="must"):
            parse_time(value)
