"""Benchmark runner: every system side by side, one run, one machine, ratios.

``python -m bench.run --size small|full --out results.md``

Builds each fixture once per system, then runs every workload round-robin over
the systems (a discarded warm-up round first, then the median of N), each
sample in a fresh worker process (``worker.py``), and writes a markdown report
(times, ratios to the floor, the issue's targets met/missed, storage) plus the
raw numbers as JSON beside it. It asserts nothing about time.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
WORKER = "bench.worker"
SYSTEMS = ("floor", "raw_eventsourcing", "agentlog", "openai_agents", "langgraph")
BEFORE = "before"  # agentlog at the checkout given by --before (worker.BEFORE)
JOB_TIMEOUT = 3600.0


@dataclass(frozen=True)
class Size:
    """How big each workload is, and how many samples to take."""

    name: str
    w1_messages: int
    w1_warmup_messages: int
    quadratic_cap: int
    main_messages: int
    short_events: int
    long_events: int
    list_small: int
    list_big: int
    list_messages: int
    ref_messages: int
    write_repeats: int
    read_repeats: int
    warmup_round: bool


SIZES = {
    "tiny": Size(
        name="tiny",
        w1_messages=40,
        w1_warmup_messages=0,
        quadratic_cap=40,
        main_messages=60,
        short_events=150,
        long_events=600,
        list_small=3,
        list_big=8,
        list_messages=20,
        ref_messages=10,
        write_repeats=1,
        read_repeats=1,
        warmup_round=False,
    ),
    "small": Size(
        name="small",
        w1_messages=1_000,
        w1_warmup_messages=100,
        quadratic_cap=500,
        main_messages=1_000,
        short_events=1_000,
        long_events=10_000,
        list_small=100,
        list_big=1_000,
        list_messages=20,
        ref_messages=100,
        write_repeats=3,
        read_repeats=5,
        warmup_round=True,
    ),
    "full": Size(
        name="full",
        w1_messages=10_000,
        w1_warmup_messages=1_000,
        quadratic_cap=1_000,
        main_messages=10_000,
        short_events=1_000,
        long_events=100_000,
        list_small=100,
        list_big=10_000,
        list_messages=20,
        ref_messages=1_000,
        write_repeats=3,
        read_repeats=5,
        warmup_round=True,
    ),
}
"""``full`` is the issue's sizes; ``small`` a tenth (minutes); ``tiny`` for CI."""


@dataclass
class Cell:
    """One (workload, system) result."""

    samples: list[float] = field(default_factory=list)
    error: str | None = None
    na: str | None = None
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def median(self) -> float | None:
        """Median of the measured samples, if any."""
        return statistics.median(self.samples) if self.samples else None


@dataclass(frozen=True)
class Case:
    """A timed cold operation on a fixture (row titles live in report.py)."""

    key: str
    op: str
    fixture: str
    feature: str


CASES = (
    # Reads first: W4 and W5 then add forks and steps to the fixtures.
    Case("W2a", "read_all", "main", "w2a"),
    Case("W2b", "read_tail", "main", "w2b"),
    Case("W2b-short", "read_tail", "short", "w2b"),
    Case("W2b-long", "read_tail", "long", "w2b"),
    Case("W3-small", "list", "list_small", "w3"),
    Case("W3-big", "list", "list_big", "w3"),
    Case("W6", "read_all", "compact", "w6"),
    Case("W6-ref", "read_all", "ref", "w6"),
    Case("W4", "fork", "main", "w4"),
    Case("W5-short", "append", "short", "w5"),
    Case("W5-long", "append", "long", "w5"),
)


def _log(text: str) -> None:
    sys.stderr.write(text + "\n")
    sys.stderr.flush()


class Runner:
    """Orchestrates builds and samples; keeps every result for the report."""

    def __init__(
        self,
        size: Size,
        workdir: Path,
        systems: tuple[str, ...] = SYSTEMS,
        before: Path | None = None,
    ) -> None:
        self.size = size
        self.workdir = workdir
        self.before = before
        """Another checkout: its agentlog runs too, as the system ``before``."""
        self.requested = (*systems, BEFORE) if before is not None else systems
        self.available: list[str] = []
        self.probes: dict[str, dict[str, Any]] = {}
        self.refs: dict[tuple[str, str], dict[str, Any]] = {}
        self.builds: dict[tuple[str, str], dict[str, Any]] = {}
        self.cells: dict[tuple[str, str], Cell] = {}
        self.appends: dict[tuple[str, str], int] = {}
        self._jobs = 0
        self.loads: list[float] = []
        self.started = time.time()

    # -- worker protocol -----------------------------------------------------------

    def job(
        self, system: str, op: str, db: Path | None, args: dict[str, Any]
    ) -> dict[str, Any]:
        """Run one worker process; return its result dict (``ok`` False on failure)."""
        self._jobs += 1
        jobs = self.workdir / "jobs"
        jobs.mkdir(parents=True, exist_ok=True)
        path = jobs / f"{self._jobs:05d}-{system}-{op}.json"
        out = path.with_suffix(".out.json")
        job = {"system": system, "op": op, "db": str(db), "args": args, "out": str(out)}
        if system == BEFORE:
            job["checkout"] = str(self.before)
        path.write_text(json.dumps(job))
        # Other work on the machine skews every figure: keep the evidence.
        self.loads.append(os.getloadavg()[0])
        try:
            proc = subprocess.run(
                [sys.executable, "-m", WORKER, str(path)],
                cwd=REPO_ROOT,
                capture_output=True,
                text=True,
                timeout=JOB_TIMEOUT,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return {"ok": False, "error": f"timed out after {JOB_TIMEOUT:.0f} s"}
        if not out.exists():
            tail = (proc.stderr or "").strip().splitlines()[-3:]
            return {"ok": False, "error": f"worker died ({proc.returncode}): {tail}"}
        result: dict[str, Any] = json.loads(out.read_text())
        return result

    def db(self, system: str, fixture: str) -> Path:
        """Each fixture in its own SQLite file per system."""
        folder = self.workdir / system
        folder.mkdir(parents=True, exist_ok=True)
        return folder / f"{fixture}.db"

    # -- phases --------------------------------------------------------------------

    def probe(self) -> None:
        """Find out which systems can run, and their versions."""
        for system in self.requested:
            result = self.job(system, "probe", None, {})
            if not result.get("ok"):
                result = {"available": False, "reason": result.get("error")}
            self.probes[system] = result
            if result.get("available"):
                self.available.append(system)
            _log(f"probe {system}: {result.get('reason') or 'available'}")

    def _specs(self) -> dict[str, dict[str, Any]]:
        s = self.size
        return {
            "main": {"session_id": "main", "messages": s.main_messages},
            "short": {"session_id": "short", "events": s.short_events},
            "long": {"session_id": "long", "events": s.long_events},
            "ref": {"session_id": "ref", "messages": s.ref_messages},
            "list": {"messages": s.list_messages, "chunks": False, "title": True},
        }

    def features(self, system: str) -> set[str]:
        """What the adapter says it can do (from its probe)."""
        return set(self.probes.get(system, {}).get("features", ()))

    def _needs(self, system: str) -> list[str]:
        features = self.features(system)
        needed = []
        if features & {"w2a", "w2b", "w4", "w6"}:
            needed.append("main")
        if features & {"w2b", "w5"}:
            needed += ["short", "long"]
        if "w3" in features:
            needed += ["list_small", "list_big"]
        if "w6" in features:
            needed += ["ref", "compact"]
        return needed

    def build(self) -> None:
        """Write every fixture each system needs, with its batch write path."""
        specs = self._specs()
        for system in self.available:
            for fixture in self._needs(system):
                args: dict[str, Any]
                if fixture in ("list_small", "list_big"):
                    count = getattr(self.size, fixture)
                    args = {"kind": "listing", "count": count, "spec": specs["list"]}
                elif fixture == "compact":
                    if (system, "main") not in self.refs:
                        continue
                    args = {
                        "kind": "compact",
                        "spec": specs["main"],
                        "source_db": str(self.db(system, "main")),
                        "source_ref": self.refs[(system, "main")],
                    }
                else:
                    args = {"kind": "session", "spec": specs[fixture]}
                result = self.job(system, "build", self.db(system, fixture), args)
                self.builds[(system, fixture)] = result
                if result.get("ok"):
                    self.refs[(system, fixture)] = result["ref"]
                    _log(f"build {system}/{fixture}: {result['seconds']:.2f} s")
                else:
                    _log(f"build {system}/{fixture}: FAILED {result.get('error')}")

    def w1(self) -> None:
        """W1a/W1b: round-robin over systems, one sample per worker process."""
        s = self.size
        for flush, key in (("event", "W1a"), ("step", "W1b")):
            for system in self.available:
                self.cells[(key, system)] = Cell()
            for round_ in range(s.write_repeats):
                for system in self.available:
                    cell = self.cells[(key, system)]
                    if cell.error:
                        continue
                    messages = s.w1_messages
                    warmup = s.w1_warmup_messages
                    if self.probes[system].get("quadratic_writes"):
                        messages = min(messages, s.quadratic_cap)
                        warmup = min(warmup, max(messages // 10, 0))
                    args = {
                        "flush": flush,
                        "warmup_messages": warmup,
                        "spec": {"session_id": "w1", "messages": messages},
                    }
                    db = self.db(system, f"w1-{flush}")
                    result = self.job(system, "w1", db, args)
                    if not result.get("ok"):
                        cell.error = result.get("error")
                        _log(f"{key} {system}: FAILED {cell.error}")
                        continue
                    cell.samples.append(result["seconds"])
                    cell.info = result
                    _log(f"{key} {system} round {round_}: {result['seconds']:.3f} s")

    def cases(self) -> None:
        """Cold operations: warm-up round (discarded), then N measured rounds."""
        s = self.size
        rounds = s.read_repeats + (1 if s.warmup_round else 0)
        specs = self._specs()
        for case in CASES:
            for system in self.available:
                cell = self.cells[(case.key, system)] = Cell()
                if case.feature not in self.features(system):
                    cell.na = "no such feature"
                elif (system, case.fixture) not in self.refs:
                    build = self.builds.get((system, case.fixture), {})
                    cell.error = f"fixture: {build.get('error', 'not built')}"
            for round_ in range(rounds):
                measured = round_ >= rounds - s.read_repeats
                for system in self.available:
                    cell = self.cells[(case.key, system)]
                    if cell.na or cell.error:
                        continue
                    ref = self.refs[(system, case.fixture)]
                    args: dict[str, Any] = {"ref": ref}
                    if case.op == "fork":
                        args["child_id"] = f"{ref['session_id']}-fork-{round_}"
                    if case.op == "append":
                        index = self.appends.get((system, case.fixture), 0)
                        self.appends[(system, case.fixture)] = index + 1
                        args["append_index"] = index
                        args["spec"] = specs[case.fixture]
                    result = self.job(
                        system, case.op, self.db(system, case.fixture), args
                    )
                    if not result.get("ok"):
                        cell.error = result.get("error")
                        _log(f"{case.key} {system}: FAILED {cell.error}")
                        continue
                    if measured:
                        cell.samples.append(result["seconds"])
                    cell.info = result
                    _log(
                        f"{case.key} {system} round {round_}: "
                        f"{result['seconds'] * 1e3:.2f} ms"
                    )

    def run(self) -> None:
        """All phases in order (reads before the fork and append that change data)."""
        self.probe()
        if "floor" not in self.available:
            msg = f"the floor cannot run: {self.probes.get('floor')}"
            raise RuntimeError(msg)
        self.build()
        self.w1()
        self.cases()

    def to_json(self) -> dict[str, Any]:
        """Everything measured, for results.json and for tests."""
        return {
            "size": asdict(self.size),
            "machine": machine(),
            "probes": self.probes,
            "available": self.available,
            "builds": {f"{s}/{f}": r for (s, f), r in self.builds.items()},
            "cells": {
                f"{k}/{s}": {**asdict(c), "median": c.median}
                for (k, s), c in self.cells.items()
            },
            "elapsed_seconds": time.time() - self.started,
            "load_average": {
                "min": min(self.loads, default=0.0),
                "median": statistics.median(self.loads) if self.loads else 0.0,
                "max": max(self.loads, default=0.0),
            },
        }


def machine() -> dict[str, Any]:
    """Where the numbers come from."""
    return {
        "nproc": os.cpu_count(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "sqlite": sqlite3.sqlite_version,
    }


def main(argv: list[str] | None = None) -> int:
    """Command line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", choices=sorted(SIZES), default="small")
    parser.add_argument("--out", type=Path, default=Path("results.md"))
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--keep", action="store_true", help="keep the SQLite files")
    parser.add_argument(
        "--systems", default=",".join(SYSTEMS), help="comma-separated subset"
    )
    parser.add_argument(
        "--before",
        type=Path,
        default=None,
        help="another checkout: its agentlog is measured in the same run",
    )
    options = parser.parse_args(argv)
    from .report import render

    systems = tuple(s for s in options.systems.split(",") if s)
    unknown = set(systems) - set(SYSTEMS)
    if unknown:
        parser.error(f"unknown systems: {', '.join(sorted(unknown))}")
    if "floor" not in systems:
        systems = ("floor", *systems)
    workdir = options.workdir or Path(tempfile.mkdtemp(prefix="agentlog-bench-"))
    workdir.mkdir(parents=True, exist_ok=True)
    before = options.before.resolve() if options.before is not None else None
    runner = Runner(SIZES[options.size], workdir, systems, before)
    try:
        runner.run()
    finally:
        data = runner.to_json()
        options.out.write_text(render(data))
        options.out.with_suffix(".json").write_text(json.dumps(data, indent=1))
        if not options.keep and options.workdir is None:
            shutil.rmtree(workdir, ignore_errors=True)
    _log(f"wrote {options.out} in {data['elapsed_seconds']:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
