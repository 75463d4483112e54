"""``agentlog schema``: the vocabulary reference of the installed version, no store."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from tests.cli.conftest import REPO_ROOT, run_cli

if TYPE_CHECKING:
    from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # every test runs the agentlog command in a process


def test_schema_prints_the_committed_json_schema(tmp_path: Path) -> None:
    result = run_cli("schema", cwd=tmp_path).ok()
    committed = (REPO_ROOT / "docs" / "vocabulary.schema.json").read_text("utf-8")
    assert result.stdout == committed
    schema = json.loads(result.stdout)
    assert "tool/call" in json.dumps(schema)
    assert list(tmp_path.iterdir()) == [], "schema opens no store"


def test_schema_markdown_prints_the_committed_reference(tmp_path: Path) -> None:
    result = run_cli("schema", "--markdown", cwd=tmp_path).ok()
    assert result.stdout == (REPO_ROOT / "docs" / "vocabulary.md").read_text("utf-8")
