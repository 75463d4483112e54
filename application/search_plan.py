"""How an index answers a page: the matching documents in the search order.

One plan per query (docs/search.md#the-index). Unless the view finds a
phrase's matches in order itself (``SearchView.lists_in_order``: the SQLite
view, whose full-text ids follow the order's bands), the view is first asked
for the ids of the documents holding the phrase, up to :data:`RARE_CAP`:

- a *rare* phrase (at most that many documents): the page is those documents,
  filtered and sorted by their stored key inside the database;
- a *common* phrase: the view walks its index on the order key from the
  cursor on and tests each document against the full-text index, so it stops
  as soon as the page is full instead of reading every match.

Reads of one session use the ids too when the phrase is rare (asked for at the
first such read). All paths return the same documents in the same order
(tested by forcing each). ``search_sessions`` takes the first hit of each
session in that order (its strongest); after a cursor, a session with any hit
at or before the cursor's key was already listed (or outranked the cursor) and
is left out.
"""

from __future__ import annotations

from contextlib import closing, contextmanager
from itertools import chain, islice, repeat
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from collections.abc import Callable, Generator, Iterable, Iterator, Sequence

    from agentlog.application.search_index import (
        IndexedDocument,
        IndexQuery,
        SearchView,
    )
    from agentlog.application.search_match import OrderKey

RARE_CAP = 20_000
"""Above this many matching documents a phrase is walked, not sorted: sorting
costs about a microsecond per match, a walk about ten per document it tests
(SQLite at 1,000,000 documents; docs/search-figures.md)."""
Strategy = Literal["ids", "walk"]
CHECK_BATCHES = (8, 32, 128, 256)
"""How many candidates the ``check`` gets at a time: few first (a page may
need few), then more, the last size repeated (each batch is one read of the
log)."""


class IndexPlan:
    """The documents of one query, in order, from one view.

    ``check`` is a test the view cannot run (the event filter's ``text``
    clause, which needs the text from the log), given candidates a batch at a
    time (:data:`CHECK_BATCHES`) so it can read their events at once; it
    answers, lazily, whether each passes. ``strategy`` forces a path.
    """

    def __init__(
        self,
        view: SearchView,
        query: IndexQuery,
        *,
        check: Callable[[Sequence[IndexedDocument]], Iterable[bool]] | None = None,
        strategy: Strategy | None = None,
    ) -> None:
        self.view = view
        self.query = query
        self.check = check
        own_cap = view.rare_cap()
        cap = RARE_CAP if own_cap is None else min(RARE_CAP, own_cap)
        self._cap = None if strategy == "ids" else cap
        self._ids: list[int] | None = None
        self._id_set: frozenset[int] | None = None
        self._asked = strategy == "walk" or not query.phrase
        self.empty = not query.phrase
        if not view.lists_in_order:
            self.empty = self.empty or self.ids == []

    @property
    def ids(self) -> list[int] | None:
        """The ids of the documents holding the phrase if it is rare, else
        ``None``; asked for once."""
        if not self._asked:
            self._asked = True
            query = self.query
            self._ids = self.view.matching_ids(query.phrase, self._cap, query.sessions)
            self._id_set = None if self._ids is None else frozenset(self._ids)
        return self._ids

    def _rows(
        self,
        reader: Any,
        *,
        batch: int,
        session_id: str | None = None,
        after: OrderKey | None = None,
        upto: OrderKey | None = None,
    ) -> Generator[IndexedDocument, None, None]:
        """Matching documents in order, read as they are consumed.

        One session's documents with a rare phrase are tested against the ids
        here, where a page checks sessions one by one (a view that does not
        list matches in order): sending every id to the database for each
        session would cost as much as the phrase has matches, per session."""
        if self.empty:
            return
        ids = None
        if session_id is not None or not self.view.lists_in_order:
            ids = self.ids
        own = session_id is not None and ids is not None
        own &= not self.view.lists_in_order
        rows = self.view.stream(
            reader,
            self.query,
            ids=ids,
            session_id=session_id,
            after=after,
            upto=upto,
            test=not own,
            batch=batch,
        )
        with closing(rows):
            candidates = (
                row for row in rows if not own or row.id in (self._id_set or ())
            )
            if self.check is None:
                yield from candidates
                return
            for size in chain(CHECK_BATCHES, repeat(CHECK_BATCHES[-1])):
                chunk = list(islice(candidates, size))
                if not chunk:
                    return
                for row, passed in zip(chunk, self.check(chunk), strict=True):
                    if passed:
                        yield row

    @contextmanager
    def _reading(self) -> Iterator[Any]:
        """The view's read transaction for this page, unless the ``check`` reads
        the log as rows come (no read may wait inside another)."""
        if self.check is not None:
            yield None
            return
        with self.view.reading() as reader:
            yield reader

    def sessions(self, after: OrderKey | None, limit: int) -> list[IndexedDocument]:
        """Up to ``limit + 1`` sessions' strongest hits after ``after``, in order."""
        if self.empty:
            return []
        page: list[IndexedDocument] = []
        seen: set[str] = set()
        with self._reading() as reader:
            earlier = None
            if after is not None and (self.view.lists_in_order or self.ids is not None):
                earlier = self._sessions_upto(reader, after)
            rows = self._rows(reader, after=after, batch=limit + 1)
            with closing(rows):
                for row in rows:
                    if row.session_id in seen:
                        continue
                    seen.add(row.session_id)
                    if after is not None and (
                        row.session_id in earlier
                        if earlier is not None
                        else self._any_upto(reader, row.session_id, after)
                    ):
                        continue
                    page.append(row)
                    if len(page) > limit:
                        break
        return page

    def _sessions_upto(self, reader: Any, key: OrderKey) -> set[str]:
        """The sessions with a hit at or before ``key``, from one read of the
        hits up to it: a view that lists matches in order, or a rare phrase's
        ids, reads about what the earlier pages read, where a test per session
        would read its documents (a query each: 250 ms for a second page on
        PostgreSQL at 100,000 events). A walk's phrase is checked per session,
        since reading its hits up to a deep cursor walks every earlier page."""
        rows = self._rows(reader, upto=key, batch=64)
        with closing(rows):
            return {row.session_id for row in rows}

    def _any_upto(self, reader: Any, session_id: str, key: OrderKey) -> bool:
        """Whether the session has a hit at or before ``key``."""
        rows = self._rows(reader, session_id=session_id, upto=key, batch=8)
        with closing(rows):
            return next(rows, None) is not None

    def events(
        self, session_id: str, after: OrderKey | None, limit: int
    ) -> list[IndexedDocument]:
        """Up to ``limit + 1`` hits of one session after ``after``, in order."""
        with self._reading() as reader:
            rows = self._rows(
                reader, session_id=session_id, after=after, batch=limit + 1
            )
            with closing(rows):
                return list(islice(rows, limit + 1))
