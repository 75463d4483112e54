"""The agent integrations' figure script runs at a tiny size (it cannot rot)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bench.agents_figures import sessions_figures, writer_figures


@pytest.mark.slow
def test_the_agents_figures_run(tmp_path: Path) -> None:
    figures = asyncio.run(sessions_figures(tmp_path, items=8, repeat=1))
    figures.update(writer_figures(tmp_path, steps=3))
    assert "agentlog get_items(limit=None) cold" in figures
    assert "ratio add_items per run p75" in figures
    assert "writer, one command per step" in figures
    assert all(value > 0 for value in figures.values())
