"""Which phrases PostgreSQL walks without asking GIN for their ids (pure rules)."""

from __future__ import annotations

from agentlog.infrastructure.backends.postgres.search_statistics import (
    Statistics,
    driving,
    parse,
    surely_common,
)


def stats(common: set[str] | None, **shares: float) -> Statistics:
    return Statistics(
        None if common is None else frozenset(common), shares, 1000.0, 0.0
    )


def test_the_driving_elements_leave_out_common_words_unless_all_are() -> None:
    assert driving(("the", "cat"), {"the"}) == ["cat"]
    assert driving(("the",), {"the"}) == ["the"]
    assert driving(("is", "not", "none"), {"is", "not", "none"}) == [
        "is_not",
        "not_none",
    ]
    assert driving(("the", "cat"), None) == ["cat", "the"]
    assert driving(("cat", "cat"), {"the"}) == ["cat"]


def test_only_one_element_known_to_be_common_skips_the_probe() -> None:
    assert surely_common(("the",), stats({"the"}), 2048)
    assert not surely_common(("the", "cat"), stats({"the"}), 2048)
    # PostgreSQL's statistics: a share of the documents' estimate.
    assert surely_common(("cat",), stats(None, cat=0.5), 100)
    assert not surely_common(("cat",), stats(None, cat=0.05), 100)
    assert not surely_common(("dog",), stats(None, cat=0.5), 100)
    # Two elements intersect: their counts say nothing of the phrase's.
    assert not surely_common(("cat", "dog"), stats(None, cat=0.5, dog=0.5), 100)
    # A pair of common words is one element.
    assert surely_common(("is", "not"), stats({"is", "not"}, is_not=0.5), 100)


def test_the_catalogs_values_parse_with_any_of_them_missing() -> None:
    parsed = parse('["a", "b"]', ["a", "x"], [0.5, 0.1, 0.1, 0.5, 0.0], 10.0)
    assert parsed.common == frozenset({"a", "b"})
    assert parsed.frequencies == {"a": 0.5, "x": 0.1}
    assert parsed.documents == 10.0
    empty = parse(None, None, None, None)
    assert (empty.common, empty.frequencies, empty.documents) == (None, {}, 0.0)
    assert parse(None, None, None, -1.0).documents == 0.0
