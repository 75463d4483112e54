"""Whatever a model sends, a tool call returns text: never an exception, never a
raw control character, and never the internal-failure message for input that is
merely wrong (property test)."""

from __future__ import annotations

import re
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentlog.application.model_tools import FAILED, TOOLS, ModelTools, ToolResult

UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
ANY_TEXT = st.text(
    alphabet=st.characters(
        min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=()
    ),
    max_size=12,
)
ARGUMENT_NAMES = sorted(
    {name for tool in TOOLS for name in tool.input_schema()["properties"]}
)
SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats(allow_nan=False)
    | ANY_TEXT
    | st.sampled_from(
        ["plan", "me", "plan-fork", "alien", "parser", "2026-05-01T12:00:00Z"]
    )
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(ANY_TEXT, inner, max_size=3)
    ),
    max_leaves=8,
)
ARGUMENTS: Any = (
    st.dictionaries(st.sampled_from(ARGUMENT_NAMES) | ANY_TEXT, VALUES, max_size=5)
    | VALUES
)
NAMES = st.sampled_from([tool.name for tool in TOOLS]) | ANY_TEXT


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(name=NAMES, arguments=ARGUMENTS)
def test_any_call_is_safe_text(tools: ModelTools, name: Any, arguments: Any) -> None:
    result = tools.call(name, arguments)
    assert isinstance(result, ToolResult)
    assert UNSAFE.search(result.text) is None, result.text
    result.text.encode("utf-8")
    assert result.text != FAILED, (name, arguments)


SEQS = st.integers(min_value=0, max_value=2**63 - 1) | st.integers(0, 40)
TIMES = st.datetimes(timezones=st.timezones()).map(lambda moment: moment.isoformat())
IDS = st.sampled_from(["plan", "me", "plan-fork", "alien", "never"]) | ANY_TEXT
QUERIES = st.sampled_from(["parser", "tokenizer", "the parser", "*"]) | ANY_TEXT
SURFACES = st.lists(st.sampled_from(["current", "shadowed", "log-only"]), min_size=1)
WELL_TYPED = st.one_of(
    st.tuples(
        st.just("session_search"),
        st.fixed_dictionaries(
            {"query": QUERIES},
            optional={
                "session_ids": st.lists(IDS, min_size=1, max_size=3),
                "parent_session_ids": st.lists(IDS, min_size=1, max_size=3),
                "include_root_sessions": st.booleans(),
                "created_at_from": TIMES,
                "event_time_to": TIMES,
                "event_seq_from": SEQS,
                "event_surfaces": SURFACES,
            },
        ),
    ),
    st.tuples(
        st.just("session_event_search"),
        st.fixed_dictionaries(
            {"query": QUERIES},
            optional={
                "session_id": IDS,
                "seq_from": SEQS,
                "seq_to": SEQS,
                "time_from": TIMES,
                "surfaces": SURFACES,
            },
        ),
    ),
    st.tuples(
        st.just("session_trace"),
        st.fixed_dictionaries({}, optional={"session_id": IDS}),
    ),
    st.tuples(
        st.sampled_from(["session_event_trace", "session_event_read"]),
        st.fixed_dictionaries(
            {"seq": SEQS},
            optional={
                "session_id": IDS,
                "before": st.integers(0, 50),
                "after": st.integers(0, 50),
            },
        ),
    ),
)


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(call=WELL_TYPED)
def test_well_typed_calls_answer_or_refuse_precisely(
    tools: ModelTools, call: tuple[str, dict[str, Any]]
) -> None:
    name, arguments = call
    if name == "session_event_trace":
        arguments.pop("before", None)
        arguments.pop("after", None)
    result = tools.call(name, arguments)
    assert UNSAFE.search(result.text) is None, result.text
    assert result.text != FAILED, (name, arguments)
    for secret in ("zebra", "Xenon", "alien zebra title"):
        assert secret not in result.text, (name, arguments, result.text)
