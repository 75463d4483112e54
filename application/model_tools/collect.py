"""One tool call, many pages: following search cursors up to a cap.

A model never sees a cursor or a page size. A search call pages through the query
service here until it has ``cap`` results it may show, and reports whether more
existed (``capped``), so the tool can say so instead of silently cutting.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Final, Generic, Protocol, TypeVar

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)
PAGE_MAX: Final = 1000
"""The query service's largest page (docs/search.md)."""
DEFAULT_MAX_SEARCH_RESULTS: Final = 100


class Page(Protocol[T_co]):
    @property
    def items(self) -> Sequence[T_co]: ...

    @property
    def next_cursor(self) -> str | None: ...


@dataclass(frozen=True, slots=True)
class Collected(Generic[T]):
    """At most ``cap`` results, and whether at least one more was left out."""

    items: list[T]
    capped: bool


def collect(
    fetch: Callable[[str | None, int], Page[T]],
    cap: int,
    keep: Callable[[T], bool] = lambda _: True,
    *,
    dropped: int = 0,
) -> Collected[T]:
    """Pages from ``fetch(cursor, size)`` until ``cap`` kept items and one more,
    or the last page. A cursor seen twice is a broken source, never a loop.

    ``dropped`` is how many items ``keep`` may refuse at most: the first page asks
    for that many more, so a refused item does not cost a second page.
    """
    size = min(PAGE_MAX, cap + 1 + dropped)
    items: list[T] = []
    seen: set[str] = set()
    cursor: str | None = None
    while True:
        page = fetch(cursor, size)
        for item in page.items:
            if not keep(item):
                continue
            if len(items) == cap:
                return Collected(items, capped=True)
            items.append(item)
        cursor = page.next_cursor
        if cursor is None:
            return Collected(items, capped=False)
        if cursor in seen:
            msg = "the search repeated a continuation cursor"
            raise RuntimeError(msg)
        seen.add(cursor)
