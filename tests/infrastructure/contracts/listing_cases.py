"""The listing's and lineage's reads (``ListingView``, ``LineageView``): pages by
recency and by scope, headers, and the lineage walks, alike on every backend,
with rows stored plain or sealed (docs/encryption.md#the-views)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from eventsourcing.persistence import Tracking

from agentlog.application.scope import Scope
from agentlog.application.view_rows import LineageRow, ListingRow

if TYPE_CHECKING:
    from agentlog.application.projections import LineageView, ListingView

APP = "Sessions"
GROUPS = [("/a", "ann"), ("/a", None), ("/b", "ann"), ("/b", "bob")]


def listed(n: int) -> ListingRow:
    """Session ``s<n>``: its group cycles through ``GROUPS``; created at ``n``."""
    cwd, owner = GROUPS[n % len(GROUPS)]
    header: dict[str, Any] = {"id": f"s{n}", "createdAt": n, "cwd": cwd}
    if owner is not None:
        header["owner"] = owner
    return ListingRow(
        session_id=f"s{n}",
        header=header,
        created_at=n,
        cwd=cwd,
        owner=owner,
        event_count=n,
        updated_at=n,
        first_prompt=f"prompt {n}",
        first_prompt_seq=1,
        title=f"title {n}",
        title_seq=2,
    )


def save_all(view: Any, rows: list[Any]) -> None:
    keys = [row.session_id for row in rows]
    assert view.save(keys, lambda _: list(rows), Tracking(APP, 1))


class ListingCases:
    """``listing`` and ``lineage`` are fresh views of the backend."""

    def test_pages_are_newest_first_and_continue_after_a_key(
        self, listing: ListingView
    ) -> None:
        rows = [listed(n) for n in range(12)]
        save_all(listing, rows)
        newest = sorted(rows, key=lambda row: -(row.created_at or 0))
        assert listing.select_page(limit=5) == newest[:5]
        assert listing.select_page(limit=5, after=(7, "s7")) == newest[5:10]
        assert listing.select_page(limit=50) == newest

    def test_a_scope_selects_by_cwd_owner_and_id(self, listing: ListingView) -> None:
        rows = [listed(n) for n in range(12)]
        save_all(listing, rows)
        for scope in (
            Scope(cwd="/a"),
            Scope(owner="ann"),
            Scope(cwd="/a", owner=None),
            Scope(cwd="/b", owner="bob"),
            Scope(owner="nobody"),
            Scope(session_id="s5"),
            Scope(session_id="s5", cwd="/b"),
        ):
            wanted = sorted(
                (row for row in rows if row.header and scope.admits(row.header)),
                key=lambda row: -(row.created_at or 0),
            )
            assert listing.select_page(limit=50, scope=scope) == wanted, scope
            assert listing.select_page(limit=2, scope=scope) == wanted[:2], scope
            headers = listing.select_headers(scope=scope)
            assert sorted(h["id"] for h in headers) == sorted(
                row.session_id for row in wanted
            )
        assert len(listing.select_headers()) == len(rows)

    def test_lineage_children_subtree_and_ancestry(self, lineage: LineageView) -> None:
        def link(child: str, parent: str | None) -> LineageRow:
            header = {"id": child, "parentSession": parent, "cwd": f"/w/{child}"}
            return LineageRow(child, parent, 1, header)

        rows = [link("r", None), link("c1", "r"), link("c2", "r"), link("g", "c1")]
        save_all(lineage, rows)
        by_id = {row.session_id: row for row in rows}
        assert sorted(lineage.select_children("r"), key=lambda row: row.session_id) == [
            by_id["c1"],
            by_id["c2"],
        ]
        assert sorted(row.session_id for row in lineage.select_subtree("r")) == [
            "c1",
            "c2",
            "g",
        ]
        assert sorted(row.session_id for row in lineage.select_ancestry("g")) == [
            "c1",
            "g",
            "r",
        ]
        assert lineage.select_rows(["g"]) == {"g": by_id["g"]}
