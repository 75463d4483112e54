"""The search extractor: what each event type contributes to its document."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from agentlog.domain import search_text
from agentlog.domain.search_text import (
    document_text,
    extract,
    normalize_space,
    register_extractor,
    tokens,
)


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def event(event_type: str, data: Any, seq: int = 0) -> dict[str, Any]:
    return {"type": event_type, "seq": seq, "time": 5, "data": data}


@pytest.mark.parametrize(
    ("event_type", "data", "expected"),
    [
        ("user/message", {"content": [text("hello")], "source": {}}, "hello"),
        ("context/message", {"content": [text("ctx")], "source": {}}, "ctx"),
        ("steering/message", {"content": [text("steer")], "turn": 1}, "steer"),
        (
            "assistant/message",
            {
                "content": [
                    {"type": "reasoning", "text": "think"},
                    text("answer"),
                    {"type": "tool-call", "id": "c", "name": "bash", "arguments": "ls"},
                ]
            },
            "think\nanswer\nbash\nls",
        ),
        (
            "assistant/message",
            {"message": {"role": "assistant", "content": [text("wrapped")]}},
            "wrapped",
        ),
        (
            "tool/result",
            {
                "content": [
                    {"type": "tool-result", "content": [text("out")], "toolCallId": "c"}
                ],
                "error": {"name": "Boom", "code": "E1"},
            },
            "out\nBoom\nE1",
        ),
        ("tool/call", {"name": "grep", "arguments": '{"q":"x"}'}, 'grep\n{"q":"x"}'),
        (
            "prompt/blocked",
            {"content": [text("rm -rf")], "reason": "policy"},
            "rm -rf\npolicy",
        ),
        (
            "todo/write",
            {"todos": [{"content": "fix it", "status": "pending"}, "junk"]},
            "pending\nfix it",
        ),
        (
            "turn/end",
            {"reason": {"kind": "error", "step": 1, "message": "died"}},
            "error\ndied",
        ),
        ("turn/end", {"reason": {"kind": "rejected", "reason": "no"}}, "rejected\nno"),
        ("turn/end", {"reason": {"kind": "completed"}}, None),
        ("compact/summary", {"summary": [text("so far")]}, "so far"),
        ("compaction/summary", {"summary": [text("so far")]}, "so far"),
        ("compact/end", {"turn": 1, "error": "oops"}, "oops"),
        ("hook/result", {"decision": "block", "stderrSummary": "denied"}, "denied"),
    ],
)
def test_indexed_types(event_type: str, data: Any, expected: str | None) -> None:
    assert document_text(event(event_type, data)) == expected


@pytest.mark.parametrize(
    "event_type",
    [
        "turn/start",
        "step/start",
        "step/end",
        "assistant/chunk",
        "request/header",
        "session/title",
        "compact/start",
        "plugin/unknown",
        "text-chunks",
    ],
)
def test_unindexed_types(event_type: str) -> None:
    data = {"content": [text("secret")], "header": "secret", "text": "secret"}
    assert document_text(event(event_type, data)) is None


def test_malformed_parts_are_not_text() -> None:
    data = {"content": [1, None, {"type": "text", "text": 3}, text("ok")], "source": 1}
    assert document_text(event("user/message", data)) == "ok"
    assert document_text(event("user/message", "not a dict")) is None
    assert document_text(event("todo/write", {"todos": "x"})) is None


def test_deep_tool_results_are_read_iteratively() -> None:
    inner: dict[str, Any] = text("bottom")
    for _ in range(20_000):
        inner = {"type": "tool-result", "content": [inner]}
    assert document_text(event("tool/result", {"content": [inner]})) == "bottom"


def test_hostile_strings_survive() -> None:
    value = "a\x00b \ud83d c"
    assert document_text(event("user/message", {"content": [text(value)]})) == value


def test_document_carries_surface_class_and_place() -> None:
    doc = extract("s", event("user/message", {"content": [text("x")]}, 3), "shadowed")
    assert doc is not None
    assert (doc.session_id, doc.seq, doc.type, doc.time, doc.surface, doc.text) == (
        "s",
        3,
        "user/message",
        5,
        "shadowed",
        "x",
    )
    assert extract("s", {"type": "user/message", "data": {}}, "current") is None


def test_registry_is_extensible(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(search_text, "_EXTRACTORS", dict(search_text._EXTRACTORS))

    def extractor(data: Mapping[str, Any]) -> Iterator[str]:
        yield str(data.get("note"))

    register_extractor("myplugin/note", extractor)
    assert document_text(event("myplugin/note", {"note": "hi"})) == "hi"


def test_text_helpers() -> None:
    assert normalize_space("  A\t\nB  ") == "a b"
    assert tokens("AI said: foo_bar, Ünïcode 42!") == [
        "ai",
        "said",
        "foo",
        "bar",
        "ünïcode",
        "42",
    ]


def test_spaceless_scripts_are_characters_and_overlapping_bigrams() -> None:
    """Han, Hiragana, Katakana and Hangul runs (issue 22): split off at script
    changes, each character then the bigram starting at it."""
    assert tokens("文件结构") == ["文", "文件", "件", "件结", "结", "结构", "构"]
    assert tokens("每个turn输出") == ["每", "每个", "个", "turn", "输", "输出", "出"]
    assert tokens("日本語を") == ["日", "日本", "本", "本語", "語", "語を", "を"]
    assert tokens("カタカナ") == ["カ", "カタ", "タ", "タカ", "カ", "カナ", "ナ"]
    assert tokens("한국어 검색") == [
        "한",
        "한국",
        "국",
        "국어",
        "어",
        "검",
        "검색",
        "색",
    ]
    assert tokens("第3章") == ["第", "3", "章"]
    assert tokens("字") == ["字"]


@pytest.mark.parametrize(
    "text",
    ["每个turn输出随机一个包的文件结构", "plain words", "ΟΔΟΣ 文 x", "가나 abc 𠀀𠀁"],
)
def test_token_spans_and_count_agree_with_tokens(text: str) -> None:
    spans = list(search_text.token_spans(text))
    assert [token for token, _, _ in spans] == tokens(text)
    assert search_text.token_count(text) == len(tokens(text))
    for token, start, end in spans:
        assert text[start:end].lower() == token
