"""``bench.w3_cold`` runs at a tiny size (it asserts nothing on time)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from bench.w3_cold import main

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.slow  # every sample runs in a fresh process


def test_w3_cold_prints_each_system_against_the_floor(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--samples", "1", "--sessions", "3", "--workdir", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("W3, 3 sessions, 1 cold samples per system")
    for label in ("wall", "CPU"):
        for system in ("floor", "agentlog"):
            assert any(line.split()[:2] == [label, system] for line in lines), (
                label,
                system,
            )
