"""``surface --json`` and ``fork`` of a very long session stay under the memory bound.

The surface streams from the stored decision state a chunk of rows at a time, and a
fork copies the parent's rows in the database; neither holds the log. Same sizes as
the import test: 50,000 events by default, ``AGENTLOG_SCALE_EVENTS`` for the issue's
1,000,000 (marked ``scale``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.scale.generate import write_log
from tests.scale.test_import_memory import (
    BOUND_MB,
    DEFAULT_EVENTS,
    FULL_EVENTS,
    measured,
)

pytestmark = pytest.mark.slow  # measures agentlog processes' memory


def peak_mb(result: dict[str, object]) -> float:
    assert result["rc"] == 0, result["stderr"]
    return int(str(result["peak_kb"])) / 1024


def surface_and_fork(tmp_path: Path, events: int) -> None:
    log = tmp_path / "big.jsonl"
    with log.open("wb") as sink:
        written = write_log(sink, events)
    store = f"sqlite:///{tmp_path / 'store.db'}"
    assert measured("--store", store, "import", str(log))["rc"] == 0

    surface = measured("--store", store, "surface", "scale", "--json")
    surface_mb = peak_mb(surface)
    print(f"surface --json of {written} events: peak RSS {surface_mb:.0f} MB")
    assert surface_mb < BOUND_MB
    snapshot = json.loads(str(surface["stdout"]))
    assert snapshot["capturedThroughSeq"] == written - 1
    seqs = [event["seq"] for event in snapshot["events"]]
    assert seqs == [seq for seq in range(written) if seq % 6 in (1, 3)]

    boundary = (written // 12) * 6 - 1  # the turn/end in the middle
    fork = measured(
        "--store", store, "fork", "scale", "--at", str(boundary), "--id", "child"
    )
    fork_mb = peak_mb(fork)
    print(f"fork at {boundary} of {written} events: peak RSS {fork_mb:.0f} MB")
    assert fork_mb < BOUND_MB
    copy = tmp_path / "child.jsonl"
    assert measured("--store", store, "export", "child", "-o", str(copy))["rc"] == 0
    with log.open("rb") as parent, copy.open("rb") as child:
        parent.readline()
        child.readline()
        for _ in range(boundary + 1):
            assert child.readline() == parent.readline()
        assert child.readline() == b""


def test_surface_and_fork_stay_under_the_memory_bound(tmp_path: Path) -> None:
    surface_and_fork(tmp_path, DEFAULT_EVENTS)


@pytest.mark.scale
@pytest.mark.skipif(not FULL_EVENTS, reason="set AGENTLOG_SCALE_EVENTS to run")
def test_a_million_event_surface_and_fork_stay_under_the_memory_bound(
    tmp_path: Path,
) -> None:
    surface_and_fork(tmp_path, FULL_EVENTS)
