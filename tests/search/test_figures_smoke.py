"""The search figures script runs end to end at a tiny size (no timing checked)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from bench import search_figures

pytestmark = pytest.mark.slow  # the benchmark scripts' smoke tests are the full tier's


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


def test_realistic_corpus_is_indexed_queried_and_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "real.db"
    argv = ["search_figures", "--sessions", "6", "--events", "20", "--repeat", "1"]
    argv += ["--corpus", "realistic", "--db", str(db)]
    monkeypatch.setattr(sys, "argv", argv)
    search_figures.main()
    first = capsys.readouterr().out
    assert "catch-up from 0: 126 notifications" in first
    assert "- documents: 120 (assistant/message " in first  # every event a document
    for kind in ("tool/call", "tool/result", "user/message"):
        assert f", {kind} " in first
    assert "tokens/document" in first and "bytes/token" in first
    assert "| rare word `zyzzogeton` |" in first
    assert "| natural phrase `is not none` |" in first  # the stdlib's commonest
    assert "| top-3 tokens as a phrase `" in first
    search_figures.main()  # reused: the same queries, from the sidecar
    second = capsys.readouterr().out
    assert "corpus reused" in second
    table = [line for line in first.splitlines() if line.startswith("| ")]
    assert [line.split("|")[1:3] for line in table] == [
        line.split("|")[1:3] for line in second.splitlines() if line.startswith("| ")
    ]


def test_a_stored_corpus_is_not_reused_as_another(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "corpus.db"
    argv = ["search_figures", "--sessions", "2", "--events", "5", "--repeat", "1"]
    monkeypatch.setattr(sys, "argv", [*argv, "--db", str(db)])
    search_figures.main()
    monkeypatch.setattr(sys, "argv", [*argv, "--db", str(db), "--corpus", "realistic"])
    with pytest.raises(SystemExit):
        search_figures.main()
    assert "holds corpus zipf, not realistic" in capsys.readouterr().err
