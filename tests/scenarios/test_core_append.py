"""Core scenarios A (append, seq, JSON) and B (surface intent), on the aggregate.

Where docs/events.md#the-append-pipeline makes us stricter than the seed (scenarios 21, 22, 23, 26), the
test checks our rule and says so.
"""

from __future__ import annotations

import datetime
from collections import OrderedDict
from decimal import Decimal
from enum import StrEnum
from typing import Any

import pytest

from agentlog.domain.errors import NonJsonDataError, SurfaceError, SurfaceIntentError
from tests.scenarios.harness import (
    SE,
    SS,
    TE,
    TS,
    A,
    Append,
    Scenario,
    U,
    text,
)

NON_JSON = 'session event "user/message" carries non-JSON-serializable data'


def user_with(extra: Any) -> Append:
    return Append(
        "user/message",
        {"content": [text("hi")], "source": {"kind": "user"}, "extra": extra},
        surface_op="append",
    )


def test_core_001_first_append_gets_seq_0_and_the_injected_time() -> None:
    scenario = Scenario(clock=lambda: 1234).when(TS(1))
    assert scenario.result["seq"] == 0
    assert scenario.result["time"] == 1234
    assert scenario.session.seq == 1


def test_core_002_seqs_equal_list_index() -> None:
    scenario = Scenario().given(TS(1), U("a"), SS(1, 1), A("b"), SE(1, 1)).when(TE(1))
    assert [e["seq"] for e in scenario.events] == [0, 1, 2, 3, 4, 5]
    assert scenario.session.seq == 6


def test_core_003_a_callable_in_data_is_rejected() -> None:
    Scenario().when(user_with(lambda: 1)).then_raises(NonJsonDataError, NON_JSON)


@pytest.mark.parametrize(
    "value",
    [
        float("nan"),
        float("inf"),
        float("-inf"),
        set(),
        b"x",
        datetime.datetime.now(tz=datetime.UTC),
        Decimal(1),
        (1, 2),
        object(),
    ],
)
def test_core_004_non_json_values_are_rejected(value: object) -> None:
    Scenario().when(user_with(value)).then_raises(NonJsonDataError, NON_JSON)


def test_core_005_a_non_str_key_anywhere_is_rejected() -> None:
    Scenario().when(user_with({"deep": [{1: "a"}]})).then_raises(
        NonJsonDataError, NON_JSON
    )


def test_core_006_a_callable_at_depth_3_is_rejected() -> None:
    Scenario().when(user_with({"a": [print]})).then_raises(NonJsonDataError, NON_JSON)


def test_core_007_self_containing_containers_are_rejected() -> None:
    cyclic_dict: dict[str, Any] = {}
    cyclic_dict["self"] = cyclic_dict
    cyclic_list: list[Any] = []
    cyclic_list.append(cyclic_list)
    Scenario().when(user_with(cyclic_dict)).then_raises(NonJsonDataError, NON_JSON)
    Scenario().when(user_with(cyclic_list)).then_raises(NonJsonDataError, NON_JSON)


def test_core_008_shared_aliases_are_accepted() -> None:
    shared = {"k": [1, 2]}
    scenario = Scenario().when(user_with({"a": shared, "b": shared}))
    extra = scenario.result["data"]["extra"]
    assert extra["a"] == extra["b"] == shared


def test_core_009_nested_json_negative_zero_and_big_ints_are_accepted() -> None:
    value = {
        "extra": [1, 2, [3, {"a": None, "b": True}]],
        "z": -0.0,
        "f": 1.5,
        "n": 2**70,
    }
    scenario = Scenario().when(user_with(value))
    assert scenario.result["data"]["extra"] == value
    assert scenario.result["data"]["extra"]["n"] == 2**70


class Colour(StrEnum):
    RED = "red"


@pytest.mark.parametrize("value", [OrderedDict(a=1), Colour.RED])
def test_core_010_subclasses_of_json_types_are_rejected(value: object) -> None:
    Scenario().when(user_with(value)).then_raises(NonJsonDataError, NON_JSON)


def test_core_011_caller_mutation_after_append_never_reaches_the_log() -> None:
    data = {"content": [text("original")], "source": {"kind": "user"}}
    scenario = Scenario().when(Append("user/message", data, surface_op="append"))
    data["content"][0]["text"] = "changed"  # type: ignore[index]
    data["added"] = True
    assert scenario.session.pending_events[-1].envelope["data"]["content"][0][
        "text"
    ] == (  # type: ignore[attr-defined]
        "original"
    )
    assert "added" not in scenario.result["data"]


def test_core_012_mutating_a_todo_list_after_append_changes_nothing() -> None:
    todos = [{"content": "write tests", "status": "pending"}]
    scenario = Scenario().given(TS(1)).when(Append("todo/write", {"todos": todos}))
    todos[0]["status"] = "completed"
    todos.append({"content": "x", "status": "pending"})
    assert scenario.new[0]["data"]["todos"] == [
        {"content": "write tests", "status": "pending"}
    ]


def test_core_013_last_todo_write_wins_and_never_reaches_the_surface() -> None:
    first = Append("todo/write", {"todos": [{"content": "a", "status": "pending"}]})
    second = Append("todo/write", {"todos": [{"content": "b", "status": "completed"}]})
    scenario = Scenario().given(TS(1), first).when(second)
    todo_writes = [e for e in scenario.events if e["type"] == "todo/write"]
    assert todo_writes[-1]["data"]["todos"] == [{"content": "b", "status": "completed"}]
    assert scenario.session.surface.seqs == []


def test_core_014_an_unknown_type_is_recorded_verbatim() -> None:
    Scenario().when(Append("compaction/marker", {"foo": "bar"})).then(
        {"type": "compaction/marker", "seq": 0, "data": {"foo": "bar"}}
    )


@pytest.mark.parametrize(
    "reason",
    [
        {"kind": "completed"},
        {"kind": "aborted", "reason": "cancelled by user"},
        {"kind": "error", "step": 1, "message": "boom", "code": "X"},
        {"kind": "disposed"},
        {"kind": "max-tokens"},
        {"kind": "rejected", "reason": "r"},
        {"kind": "interrupted"},
    ],
)
def test_core_015_every_turn_end_reason_is_stored_verbatim(reason: Any) -> None:
    scenario = Scenario().given(TS(1)).when(TE(1, reason))
    assert scenario.new[0]["data"]["reason"] == reason
    replayed = Scenario()
    replayed.session.seed(scenario.events)
    assert replayed.session.seq == 2


def test_core_016_returned_event_equals_the_log_and_has_no_markers_when_log_only() -> (
    None
):
    scenario = Scenario().when(TS(1))
    assert scenario.result == scenario.new[0]
    assert "surfaceOp" not in scenario.result
    assert "sourceEventSeqs" not in scenario.result


@pytest.mark.parametrize(
    "event_type",
    [
        "user/message",
        "assistant/message",
        "tool/result",
        "context/message",
        "steering/message",
    ],
)
def test_core_017_018_surface_types_require_a_marker(event_type: str) -> None:
    Scenario().when(Append(event_type, {"content": []})).then_raises(
        SurfaceIntentError,
        f'session event "{event_type}" is surface-eligible and requires a surfaceOp '
        "marker",
    )


def test_core_019_provenance_without_surface_op_is_still_missing_a_marker() -> None:
    Scenario().when(U("x").with_intent(None, [0])).then_raises(
        SurfaceIntentError,
        'session event "user/message" is surface-eligible and requires a surfaceOp '
        "marker",
    )


def test_core_020_the_json_rule_is_checked_before_the_marker() -> None:
    Scenario().when(Append("user/message", {"x": {1, 2}})).then_raises(
        NonJsonDataError, NON_JSON
    )


def test_core_021_future_provenance_is_rejected_at_append() -> None:
    # docs/events.md#the-append-pipeline: stricter than the seed, which recorded [3, 5, 7] verbatim.
    Scenario().when(A("x").with_intent("append", [3, 5, 7])).then_raises(
        SurfaceError,
        "sourceEventSeqs must reference earlier events: 3 >= current seq 0",
    )


def test_core_022_caller_mutation_of_provenance_never_reaches_the_log() -> None:
    # Valid references (our rule needs earlier seqs), then mutate the caller's list.
    sources = [0, 1]
    scenario = (
        Scenario().given(U("a"), U("b")).when(A("x").with_intent("append", sources))
    )
    sources.append(99)
    sources[0] = 42
    assert scenario.new[0]["sourceEventSeqs"] == [0, 1]


def test_core_023_caller_mutation_of_a_replace_never_reaches_the_log() -> None:
    surface_op = {"op": "replace", "start": 0, "end": 0}
    scenario = Scenario().given(U("a")).when(A("x").with_intent(surface_op, [0]))
    surface_op["start"] = 99
    assert scenario.new[0]["surfaceOp"] == {"op": "replace", "start": 0, "end": 0}
    assert scenario.session.surface.seqs == [1]


def test_core_024_log_only_types_cannot_carry_markers() -> None:
    Scenario().when(TE(1).with_intent("append")).then_raises(
        SurfaceIntentError,
        'session event "turn/end" is not surface-eligible and cannot carry surfaceOp',
    )
    Scenario().when(TE(1).with_intent(None, [0])).then_raises(
        SurfaceIntentError,
        'session event "turn/end" is not surface-eligible and cannot carry '
        "sourceEventSeqs",
    )


def test_core_025_malformed_surface_ops_are_rejected() -> None:
    Scenario().when(U("x").with_intent("bogus")).then_raises(
        SurfaceIntentError, 'session event "user/message" carries an invalid surfaceOp'
    )
    Scenario().when(U("x").with_intent({"op": "replace", "start": 0})).then_raises(
        SurfaceIntentError,
        'session event "user/message" carries an invalid replace surfaceOp',
    )


def test_core_026_empty_provenance_only_on_assistant_messages() -> None:
    # docs/events.md#the-append-pipeline: [] stays valid on assistant/message; [0,0] and self
    # references are rejected (the seed accepted all three).
    Scenario().when(A("x").with_intent("append", [])).then(
        {
            "type": "assistant/message",
            "seq": 0,
            "data": {"turn": 1, "step": 1, "content": [text("x")]},
            "sourceEventSeqs": [],
            "surfaceOp": "append",
        }
    )
    Scenario().when(U("x").with_intent("append", [])).then_raises(
        SurfaceError, "sourceEventSeqs must not be empty except on assistant/message"
    )
    Scenario().given(U("a")).when(A("x").with_intent("append", [0, 0])).then_raises(
        SurfaceError, "sourceEventSeqs must not contain duplicates"
    )
    Scenario().when(A("x").with_intent("append", [0])).then_raises(
        SurfaceError,
        "sourceEventSeqs must reference earlier events: 0 >= current seq 0",
    )
