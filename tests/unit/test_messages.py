"""Derived messages: core scenarios 46–61 (docs/surface.md#derived-messages)."""

from __future__ import annotations

import copy
import math
from typing import TYPE_CHECKING, Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agentlog.domain.messages import derive_message, derive_messages
from tests.builders import SE, SS, TE, TS, A, Append, R, Rep, U, chunk, replace, text
from tests.builders import call_block as call
from tests.builders import log as _log

if TYPE_CHECKING:
    from agentlog.domain.json import Envelope


def framed(event_type: str, kind: str, *blocks: dict[str, Any]) -> Append:
    source = {"kind": kind, "plugin": "watcher"} if kind == "plugin" else {"kind": kind}
    data = {"turn": 1, "content": list(blocks), "source": source}
    return Append(event_type, data, "append")


def log(*items: Append) -> list[Envelope]:
    return _log(*items, time=0)


def derive(*items: Append) -> list[dict[str, Any]]:
    """Derive the messages of the log the items describe."""
    return derive_messages(log(*items))


def test_core_046_roles_and_tool_result_block() -> None:
    messages = derive(
        TS(), U("hello"), chunk(), A(text("let me check"), call("c1")), R("c1"), TE()
    )
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert len(messages[1]["content"]) == 2
    assert messages[2]["content"] == [
        {
            "type": "tool-result",
            "toolCallId": "c1",
            "content": [text("ok")],
            "isError": False,
        }
    ]


def test_core_047_log_only_events_never_produce_messages() -> None:
    assert len(derive(TS(), chunk(), chunk(), U("u"), A(text("a")), TE())) == 2


def test_core_048_context_envelope() -> None:
    item = framed("context/message", "plugin", text("file changed: a.ts"))
    assert derive(item) == [
        {
            "role": "user",
            "content": [
                text('<context source="plugin">'),
                text("file changed: a.ts"),
                text("</context>"),
            ],
        }
    ]


def test_core_049_steering_envelope() -> None:
    (message,) = derive(framed("steering/message", "user", text("focus")))
    assert message["content"] == [
        text('<steering source="user">'),
        text("focus"),
        text("</steering>"),
    ]


def test_core_050_empty_context_is_just_the_markers() -> None:
    (message,) = derive(framed("context/message", "user"))
    assert message["content"] == [text('<context source="user">'), text("</context>")]


def test_core_051_source_kind_is_json_escaped() -> None:
    (quoted,) = derive(framed("context/message", 'a"b\\'))
    assert quoted["content"][0] == text('<context source="a\\"b\\\\">')
    (accented,) = derive(framed("context/message", "ü"))
    assert accented["content"][0] == text('<context source="ü">')
    (control,) = derive(framed("context/message", "\x1f"))
    assert control["content"][0] == text('<context source="\\u001f">')


def test_core_052_empty_assistant_message_has_no_message() -> None:
    assert derive(TS(), SS(), A(), SE(), TE()) == []


def test_core_053_usage_is_not_projected() -> None:
    (message,) = derive(A(text("hi"), usage={"inputTokens": 1, "outputTokens": 2}))
    assert list(message) == ["role", "content"]


def test_core_054_tool_result_error_and_meta_are_dropped() -> None:
    item = R("c1", error={"name": "E", "code": "x"}, meta={"k": 1}, isError=True)
    (message,) = derive(item)
    assert list(message["content"][0]) == ["type", "toolCallId", "content", "isError"]
    assert message["content"][0]["isError"] is True


def test_core_055_empty_user_message_still_counts() -> None:
    assert derive(U()) == [{"role": "user", "content": []}]


def test_core_056_replacement_takes_the_place() -> None:
    assert derive(U("original"), Rep(0, 0, [0], "compacted")) == [
        {"role": "assistant", "content": [text("compacted")]}
    ]


def test_core_057_checkpoint_is_a_plain_user_message() -> None:
    compact = {"kind": "plugin", "plugin": "compact"}
    checkpoint = U("summary", source=compact, op=replace(0, 1), src=[0, 1])
    assert derive(U("a"), U("b"), checkpoint) == [
        {"role": "user", "content": [text("summary")]}
    ]


def test_core_058_returned_messages_are_detached() -> None:
    events = log(U("hi"), A(text("a")), R("c1"))
    pristine = copy.deepcopy(events)
    for messages in (derive_messages(events), derive_messages(events)):
        messages[0]["content"][0]["text"] = "edited"
        messages[1]["content"].append(text("more"))
        messages[2]["content"][0]["content"].append(text("pushed"))
        messages.append({"role": "user", "content": []})
    assert events == pristine
    expected = [
        {"role": "user", "content": [text("hi")]},
        {"role": "assistant", "content": [text("a")]},
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
    assert derive_messages(events) == expected


def test_core_059_calls_return_equal_but_distinct_objects() -> None:
    events = log(U("hi"), A(text("a")))
    first, second = derive_messages(events), derive_messages(events)
    assert first == second
    assert first is not second
    assert all(a is not b for a, b in zip(first, second, strict=True))
    assert all(
        a["content"] is not b["content"] for a, b in zip(first, second, strict=True)
    )


def test_derive_message_of_a_log_only_event_is_none() -> None:
    (turn_start,) = log(TS())
    assert derive_message(turn_start) is None


# ------------------------------------------------------------------ properties
# Abstract operations keep replaces valid wherever log-only noise is inserted:
# positions are fractions of the surface at that moment, not seqs.

SURFACE_KINDS = [
    "user",
    "assistant",
    "empty-assistant",
    "result",
    "context",
    "steering",
]
NOISE = [TS(), SE(), chunk(), Append("todo/write", {"todos": []})]

Op = tuple[str, str, float, float]
ops_strategy = st.lists(
    st.tuples(
        st.sampled_from(["append", "append", "replace", "rewrite"]),
        st.sampled_from(SURFACE_KINDS),
        st.floats(0, 1, exclude_max=True),
        st.floats(0, 1, exclude_max=True),
    ),
    max_size=30,
)


def payload(kind: str, n: int) -> Append:
    if kind == "user":
        return U(f"u{n}")
    if kind == "assistant":
        return A(text(f"a{n}"), call(f"c{n}"))
    if kind == "empty-assistant":
        return A(usage={"inputTokens": 1, "outputTokens": 0})
    if kind == "result":
        return R(f"c{n}", meta={"n": n})
    if kind == "context":
        return framed("context/message", "plugin", text(f"x{n}"))
    return framed("steering/message", "user", text(f"s{n}"))


def materialise(
    ops: list[Op], noise: dict[int, Append] | None = None
) -> list[Envelope]:
    """Build a valid log from abstract ops, with ``noise[k]`` inserted after op k."""
    items: list[Append] = []
    current: list[tuple[int, Append]] = []
    for k, (action, kind, first, second) in enumerate(ops):
        seq = len(items)
        item = payload(kind, k)  # texts name the op, so noise cannot change them
        results = [p for p, (_, node) in enumerate(current) if node[0] == "tool/result"]
        if action == "rewrite" and results:
            position = results[math.floor(first * len(results))]
            target, node = current[position]
            data = {**node[1], "content": [text(f"rewritten {k}")]}
            replace = {"op": "replace", "start": target, "end": target}
            item = Append("tool/result", data, replace, [target])
            current[position] = (seq, item)
        elif action == "replace" and current:
            i, j = sorted(math.floor(f * len(current)) for f in (first, second))
            gone = [s for s, _ in current[i : j + 1]]
            replace = {"op": "replace", "start": gone[0], "end": gone[-1]}
            if item[0] == "tool/result":
                item = A(text(f"summary {k}"))
            item = Append(item[0], item[1], replace, gone)
            current[i : j + 1] = [(seq, item)]
        else:
            current.append((seq, item))
        items.append(item)
        if noise and k in noise:
            items.append(noise[k])
    return log(*items)


@settings(max_examples=150, deadline=None)
@given(ops_strategy)
def test_core_060_derivation_is_deterministic_and_replayable(ops: list[Op]) -> None:
    events = materialise(ops)
    replay = copy.deepcopy(events)
    assert derive_messages(events) == derive_messages(events) == derive_messages(replay)


@settings(max_examples=150, deadline=None)
@given(ops_strategy, st.data())
def test_core_061_log_only_noise_never_changes_derivation(
    ops: list[Op], data: st.DataObject
) -> None:
    noise = data.draw(
        st.dictionaries(st.integers(0, max(len(ops) - 1, 0)), st.sampled_from(NOISE))
    )
    plain = derive_messages(materialise(ops))
    assert derive_messages(materialise(ops, noise)) == plain
    assert {m["role"] for m in plain} <= {"user", "assistant", "system"}
