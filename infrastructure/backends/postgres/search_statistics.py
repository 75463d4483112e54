"""How common a phrase's index elements are, so a page skips a wasted probe.

GIN lists no order and cannot stop early: asking it for "at most 2,049 ids"
of a word in 98% of the documents builds the bitmap of all of them and reads
2,049 rows (150 ms at 1,000,000 documents) before the plan walks anyway. So a
phrase that GIN would find by one element known to be common is walked at once:
a common word of the index (``word_pairs``: in 5% of the first 10,000
documents), or an element PostgreSQL's own statistics of the GIN expression
(``pg_stats.most_common_elems``, gathered by ``ANALYZE`` after a large
catch-up) put in more documents than the cap. The estimate only chooses a
path; every path returns the same documents (docs/search.md#how-a-page-is-answered).

The elements GIN is asked for leave out common words when the phrase has
another word: GIN holds every word of every document, the substring test is
exact, and a common word's list only slows the intersection.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from agentlog.infrastructure.backends.postgres import search_terms

if TYPE_CHECKING:
    from collections.abc import Collection, Sequence

REFRESH = 60.0
"""Seconds a process keeps the statistics it read (they change with ``ANALYZE``
and when the common words are chosen; a stale figure only costs time)."""


@dataclass(frozen=True, slots=True)
class Statistics:
    """What one read of the catalog says about the index's elements."""

    common: frozenset[str] | None
    """The index's common words (``None``: not chosen yet)."""
    frequencies: dict[str, float]
    """The share of documents holding each of PostgreSQL's most common elements."""
    documents: float
    """PostgreSQL's estimate of the documents' count."""
    read_at: float

    def fresh(self) -> bool:
        return time.monotonic() - self.read_at < REFRESH


def parse(
    common: str | None,
    elements: Sequence[str] | None,
    frequencies: Sequence[float] | None,
    documents: float | None,
) -> Statistics:
    """Statistics from the catalog's values (any of them may be missing)."""
    shares: dict[str, float] = {}
    if elements and frequencies:
        # The frequencies end with three summary figures (min, max, nulls).
        shares = dict(zip(elements, frequencies[: len(elements)], strict=True))
    return Statistics(
        None if common is None else frozenset(json.loads(common)),
        shares,
        max(float(documents or 0), 0.0),
        time.monotonic(),
    )


def driving(phrase: Sequence[str], common: Collection[str] | None) -> list[str]:
    """The elements GIN is asked for: the phrase's pairs if all its words are
    common (two or more), else its words less the common ones, unless that
    leaves none."""
    words = [search_terms.term(token) for token in phrase]
    if not common:
        return sorted(set(words))
    elements = search_terms.elements(words, common)
    if len(words) > 1 and all(word in common for word in words):
        return elements
    rarer = sorted({word for word in words if word not in common})
    return rarer or sorted(set(words))


def surely_common(phrase: Sequence[str], stats: Statistics, cap: int) -> bool:
    """Whether GIN would find the phrase by one element held by more than
    ``cap`` documents (a probe for its ids would be wasted)."""
    elements = driving(phrase, stats.common)
    if len(elements) != 1:
        # Several elements intersect: their own counts say little.
        return False
    (element,) = elements
    if stats.common and element in stats.common:
        return True
    share = stats.frequencies.get(element)
    return share is not None and share * stats.documents > cap
