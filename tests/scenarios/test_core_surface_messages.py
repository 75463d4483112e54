"""Core scenarios C (surface linked list, 27–45) and D (derived messages, 46–59).

Both run on the bare aggregate (``S``, invariants off): nodes come from
``session.surface.nodes`` and messages from :func:`agentlog.domain.messages.derive_messages`
over the recorded events. Where docs/events.md#the-append-pipeline makes us stricter than the seed
(36–41, 43: a bad replace is rejected at append instead of poisoning later reads),
the test checks our rule and says so. D through ``Sessions.messages`` on every
backend: test_core_messages_backends.py; 60 and 61 are properties:
tests/property/test_property_sessions.py.
"""

from __future__ import annotations

from typing import Any

from agentlog.domain.errors import SurfaceError
from agentlog.domain.json import copy_json
from agentlog.domain.messages import derive_messages
from agentlog.domain.session import Session
from agentlog.domain.surface import SurfaceNode
from agentlog.domain.vocabulary import is_surface_eligible_type, is_surface_event
from tests.scenarios.harness import (
    SE,
    SS,
    TE,
    TS,
    A,
    Append,
    R,
    Rep,
    Scenario,
    U,
    call_block,
    chunk,
    text,
)

USER = {"kind": "user"}
COMPACT = {"kind": "plugin", "plugin": "compact"}


def nodes(scenario: Scenario) -> list[int]:
    return [node.seq for node in scenario.session.surface.nodes]


def links(scenario: Scenario) -> dict[int, tuple[int | None, int | None]]:
    return {n.seq: (n.prev, n.next) for n in scenario.session.surface.nodes}


def assistant(*blocks: Any, **extra: Any) -> Append:
    data = {"turn": 1, "step": 1, "content": list(blocks), **extra}
    return Append("assistant/message", data, surface_op="append")


def framed(event_type: str, source: Any, *blocks: Any) -> Append:
    data: dict[str, Any] = {"content": list(blocks), "source": source}
    if event_type == "steering/message":
        data["turn"] = 1
    return Append(event_type, data, surface_op="append")


def derived(*appends: Append) -> list[dict[str, Any]]:
    """Messages of a bare session after ``appends``; a replay derives the same."""
    scenario = Scenario().given(*appends)
    messages = derive_messages(scenario.events)
    replay = Session.create("replay", seed=scenario.events, invariants=False)
    assert replay.surface.seqs == scenario.session.surface.seqs
    return messages


# ------------------------------------------------------- C. surface linked list


def test_core_027_nodes_link_their_neighbours() -> None:
    scenario = Scenario().given(TS(1), U("a"), A("b"), TE(1))
    assert nodes(scenario) == [1, 2]
    assert scenario.session.surface.nodes == [
        SurfaceNode(1, None, 2),
        SurfaceNode(2, 1, None),
    ]


def test_core_028_a_session_without_surface_events_derives_nothing() -> None:
    scenario = Scenario().given(TS(1), SS(1, 1), SE(1, 1), TE(1))
    assert nodes(scenario) == []
    assert derive_messages(scenario.events) == []


def test_core_029_an_append_after_a_read_extends_the_tail() -> None:
    scenario = Scenario().given(TS(1), U("a"), A("b"), TE(1))
    assert nodes(scenario) == [1, 2]
    scenario.when(R("c1"))
    assert scenario.new[0]["seq"] == 4
    assert nodes(scenario) == [1, 2, 4]
    assert links(scenario)[4] == (2, None)
    assert links(scenario)[2] == (1, 4)


def test_core_030_a_replay_has_the_same_nodes_and_messages() -> None:
    scenario = Scenario().given(TS(1), U("a"), A("b"), TE(1), R("c1"))
    replay = Session.create("replay", seed=scenario.events, invariants=False)
    assert [node.seq for node in replay.surface.nodes] == [1, 2, 4]
    assert replay.surface.nodes == scenario.session.surface.nodes
    replayed = [e.envelope for e in replay.pending_events[1:]]  # type: ignore[attr-defined]
    assert replayed == scenario.events
    assert derive_messages(replayed) == derive_messages(scenario.events)


def test_core_031_a_replace_of_everything_leaves_one_node() -> None:
    scenario = Scenario().given(TS(1), U("a"), A("b"), TE(1)).when(Rep(1, 2, [1, 2]))
    assert scenario.new[0]["seq"] == 4
    assert scenario.session.surface.nodes == [SurfaceNode(4, None, None)]


def test_core_032_a_replace_at_the_head() -> None:
    scenario = Scenario().given(U("a"), U("b"), U("c")).when(Rep(0, 1, [0, 1]))
    assert nodes(scenario) == [3, 2]
    assert links(scenario) == {3: (None, 2), 2: (3, None)}


def test_core_033_a_replace_of_the_tail() -> None:
    scenario = Scenario().given(U("a"), U("b")).when(Rep(1, 1, [1]))
    assert nodes(scenario) == [0, 2]
    assert links(scenario) == {0: (None, 2), 2: (0, None)}


def test_core_034_a_replace_in_the_middle() -> None:
    scenario = Scenario().given(U("a"), U("b"), U("c")).when(Rep(1, 1, [1]))
    assert nodes(scenario) == [0, 3, 2]
    assert links(scenario) == {0: (None, 3), 3: (0, 2), 2: (3, None)}


def test_core_035_positions_not_seq_values_order_a_range() -> None:
    scenario = Scenario().given(U("a"), U("b"), Rep(0, 0, [0]))
    assert nodes(scenario) == [2, 1]
    scenario.when(Rep(2, 1, [2, 1]))  # numerically start > end: valid
    assert scenario.session.surface.nodes == [SurfaceNode(3, None, None)]


# 36–41, 43: docs/events.md#the-append-pipeline rejects the bad replace at append with the
# fold's text and records nothing; the seed accepted it and failed on the next read.


def test_core_036_an_unknown_start_is_rejected_at_append() -> None:
    Scenario().given(U("a")).when(Rep(5, 0, [5, 0])).then_raises(
        SurfaceError, "surface replace: start seq 5 not found in surface"
    )


def test_core_037_an_unknown_end_is_rejected_at_append() -> None:
    Scenario().given(U("a")).when(Rep(0, 99, [0])).then_raises(
        SurfaceError, "surface replace: end seq 99 not found in surface"
    )


def test_core_038_a_start_after_its_end_is_rejected_at_append() -> None:
    Scenario().given(U("a"), U("b")).when(Rep(1, 0, [1, 0])).then_raises(
        SurfaceError,
        "surface replace: start seq 1 (index 1) is after end seq 0 (index 0)",
    )


def test_core_039_a_shadowed_start_is_rejected_at_append() -> None:
    scenario = Scenario().given(U("a"), U("b"), U("c"), Rep(0, 1, [0, 1]))
    scenario.when(Rep(0, 0, [0])).then_raises(
        SurfaceError, "surface replace: start seq 0 not found in surface"
    )
    assert nodes(scenario) == [3, 2]


def test_core_040_a_log_only_start_is_rejected_at_append() -> None:
    Scenario().given(TS(1), U("a")).when(Rep(0, 1, [0, 1])).then_raises(
        SurfaceError, "surface replace: start seq 0 not found in surface"
    )


def test_core_041_a_rejected_replace_never_poisons_later_reads() -> None:
    scenario = Scenario().given(U("a")).when(Rep(5, 0, [5, 0]))
    assert isinstance(scenario.error, SurfaceError)
    after = scenario.session.append("user/message", U("b").data, "append")
    assert after["seq"] == 1
    assert nodes(scenario) == [0, 1]
    events = [*scenario.events, after]
    assert derive_messages(events) == [
        {"role": "user", "content": [text("a")]},
        {"role": "user", "content": [text("b")]},
    ]


def test_core_042_invalidate_then_read_gives_the_same_nodes() -> None:
    scenario = Scenario().given(TS(1), U("a"), A("b"), TE(1))
    scenario.session.surface.invalidate()
    assert nodes(scenario) == [1, 2]


def test_core_043_a_replace_without_provenance_is_rejected_at_append() -> None:
    compact = Append(
        "user/message",
        {"content": [text("summary")], "source": COMPACT},
        surface_op={"op": "replace", "start": 0, "end": 2},
    )
    scenario = Scenario().given(U("a"), U("b"), U("c")).when(compact)
    scenario.then_raises(
        SurfaceError,
        "surface replace: sourceEventSeqs must include every shadowed surface node; "
        "missing 0, 1, 2",
    )
    cited = compact.with_intent(compact.surface_op, [0, 1, 2])
    assert Scenario().given(U("a"), U("b"), U("c")).when(cited).new[0]["seq"] == 3


def test_core_044_an_assistant_replace_may_shadow_any_node_types() -> None:
    scenario = Scenario().given(U("go"), R("c1"), U("more")).when(Rep(0, 2, [0, 1, 2]))
    assert nodes(scenario) == [3]
    assert derive_messages(scenario.events) == [
        {"role": "assistant", "content": [text("summary")]}
    ]


def test_core_045_surface_eligibility_helpers() -> None:
    for event_type in (
        "user/message",
        "assistant/message",
        "tool/result",
        "context/message",
        "steering/message",
    ):
        assert is_surface_eligible_type(event_type)
    for event_type in ("turn/start", "assistant/chunk", "todo/write", "compact/start"):
        assert not is_surface_eligible_type(event_type)
    unmarked = {"type": "user/message", "seq": 0, "time": 0, "data": {}}
    assert not is_surface_event(unmarked)
    assert not is_surface_event({**unmarked, "type": "turn/start"})
    assert is_surface_event({**unmarked, "surfaceOp": "append"})


# ---------------------------------------------------------- D. deriveMessages

STEP_46 = (
    TS(1),
    U("hello"),
    chunk(),
    assistant(text("let me check"), call_block("c1")),
    R("c1"),
    TE(1),
)
EXPECTED_46 = [
    {"role": "user", "content": [text("hello")]},
    {"role": "assistant", "content": [text("let me check"), call_block("c1")]},
    {
        "role": "user",
        "content": [
            {
                "type": "tool-result",
                "toolCallId": "c1",
                "content": [text("ok")],
                "isError": False,
            }
        ],
    },
]


def test_core_046_roles_and_the_tool_result_block() -> None:
    assert derived(*STEP_46) == EXPECTED_46


def test_core_047_log_only_events_never_produce_messages() -> None:
    messages = derived(TS(1), chunk(), chunk(), U("q"), A("a"), TE(1))
    assert [m["role"] for m in messages] == ["user", "assistant"]


CONTEXT_48 = framed(
    "context/message",
    {"kind": "plugin", "plugin": "watcher"},
    text("file changed: a.ts"),
)
STEERING_49 = framed("steering/message", USER, text("focus"))


def test_core_048_context_messages_are_framed_by_source_kind() -> None:
    assert derived(CONTEXT_48) == [
        {
            "role": "user",
            "content": [
                text('<context source="plugin">'),
                text("file changed: a.ts"),
                text("</context>"),
            ],
        }
    ]


def test_core_049_steering_messages_are_framed_too() -> None:
    assert derived(STEERING_49) == [
        {
            "role": "user",
            "content": [
                text('<steering source="user">'),
                text("focus"),
                text("</steering>"),
            ],
        }
    ]


def test_core_050_empty_context_is_just_the_two_markers() -> None:
    assert derived(framed("context/message", USER)) == [
        {
            "role": "user",
            "content": [text('<context source="user">'), text("</context>")],
        }
    ]


def test_core_051_the_source_kind_is_rendered_as_json() -> None:
    quoted = derived(framed("context/message", {"kind": 'a"b\\'}))
    assert quoted[0]["content"][0] == text('<context source="a\\"b\\\\">')
    unicode = derived(framed("context/message", {"kind": "ü"}))
    assert unicode[0]["content"][0] == text('<context source="ü">')


def test_core_052_an_empty_assistant_message_is_a_node_without_a_message() -> None:
    seed = [
        a.envelope(seq)
        for seq, a in enumerate((TS(1), SS(1, 1), assistant(), SE(1, 1), TE(1)))
    ]
    session = Session.create("s", seed=seed, invariants=False)
    assert session.surface.seqs == [2]
    assert derive_messages(seed) == []


def test_core_053_usage_is_not_projected() -> None:
    usage = {"inputTokens": 3, "outputTokens": 4}
    messages = derived(assistant(text("hi"), usage=usage))
    assert messages == [{"role": "assistant", "content": [text("hi")]}]


def test_core_054_tool_result_error_and_meta_are_dropped() -> None:
    error = {"name": "Boom", "code": "E"}
    messages = derived(R("c1", isError=True, error=error, meta={"lines": 3}))
    assert messages[0]["content"] == [
        {
            "type": "tool-result",
            "toolCallId": "c1",
            "content": [text("ok")],
            "isError": True,
        }
    ]


def test_core_055_an_empty_user_message_still_counts() -> None:
    empty = Append("user/message", {"content": [], "source": USER}, "append")
    assert derived(empty) == [{"role": "user", "content": []}]


def test_core_056_a_replacement_takes_the_place_of_its_range() -> None:
    appends = (U("original"), Rep(0, 0, [0], value="compacted"))
    assert derived(*appends) == [{"role": "assistant", "content": [text("compacted")]}]


def test_core_057_a_compaction_checkpoint_is_a_plain_user_message() -> None:
    checkpoint = Append(
        "user/message",
        {"content": [text("checkpoint")], "source": COMPACT},
        surface_op={"op": "replace", "start": 0, "end": 1},
        source_event_seqs=[0, 1],
    )
    assert derived(U("a"), A("b"), checkpoint) == [
        {"role": "user", "content": [text("checkpoint")]}
    ]


def mutate(messages: list[dict[str, Any]]) -> None:
    messages[0]["content"][0]["text"] = "edited"
    messages[0]["content"].append(text("added"))
    messages[2]["content"][0]["content"].append(text("pushed"))
    messages.append({"role": "user", "content": []})


def test_core_058_mutating_derived_messages_changes_nothing() -> None:
    scenario = Scenario().given(*STEP_46)
    stored = [e.envelope for e in scenario.session.pending_events[1:]]  # type: ignore[attr-defined]
    before = copy_json(stored)
    mutate(derive_messages(stored))
    assert stored == before == scenario.events
    assert derive_messages(stored) == EXPECTED_46


def test_core_059_two_derivations_are_equal_but_distinct() -> None:
    events = Scenario().given(*STEP_46).events
    first, second = derive_messages(events), derive_messages(events)
    assert first == second
    assert first is not second
    for a, b in zip(first, second, strict=True):
        assert a is not b
        assert a["content"] is not b["content"]
