"""What content search indexes: one plain-text document per event (docs/search.md).

Indexed: message text, reasoning, tool-call names and arguments, tool-result
content, blocked-prompt reasons, todo status and content, error and terminal
status detail, context and steering text, compaction summaries. Not indexed:
structural boundaries, stream chunks, request headers, completion markers and
unknown plugin payloads. A type gains a document by registering an extractor
(:func:`register_extractor`); every other type yields none.

Extraction is iterative (a tool result may nest 20,000 levels) and never raises
on malformed data: a part of the wrong shape is simply not text.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

SurfaceClass = Literal["current", "shadowed", "log-only"]
Extractor = Callable[[Mapping[str, Any]], Iterator[str]]
"""Given an event's ``data`` (a dict), yield its indexed text parts in order."""

_EXTRACTORS: dict[str, Extractor] = {}
_WHITESPACE: Final = re.compile(r"\s+")
_TOKEN: Final = re.compile(r"[^\W_]+")
_BIGRAM_SCRIPTS: Final = (
    "\u1100-\u11ff"  # Hangul Jamo
    "\u3005-\u3007"  # 々 〆 〇
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u3130-\u318f"  # Hangul Compatibility Jamo
    "\u31f0-\u31ff"  # Katakana Phonetic Extensions
    "\u3400-\u4dbf"  # CJK Unified Ideographs Extension A
    "\u4e00-\u9fff"  # CJK Unified Ideographs
    "\ua960-\ua97f"  # Hangul Jamo Extended-A
    "\uac00-\ud7ff"  # Hangul Syllables, Hangul Jamo Extended-B
    "\uf900-\ufaff"  # CJK Compatibility Ideographs
    "\uff66-\uff9f"  # Halfwidth Katakana
    "\U00020000-\U0003ffff"  # CJK Unified Ideographs Extensions B-I, compatibility
)
_BIGRAM_CHAR: Final = re.compile(f"[{_BIGRAM_SCRIPTS}]")
_BIGRAM_RUN: Final = re.compile(f"[{_BIGRAM_SCRIPTS}]+")
TOKEN_RULE: Final = 2
"""The version of :func:`tokens`' rule. An index built under another rule holds
other tokens and is rebuilt (1: letter/digit runs; 2: Han, Hiragana, Katakana and
Hangul runs as characters and overlapping bigrams)."""


@dataclass(frozen=True, slots=True)
class SearchDocument:
    """One event's indexed text, with what the order and the filters need."""

    session_id: str
    seq: int
    type: str
    time: Any
    surface: SurfaceClass
    text: str


def register_extractor(event_type: str, extractor: Extractor) -> None:
    """Index ``event_type`` with ``extractor`` (a plugin's types, or a new rule)."""
    _EXTRACTORS[event_type] = extractor


def indexed_types() -> frozenset[str]:
    return frozenset(_EXTRACTORS)


def document_text(event: Mapping[str, Any]) -> str | None:
    """The event's document text; ``None`` if its type is not indexed or it has
    no text (a routine ``turn/end``): an empty document is no document."""
    extractor = _EXTRACTORS.get(event.get("type"))  # type: ignore[arg-type]
    data = event.get("data")
    if extractor is None or type(data) is not dict:
        return None
    return "\n".join(part for part in extractor(data) if part) or None


def extract(
    session_id: str, event: Mapping[str, Any], surface: SurfaceClass
) -> SearchDocument | None:
    """The event's document, or ``None`` (not indexed, or no seq)."""
    text = document_text(event)
    seq = event.get("seq")
    if text is None or type(seq) is not int:
        return None
    return SearchDocument(
        session_id, seq, str(event.get("type")), event.get("time"), surface, text
    )


# ------------------------------------------------------------- text helpers


def normalize_space(text: str) -> str:
    """Trimmed, every whitespace run one space, case-folded (the text clause)."""
    return _WHITESPACE.sub(" ", text).strip().casefold()


def tokens(text: str) -> list[str]:
    """A query's and a document's tokens, on every backend (the indexes are fed
    these, not the text): lower-cased letter/digit runs, where a run of Han,
    Hiragana, Katakana or Hangul (scripts written without spaces) is split off
    and spelled as :func:`bigram_tokens` (docs/search.md#tokens)."""
    if text.isascii() or _BIGRAM_CHAR.search(text) is None:
        return [token.lower() for token in _TOKEN.findall(text)]
    return [token for token, _, _ in token_spans(text)]


def token_count(text: str) -> int:
    """``len(tokens(text))``, without building the list when it can."""
    if text.isascii() or _BIGRAM_CHAR.search(text) is None:
        return sum(1 for _ in _TOKEN.finditer(text))
    return sum(1 for _ in token_spans(text))


def token_spans(text: str) -> Iterator[tuple[str, int, int]]:
    """Each token of :func:`tokens` with its ``[start, end)`` in ``text``."""
    if text.isascii() or _BIGRAM_CHAR.search(text) is None:
        for run in _TOKEN.finditer(text):
            yield run.group().lower(), run.start(), run.end()
        return
    for run in _TOKEN.finditer(text):
        word, start = run.group(), run.start()
        position = 0
        for spaceless in _BIGRAM_RUN.finditer(word):
            if spaceless.start() > position:
                piece = word[position : spaceless.start()]
                yield piece.lower(), start + position, start + spaceless.start()
            yield from bigram_tokens(spaceless.group(), start + spaceless.start())
            position = spaceless.end()
        if position < len(word):
            yield word[position:].lower(), start + position, run.end()


def bigram_tokens(run: str, offset: int = 0) -> Iterator[tuple[str, int, int]]:
    """A spaceless run as each character, with the overlapping bigram that
    starts at it between it and the next: ``文件结`` is ``文 文件 件 件结 结``.

    A phrase of these tokens is in a document's exactly when its text is: a
    run inside a longer run, a single character, a run ending where a Latin
    word starts (``个turn`` in ``每个turn``).
    """
    last = len(run) - 1
    for index, character in enumerate(run):
        yield character, offset + index, offset + index + 1
        if index < last:
            yield run[index : index + 2], offset + index, offset + index + 2


def _string(value: object) -> Iterator[str]:
    if type(value) is str:
        yield value


def _blocks(value: object) -> Iterator[str]:
    """Text of a content-block list: text, reasoning, tool calls, tool results.

    An explicit stack, so nested tool results of any depth are read in order.
    """
    stack: list[Iterator[object]] = [iter(value if type(value) is list else ())]
    while stack:
        block = next(stack[-1], _END)
        if block is _END:
            stack.pop()
            continue
        if type(block) is not dict:
            continue
        kind = block.get("type")
        if kind in ("text", "reasoning"):
            yield from _string(block.get("text"))
        elif kind == "tool-call":
            yield from _string(block.get("name"))
            yield from _string(block.get("arguments"))
        elif kind == "tool-result" and type(block.get("content")) is list:
            stack.append(iter(block["content"]))


_END: Final = object()


def _content(data: Mapping[str, Any]) -> Iterator[str]:
    """``data.content``, or ``data.message.content`` as the harness writes it."""
    if "content" in data:
        yield from _blocks(data.get("content"))
    message = data.get("message")
    if type(message) is dict:
        yield from _blocks(message.get("content"))


def _message(data: Mapping[str, Any]) -> Iterator[str]:
    yield from _content(data)


def _tool_result(data: Mapping[str, Any]) -> Iterator[str]:
    yield from _content(data)
    error = data.get("error")
    if type(error) is dict:
        yield from _string(error.get("name"))
        yield from _string(error.get("code"))


def _prompt_blocked(data: Mapping[str, Any]) -> Iterator[str]:
    yield from _content(data)
    yield from _string(data.get("reason"))


def _tool_call(data: Mapping[str, Any]) -> Iterator[str]:
    yield from _string(data.get("name"))
    yield from _string(data.get("arguments"))


def _todos(data: Mapping[str, Any]) -> Iterator[str]:
    todos = data.get("todos")
    for todo in todos if type(todos) is list else ():
        if type(todo) is dict:
            yield from _string(todo.get("status"))
            yield from _string(todo.get("content"))


def _terminal(data: Mapping[str, Any]) -> Iterator[str]:
    """A turn's end: only its non-routine detail (error, abort, rejection)."""
    reason = data.get("reason")
    if type(reason) is not dict or reason.get("kind") not in (
        "error",
        "aborted",
        "rejected",
    ):
        return
    yield from _string(reason.get("kind"))
    for key in ("message", "code", "reason"):
        yield from _string(reason.get(key))


def _summary(data: Mapping[str, Any]) -> Iterator[str]:
    yield from _blocks(data.get("summary"))


def _compact_end(data: Mapping[str, Any]) -> Iterator[str]:
    yield from _string(data.get("error"))


def _hook_result(data: Mapping[str, Any]) -> Iterator[str]:
    yield from _string(data.get("stderrSummary"))


for _type in ("user/message", "assistant/message", "context/message"):
    register_extractor(_type, _message)
register_extractor("steering/message", _message)
register_extractor("tool/result", _tool_result)
register_extractor("tool/call", _tool_call)
register_extractor("prompt/blocked", _prompt_blocked)
register_extractor("todo/write", _todos)
register_extractor("turn/end", _terminal)
register_extractor("compact/summary", _summary)
register_extractor("compaction/summary", _summary)
register_extractor("compact/end", _compact_end)
register_extractor("compaction/end", _compact_end)
register_extractor("hook/result", _hook_result)
