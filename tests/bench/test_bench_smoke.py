"""Keeps the benchmark suite from rotting: every workload, every system, tiny size.

Asserts only that results are produced (no timing). A system that cannot run
here (an optional peer not installed, the agentlog core absent) is skipped with
its probe's reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

from bench.report import ROWS, render
from bench.run import SIZES, SYSTEMS, Runner

pytestmark = pytest.mark.slow  # every sample runs in a fresh process

if TYPE_CHECKING:
    from pathlib import Path


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One tiny run of the whole suite, shared by the tests below."""
    runner = Runner(SIZES["tiny"], tmp_path_factory.mktemp("bench"))
    runner.run()
    return runner.to_json()


@pytest.mark.parametrize("system", SYSTEMS)
def test_every_workload_produces_a_result(results: dict[str, Any], system: str) -> None:
    """Each workload the system supports yields a time; the rest say n/a."""
    probe = results["probes"][system]
    if not probe["available"]:
        pytest.skip(f"{system} unavailable: {probe['reason']}")
    for key, _ in ROWS:
        cell = results["cells"][f"{key}/{system}"]
        if cell["na"]:
            continue
        assert cell["error"] is None, f"{key}: {cell['error']}"
        assert cell["samples"], key
        assert cell["info"]


def test_report_renders(results: dict[str, Any], tmp_path: Path) -> None:
    """The markdown report has every section and a row per workload."""
    text = render(results)
    out = tmp_path / "results.md"
    out.write_text(text)
    for heading in ("## Times", "## Targets (agentlog)", "## Storage"):
        assert heading in text
    assert text.count("\n| W") >= len(ROWS)


def test_the_live_listing_benchmark_runs(tmp_path: Path) -> None:
    from bench.live_listing import measure

    result = measure(f"sqlite:///{tmp_path}/live.db", 120)
    assert result.live_handles == 120
    assert result.with_live_ms > 0 and result.without_live_ms > 0


@pytest.mark.parametrize("encrypted", [False, True])
def test_the_encryption_cost_benchmark_runs(tmp_path: Path, encrypted: bool) -> None:
    from bench.encryption_cost import CASES, one_round, store

    with store(False, tmp_path, encrypted) as env:
        times = one_round(300, env, 0)
    assert set(times) == set(CASES)
    assert all(seconds > 0 for seconds in times.values())


def test_the_sealed_search_benchmark_runs() -> None:
    """Hashed against plaintext search, tiny: its table, and the same pages."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "bench.sealed_search", "--sessions", "20"]
        + ["--events", "5", "--rounds", "1"],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    assert "| index catch-up |" in done.stdout
    assert "same pages on both stores: True" in done.stdout


def test_the_sealed_views_benchmark_runs(tmp_path: Path) -> None:
    from bench.encryption_cost import store
    from bench.sealed_views import CASES, fill, timed_cases

    for encrypted in (False, True):
        with store(False, tmp_path, encrypted) as env:
            fill(env, 60)
            times = timed_cases(env)
        assert set(times) == set(CASES)
        assert all(seconds > 0 for seconds in times.values())
