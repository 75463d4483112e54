"""Literal matching, the hit order, snippets and cursors of content search.

Pure functions shared by every backend, so each returns the same hits in the same
order (docs/search.md). A query is data: it is tokenised exactly as documents
are and matched as one phrase of tokens; no character of it is an operator.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import math
import re
from dataclasses import dataclass
from typing import Any, Final

from agentlog.domain.errors import SessionQueryError
from agentlog.domain.json import dumps, loads
from agentlog.domain.search_text import token_count as _token_count
from agentlog.domain.search_text import token_spans, tokens

SNIPPET_BEFORE: Final = 60
SNIPPET_MAX: Final = 200
_SPACE: Final = re.compile(r"\s")

OrderKey = tuple[int, float, str, int]
"""``(document tokens, -time, session id, -seq)``, ascending: fewer document
tokens first, then the newer event, the lower session id, the higher seq. Every
part is a property of the document alone, so an index can store it and walk it
in order (docs/search.md#order-hits-and-cursors)."""
QUERY_MAX_CHARS: Final = 10_000
QUERY_MAX_TOKENS: Final = 256
"""A query's bounds: its cost grows with its tokens on every backend (PostgreSQL
refuses a phrase of some 25,000 with "stack depth limit exceeded")."""
SEQ_MIN: Final = -(2**63)
SEQ_MAX: Final = 2**63 - 1


def parse_query(query: object) -> tuple[str, ...]:
    """The query's tokens; NUL, non-strings, blank and oversized queries are typed
    errors.

    A query with no letter or digit (``"*"``, ``"()"``) is valid and matches
    nothing: its characters are data, and no document token equals them.
    """
    if type(query) is not str:
        raise SessionQueryError.invalid_search("the query must be a string")
    if "\x00" in query:
        raise SessionQueryError.invalid_search("the query contains NUL")
    if not query.strip():
        raise SessionQueryError.invalid_search("the query is empty")
    if len(query) > QUERY_MAX_CHARS:
        msg = f"the query is longer than {QUERY_MAX_CHARS:,} characters"
        raise SessionQueryError.invalid_search(msg)
    found = tuple(tokens(query))
    if len(found) > QUERY_MAX_TOKENS:
        msg = f"the query has more than {QUERY_MAX_TOKENS} words"
        raise SessionQueryError.invalid_search(msg)
    return found


def check_limit(limit: object) -> int:
    if type(limit) is not int or not 1 <= limit <= 1000:
        raise SessionQueryError.invalid_search("limit must be an integer 1..1000")
    return limit


@dataclass(frozen=True, slots=True)
class Match:
    """Where a phrase occurs in a text: how many tokens matched, and the first span."""

    matched_tokens: int
    document_tokens: int
    first: tuple[int, int]


def match(text: str, phrase: tuple[str, ...]) -> Match | None:
    """The phrase's occurrences in ``text`` (non-overlapping), or ``None``."""
    if not phrase:
        return None
    found = list(token_spans(text))
    words = [word for word, _, _ in found]
    spans = [(start, end) for _, start, end in found]
    size = len(phrase)
    count, first, index = 0, None, 0
    while index + size <= len(words):
        if tuple(words[index : index + size]) == phrase:
            count += 1
            if first is None:
                first = (spans[index][0], spans[index + size - 1][1])
            index += size
        else:
            index += 1
    if first is None:
        return None
    return Match(count * size, len(words), first)


def token_count(text: str) -> int:
    """The document's length in tokens (``domain.search_text.tokens``)."""
    return _token_count(text)


def time_key(time: Any) -> float:
    """``-time`` as a float (newer first); a non-numeric or unbounded time is 0."""
    if type(time) not in (int, float):
        return 0.0
    try:
        moment = float(time)
    except OverflowError:
        return 0.0
    return -moment if math.isfinite(moment) else 0.0


def seq_bound(seq: int) -> int:
    """A filter's seq bound as a 64-bit integer column compares it (stored seqs
    fit in 64 bits, so clamping changes no answer)."""
    return min(max(seq, SEQ_MIN), SEQ_MAX)


def time_bound(time: float) -> float:
    """A filter's time bound as the stored float column compares it: beyond
    every float, infinite (the database cannot bind a larger integer)."""
    try:
        return float(time)
    except OverflowError:
        return math.inf if time > 0 else -math.inf


def order_key(document_tokens: int, time: Any, session_id: str, seq: int) -> OrderKey:
    """Fewer document tokens, newer event, session id ascending, higher seq."""
    return (document_tokens, time_key(time), session_id, -seq)


def session_bound(key: OrderKey, session_id: str) -> OrderKey:
    """The bound ``key`` as a 3-part ``(tokens, -time, -seq)`` for one session.

    Within one session, ``k > key`` and ``k <= key`` hold exactly when the other
    three parts compare so with this triple's, so an index on
    ``(session id, tokens, -time, -seq)`` can seek to it. Returned with the
    session id in third place so it is still an ``OrderKey``.
    """
    length, moment, cursor_session, neg_seq = key
    if session_id < cursor_session:
        neg_seq = SEQ_MAX
    elif session_id > cursor_session:
        neg_seq = SEQ_MIN
    return (length, moment, session_id, neg_seq)


def snippet(text: str, span: tuple[int, int] | None) -> tuple[str, list[list[int]]]:
    """At most ``SNIPPET_MAX`` characters around the first match, one line.

    Every whitespace character becomes a space (offsets stay put); the match's
    ``[start, end)`` within the snippet is returned beside it (none without a
    ``span``: the text no longer holds the phrase).
    """
    if span is None:
        return _SPACE.sub(" ", text[:SNIPPET_MAX]), []
    start, end = span
    begin = max(0, start - SNIPPET_BEFORE)
    finish = min(len(text), max(end, begin + SNIPPET_MAX))
    if finish - begin > SNIPPET_MAX:
        finish = begin + SNIPPET_MAX
    piece = _SPACE.sub(" ", text[begin:finish])
    mark = [start - begin, min(end, finish) - begin]
    return piece, [mark]


# ------------------------------------------------------------------ cursors


def fingerprint(*parts: Any) -> str:
    """Which query a cursor belongs to: the scope, tokens and filters."""
    return hashlib.sha256(dumps(list(parts))).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class Cursor:
    """Where the next page starts: after ``key``; ``snapshot`` is the index's
    last document id when the first page was read (later documents are left
    out of later pages), ``None`` for a scan."""

    key: OrderKey
    snapshot: int | None = None


def encode_cursor(print_: str, key: OrderKey, snapshot: int | None = None) -> str:
    raw = dumps([print_, *key, snapshot])
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_cursor(cursor: object, print_: str) -> Cursor:
    """The key after which the next page starts; a foreign cursor is an error."""
    if type(cursor) is not str or not cursor.isascii():
        raise SessionQueryError.invalid_cursor()
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        value = loads(raw)
    except (ValueError, binascii.Error):
        raise SessionQueryError.invalid_cursor() from None
    if type(value) is not list or len(value) != 6 or value[0] != print_:
        raise SessionQueryError.invalid_cursor()
    _, length, moment, session_id, seq, snapshot = value
    if (
        (snapshot is not None and (type(snapshot) is not int or snapshot < 0))
        or (snapshot is not None and snapshot > SEQ_MAX)
        or type(length) is not int
        or not 0 <= length <= SEQ_MAX
        or type(moment) not in (int, float)
        or type(session_id) is not str
        or type(seq) is not int
        or not SEQ_MIN < seq <= SEQ_MAX
        or not math.isfinite(moment)
    ):
        raise SessionQueryError.invalid_cursor()
    return Cursor((length, float(moment), session_id, seq), snapshot)
