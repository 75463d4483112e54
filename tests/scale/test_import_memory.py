"""Import and export stream: peak memory stays bounded whatever the log's size.

Each test writes a generated log, runs the installed ``agentlog`` console script in a
child process, and reads the child's peak resident set size from the kernel
(``getrusage(RUSAGE_CHILDREN)`` of a one-child wrapper, so no other child counts).
The default suite runs 50,000 events (about 17 MB), where the reader that held the
whole log in memory already needed about 430 MB; ``AGENTLOG_SCALE_EVENTS=1000000``
runs the issue's full size (marked ``scale``; minutes on two cores).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.scale.generate import write_log

pytestmark = pytest.mark.slow  # measures agentlog processes' memory

BOUND_MB = 300
DEFAULT_EVENTS = 50_000
FULL_EVENTS = int(os.environ.get("AGENTLOG_SCALE_EVENTS", "0"))

_MEASURE = """
import json, resource, subprocess, sys, time
started = time.monotonic()
done = subprocess.run(sys.argv[1:], capture_output=True)
print(json.dumps({
    "rc": done.returncode,
    "stdout": done.stdout.decode(errors="replace"),
    "stderr": done.stderr.decode(errors="replace"),
    "peak_kb": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss,
    "seconds": time.monotonic() - started,
}))
"""


def agentlog() -> str:
    found = shutil.which("agentlog", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.skip("the agentlog console script is not installed")
    return found


def measured(*args: str) -> dict[str, object]:
    """Run the console script; its exit code, output, peak RSS (KB) and seconds."""
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, agentlog(), *args],
        capture_output=True,
        check=True,
    )
    result: dict[str, object] = json.loads(done.stdout)
    return result


def import_and_export(tmp_path: Path, events: int) -> None:
    log = tmp_path / "big.jsonl"
    with log.open("wb") as sink:
        written = write_log(sink, events)
    store = f"sqlite:///{tmp_path / 'store.db'}"
    started = time.monotonic()
    imported = measured("--store", store, "import", str(log))
    elapsed = time.monotonic() - started
    assert imported["rc"] == 0, imported["stderr"]
    assert imported["stdout"] == "scale\n"
    peak_mb = int(str(imported["peak_kb"])) / 1024
    print(
        f"import of {written} events ({log.stat().st_size / 2**20:.0f} MB):"
        f" peak RSS {peak_mb:.0f} MB, {written / elapsed:,.0f} events/s"
    )
    assert peak_mb < BOUND_MB
    copy = tmp_path / "copy.jsonl.zst"
    exported = measured("--store", store, "export", "scale", "-o", str(copy))
    assert exported["rc"] == 0, exported["stderr"]
    export_mb = int(str(exported["peak_kb"])) / 1024
    print(f"export: peak RSS {export_mb:.0f} MB")
    assert export_mb < BOUND_MB
    plain = tmp_path / "copy.jsonl"
    again = measured("--store", store, "export", "scale", "-o", str(plain))
    assert again["rc"] == 0, again["stderr"]
    assert plain.read_bytes() == log.read_bytes()


def test_import_and_export_stay_under_the_memory_bound(tmp_path: Path) -> None:
    import_and_export(tmp_path, DEFAULT_EVENTS)


@pytest.mark.scale
@pytest.mark.skipif(not FULL_EVENTS, reason="set AGENTLOG_SCALE_EVENTS to run")
def test_a_million_event_import_stays_under_the_memory_bound(tmp_path: Path) -> None:
    import_and_export(tmp_path, FULL_EVENTS)
