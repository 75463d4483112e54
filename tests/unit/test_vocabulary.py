"""The vocabulary: type sets, registration and legacy shapes.

The payload check's cases are in ``test_vocabulary_accepted.py`` and
``test_vocabulary_rejected.py``; the models' in ``test_payload_models.py``."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from agentlog.domain import vocabulary
from agentlog.domain.errors import PayloadError, UnsupportedSessionFormatError
from agentlog.domain.payloads import (
    TextBlock,
    TurnStartPayload,
)
from agentlog.domain.vocabulary import (
    CORE_TYPES,
    PAYLOAD_MODELS,
    PLUGIN_TYPES,
    SURFACE_TYPES,
    check_legacy,
    check_payload,
    is_surface_eligible_type,
    is_surface_event,
    json_schema,
    register_payload,
)
from tests.unit.vocabulary_support import (
    TEXT,
    USER,
    invalid,
)

# --------------------------------------------------------------------------------------
# Type sets


def test_the_type_sets_are_the_spec_s() -> None:
    assert {
        "user/message",
        "assistant/message",
        "tool/result",
        "context/message",
        "steering/message",
    } == SURFACE_TYPES
    assert len(CORE_TYPES) == 13
    assert SURFACE_TYPES < CORE_TYPES
    assert {
        "compact/start",
        "compact/summary",
        "compact/end",
        "hook/invoked",
        "hook/result",
        "session/title",
        "session/title-llm-request",
        "request/header",
    } == PLUGIN_TYPES
    assert not CORE_TYPES & PLUGIN_TYPES
    assert set(PAYLOAD_MODELS) == CORE_TYPES | PLUGIN_TYPES


def test_core_045_surface_eligibility_and_surface_events() -> None:
    for event_type in SURFACE_TYPES:
        assert is_surface_eligible_type(event_type)
    for event_type in ("turn/start", "assistant/chunk", "todo/write", "compact/start"):
        assert not is_surface_eligible_type(event_type)
    data = {"content": [TEXT], "source": USER}
    assert not is_surface_event({"type": "user/message", "seq": 0, "data": data})
    assert not is_surface_event({"type": "turn/start", "seq": 0, "data": {}})
    assert is_surface_event(
        {"type": "user/message", "seq": 0, "data": data, "surfaceOp": "append"}
    )
    assert not is_surface_event(
        {"type": "turn/end", "seq": 0, "data": {}, "surfaceOp": "append"}
    )


def test_payload_models_are_read_only() -> None:
    with pytest.raises(TypeError):
        PAYLOAD_MODELS["x/y"] = TextBlock  # type: ignore[index]


# --------------------------------------------------------------------------------------
# Registration


class _Ping(BaseModel):
    model_config = ConfigDict(strict=True, extra="allow")

    count: int


def test_a_registered_plugin_type_is_checked() -> None:
    check_payload("test/ping", {"count": "x"})  # unknown: not checked
    register_payload("test/ping", _Ping)
    try:
        assert PAYLOAD_MODELS["test/ping"] is _Ping
        check_payload("test/ping", {"count": 1, "extra": True})
        assert invalid("test/ping", {"count": "1"}) == (
            "count: Input should be a valid integer"
        )
        assert "test/ping" in json_schema()
    finally:
        del vocabulary._REGISTRY["test/ping"]


def test_core_types_cannot_be_re_registered() -> None:
    with pytest.raises(PayloadError, match="core session event type"):
        register_payload("turn/start", _Ping)
    assert PAYLOAD_MODELS["turn/start"] is TurnStartPayload


# --------------------------------------------------------------------------------------
# Legacy shapes (docs/persistence.md#format-versions-and-legacy-shapes)


def test_a_request_header_delta_is_refused() -> None:
    with pytest.raises(UnsupportedSessionFormatError) as caught:
        check_legacy("s1", "request/header-delta", {"any": 1}, 7)
    assert str(caught.value) == (
        'session "s1" contains unsupported legacy request/header-delta event at seq 7'
    )


def test_a_fallback_request_header_is_refused() -> None:
    data = {"header": {"config": {"provider": "p", "model": "m"}}, "reason": "fallback"}
    check_payload("request/header", data)  # the shape is fine; the legacy check refuses
    with pytest.raises(UnsupportedSessionFormatError) as caught:
        check_legacy("s1", "request/header", data, 4)
    assert str(caught.value) == (
        'session "s1" contains unsupported legacy request/header reason "fallback" '
        "at seq 4"
    )


@pytest.mark.parametrize(
    ("event_type", "data"),
    [
        ("request/header", {"header": {}, "reason": "initial"}),
        ("request/header", {"header": {}, "reason": "resume"}),
        ("request/header", "fallback"),
        ("request/header", None),
        ("turn/start", {"reason": "fallback"}),
        ("x/y", {"reason": "fallback"}),
    ],
)
def test_current_shapes_pass_the_legacy_check(event_type: str, data: Any) -> None:
    check_legacy("s1", event_type, data, 0)
