"""A realistic search corpus: agent sessions whose text is the Python standard library.

Every machine that runs the tests has the standard library's sources, so the
corpus is real prose and real code without a download: docstrings and comment
blocks are the messages, excerpts of the files are the tool results. A session is
an agent working on a few neighbouring modules of a CPython checkout (``Lib/...``):
each turn is a user message (one or two docstring sentences, 3-60 tokens), one to
five tool calls (``bash`` running ``sed``/``grep``/``head``, or ``read_file``) each
with its result (10-80 lines of the file), and an assistant message (docstring and
comment paragraphs, 20-300 tokens). Every event is a valid core event that content
search indexes (no turn or step boundaries: those hold no text), so a session of
``n`` events is ``n`` documents, as in the Zipf corpus.

The rare word ``zyzzogeton`` is put in exactly 50 texts, at places drawn over the
whole corpus. Session ids are UUID4 strings, times epoch milliseconds: sessions
start at distinct moments over 90 days, in storage order, and their events follow
0.2-60 s apart.
Everything is drawn from one ``random.Random(seed)`` and the sorted source files,
so a seed gives the same corpus on the same Python version; sessions are made one
at a time (only the sources are held).
"""

from __future__ import annotations

import ast
import functools
import itertools
import json
import random
import re
import sysconfig
import uuid
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from agentlog.domain.search_text import tokens

SKIPPED_DIRS: Final = frozenset(
    {"site-packages", "dist-packages", "test", "tests", "idle_test"}
)
"""Installed packages vary per machine, and some distributions strip the tests."""

START: Final = 1_756_684_800_000  # 2025-09-01T00:00:00Z
SPAN: Final = 90 * 86_400_000
RARE: Final = "zyzzogeton"
RARE_EVENTS: Final = 50
NEIGHBOURS: Final = 4
"""A session's own files: its focus file and the 4 either side in sorted order
(mostly the same package); a quarter of its draws come from anywhere."""
PILOT_SESSIONS: Final = 100
NATURAL_PHRASES: Final = (
    "is not none",
    "the number of",
    "for i in",
    "if self is",
    "return self is",
    "if name in",
    "is none if",
    "self assertequal self",
)
"""Phrases a user would type; the most frequent in the pilot is timed."""

_SENTENCE: Final = re.compile(r"(?<=[.!?])\s+(?=[A-Z`'\"(])")
_TOKEN_END: Final = re.compile(r"[^\W_]+")
_DEF: Final = re.compile(r"\s*(?:async\s+)?(def|class)\s+(\w+)")
_IDENTIFIER: Final = re.compile(r"\b[A-Za-z_]\w{3,}\b")


@dataclass(frozen=True, slots=True)
class SourceFile:
    """One standard-library file: its text, line starts and prose paragraphs."""

    path: str
    text: str
    starts: array[int]
    paragraphs: tuple[str, ...]

    @property
    def lines(self) -> int:
        return len(self.starts) - 1

    def excerpt(self, first: int, count: int) -> str:
        """Lines ``first`` (0-based) to ``first + count``, as ``sed`` prints them."""
        last = min(self.lines, first + count)
        return self.text[self.starts[first] : self.starts[last]]


def _paragraphs(source: str) -> tuple[str, ...]:
    """Docstring paragraphs and comment blocks, whitespace collapsed, prose only."""
    found: list[str] = []
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        tree = None
    kinds = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    for node in ast.walk(tree) if tree is not None else ():
        doc = ast.get_docstring(node) if isinstance(node, kinds) else None
        for block in (doc or "").split("\n\n"):
            if ">>>" not in block and "\n    " not in block:
                found.append(" ".join(block.split()))
    block_lines: list[str] = []
    for line in [*source.splitlines(), ""]:
        stripped = line.strip()
        if stripped.startswith("#") and not stripped.startswith(("#!", "# -*-")):
            block_lines.append(stripped.lstrip("#").strip())
        elif block_lines:
            found.append(" ".join(" ".join(block_lines).split()))
            block_lines = []
    return tuple(p for p in found if len(tokens(p)) >= 3)


@functools.cache
def read_sources() -> list[SourceFile]:
    """The standard library's ``*.py`` files, sorted, each read once (a few
    seconds: every file is parsed for its docstrings)."""
    base = Path(sysconfig.get_paths()["stdlib"])
    files: list[SourceFile] = []
    for path in sorted(base.rglob("*.py")):
        relative = path.relative_to(base)
        if SKIPPED_DIRS & set(relative.parts):
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        if text.count("\n") < 10:
            continue
        starts = array("q", [0])
        starts.extend(m.end() for m in re.finditer("\n", text))
        if starts[-1] != len(text):
            starts.append(len(text))
        files.append(
            SourceFile(f"Lib/{relative.as_posix()}", text, starts, _paragraphs(text))
        )
    return files


def cut(text: str, limit: int) -> str:
    """``text`` up to the end of its ``limit``-th token."""
    for number, match in enumerate(_TOKEN_END.finditer(text), 1):
        if number == limit:
            return text[: match.end()]
    return text


class SessionWriter:
    """Draws one session's events from the sources (a focus file and its
    neighbours); the corpus-wide state (rare word left) lives in :class:`Corpus`."""

    def __init__(self, rng: random.Random, files: list[SourceFile]) -> None:
        self.rng = rng
        self.files = files
        focus = rng.randrange(len(files))
        low, high = max(0, focus - NEIGHBOURS), min(len(files), focus + NEIGHBOURS + 1)
        self.own = range(low, high)

    def file(self, prose: bool = False) -> SourceFile:
        rng = self.rng
        while True:
            pool = self.own if rng.random() < 0.75 else range(len(self.files))
            chosen = self.files[rng.choice(pool)]
            if chosen.paragraphs or not prose:
                return chosen

    def user_text(self) -> str:
        """One or two docstring sentences, 3-60 tokens."""
        while True:
            source = self.file(prose=True)
            paragraph = self.rng.choice(source.paragraphs)
            sentences = _SENTENCE.split(paragraph)
            first = self.rng.randrange(len(sentences))
            count = 2 if self.rng.random() < 0.4 else 1
            text = cut(" ".join(sentences[first : first + count]), 60)
            if len(tokens(text)) >= 3:
                return text

    def assistant_text(self) -> str:
        """Consecutive prose paragraphs of a file (the next file's if it runs
        out), cut at 20-300 tokens (median 80)."""
        rng = self.rng
        target = min(300, max(20, round(rng.lognormvariate(4.4, 0.7))))
        parts: list[str] = []
        count = 0
        while count < target:
            source = self.file(prose=True)
            start = rng.randrange(len(source.paragraphs))
            for paragraph in source.paragraphs[start:]:
                parts.append(paragraph)
                count += len(tokens(paragraph))
                if count >= target:
                    break
        return cut("\n\n".join(parts), target)

    def tool_pair(self) -> tuple[str, str, str]:
        """A tool's name, its JSON arguments and the excerpt it returned."""
        rng = self.rng
        source = self.file()
        count = rng.randint(10, 80)
        first = rng.randrange(max(1, source.lines - count + 1))
        how = rng.random()
        if how < 0.4:
            arguments = {"path": source.path, "offset": first + 1, "limit": count}
            return "read_file", json.dumps(arguments), source.excerpt(first, count)
        if how < 0.7:
            last = min(source.lines, first + count)
            command = f"sed -n '{first + 1},{last}p' {source.path}"
        elif how < 0.85 or first == 0:
            first = 0
            command = f"head -n {count} {source.path}"
        else:
            # grep for the def/class nearest above the excerpt, with context.
            above = source.excerpt(0, first + 1).splitlines()
            heads = [m for m in map(_DEF.match, reversed(above)) if m]
            if heads:
                name = f"{heads[0].group(1)} {heads[0].group(2)}"
                command = f'grep -n -A {count - 1} "{name}" {source.path}'
            else:
                word = _IDENTIFIER.search(source.excerpt(first, 1)) or None
                pattern = word.group(0) if word else "import"
                command = f"grep -rn {pattern} {source.path.rsplit('/', 1)[0]}/"
        arguments = {"command": command}
        return "bash", json.dumps(arguments), source.excerpt(first, count)


def _text(value: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": value}]


class Corpus:
    """``sessions`` sessions of ``events`` events, made lazily for one seed."""

    def __init__(
        self,
        sessions: int,
        events: int,
        seed: int = 1,
        files: list[SourceFile] | None = None,
    ) -> None:
        self.sessions = sessions
        self.events = events
        self.seed = seed
        self.files = files if files is not None else read_sources()

    def __iter__(self) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]]]]:
        rng = random.Random(self.seed)
        starts = sorted(rng.sample(range(SPAN), self.sessions))
        total = self.sessions * self.events
        rare_at = set(rng.sample(range(total), min(RARE_EVENTS, total)))
        pending = 0
        number = itertools.count()
        for start in starts:
            session_id = str(uuid.UUID(int=rng.getrandbits(128), version=4))
            created = START + start
            log = list(self._session(SessionWriter(rng, self.files), created + 300))
            for event in log:
                # A place that falls on a tool call moves to the next text.
                pending += next(number) in rare_at
                blocks = event["data"].get("content")
                if pending and blocks:
                    words = blocks[0]["text"].split(" ")
                    words.insert(rng.randrange(len(words) + 1), RARE)
                    blocks[0]["text"] = " ".join(words)
                    pending -= 1
            head = {"version": 0, "id": session_id, "createdAt": created}
            yield {**head, "cwd": "/home/dev/cpython"}, log

    def _session(self, draw: SessionWriter, time: int) -> Iterator[dict[str, Any]]:
        rng = draw.rng
        seq = 0
        turn = 0
        while True:
            turn += 1
            pairs = rng.choices((1, 2, 3, 4, 5), weights=(30, 25, 20, 15, 10))[0]
            planned: list[tuple[str, dict[str, Any], int]] = [
                (
                    "user/message",
                    {"content": _text(draw.user_text()), "source": {"kind": "user"}},
                    rng.randint(5_000, 60_000),
                )
            ]
            for step in range(1, pairs + 1):
                name, arguments, result = draw.tool_pair()
                call_id = f"call_{rng.getrandbits(96):024x}"
                head = {"turn": turn, "step": step, "callId": call_id}
                call = {**head, "name": name, "arguments": arguments}
                outcome = {**head, "content": _text(result), "isError": False}
                planned.append(("tool/call", call, rng.randint(1_000, 30_000)))
                planned.append(("tool/result", outcome, rng.randint(200, 10_000)))
            reply = {
                "turn": turn,
                "step": pairs + 1,
                "content": _text(draw.assistant_text()),
                "usage": {
                    "inputTokens": rng.randint(200, 4_000),
                    "outputTokens": rng.randint(50, 1_500),
                    "cacheReadTokens": rng.randint(5_000, 120_000),
                },
                "provenance": {"provider": "anthropic", "model": "claude-sonnet-4-5"},
            }
            planned.append(("assistant/message", reply, rng.randint(2_000, 60_000)))
            for event_type, data, gap in planned:
                if seq == self.events:
                    return
                time += gap
                event: dict[str, Any] = {
                    "type": event_type,
                    "seq": seq,
                    "time": time,
                    "data": data,
                }
                if event_type != "tool/call":
                    event["surfaceOp"] = "append"
                yield event
                seq += 1


# ------------------------------------------------------------- query choice


@dataclass(frozen=True, slots=True)
class Queries:
    """The timed queries, chosen by counting documents of a pilot prefix."""

    common: str
    middle: str
    natural: str
    worst: str
    pilot_documents: int
    counts: dict[str, int]
    """Pilot documents holding each chosen word, or each phrase as a phrase."""
    together: int
    """Pilot documents holding all three of the top tokens, anywhere."""


def _has_phrase(words: list[str], phrase: tuple[str, ...]) -> bool:
    size = len(phrase)
    return any(
        tuple(words[i : i + size]) == phrase for i in range(len(words) - size + 1)
    )


def choose_queries(documents: Iterable[str]) -> Queries:
    """The most common token, a word in 0.5-1% of documents, the most frequent
    natural phrase, and the three most common tokens as a phrase in the order that
    occurs most (their frequency order if none does)."""
    texts = [tokens(text) for text in documents]
    frequency: Counter[str] = Counter()
    for words in texts:
        frequency.update(set(words))
    total = len(texts)
    ranked = sorted(frequency, key=lambda word: (-frequency[word], word))
    common = ranked[0]
    middle = min(
        (w for w in ranked if w.isalpha() and len(w) >= 5 and w != RARE),
        key=lambda w: (abs(frequency[w] / total - 0.0075), w),
    )

    def phrase_count(phrase: tuple[str, ...]) -> int:
        return sum(1 for words in texts if _has_phrase(words, phrase))

    natural_counts = {p: phrase_count(tuple(p.split())) for p in NATURAL_PHRASES}
    natural = max(NATURAL_PHRASES, key=lambda p: natural_counts[p])
    orders = list(itertools.permutations(ranked[:3]))
    order_counts = {order: phrase_count(order) for order in orders}
    best = max(orders, key=lambda order: order_counts[order])
    worst = best if order_counts[best] else orders[0]
    return Queries(
        common,
        middle,
        natural,
        " ".join(worst),
        total,
        {
            common: frequency[common],
            middle: frequency[middle],
            natural: natural_counts[natural],
            " ".join(worst): order_counts[worst],
        },
        sum(1 for words in texts if set(ranked[:3]) <= set(words)),
    )
