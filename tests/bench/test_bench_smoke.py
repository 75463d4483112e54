"""Keeps the benchmark suite from rotting: every workload, every system, tiny size.

Asserts only that results are produced (no timing). A system that cannot run
here (an optional peer not installed, the agentlog core absent) is skipped with
its probe's reason.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench.report import ROWS, render
from bench.run import SIZES, SYSTEMS, Runner

pytestmark = pytest.mark.slow  # every sample runs in a fresh process


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


BEFORE_PROBE = """
import json, sys
from pathlib import Path
from bench.worker import system_class
cls = system_class("before", sys.argv[1])
cls.preload()
import agentlog, application
print(json.dumps([cls.__module__, agentlog.__file__, application.__file__]))
"""


def test_before_loads_the_checkouts_adapter_and_agentlog(tmp_path: Path) -> None:
    """``run --before CHECKOUT``: the worker's ``before`` system is the checkout's
    adapter over the checkout's agentlog, not this one's (a copy of this one here)."""
    import json
    import shutil
    import subprocess
    import sys

    repo = Path(__file__).resolve().parents[2]
    checkout = tmp_path / "checkout"
    for folder in ("agentlog", "application", "domain", "infrastructure", "bench"):
        shutil.copytree(repo / folder, checkout / folder, symlinks=True)
    done = subprocess.run(
        [sys.executable, "-c", BEFORE_PROBE, str(checkout)],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    module, agentlog_file, application_file = json.loads(done.stdout)
    assert module == "before_bench.agentlog_system"
    assert Path(agentlog_file).is_relative_to(checkout)
    assert Path(application_file).is_relative_to(checkout)


def test_report_compares_before_and_after(results: dict[str, Any]) -> None:
    """With a ``before`` system, the report has its column and the ratios."""
    data = json.loads(json.dumps(results))
    data["probes"]["before"] = {
        **data["probes"]["agentlog"],
        "label": "agentlog before",
        "checkout": "/elsewhere",
    }
    for key, _ in ROWS:
        cell = data["cells"].get(f"{key}/agentlog")
        if cell is not None:
            data["cells"][f"{key}/before"] = cell
    text = render(data)
    assert "## Before and after (agentlog)" in text
    assert "| W5-long | " in text
    assert "| agentlog before |" in text


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
