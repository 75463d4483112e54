"""Invalid appends for a given valid session state, with the error they must raise.

Each maker looks at a :class:`~tests.property.model.SessionModel` and returns one
append that breaks exactly one rule of the docs/events.md#the-append-pipeline pipeline — everything
checked before that rule passes — with the error class and, where the spec pins it,
the exact message. Makers that do not apply to the state return ``None``.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from decimal import Decimal
from typing import Any

from hypothesis import strategies as st

from agentlog.domain.errors import (
    InvariantError,
    NonJsonDataError,
    PayloadError,
    SessionError,
    SurfaceError,
    SurfaceIntentError,
)
from tests.property.model import Draw, SessionModel
from tests.scenarios.harness import Append

Case = tuple[Append, type[SessionError], str | None]
Maker = Callable[[SessionModel, Draw], Case | None]

USER = {"kind": "user"}
TRIGGER = {"kind": "message", "source": USER}
MESSAGE = {"content": [{"type": "text", "text": "x"}], "source": USER}
TOOL_CALL = {"type": "tool-call", "id": "x"}  # no name, no arguments


def _not_json() -> list[Any]:
    return [
        float("nan"),
        float("inf"),
        float("-inf"),
        {1, 2},
        (1, 2),
        b"x",
        {1: "a"},
        OrderedDict(a=1),
        Decimal(1),
        object(),
    ]


def bad_json(model: SessionModel, draw: Draw) -> Case:
    bad = draw(st.sampled_from(_not_json()))
    event_type = draw(st.sampled_from(["user/message", "turn/start", "x-plugin/note"]))
    data = {**MESSAGE, "deep": [{"value": bad}]}
    op = "append" if event_type == "user/message" else None
    text = f'session event "{event_type}" carries non-JSON-serializable data'
    return Append(event_type, data, op), NonJsonDataError, text


def bad_marker(model: SessionModel, draw: Draw) -> Case:
    prefix = 'session event "user/message"'
    cases = [
        (
            Append("user/message", MESSAGE),
            f"{prefix} is surface-eligible and requires a surfaceOp marker",
        ),
        (
            Append("todo/write", {"todos": []}, "append"),
            'session event "todo/write" is not surface-eligible and cannot carry '
            "surfaceOp",
        ),
        (
            Append("turn/start", {"turn": 1, "trigger": TRIGGER}, None, [0]),
            'session event "turn/start" is not surface-eligible and cannot carry '
            "sourceEventSeqs",
        ),
    ]
    for op in ("bogus", "", 0, True, ["append"]):
        cases.append(
            (
                Append("user/message", MESSAGE, op),
                f"{prefix} carries an invalid surfaceOp",
            )
        )
    replace = {"op": "replace", "start": 0, "end": 0}
    for op in (
        {"op": "replace", "start": 0},
        {**replace, "extra": 1},
        {**replace, "op": "insert"},
        {**replace, "start": True},
        {**replace, "end": -1},
        {**replace, "start": 0.0},
        {**replace, "end": 2**53},
    ):
        cases.append(
            (
                Append("user/message", MESSAGE, op),
                f"{prefix} carries an invalid replace surfaceOp",
            )
        )
    seq = model.seq
    for sources in ("0", {"0": 0}, 0):
        cases.append(
            (
                Append("user/message", MESSAGE, "append", sources),
                f"sourceEventSeqs on event at seq {seq} must be an array when present",
            )
        )
    for sources in (["0"], [True], [1.0], [None]):
        cases.append(
            (
                Append("user/message", MESSAGE, "append", sources),
                f"{prefix} sourceEventSeqs must densely contain non-negative safe "
                "integers",
            )
        )
    append, text = draw(st.sampled_from(cases))
    return append, SurfaceIntentError, text


def bad_payload(model: SessionModel, draw: Draw) -> Case:
    result = {"turn": 1, "step": 1, "callId": "c", "content": [], "isError": False}
    cases = [
        Append("turn/start", {"turn": "1", "trigger": TRIGGER}),
        Append("turn/start", {"turn": 1.0, "trigger": TRIGGER}),
        Append("turn/start", {"turn": 1, "trigger": None}),
        Append("turn/start", {"turn": 1, "trigger": {"kind": 5}}),
        Append("turn/end", {"turn": 1, "reason": {"kind": "error"}}),
        Append("step/start", {"turn": True, "step": 1}),
        Append("user/message", {**MESSAGE, "content": "hi"}, "append"),
        Append("user/message", {**MESSAGE, "content": [{"type": "text"}]}, "append"),
        Append("user/message", {**MESSAGE, "source": {"kind": "plugin"}}, "append"),
        Append("user/message", None, "append"),
        Append("context/message", {"content": [], "source": 5}, "append"),
        Append(
            "assistant/message",
            {"turn": 1, "step": 1, "content": [TOOL_CALL]},
            "append",
        ),
        Append(
            "assistant/message",
            {"turn": 1, "step": 1, "content": [], "usage": {"inputTokens": 1}},
            "append",
        ),
        Append("tool/result", {**result, "isError": "no"}, "append"),
        Append("tool/result", {**result, "callId": 5}, "append"),
        Append("tool/result", {**result, "error": {"name": "E"}}, "append"),
        Append("todo/write", {"todos": [{"content": "a", "status": "done"}]}),
        Append(
            "assistant/chunk",
            {"turn": 1, "step": 1, "chunk": {"type": "text-delta", "index": "0"}},
        ),
    ]
    return draw(st.sampled_from(cases)), PayloadError, None


def _off_surface(model: SessionModel, draw: Draw) -> int:
    """A seq that is not a current node: log-only, shadowed or not yet recorded."""
    current = set(model.surface_seqs)
    past = [s for s in range(model.seq) if s not in current]
    return draw(st.sampled_from([*past, model.seq, model.seq + 3]))


def _replace(start: int, end: int, sources: list[int] | None) -> Append:
    op = {"op": "replace", "start": start, "end": end}
    return Append("user/message", MESSAGE, op, sources)


def bad_range(model: SessionModel, draw: Draw) -> Case | None:
    seqs = model.surface_seqs
    missing = _off_surface(model, draw)
    cases: list[Case] = [
        (
            _replace(missing, seqs[0] if seqs else missing, seqs[:1] or None),
            SurfaceError,
            f"surface replace: start seq {missing} not found in surface",
        )
    ]
    if seqs:
        start = draw(st.sampled_from(seqs))
        cases.append(
            (
                _replace(start, missing, [start]),
                SurfaceError,
                f"surface replace: end seq {missing} not found in surface",
            )
        )
    if len(seqs) >= 2:
        j, i = sorted(
            draw(
                st.lists(
                    st.integers(0, len(seqs) - 1), min_size=2, max_size=2, unique=True
                )
            )
        )
        text = (
            f"surface replace: start seq {seqs[i]} (index {i}) is after end seq "
            f"{seqs[j]} (index {j})"
        )
        cases.append((_replace(seqs[i], seqs[j], seqs[j : i + 1]), SurfaceError, text))
    return draw(st.sampled_from(cases))


def bad_provenance(model: SessionModel, draw: Draw) -> Case | None:
    seq = model.seq
    future = seq + draw(st.integers(0, 3))
    cases: list[tuple[list[int] | None, str]] = [
        ([], "sourceEventSeqs must not be empty except on assistant/message"),
        (
            [future],
            f"sourceEventSeqs must reference earlier events: {future} >= current seq "
            f"{seq}",
        ),
        (
            [draw(st.sampled_from([-1, 2**53]))],
            'session event "user/message" sourceEventSeqs must densely contain '
            "non-negative safe integers",
        ),
    ]
    if seq:
        earlier = draw(st.integers(0, seq - 1))
        cases.append(
            ([earlier, earlier], "sourceEventSeqs must not contain duplicates")
        )
    sources, text = draw(st.sampled_from(cases))
    append = Append("user/message", MESSAGE, "append", sources)
    if model.surface and draw(st.booleans()):
        # The same rules hold on a replace, after its range checks pass.
        node = draw(st.sampled_from(model.surface_seqs))
        append = _replace(node, node, sources)
    return append, SurfaceError, text


def bad_coverage(model: SessionModel, draw: Draw) -> Case | None:
    seqs = model.surface_seqs
    if not seqs:
        return None
    i = draw(st.integers(0, len(seqs) - 1))
    j = draw(st.integers(i, len(seqs) - 1))
    removed = seqs[i : j + 1]
    dropped = draw(st.sets(st.sampled_from(removed), min_size=1))
    cited = [s for s in removed if s not in dropped]
    gaps = ", ".join(str(s) for s in removed if s in dropped)
    text = (
        "surface replace: sourceEventSeqs must include every shadowed surface node; "
        f"missing {gaps}"
    )
    return _replace(seqs[i], seqs[j], cited or None), SurfaceError, text


def bad_rewrite(model: SessionModel, draw: Draw) -> Case | None:
    """Strict-fold step 6: a tool/result replace only rewrites one result's content."""
    seqs = model.surface_seqs
    results = [s for s in seqs if model.types[s] == "tool/result"]
    others = [s for s in seqs if model.types[s] != "tool/result"]
    data = {"turn": 1, "step": 1, "callId": "c", "content": [], "isError": False}
    cases: list[Case] = []
    if others:
        node = draw(st.sampled_from(others))
        cases.append(
            (
                Append(
                    "tool/result",
                    data,
                    {"op": "replace", "start": node, "end": node},
                    [node],
                ),
                SurfaceError,
                "tool/result surface replacement must target a current tool/result",
            )
        )
    if len(seqs) >= 2:
        i = draw(st.integers(0, len(seqs) - 2))
        op = {"op": "replace", "start": seqs[i], "end": seqs[i + 1]}
        cases.append(
            (
                Append("tool/result", data, op, seqs[i : i + 2]),
                SurfaceError,
                "tool/result surface replacement must rewrite exactly one current node",
            )
        )
    if results:
        node = draw(st.sampled_from(results))
        old = model.appends[node].data
        changed = {**old, "isError": not old["isError"], "content": []}
        cases.append(
            (
                Append(
                    "tool/result",
                    changed,
                    {"op": "replace", "start": node, "end": node},
                    [node],
                ),
                SurfaceError,
                "tool/result surface replacement may change only content",
            )
        )
    return draw(st.sampled_from(cases)) if cases else None


def _violation(append: Append, detail: str) -> Case:
    return append, InvariantError, "invariant violated: " + detail


def bad_invariant(model: SessionModel, draw: Draw) -> Case:
    """An append that passes (a)–(c) and breaks one invariant step-5 rule."""
    turn, step, nxt = model.open_turn, model.open_step, model.next_turn
    shown = "null" if step is None else str(step)
    cases: list[Case] = []
    if turn is None:
        outside = "appended outside any open turn (every event must be turn-enclosed)"
        wrong = draw(st.sampled_from([0, nxt + 1, nxt + 5]))
        cases += [
            _violation(
                Append("user/message", MESSAGE, "append"), f"user/message {outside}"
            ),
            _violation(Append("todo/write", {"todos": []}), f"todo/write {outside}"),
            _violation(
                Append("turn/end", {"turn": nxt, "reason": {"kind": "completed"}}),
                f"turn/end {nxt} does not match open turn null",
            ),
            _violation(
                Append("step/start", {"turn": nxt, "step": 1}),
                f"step/start in turn {nxt} but open turn is null",
            ),
            _violation(
                Append("turn/start", {"turn": wrong, "trigger": TRIGGER}),
                f"turn/start expected turn {nxt}, got {wrong}",
            ),
        ]
        return draw(st.sampled_from(cases))
    other = turn + draw(st.integers(1, 3))
    cases += [
        _violation(
            Append("turn/start", {"turn": nxt, "trigger": TRIGGER}),
            f"turn/start {nxt} while turn {turn} is still open",
        ),
        _violation(
            Append("turn/end", {"turn": other, "reason": {"kind": "completed"}}),
            f"turn/end {other} does not match open turn {turn}",
        ),
    ]
    wrong_step = (step or model.next_step) + draw(st.integers(1, 3))
    chunk = {"turn": turn, "step": wrong_step, "chunk": {"type": "x"}}
    cases.append(
        _violation(
            Append("assistant/chunk", chunk),
            f"assistant/chunk names turn {turn}/step {wrong_step} but open is turn "
            f"{turn}/step {shown}",
        )
    )
    if step is None:
        cases.append(
            _violation(
                Append("step/start", {"turn": turn, "step": wrong_step}),
                f"step/start expected step {model.next_step} in turn {turn}, got "
                f"{wrong_step}",
            )
        )
        return draw(st.sampled_from(cases))
    ghost = draw(st.sampled_from(["ghost", *model.declared]))
    result = {
        "turn": turn,
        "step": step,
        "callId": ghost,
        "content": [],
        "isError": False,
    }
    cases += [
        _violation(
            Append("turn/end", {"turn": turn, "reason": {"kind": "completed"}}),
            f"turn/end {turn} while step {step} is still open",
        ),
        _violation(
            Append("step/start", {"turn": turn, "step": step + 1}),
            f"step/start {step + 1} while step {step} is still open",
        ),
        _violation(
            Append("tool/result", result, "append"),
            f"tool/result for {ghost} with no prior tool/call in this step",
        ),
    ]
    return draw(st.sampled_from(cases))


# Hypothesis leans towards the first element; the simplest makers come last.
MAKERS: list[Maker] = [
    bad_invariant,
    bad_rewrite,
    bad_coverage,
    bad_range,
    bad_provenance,
    bad_payload,
    bad_marker,
    bad_json,
]


def invalid_append(model: SessionModel, draw: Draw) -> Case:
    """One invalid append for the model's current state."""
    while True:
        case = draw(st.sampled_from(MAKERS))(model, draw)
        if case is not None:
            return case
