"""W3 alone: cold first pages of the listing, the systems taking turns.

``python -m bench.w3_cold --samples 15 [--sessions 100] [--before CHECKOUT]``

Builds the W3 store of each system once (its adapter's batch write path, as
``bench.run`` does), then times the operation ``bench.run`` times for W3
(``System(db)`` and ``list_page(50)`` in a fresh process whose imports are done),
one sample per system per round, the order reversed every other round. Prints
each system's minimum and median wall-clock and CPU time (``time.process_time``)
and their ratios to the floor's. A loaded machine stretches wall-clock samples
far more than CPU time, so on a shared machine the CPU minimum is the figure to
compare (docs/performance.md). Nothing here asserts on time.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from .run import SIZES, Runner
from .worker import BEFORE


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=15)
    parser.add_argument("--sessions", type=int, default=SIZES["small"].list_small)
    parser.add_argument("--before", type=Path, default=None)
    parser.add_argument("--workdir", type=Path, default=None)
    options = parser.parse_args(argv)
    workdir = options.workdir or Path(tempfile.mkdtemp(prefix="agentlog-w3-"))
    try:
        return _run(options, workdir)
    finally:
        if options.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)


def _run(options: argparse.Namespace, workdir: Path) -> int:
    """Build the stores in ``workdir``, take the samples, print the table."""
    before = options.before.resolve() if options.before is not None else None
    runner = Runner(SIZES["small"], workdir, ("floor", "agentlog"), before)
    runner.probe()
    systems = list(runner.available)
    if "floor" not in systems:
        print("the floor is unavailable", file=sys.stderr)
        return 1
    spec = {"messages": runner.size.list_messages, "chunks": False, "title": True}
    for system in systems:
        built = runner.job(
            system,
            "build",
            runner.db(system, "w3"),
            {"kind": "listing", "count": options.sessions, "spec": spec},
        )
        if not built.get("ok"):
            print(f"build {system}: {built.get('error')}", file=sys.stderr)
            return 1
    wall: dict[str, list[float]] = {system: [] for system in systems}
    cpu: dict[str, list[float]] = {system: [] for system in systems}
    for round_ in range(options.samples):
        for system in systems if round_ % 2 == 0 else systems[::-1]:
            result = runner.job(system, "list", runner.db(system, "w3"), {})
            if not result.get("ok"):
                print(f"{system}: {result.get('error')}", file=sys.stderr)
                return 1
            wall[system].append(result["seconds"])
            cpu[system].append(result["cpu"])
    loads = runner.loads
    print(
        f"W3, {options.sessions} sessions, {options.samples} cold samples per system; "
        f"load average {min(loads):.1f}-{max(loads):.1f} "
        f"(nproc {os.cpu_count()})"
    )
    for label, times in (("wall", wall), ("CPU", cpu)):
        floor_min = min(times["floor"])
        floor_median = statistics.median(times["floor"])
        for system in systems:
            xs = times[system]
            name = f"agentlog {BEFORE}" if system == BEFORE else system
            print(
                f"{label:4s} {name:15s} min {min(xs) * 1000:7.2f} ms "
                f"({min(xs) / floor_min:5.2f}x)  median "
                f"{statistics.median(xs) * 1000:7.2f} ms "
                f"({statistics.median(xs) / floor_median:5.2f}x)"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
