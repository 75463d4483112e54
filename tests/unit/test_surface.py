"""The surface at the fold level: core scenarios 27–45 and K (147–150).

Per docs/events.md#the-append-pipeline the surface rules are checked eagerly: scenarios 21, 22, 23, 26, 36–41 and
43 are rejections by ``Surface.check`` with the fold's texts instead of the seed's
accept-then-poison. Those tests say "(ours)" and test our rule, not the seed's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentlog.domain.errors import SurfaceError, SurfaceIntentError
from agentlog.domain.messages import derive_messages
from agentlog.domain.surface import (
    Replacement,
    Surface,
    SurfaceNode,
    check_intent,
    classify,
    data_digest,
    fold_step,
    fold_surface,
)
from agentlog.domain.vocabulary import is_surface_eligible_type, is_surface_event
from agentlog.testing import Scenario
from tests.builders import (
    SE,
    SS,
    TE,
    TS,
    A,
    Append,
    R,
    Rep,
    U,
    event,
    log,
    replace,
    text,
)

if TYPE_CHECKING:
    from agentlog.domain.json import Envelope

# ------------------------------------------------------------------ helpers


def folded(events: list[Envelope]) -> Surface:
    """The live surface after the strict fold of ``events``."""
    surface = Surface()
    for index, envelope in enumerate(events):
        fold_step(surface, envelope, index)
    return surface


def rejects(surface: Surface, envelope: Envelope, message: str) -> None:
    """``check`` raises ``message`` and leaves the surface exactly as it was."""
    before = surface.to_state()
    with pytest.raises(SurfaceError) as caught:
        surface.check(envelope)
    assert str(caught.value) == message
    assert surface.to_state() == before


def rejects_after(history: tuple[Append, ...], item: Append, message: str) -> None:
    """The surface alone and the aggregate (an ``agentlog.testing`` scenario) both
    refuse ``item`` after ``history`` with ``message``, and change nothing."""
    rejects(folded(log(*history)), event(len(history), item), message)
    scenario = Scenario(invariants=False).given(*history).when(item)
    scenario.then_raises(SurfaceError, message)


def links(surface: Surface) -> list[tuple[int, int | None, int | None]]:
    return [(node.seq, node.prev, node.next) for node in surface.nodes]


# ------------------------------------------------------------------ B (our rewrites)


def test_core_017_018_019_surface_type_requires_marker() -> None:
    for surface_type in (
        "user/message",
        "assistant/message",
        "tool/result",
        "context/message",
        "steering/message",
    ):
        with pytest.raises(SurfaceIntentError) as caught:
            check_intent(surface_type, None, [0], 0)
        assert str(caught.value) == (
            f'session event "{surface_type}" is surface-eligible and requires a '
            "surfaceOp marker"
        )


def test_core_024_log_only_type_cannot_carry_markers() -> None:
    with pytest.raises(SurfaceIntentError, match=r"cannot carry surfaceOp$"):
        check_intent("turn/end", "append", None, 0)
    with pytest.raises(SurfaceIntentError) as caught:
        check_intent("turn/end", None, [0], 1)
    assert str(caught.value) == (
        'session event "turn/end" is not surface-eligible and cannot carry '
        "sourceEventSeqs"
    )


@pytest.mark.parametrize(
    ("surface_op", "sources", "message"),
    [
        ("bogus", None, 'session event "user/message" carries an invalid surfaceOp'),
        (["append"], None, 'session event "user/message" carries an invalid surfaceOp'),
        (
            {"op": "replace", "start": 0},
            None,
            'session event "user/message" carries an invalid replace surfaceOp',
        ),
        (
            {"op": "replace", "start": 0, "end": True},
            None,
            'session event "user/message" carries an invalid replace surfaceOp',
        ),
        (
            {"op": "replace", "start": -1, "end": 0},
            None,
            'session event "user/message" carries an invalid replace surfaceOp',
        ),
        (
            {"op": "replace", "start": 0, "end": 0, "x": 1},
            None,
            'session event "user/message" carries an invalid replace surfaceOp',
        ),
        (
            "append",
            "invalid",
            "sourceEventSeqs on event at seq 3 must be an array when present",
        ),
        (
            "append",
            [0, True],
            'session event "user/message" sourceEventSeqs must densely contain '
            "non-negative safe integers",
        ),
    ],
)
def test_core_025_intent_shape(surface_op: Any, sources: Any, message: str) -> None:
    with pytest.raises(SurfaceIntentError) as caught:
        check_intent("user/message", surface_op, sources, 3)
    assert str(caught.value) == message


def test_core_021_future_provenance_is_rejected() -> None:
    # Ours: the seed recorded [3,5,7] at seq 0 verbatim; our rule rejects it.
    rejects_after(
        (),
        A("a", src=[3, 5, 7]),
        "sourceEventSeqs must reference earlier events: 3 >= current seq 0",
    )


def test_core_022_future_provenance_is_rejected() -> None:
    # Ours: [10, 20] on the first event cites the future; nothing is recorded.
    rejects_after(
        (),
        U("u", src=[10, 20]),
        "sourceEventSeqs must reference earlier events: 10 >= current seq 0",
    )
    surface = folded(log(*[U(str(n)) for n in range(21)]))
    surface.check(event(21, U("u", src=[10, 20])))


def test_core_023_replace_on_empty_surface_is_rejected() -> None:
    # Ours: the seed recorded {op:replace,start:0,end:0} on an empty log.
    rejects_after(
        (),
        U("u", op=replace(0, 0), src=[0]),
        "surface replace: start seq 0 not found in surface",
    )


def test_core_026_provenance_values() -> None:
    # Ours: [] stays valid on assistant/message only; duplicates and self refs fail.
    surface = folded(log(U("a")))
    surface.check(event(1, A("a", src=[])))
    rejects(
        surface,
        event(1, U("u", src=[])),
        "sourceEventSeqs must not be empty except on assistant/message",
    )
    rejects(
        surface,
        event(1, A("a", src=[0, 0])),
        "sourceEventSeqs must not contain duplicates",
    )
    rejects(
        surface,
        event(1, A("a", src=[0, 1])),
        "sourceEventSeqs must reference earlier events: 1 >= current seq 1",
    )
    rejects(
        surface,
        event(1, A("a", src=[-1])),
        'session event "assistant/message" sourceEventSeqs must densely contain '
        "non-negative safe integers",
    )


# ------------------------------------------------------------------ C. linked list


def test_core_027_nodes_and_links() -> None:
    surface = folded(log(TS(), U("u"), A("a"), TE()))
    assert surface.seqs == [1, 2]
    assert surface.nodes == [SurfaceNode(1, None, 2), SurfaceNode(2, 1, None)]


def test_core_028_no_surface_events() -> None:
    events = log(TS(), SS(), SE(), TE())
    assert folded(events).nodes == []
    assert derive_messages(events) == []


def test_core_029_append_after_read() -> None:
    events = log(TS(), U("u"), A("a"), TE())
    surface = folded(events)
    assert surface.seqs == [1, 2]
    result = event(4, R())
    surface.check(result)
    surface.apply(result)
    assert links(surface) == [(1, None, 2), (2, 1, 4), (4, 2, None)]


def test_core_030_replay_is_equal() -> None:
    events = log(TS(), U("u"), A("a"), TE(), R())
    assert folded(events).nodes == folded([dict(e) for e in events]).nodes
    assert folded(events).seqs == [1, 2, 4]
    assert derive_messages(events) == derive_messages(list(events))


def test_core_031_replace_everything() -> None:
    surface = folded(log(TS(), U("u"), A("a"), TE(), Rep(1, 2, [1, 2])))
    assert surface.nodes == [SurfaceNode(4, None, None)]
    assert surface.generation == 1


def test_core_032_replace_head_range() -> None:
    surface = folded(log(U("a"), U("b"), U("c"), Rep(0, 1, [0, 1])))
    assert links(surface) == [(3, None, 2), (2, 3, None)]


def test_core_033_replace_tail() -> None:
    surface = folded(log(U("a"), U("b"), Rep(1, 1, [1])))
    assert links(surface) == [(0, None, 2), (2, 0, None)]


def test_core_034_replace_middle() -> None:
    surface = folded(log(U("a"), U("b"), U("c"), Rep(1, 1, [1])))
    assert links(surface) == [(0, None, 3), (3, 0, 2), (2, 3, None)]


def test_core_035_positions_not_seq_values_order_a_range() -> None:
    events = log(U("a"), U("b"), Rep(0, 0, [0]))
    assert folded(events).seqs == [2, 1]
    surface = folded([*events, event(3, Rep(2, 1, [2, 1]))])
    assert surface.nodes == [SurfaceNode(3, None, None)]


def test_core_036_start_not_on_surface_is_rejected() -> None:
    # Ours: rejected by check (seed: accepted, then every read raised).
    rejects_after(
        (U("a"),),
        Rep(5, 0, [5, 0]),
        "surface replace: start seq 5 not found in surface",
    )


def test_core_037_end_not_on_surface_is_rejected() -> None:
    rejects_after(
        (U("a"),),
        Rep(0, 99, [0]),
        "surface replace: end seq 99 not found in surface",
    )


def test_core_038_start_after_end_is_rejected() -> None:
    rejects_after(
        (U("a"), U("b")),
        Rep(1, 0, [1, 0]),
        "surface replace: start seq 1 (index 1) is after end seq 0 (index 0)",
    )


def test_core_039_shadowed_seq_is_not_found() -> None:
    rejects_after(
        (U("a"), U("b"), U("c"), Rep(0, 1, [0, 1])),
        Rep(0, 0, [0]),
        "surface replace: start seq 0 not found in surface",
    )


def test_core_040_log_only_seq_is_not_found() -> None:
    rejects_after(
        (TS(), U("u")),
        Rep(0, 1, [0, 1]),
        "surface replace: start seq 0 not found in surface",
    )


def test_core_041_a_rejection_does_not_poison_the_surface() -> None:
    # Ours: nothing bad is recorded, so later events fold normally.
    surface = folded(log(U("a")))
    rejects(
        surface,
        event(1, Rep(5, 0, [5, 0])),
        "surface replace: start seq 5 not found in surface",
    )
    fold_step(surface, event(1, U("b")), 1)
    assert surface.seqs == [0, 1]


def test_core_042_refold_and_snapshot_give_the_same_surface() -> None:
    events = log(TS(), U("u"), A("a"), TE())
    surface = folded(events)
    assert (
        folded(events).nodes
        == surface.nodes
        == Surface.from_state(surface.to_state()).nodes
    )


def test_core_043_replace_without_provenance_is_rejected() -> None:
    # Ours: the seed accepted it (nodes [3]); coverage is checked at append.
    compact = {"kind": "plugin", "plugin": "compact"}
    item = U("summary", source=compact, op=replace(0, 2))
    rejects_after(
        (U("a"), U("b"), U("c")),
        item,
        "surface replace: sourceEventSeqs must include every shadowed surface node; "
        "missing 0, 1, 2",
    )


def test_core_044_replace_may_shadow_any_node_types() -> None:
    events = log(U("a"), A("a"), R(), Rep(0, 2, [0, 1, 2]))
    assert folded(events).seqs == [3]


def test_core_045_eligibility_helpers() -> None:
    for surface_type in (
        "user/message",
        "assistant/message",
        "tool/result",
        "context/message",
        "steering/message",
    ):
        assert is_surface_eligible_type(surface_type)
    for other in ("turn/start", "assistant/chunk", "todo/write", "compact/start"):
        assert not is_surface_eligible_type(other)
    assert not is_surface_event(event(0, U("u", op=None)))
    assert not is_surface_event(event(0, TS()))
    assert is_surface_event(event(0, U("u")))


# ------------------------------------------------------------------ K. classification


def test_core_147_classification() -> None:
    compact = U("c", op=replace(1, 1), src=[1])
    events = log(TS(), U("a"), U("b"), compact)
    assert classify(events) == ["log-only", "shadowed", "current", "current"]
    fold = fold_surface(events)
    assert fold.nodes == [3, 2]
    assert fold.replacements == [Replacement(3, 1, 1, (1,))]
    assert fold.replacements[0].to_json() == {
        "seq": 3,
        "start": 1,
        "end": 1,
        "shadowedSeqs": [1],
    }


def test_core_147_nested_replacement_is_shadowed() -> None:
    events = log(U("a"), U("b"), Rep(0, 1, [0, 1]), U("c"), Rep(2, 3, [2, 3]))
    assert classify(events) == ["shadowed"] * 4 + ["current"]


def test_core_148_strict_fold_needs_coverage() -> None:
    item = U(op=replace(0, 2))
    with pytest.raises(SurfaceError) as caught:
        fold_surface(log(U("a"), U("b"), U("c"), item))
    assert str(caught.value) == (
        "surface replace: sourceEventSeqs must include every shadowed surface node; "
        "missing 0, 1, 2"
    )


def rewrite(start: int, end: int, src: list[int], **changes: Any) -> Append:
    event_type, data, _, _ = R(content=[text("shorter")])
    return Append(event_type, {**data, **changes}, replace(start, end), src)


def test_core_149_tool_result_rewrite_rules() -> None:
    base = log(U("go"), R("c1", meta={"x": [1, {"y": 2}]}), R("c2"))
    ok = fold_surface(
        [*base, event(3, rewrite(1, 1, [1], meta={"x": [1.0, {"y": 2}]}))]
    )
    assert ok.nodes == [0, 3, 2]
    cases = [
        (rewrite(1, 1, [1], isError=True), "may change only content"),
        (rewrite(1, 1, [1]), "may change only content"),  # meta dropped
        (
            rewrite(1, 2, [1, 2], meta={"x": [1, {"y": 2}]}),
            "must rewrite exactly one current node",
        ),
        (rewrite(0, 0, [0]), "must target a current tool/result"),
    ]
    given = Scenario(invariants=False).given(
        U("go"), R("c1", meta={"x": [1, {"y": 2}]}), R("c2")
    )
    for item, tail in cases:
        with pytest.raises(SurfaceError) as caught:
            fold_surface([*base, event(3, item)])
        assert str(caught.value) == f"tool/result surface replacement {tail}"
        given.when(item).then_raises(
            SurfaceError, f"tool/result surface replacement {tail}"
        )


def test_core_149_rewrite_rule_survives_a_snapshot() -> None:
    surface = Surface.from_state(folded(log(U("go"), R("c1"))).to_state())
    surface.check(event(2, rewrite(1, 1, [1])))
    rejects(
        surface,
        event(2, rewrite(1, 1, [1], callId="other")),
        "tool/result surface replacement may change only content",
    )


def test_core_150_contiguity_comes_first() -> None:
    with pytest.raises(SurfaceError) as caught:
        fold_surface([event(0, TS()), event(2, TE())])
    assert str(caught.value) == "session event seq 2 is not contiguous; expected 1"
    missing = {"type": "turn/end", "time": 0, "data": {}}
    with pytest.raises(SurfaceError, match=r"^session event seq undefined is not"):
        fold_surface([missing])


def test_core_150_strict_fold_reports_marker_errors_as_surface_errors() -> None:
    with pytest.raises(SurfaceError) as caught:
        fold_surface(log(U("u", op=None)))
    assert str(caught.value) == (
        'session event "user/message" is surface-eligible and requires a surfaceOp '
        "marker"
    )
    with pytest.raises(SurfaceError, match=r"cannot carry surfaceOp$"):
        fold_surface([event(0, Append("turn/start", {}, "append"))])


# ------------------------------------------------------------------ digests, snapshots


def test_digest_compares_json_values() -> None:
    assert data_digest({"a": 1, "b": [1.0, None]}) == data_digest(
        {"b": [1, None], "a": 1}
    )
    assert data_digest(True) != data_digest(1)
    assert data_digest("1") != data_digest(1)
    assert data_digest([["a"], "b"]) != data_digest([["a", "b"]])
    assert data_digest(2**80) == data_digest(2**80)
    deep: Any = "leaf"
    for _ in range(20_000):
        deep = [deep]
    assert data_digest(deep) != data_digest([deep])


def test_check_then_apply_equals_the_strict_fold() -> None:
    events = log(U("a"), A("a"), R(), Rep(0, 1, [0, 1]), U("b"), rewrite(2, 2, [2]))
    live = Surface()
    for envelope in events:
        live.check(envelope)
        live.apply(envelope)
    assert live.to_state() == folded(events).to_state()
    assert live.seqs == fold_surface(events).nodes == [3, 5, 4]


def test_apply_of_an_unappliable_replace_raises() -> None:
    with pytest.raises(SurfaceError, match="start seq 4 not found"):
        Surface().apply(event(0, Rep(4, 4, [])))


def test_snapshot_is_compact() -> None:
    surface = folded(log(*[U(str(n)) for n in range(1000)], R()))
    state = surface.to_state()
    assert state["seqs"] == [0] + [1] * 1000
    assert state["types"] == "u" * 1000 + "r"
    assert len(state["digests"]) == 12
    with pytest.raises(SurfaceError, match="malformed"):
        Surface.from_state({**state, "types": "u"})


@st.composite
def surface_logs(draw: st.DrawFn) -> list[Envelope]:
    """Random valid logs: appends, log-only events and fully cited replaces."""
    events: list[Envelope] = []
    current: list[int] = []
    results: dict[int, Any] = {}
    for _ in range(draw(st.integers(0, 40))):
        seq = len(events)
        choice = draw(
            st.sampled_from(["append", "result", "log", "replace", "rewrite"])
        )
        if choice == "log" or (choice in ("replace", "rewrite") and not current):
            events.append(event(seq, TS()))
            continue
        if choice == "append":
            events.append(event(seq, U(str(seq))))
            current.append(seq)
        elif choice == "result":
            item = R(f"c{seq}")
            events.append(event(seq, item))
            current.append(seq)
            results[seq] = item[1]
        elif choice == "rewrite" and results:
            target = draw(st.sampled_from(sorted(results)))
            data = {**results.pop(target), "content": [text(str(seq))]}
            events.append(
                event(
                    seq, Append("tool/result", data, replace(target, target), [target])
                )
            )
            current[current.index(target)] = seq
            results[seq] = data
        else:
            i = draw(st.integers(0, len(current) - 1))
            j = draw(st.integers(i, len(current) - 1))
            gone = current[i : j + 1]
            extra = draw(st.lists(st.integers(0, seq - 1), max_size=2))
            src = list(dict.fromkeys([*gone, *extra]))
            events.append(event(seq, Rep(current[i], current[j], src)))
            current[i : j + 1] = [seq]
            for shadowed in gone:
                results.pop(shadowed, None)
    return events


@settings(max_examples=150, deadline=None)
@given(surface_logs())
def test_snapshot_round_trip_keeps_decisions(events: list[Envelope]) -> None:
    surface = folded(events)
    restored = Surface.from_state(surface.to_state())
    assert restored.to_state() == surface.to_state()
    assert restored.nodes == surface.nodes
    assert restored.generation == surface.generation
    classes = classify(events)
    assert [seq for seq, kind in enumerate(classes) if kind == "current"] == sorted(
        surface.seqs
    )
    # A rewrite of each current tool/result is judged the same before and after.
    seq = len(events)
    for target in surface.seqs:
        if events[target]["type"] == "tool/result":
            item = rewrite(
                target, target, [target], callId=events[target]["data"]["callId"]
            )
            surface.check(event(seq, item))
            restored.check(event(seq, item))


@settings(max_examples=150, deadline=None)
@given(surface_logs())
def test_snapshot_state_is_the_per_node_encoding(events: list[Envelope]) -> None:
    """``to_state`` (its loops in C) encodes node by node in surface order, which a
    replace makes differ from seq order: deltas, one type each, the digests."""
    surface = folded(events)
    seqs = surface.seqs
    types = surface._types
    digests = surface._digests
    assert surface.to_state() == {
        "generation": surface.generation,
        "seqs": [b - a for a, b in zip([0, *seqs], seqs, strict=False)],
        "types": "".join(types[seq] for seq in seqs),
        "digests": "".join(digests[seq] for seq in seqs if seq in digests),
    }
    assert Surface().to_state() == {
        "generation": 0,
        "seqs": [],
        "types": "",
        "digests": "",
    }
