"""The SQL of the PostgreSQL search index's reads: how a phrase is found
(GIN, then the exact substring test), a walk's chunk, the filters.

The view (``search``) composes these into its statements; they hold no state.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from psycopg.sql import SQL, Composable

from agentlog.application.search_index import SURFACES, IndexedDocument
from agentlog.application.search_match import seq_bound, time_bound
from agentlog.infrastructure.backends.postgres import search_terms
from agentlog.infrastructure.views import decode_text, encode_text

if TYPE_CHECKING:
    from collections.abc import Collection, Sequence

    from psycopg import Cursor
    from psycopg.rows import DictRow
    from psycopg.sql import Composed

    from agentlog.application.search_index import IndexQuery

CHUNK = SQL(
    "SELECT * FROM (SELECT w.session_id, w.neg_seq, w.type, w.surface, "
    "w.doc_tokens, w.neg_time, w.id, row_number() OVER k AS n, "
    "lead(true) OVER k IS NULL AS last, strpos(w.terms, {1}) > 0 AS hit "
    "FROM ({0} LIMIT %s) AS w "
    "WINDOW k AS (ORDER BY w.doc_tokens, w.neg_time, w.session_id, w.neg_seq)) "
    "AS x WHERE x.hit OR x.last "
    "ORDER BY x.doc_tokens, x.neg_time, x.session_id, x.neg_seq"
)
"""A walk's chunk: the next documents in key order, tested above their
``LIMIT`` (on the chunk's rows only, whatever plan finds them); only the
matches come back, and the last document tested with its rank ``n``.
Formatted with the chunk's query and the phrase's pattern (:class:`Matching`)."""
ELEMENTS = SQL("string_to_array(btrim(terms), ' ')")
"""The GIN-indexed expression (a query must spell it the same)."""
MATCH = SQL(
    "{0} @> (SELECT CASE WHEN (SELECT value::jsonb FROM {1} "
    "WHERE name = 'common') @> %s::jsonb THEN %s::text[] ELSE %s::text[] END) "
    "AND strpos(terms, %s) > 0"
)
"""A document holds the phrase: GIN finds the documents holding its pairs if
its words are all among the common words (read in the statement's own
snapshot), else its tokens; the substring test is exact. Formatted with the
GIN expression and the meta table; parameters from :func:`match_params`."""
HASHED_PATTERN = SQL("(%s::jsonb ->> encode({0}session_id, 'hex'))")
"""A hashed index's pattern of the phrase for a document: its session's own
(a JSON object by the session id's hex), ``NULL`` for a session without one."""
HASHED_MATCH = SQL(
    "id IN (SELECT m.id FROM unnest(%s::text[]) AS a(anchor) CROSS JOIN LATERAL "
    "(SELECT id FROM {0} WHERE {1} @> ARRAY[a.anchor]) AS m) "
    "AND strpos(terms, {2}) > 0"
)
"""A hashed index's match: GIN finds the documents holding one hashed token of
the phrase of each session (each session spells it differently, so a document
found holds its own session's), one index probe per session, and the substring
test of its own session's pattern is exact. (``elements && array``, one
condition for all, was planned as a scan of every document, testing each
against the whole array: minutes at 3,000 sessions.) Formatted with the
documents' table, the GIN expression and :data:`HASHED_PATTERN`."""
HASHED_IDS = SQL(
    "SELECT array_agg(id) AS ids FROM (SELECT d.id FROM unnest(%s::text[]) "
    "AS a(anchor) CROSS JOIN LATERAL (SELECT id, terms, session_id FROM {0} "
    "WHERE {1} @> ARRAY[a.anchor]) AS d WHERE strpos(d.terms, {2}) > 0 "
    "LIMIT %s) AS m"
)
"""A hashed index's ids of the phrase's documents: :data:`HASHED_MATCH`
driven by its probes, one session after another, up to the limit."""


@dataclass(frozen=True, slots=True)
class Matching:
    """How one read finds and tests the phrase: ``match`` (GIN, then exact) and
    ``pattern`` (a document's pattern, for the substring test), each with its
    parameters."""

    match: Composable
    match_params: list[Any]
    pattern: Composable
    pattern_params: list[Any]
    walk_pattern: Composable
    """``pattern`` of the walk's chunk rows (``w.``)."""


def document(record: DictRow) -> IndexedDocument:
    return IndexedDocument(
        decode_text(record["session_id"]),
        -record["neg_seq"],
        decode_text(record["type"]),
        SURFACES[record["surface"]],
        record["doc_tokens"],
        float(record["neg_time"]),
        record["id"],
    )


def match_params(phrase: Sequence[str], common: Collection[str] | None) -> list[Any]:
    """The parameters of :data:`MATCH`: the phrase's stored words (as JSON,
    to compare with the common words), its pairs, the words GIN is asked for
    otherwise (``common``, as this process last read them, left out if the
    phrase has another word: GIN holds every word, so any subset is exact
    with the substring test), its substring."""
    words = [search_terms.term(token) for token in phrase]
    every_pair = search_terms.elements(words, set(words))
    rarer = sorted({word for word in words if not common or word not in common})
    return [
        json.dumps(words if len(words) > 1 else ["_"]),
        every_pair,
        rarer or sorted(set(words)),
        search_terms.pattern(phrase),
    ]


def common_words(curs: Cursor[DictRow], meta: Composed) -> frozenset[str] | None:
    """The common words once chosen (``None`` before), in the caller's transaction."""
    curs.execute(SQL("SELECT value FROM {0} WHERE name = 'common'").format(meta))
    record = curs.fetchone()
    return None if record is None else frozenset(json.loads(record["value"]))


def filters(query: IndexQuery, params: list[Any]) -> list[Composable]:
    """The event filter's columns and the session sets as SQL (``params`` grows)."""
    wanted = query.wanted
    where: list[Composable] = []
    if wanted.seq_from is not None:
        where.append(SQL("neg_seq <= %s"))
        params.append(seq_bound(-wanted.seq_from))
    if wanted.seq_to is not None:
        where.append(SQL("neg_seq >= %s"))
        params.append(seq_bound(-wanted.seq_to))
    if wanted.time_from is not None or wanted.time_to is not None:
        where.append(SQL("timed"))
    if wanted.time_from is not None:
        where.append(SQL("-neg_time >= %s"))
        params.append(time_bound(wanted.time_from))
    if wanted.time_to is not None:
        where.append(SQL("-neg_time <= %s"))
        params.append(time_bound(wanted.time_to))
    if wanted.types is not None:
        where.append(SQL("type = ANY(%s)"))
        params.append([encode_text(kind) for kind in wanted.types])
    if wanted.surfaces is not None:
        where.append(SQL("surface = ANY(%s)"))
        params.append([SURFACES.index(surface) for surface in wanted.surfaces])
    if query.snapshot is not None:
        where.append(SQL("id <= %s"))
        params.append(query.snapshot)
    if query.sessions is not None:
        where.append(SQL("session_id IN (SELECT unnest(%s::bytea[]))"))
        params.append([encode_text(s) for s in query.sessions])
    if query.excluded:
        where.append(SQL("NOT session_id IN (SELECT unnest(%s::bytea[]))"))
        params.append([encode_text(s) for s in query.excluded])
    return where
