"""The generated vocabulary reference: committed equals generated, and the schema
accepts what the store accepts and refuses what it refuses."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from agentlog.domain.vocabulary import PAYLOAD_MODELS
from agentlog.infrastructure.formats.jsonl import encode_header_line
from agentlog.infrastructure.schema_doc import (
    SCHEMA_FILE,
    VOCABULARY_FILE,
    main,
    vocabulary_json_schema,
    vocabulary_markdown,
    write_vocabulary_docs,
)
from tests.formats.samples import SEED_ERA

jsonschema = pytest.importorskip("jsonschema")

DOCS = Path(__file__).resolve().parents[2] / "docs"
REGENERATE = "python -m agentlog.infrastructure.schema_doc docs"


def test_committed_vocabulary_page_is_the_generated_one() -> None:
    committed = (DOCS / VOCABULARY_FILE).read_text(encoding="utf-8")
    assert committed == vocabulary_markdown(), f"stale: run {REGENERATE}"


def test_committed_schema_is_the_generated_one() -> None:
    committed = json.loads((DOCS / SCHEMA_FILE).read_text(encoding="utf-8"))
    assert committed == vocabulary_json_schema(), f"stale: run {REGENERATE}"


def test_every_declared_type_has_a_section_and_a_schema_rule() -> None:
    page = vocabulary_markdown()
    rules = vocabulary_json_schema()["allOf"]
    ruled = [rule["if"]["properties"]["type"]["const"] for rule in rules]
    assert ruled == list(PAYLOAD_MODELS)
    for event_type in PAYLOAD_MODELS:
        assert f"### `{event_type}`" in page


def test_write_and_main_write_both_files(tmp_path: Path) -> None:
    written = write_vocabulary_docs(tmp_path)
    assert sorted(p.name for p in written) == sorted([SCHEMA_FILE, VOCABULARY_FILE])
    (tmp_path / "again").mkdir()
    assert main([str(tmp_path / "again")]) == 0
    assert (tmp_path / "again" / VOCABULARY_FILE).read_text(
        encoding="utf-8"
    ) == vocabulary_markdown()
    assert main([]) == 2


@cache
def _validator() -> Any:
    """One validator for the whole module: building it checks the schema (seconds)."""
    schema = vocabulary_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("path", SEED_ERA, ids=lambda p: p.name)
def test_schema_accepts_every_event_of_a_real_log(path: Path) -> None:
    validator = _validator()
    lines = path.read_text(encoding="utf-8").splitlines()[1:]
    for line in lines:
        event = json.loads(line)
        errors = [e.message for e in validator.iter_errors(event)]
        assert errors == [], (event["type"], event["seq"], errors)


USER = {"kind": "user"}
GOOD = {
    "type": "user/message",
    "seq": 1,
    "time": 5,
    "data": {"content": [{"type": "text", "text": "hi"}], "source": USER},
    "surfaceOp": "append",
}


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"surfaceOp": None}, "a surface type needs its marker"),
        ({"data": {"content": "hi", "source": USER}}, "content is a list of blocks"),
        ({"data": {"content": [{"type": "text"}], "source": USER}}, "text needs text"),
        ({"seq": -1}, "seq is non-negative"),
        ({"surfaceOp": {"op": "replace", "start": 0}}, "replace needs start and end"),
        ({"extra": 1}, "the envelope is closed"),
        (
            {
                "type": "turn/start",
                "data": {"turn": 1, "trigger": {"kind": "message", "source": USER}},
            },
            "a log-only type cannot carry a marker",
        ),
    ],
)
def test_schema_refuses_what_the_store_refuses(
    change: dict[str, Any], why: str
) -> None:
    event = {**GOOD, **change}
    event = {key: value for key, value in event.items() if value is not None}
    assert not _validator().is_valid(event), why


def test_schema_accepts_unknown_kinds_and_plugin_types() -> None:
    validator = _validator()
    unknown_block = {
        **GOOD,
        "data": {
            "content": [{"type": "image", "url": "x"}],
            "source": {"kind": "cron"},
        },
    }
    plugin = {"type": "approval/asked", "seq": 0, "time": 0, "data": [1, "x"]}
    assert validator.is_valid(unknown_block)
    assert validator.is_valid(plugin)


def test_schema_accepts_an_exported_header_line_and_refuses_a_broken_one() -> None:
    """The first line of an export is a log line too (issue 22)."""
    validator = _validator()
    header = {
        "version": 0,
        "id": "s1",
        "createdAt": 5,
        "cwd": "/w",
        "parentSession": "p",
        "seedLength": 3,
        "owner": "ann",
    }
    line = json.loads(encode_header_line(header))
    assert [e.message for e in validator.iter_errors(line)] == []
    for path in SEED_ERA:
        first = json.loads(path.read_text(encoding="utf-8").splitlines()[0])
        assert [e.message for e in validator.iter_errors(first)] == [], path.name
    for broken in (
        {k: v for k, v in line.items() if k != "createdAt"},
        {k: v for k, v in line.items() if k != "delegationDepth"},
        {**line, "version": 1},
        {**line, "seedLength": -1},
        {**line, "id": 7},
    ):
        assert list(validator.iter_errors(broken)), broken
