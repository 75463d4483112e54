"""Every payload shape the original's producers wrote in the seed era is accepted.

``tests/data/seed_census.json`` is the seed-era field census of the original harness's
real logs: per event type, each field path with the JSON types seen (and how often).
For each type the test builds the *widest* payload the census allows — every path
present, so whatever kind a tagged value names, the fields it needs are there (extra
keys are allowed) — then, path by path and type by type, a payload with exactly that
shape, and checks the payload model accepts it. A path seen less often than the object
holding it was sometimes left out, so the payload without it must pass too.
Where the census and the spec disagree the census wins (docs/census-decisions.md).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from agentlog.application import Sessions
from agentlog.application.query import SessionQuery
from agentlog.domain.errors import PayloadError, UnsupportedSessionFormatError
from agentlog.domain.payloads import SessionHeader
from agentlog.domain.vocabulary import (
    CORE_TYPES,
    check_legacy,
    check_payload,
    declared,
)

CENSUS_FILE = Path(__file__).parent.parent / "data" / "seed_census.json"
CENSUS: dict[str, list[list[Any]]] = json.loads(CENSUS_FILE.read_text())["types"]
HEADER = "session"
LEGACY = frozenset({"request/header-delta"})
"""Types the census lists that the legacy rule refuses (docs/census-decisions.md)."""
TAGS = ("type", "kind")
SAMPLES: dict[str, Any] = {
    "int": 7,
    "fraction": 0.25,
    "bool": True,
    "null": None,
    "str": "x",
}


@dataclass(frozen=True)
class Row:
    path: str
    types: dict[str, int]
    values: list[str] = field(default_factory=list)

    @property
    def count(self) -> int:
        return sum(self.types.values())


@dataclass(frozen=True)
class Choice:
    """One shape to build: a type (and string value) at one path, or leave it out."""

    path: str = ""
    json_type: str = ""
    value: Any = None
    omit: bool = False


class Shapes:
    """The census rows of one event type, and payloads built from them."""

    def __init__(self, event_type: str) -> None:
        self.event_type = event_type
        self.rows = {
            path: Row(path, types, *rest) for path, types, *rest in CENSUS[event_type]
        }
        self.root = "" if event_type == HEADER else "data"

    def children(self, path: str) -> Iterator[str]:
        prefix = f"{path}." if path else ""
        for child in self.rows:
            rest = child.removeprefix(prefix)
            if (
                child.startswith(prefix)
                and rest
                and "." not in rest
                and "[" not in rest
            ):
                yield child

    def build(self, choice: Choice = Choice()) -> Any:
        if not self.root:
            return {
                key.rsplit(".", 1)[-1]: self._value(key, choice)
                for key in self.children("")
                if not (choice.omit and key == choice.path)
            }
        return self._value(self.root, choice)

    def _value(self, path: str, choice: Choice) -> Any:
        row = self.rows[path]
        json_type = next(iter(row.types))
        if choice.path.startswith(f"{path}[]"):
            json_type = "array"  # an ancestor of the chosen path holds it
        elif choice.path.startswith(f"{path}."):
            json_type = "object"
        elif path == choice.path and not choice.omit:
            json_type = choice.json_type
            if json_type == "str":
                return choice.value
        if json_type == "object":
            return {
                key.rsplit(".", 1)[-1]: self._value(key, choice)
                for key in self.children(path)
                if not (choice.omit and key == choice.path)
            }
        if json_type == "array":
            element = f"{path}[]"
            return [self._value(element, choice)] if element in self.rows else []
        if json_type == "str" and row.values:
            return row.values[0]
        return SAMPLES[json_type]

    def parent(self, path: str) -> Row | None:
        if path.endswith("[]") or "." not in path:
            return None
        return self.rows.get(path.rsplit(".", 1)[0])

    def tag_values(self, parent: str) -> list[Choice]:
        """The kinds a tagged object was seen with (none for a plain object)."""
        for tag in TAGS:
            row = self.rows.get(f"{parent}.{tag}")
            if row is not None and row.values:
                return [Choice(row.path, "str", value) for value in row.values]
        return []


def accepts(event_type: str, payload: Any) -> bool:
    try:
        if event_type == HEADER:
            SessionHeader.model_validate(payload)
        else:
            check_payload(event_type, payload)
    except (PayloadError, ValidationError):
        return False
    return True


def shape_cases() -> Iterator[Any]:
    for event_type in CENSUS:
        if event_type in LEGACY:
            continue
        shapes = Shapes(event_type)
        for row in shapes.rows.values():
            if not row.path.startswith(shapes.root):
                continue  # envelope keys: the surface rules' business
            for json_type in row.types:
                values = row.values if json_type == "str" and row.values else [None]
                if json_type == "str" and not row.values:
                    values = ["x"]
                for value in values:
                    choice = Choice(row.path, json_type, value)
                    yield pytest.param(
                        event_type,
                        choice,
                        id=f"{event_type}:{row.path}:{json_type}:{value}",
                    )


def omission_cases() -> Iterator[Any]:
    for event_type in CENSUS:
        if event_type in LEGACY:
            continue
        shapes = Shapes(event_type)
        top = max((row.count for row in shapes.rows.values()), default=0)
        for row in shapes.rows.values():
            if not row.path.startswith(shapes.root) or row.path == shapes.root:
                continue
            parent = shapes.parent(row.path)
            held = parent.count if parent is not None else top
            if parent is None and shapes.root:
                continue
            if row.count < held:
                yield pytest.param(event_type, row.path, id=f"{event_type}:-{row.path}")


@pytest.mark.parametrize(("event_type", "choice"), list(shape_cases()))
def test_every_seed_era_field_shape_is_accepted(
    event_type: str, choice: Choice
) -> None:
    payload = Shapes(event_type).build(choice)
    assert accepts(event_type, payload), payload


@pytest.mark.parametrize(("event_type", "path"), list(omission_cases()))
def test_a_field_the_producers_sometimes_left_out_may_be_absent(
    event_type: str, path: str
) -> None:
    """In a tagged object (``kind``/``type``), absent under at least one kind seen."""
    shapes = Shapes(event_type)
    parent = shapes.parent(path)
    kinds = shapes.tag_values(parent.path) if parent is not None else []
    if not kinds:
        payload = shapes.build(Choice(path, omit=True))
        assert accepts(event_type, payload), payload
        return
    assert any(
        accepts(event_type, _with(shapes, Choice(path, omit=True), kind))
        for kind in kinds
    )


def _with(shapes: Shapes, omitted: Choice, kind: Choice) -> Any:
    """The widest payload without ``omitted.path`` and with ``kind`` at its tag."""
    payload = shapes.build(omitted)
    node: Any = payload
    parts = kind.path.split(".")[1:] if shapes.root else kind.path.split(".")
    for part in parts[:-1]:
        node = node[part.removesuffix("[]")]
        if part.endswith("[]"):
            node = node[0]
    node[parts[-1]] = kind.value
    return payload


def test_the_census_examples_of_the_issue_are_accepted() -> None:
    """The three refusals the real logs met, named."""
    check_payload(
        "hook/result",
        {
            "turn": 1,
            "point": "Stop",
            "handlerId": "h",
            "decision": "pass",
            "durationMs": 12.5,
        },
    )
    error_without_message = {"kind": "error", "step": 1, "code": "AUTH"}
    check_payload("turn/end", {"turn": 1, "reason": error_without_message})
    check_payload(
        "request/header",
        {"header": {"config": {"model": "fake"}, "system": "s"}, "reason": "initial"},
    )


def test_json_numbers_are_still_typed() -> None:
    """Accepting fractions is not accepting anything: a bool or a string is no number."""
    base = {"turn": 1, "point": "Stop", "handlerId": "h", "decision": "pass"}
    for wrong in (True, "12", None):
        with pytest.raises(PayloadError, match="durationMs"):
            check_payload("hook/result", {**base, "durationMs": wrong})


def test_every_census_type_is_declared_undeclared_or_legacy() -> None:
    """Declared types are checked above; the rest are plugin types (any JSON data),
    except the legacy shape the original itself refuses."""
    for event_type in CENSUS:
        if event_type == HEADER:
            continue
        if event_type in LEGACY:
            with pytest.raises(UnsupportedSessionFormatError):
                check_legacy("s", event_type, {}, 0)
        elif declared(event_type) is None:
            check_payload(event_type, Shapes(event_type).build())


def test_the_census_file_is_the_seed_era_s() -> None:
    """A sanity check on the derived table itself, so a bad edit cannot hollow the
    tests above out: 26 types, 278 rows, every core type among them."""
    assert len(CENSUS) == 26
    assert sum(len(rows) for rows in CENSUS.values()) == 278
    assert set(CENSUS) >= CORE_TYPES
    assert len(list(shape_cases())) > 300


def census_log() -> list[dict[str, Any]]:
    """One event of the widest census shape per type, as a (non-strict) seed."""
    types = [t for t in CENSUS if t not in {HEADER, *LEGACY}]
    log: list[dict[str, Any]] = []
    for event_type in types:
        data = Shapes(event_type).build()
        known = declared(event_type)
        event = {"type": event_type, "seq": len(log), "time": len(log), "data": data}
        if known is not None and known.surface_eligible:
            event["surfaceOp"] = "append"
        log.append(event)
    return log


def test_a_log_of_every_census_shape_is_stored_and_read_back(
    make_app: Callable[..., Sessions],
) -> None:
    """The widest shape of every seed-era type, seeded, flushed and read by every
    read: no projection, view or query trips on a shape the models accept."""
    log = census_log()
    app = make_app()
    app.create_session(session_id="census", seed=log)
    app.flush()
    reader = make_app()
    assert reader.read_events("census") == log
    reader.messages("census")
    query = SessionQuery(reader)
    records = query.list_events("census")
    assert [(record.seq, record.type) for record in records] == [
        (event["seq"], event["type"]) for event in log
    ]
    assert {record.surface for record in records} == {"current", "log-only"}
    query.read_surface("census")
    query.read_title("census")
    assert "census" in [row.id for row in query.list_summaries().items]
