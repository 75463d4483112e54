"""The views' contract (``agentlog.application.projections.View``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from eventsourcing.persistence import IntegrityError, Tracking

from agentlog.application.projections import BatchTracking
from agentlog.application.view_rows import LineageRow, ListingRow, TitleRow

if TYPE_CHECKING:
    from collections.abc import Callable

    from agentlog.application.projections import View

ROWS: dict[str, Callable[[str, int], Any]] = {
    "listing": lambda key, n: ListingRow(session_id=key, event_count=n),
    "titles": lambda key, n: TitleRow(session_id=key, seq=n, time=n, data={"n": n}),
    "lineage": lambda key, n: LineageRow(
        session_id=key, parent_session=None, created_at=n, header={"n": n}
    ),
}
APP = "Sessions"


def put(*rows: Any) -> Callable[[dict[str, Any]], list[Any]]:
    return lambda current: list(rows)


class ViewCases:
    """``view`` is a fresh view of the backend; ``row(session id, n)`` one of
    its rows, different for each ``n``."""

    def test_save_writes_rows_and_position_once(
        self, view: View[Any], row: Callable[[str, int], Any]
    ) -> None:
        assert view.save(["a", "b"], put(row("a", 1), row("b", 1)), Tracking(APP, 1))
        assert view.max_tracking_id(APP) == 1
        assert not view.save(["a"], put(row("a", 2)), Tracking(APP, 1))
        assert view.select_rows(["a", "b", "c"]) == {"a": row("a", 1), "b": row("b", 1)}
        assert view.save(["a"], put(row("a", 2)), Tracking(APP, 2))
        assert view.select_all() == [row("a", 2), row("b", 1)]

    def test_a_batch_is_recorded_only_from_the_position_it_starts_at(
        self, view: View[Any], row: Callable[[str, int], Any]
    ) -> None:
        """Two writers fold overlapping batches from the same position: the
        second is refused whole, unless the first covered it (then skipped)."""
        with pytest.raises(IntegrityError):
            view.save(["a"], put(row("a", 9)), BatchTracking(APP, 9, after=4))
        assert view.save(["a"], put(row("a", 1)), BatchTracking(APP, 5, after=0))
        assert not view.save(["a"], put(row("a", 9)), BatchTracking(APP, 3, after=0))
        with pytest.raises(IntegrityError):
            view.save(["a"], put(row("a", 9)), BatchTracking(APP, 9, after=0))
        with pytest.raises(IntegrityError):
            view.save(["a"], put(row("a", 9)), BatchTracking(APP, 9, after=4))
        assert view.select_all() == [row("a", 1)]
        assert view.max_tracking_id(APP) == 5
        assert view.save(["b"], put(row("b", 2)), BatchTracking(APP, 9, after=5))
        assert view.max_tracking_id(APP) == 9
        assert view.select_all() == [row("a", 1), row("b", 2)]

    def test_merge_sees_the_current_rows_and_a_failing_merge_writes_nothing(
        self, view: View[Any], row: Callable[[str, int], Any]
    ) -> None:
        view.save(["a"], put(row("a", 1)), Tracking(APP, 1))
        seen: list[dict[str, Any]] = []

        def failing(current: dict[str, Any]) -> list[Any]:
            seen.append(dict(current))
            raise ValueError("merge")

        with pytest.raises(ValueError, match="merge"):
            view.save(["a", "b"], failing, Tracking(APP, 2))
        assert seen == [{"a": row("a", 1)}]
        assert view.max_tracking_id(APP) == 1
        assert view.select_all() == [row("a", 1)]

    def test_purge_deletes_the_sessions_rows_in_the_save(
        self, view: View[Any], row: Callable[[str, int], Any]
    ) -> None:
        view.save(["a", "b"], put(row("a", 1), row("b", 1)), Tracking(APP, 1))
        view.save([], put(), Tracking(APP, 2), purge=["a"])
        assert view.select_all() == [row("b", 1)]
        view.purge(["b", "unknown"])
        assert view.select_all() == []
        assert view.max_tracking_id(APP) == 2

    def test_clear_drops_rows_and_position(
        self, view: View[Any], row: Callable[[str, int], Any]
    ) -> None:
        view.save(["a"], put(row("a", 1)), Tracking(APP, 1))
        view.clear(APP)
        assert view.select_all() == []
        assert view.max_tracking_id(APP) is None
        assert view.save(["a"], put(row("a", 3)), Tracking(APP, 1))
