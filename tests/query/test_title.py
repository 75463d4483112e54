"""Titles, pure (docs/titles.md): normalisation, fallback, the fold."""

from __future__ import annotations

import math
from typing import Any

import pytest

from agentlog.domain.errors import TitleError, TitleEventError
from agentlog.domain.title import (
    TitleConfig,
    eligible_messages,
    fallback_title,
    fold_session_title,
    is_eligible_message,
    normalize_title,
    plan_fallback_title,
)
from tests.query.support import ev
from tests.scenarios.harness import TS, Append, U, text

CONFIG = TitleConfig(fallback_max_words=5, fallback_max_bytes=40, max_title_bytes=80)


def title_event(seq: int, title: str, source: Any, time: int = 10) -> dict[str, Any]:
    data = {"title": title, "messageSeqs": [1], "source": source}
    return {"type": "session/title", "seq": seq, "time": time, "data": data}


# ------------------------------------------------- normalisation examples


def test_normalize_strips_terminal_sequences_and_collapses_whitespace() -> None:
    raw = "\x1b]0;stolen\x07  Hello\t brave\nnew world  "
    assert normalize_title(raw, 100) == "Hello brave new world"


def test_fallback_keeps_the_first_words() -> None:
    assert fallback_title("one two three four", 3, 100) == "one two three"


def test_fallback_truncates_on_code_point_boundaries() -> None:
    assert fallback_title("你好世界", 5, 7) == "你好"
    result = fallback_title("😀😀", 5, 5)
    assert result == "😀"
    assert len(result.encode()) == 4


def test_fallback_of_one_byte_for_an_emoji_is_empty() -> None:
    assert fallback_title("😀", 5, 1) == ""


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("a\x1b[31mred\x1b[0m b", "ared b"),  # CSI
        ("\x9b1mx", "x"),  # 8-bit CSI
        ("a\x1b]8;;http://x\x1b\\link", "alink"),  # OSC ended by ST
        ("a\x1b]unterminated", "a"),  # OSC to end of text
        ("x\x1bMy", "xy"),  # other two-character escape
        ("a\u200bb\ufeffc\u202ed\u2066e", "abcde"),  # invisibles
        ("a\x00b\x7fc\x85d", "abcd"),  # C0 / DEL / C1
        ("  \u00a0 a \u3000 b  ", "a b"),  # Unicode spaces collapse
    ],
)
def test_normalize_step_one_and_two(raw: str, expected: str) -> None:
    assert normalize_title(raw, math.inf) == expected


def test_truncation_right_trims() -> None:
    assert normalize_title("abc def", 4) == "abc"


@pytest.mark.parametrize("bad", [0, -1, 1.5, None, True])
def test_limits_must_be_positive_integers(bad: Any) -> None:
    with pytest.raises(TitleError, match=r"^maxBytes must be a positive integer$"):
        fallback_title("x", 1, bad)
    with pytest.raises(TitleError, match=r"^maxWords must be a positive integer$"):
        fallback_title("x", bad, 1)
    with pytest.raises(TitleError, match=r"^maxBytes must be a positive integer$"):
        normalize_title("x", bad)


def reasoning_prompt() -> Append:
    data = {"content": [{"type": "reasoning", "text": "r"}], "source": {"kind": "user"}}
    return Append("user/message", data, "append")


def test_eligibility() -> None:
    plugin = U("hi", source={"kind": "plugin", "plugin": "x"})
    assert is_eligible_message(ev(0, U("hi")))
    assert not is_eligible_message(ev(0, plugin))
    assert not is_eligible_message(ev(0, reasoning_prompt()))
    assert not is_eligible_message(ev(0, U(" \t\u200b ")))
    assert not is_eligible_message(ev(0, TS(1)))
    events = [ev(0, U("a")), ev(1, plugin), ev(2, U("b"))]
    assert [e["seq"] for e in eligible_messages(events)] == [0, 2]


def test_message_text_joins_text_blocks_with_newlines() -> None:
    data = {
        "content": [text("Fix"), {"type": "reasoning", "text": "no"}, text("the bug")],
        "source": {"kind": "user"},
    }
    event = {"type": "user/message", "seq": 1, "time": 1, "data": data}
    planned = plan_fallback_title([event], CONFIG)
    assert planned is not None
    assert planned["title"] == "Fix the bug"


# ------------------------------------------------------------- scenarios


def test_pq_082_fallback_title_of_the_first_prompt() -> None:
    log = [ev(0, TS(1)), ev(1, U("  Build\nlog-backed session titles please  "))]
    assert plan_fallback_title(log, CONFIG) == {
        "title": "Build log-backed session titles please",
        "messageSeqs": [1],
        "source": {"kind": "fallback"},
    }


def test_pq_083_only_human_prompts_with_text_get_a_title_and_only_once() -> None:
    log = [
        ev(0, TS(1)),
        ev(1, U("from a plugin", source={"kind": "plugin", "plugin": "p"})),
        ev(2, reasoning_prompt()),
        ev(3, U("   ")),
    ]
    assert plan_fallback_title(log, CONFIG) is None
    log.append(ev(4, U("first real prompt")))
    planned = plan_fallback_title(log, CONFIG)
    assert planned is not None
    assert planned["messageSeqs"] == [4]
    assert planned["title"] == "first real prompt"
    titled = [*log, {"type": "session/title", "seq": 5, "time": 1, "data": planned}]
    titled.append(ev(6, U("a later prompt")))
    assert plan_fallback_title(titled, CONFIG) is None


def test_pq_084_the_latest_title_wins() -> None:
    earlier = title_event(0, "Earlier", {"kind": "fallback"}, time=10)
    model = {"provider": "deepseek", "model": "chat", "extra": 1}
    later = title_event(
        1, "Later", {"kind": "provider", "provider": "p", "model": model}
    )
    later["time"] = 20
    snapshot = fold_session_title([earlier, later])
    assert snapshot is not None
    assert snapshot.title == "Later"
    assert snapshot.event_seq == 1
    assert snapshot.updated_at == 20
    assert snapshot.to_json() == {
        "title": "Later",
        "messageSeqs": [1],
        "source": {
            "kind": "provider",
            "provider": "p",
            "model": {"provider": "deepseek", "model": "chat"},
        },
        "eventSeq": 1,
        "updatedAt": 20,
    }
    assert fold_session_title([ev(0, TS(1))]) is None
    assert fold_session_title([]) is None


def test_fold_rebuilds_the_source_and_is_immutable() -> None:
    event = title_event(3, "T", {"kind": "fallback", "provider": "ignored", "x": 1})
    snapshot = fold_session_title([event])
    assert snapshot is not None
    assert snapshot.to_json()["source"] == {"kind": "fallback"}
    event["data"]["messageSeqs"].append(99)
    assert snapshot.message_seqs == (1,)
    with pytest.raises(ValueError, match="frozen"):
        snapshot.title = "changed"  # type: ignore[misc]
    other = {"kind": "something-new", "provider": "p"}
    rebuilt = fold_session_title([title_event(0, "T", other)])
    assert rebuilt is not None
    assert rebuilt.to_json()["source"] == {"kind": "provider", "provider": "p"}


def test_a_malformed_title_event_raises_a_typed_type_error() -> None:
    event = {"type": "session/title", "seq": 0, "time": 1, "data": {"title": "T"}}
    with pytest.raises(TitleEventError, match="messageSeqs") as caught:
        fold_session_title([event])
    assert isinstance(caught.value, TypeError)
    assert str(caught.value) == (
        "session/title event at seq 0 is malformed: "
        "messageSeqs must be an array of integers"
    )


def test_pq_089_a_one_byte_cap_gives_no_title() -> None:
    config = TitleConfig(fallback_max_words=5, fallback_max_bytes=1, max_title_bytes=1)
    assert plan_fallback_title([ev(0, TS(1)), ev(1, U("😀"))], config) is None


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (None, "session-title: configuration is required"),
        (
            {"fallbackMaxWords": 0, "fallbackMaxBytes": 40, "maxTitleBytes": 80},
            "session-title: fallbackMaxWords must be a positive integer",
        ),
        (
            {"fallbackMaxWords": 5, "fallbackMaxBytes": 1.5, "maxTitleBytes": 80},
            "session-title: fallbackMaxBytes must be a positive integer",
        ),
        (
            {"fallbackMaxWords": 5, "fallbackMaxBytes": 40},
            "session-title: maxTitleBytes must be a positive integer",
        ),
        (
            {"fallbackMaxWords": 5, "fallbackMaxBytes": 81, "maxTitleBytes": 80},
            "session-title: fallbackMaxBytes must not exceed maxTitleBytes",
        ),
    ],
)
def test_pq_090_title_configuration_is_validated(
    config: dict[str, Any] | None, message: str
) -> None:
    with pytest.raises(TitleError) as caught:
        TitleConfig.from_mapping(config)
    assert str(caught.value) == message


def test_the_demo_configuration_is_valid() -> None:
    config = {"fallbackMaxWords": 5, "fallbackMaxBytes": 40, "maxTitleBytes": 80}
    assert TitleConfig.from_mapping(config) == CONFIG
