"""The search figures script runs end to end at a tiny size (no timing checked)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.benchmarks import search_figures


def test_figures_script_builds_indexes_and_times(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "corpus.db"
    argv = ["search_figures", "--sessions", "12", "--events", "10", "--repeat", "1"]
    monkeypatch.setattr(sys, "argv", [*argv, "--db", str(db)])
    search_figures.main()
    first = capsys.readouterr().out
    assert "corpus stored" in first and "catch-up from 0: 132 notifications" in first
    assert "x its text bytes" in first and "| 3-word phrase `w1 w2 w3` |" in first
    search_figures.main()  # the stored corpus is reused and indexed again
    second = capsys.readouterr().out
    assert "corpus reused" in second and "catch-up from 0: 132 notifications" in second
