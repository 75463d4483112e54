"""Lineage, pure (docs/query.md#lineage-trace): scenarios 108–112 on headers."""

from __future__ import annotations

from typing import Any

import pytest

from agentlog.domain.errors import LineageCycleError, SessionNotFoundError
from agentlog.domain.lineage import (
    IndexedCorpus,
    LineageTrace,
    trace_lineage,
    walk_nodes,
)


def h(session_id: str, created_at: int, parent: str | None = None) -> dict[str, Any]:
    head: dict[str, Any] = {"version": 0, "id": session_id, "createdAt": created_at}
    if parent is not None:
        head["parentSession"] = parent
    return head


def trace(headers: list[dict[str, Any]], target: str) -> LineageTrace[dict[str, Any]]:
    return trace_lineage(IndexedCorpus(headers, lambda header: header), target)


def ids(records: list[dict[str, Any]]) -> list[str]:
    return [record["id"] for record in records]


def test_pq_108_ancestors_root_and_sorted_descendant_trees() -> None:
    corpus = [
        h("root", 0),
        h("parent", 1, "root"),
        h("target", 2, "parent"),
        h("b", 4, "target"),
        h("a", 4, "target"),
        h("older", 3, "target"),
        h("grandchild", 5, "a"),
    ]
    result = trace(corpus, "target")
    assert result.target["id"] == "target"
    assert ids(result.ancestors) == ["parent", "root"]
    assert result.complete
    assert result.root is not None
    assert result.root["id"] == "root"
    assert [node.record["id"] for node in result.descendants] == ["older", "a", "b"]
    a = result.descendants[1]
    assert [node.record["id"] for node in a.descendants] == ["grandchild"]
    assert result.descendants[0].descendants == []


def test_pq_109_a_root_is_complete_and_a_missing_parent_is_not() -> None:
    alone = trace([h("r", 0)], "r")
    assert alone.complete
    assert alone.root is not None
    assert alone.root["id"] == "r"
    assert alone.ancestors == []
    assert alone.unresolved_parent_id is None
    orphan = trace([h("child", 1, "outside")], "child")
    assert not orphan.complete
    assert orphan.unresolved_parent_id == "outside"
    assert orphan.root is None
    assert orphan.ancestors == []


def test_known_ancestors_are_kept_when_the_walk_stops() -> None:
    result = trace([h("p", 1, "gone"), h("c", 2, "p")], "c")
    assert ids(result.ancestors) == ["p"]
    assert not result.complete
    assert result.unresolved_parent_id == "gone"


def test_pq_110_a_parent_cycle_is_invalid_lineage() -> None:
    corpus = [h("a", 1, "b"), h("b", 2, "a")]
    with pytest.raises(LineageCycleError) as caught:
        trace(corpus, "a")
    assert caught.value.session_id == "a"
    assert str(caught.value) == 'session lineage contains a cycle at "a"'
    with pytest.raises(SessionNotFoundError) as missing:
        trace(corpus, "nobody")
    assert str(missing.value) == 'session "nobody" not found'


def test_a_self_parent_is_a_cycle() -> None:
    with pytest.raises(LineageCycleError, match='cycle at "s"'):
        trace([h("s", 1, "s")], "s")


def test_cycles_not_connected_to_the_target_are_ignored() -> None:
    corpus = [h("t", 0), h("x", 1, "y"), h("y", 2, "x"), h("c", 3, "t")]
    result = trace(corpus, "t")
    assert [node.record["id"] for node in result.descendants] == ["c"]


def test_pq_111_one_list_no_loads() -> None:
    calls: list[str] = []

    class Corpus(IndexedCorpus[dict[str, Any]]):
        def record(self, session_id: str) -> dict[str, Any] | None:
            calls.append(session_id)
            return super().record(session_id)

    corpus = Corpus([h("p", 1), h("t", 2, "p")], lambda header: header)
    result = trace_lineage(corpus, "t")
    assert result.complete
    assert calls == ["t", "p"]


def test_pq_112_a_chain_3000_deep_builds_without_recursion() -> None:
    corpus = [h("s0", 0)] + [h(f"s{i}", i, f"s{i - 1}") for i in range(1, 3000)]
    result = trace(corpus, "s0")
    depths = [depth for depth, _ in walk_nodes(result.descendants)]
    assert max(depths) == 2999
    assert len(depths) == 2999
    deepest = trace(corpus, "s2999")
    assert len(deepest.ancestors) == 2999
    assert deepest.root is not None
    assert deepest.root["id"] == "s0"
