"""Markdown report of one benchmark run: times, ratios, targets, storage.

Rendered from the runner's JSON only, so a saved ``results.json`` can be
re-rendered (``python -m bench.report results.json``).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

ROWS = (
    ("W1a", "W1a append {w1} msgs, flush per event"),
    ("W1b", "W1b append {w1} msgs, flush per step"),
    ("W2a", "W2a cold read, whole history of {main} msgs"),
    ("W2b", "W2b cold read, last 50 of {main} msgs"),
    ("W2b-short", "W2b last 50, {short} events"),
    ("W2b-long", "W2b last 50, {long} events"),
    ("W3-small", "W3 first page of 50, {list_small} sessions"),
    ("W3-big", "W3 first page of 50, {list_big} sessions"),
    ("W4", "W4 fork {main} msgs at midpoint + read child"),
    ("W5-short", "W5 cold append one step, {short} events"),
    ("W5-long", "W5 cold append one step, {long} events"),
    ("W6", "W6 read after compacting 90% of {main} msgs"),
    ("W6-ref", "W6 ref: derive {ref} msgs"),
)
FLATNESS = (
    ("W2b last-50 read, long / short session", "W2b-long", "W2b-short", 2.0),
    ("W5 cold append, long / short session", "W5-long", "W5-short", 2.0),
    ("W3 first page, many / few sessions", "W3-big", "W3-small", 1.5),
    ("W6 compacted read / ref-size derive", "W6", "W6-ref", 1.2),
)


def fmt_time(seconds: float | None) -> str:
    """Human scale: µs/ms/s with 3 significant digits."""
    if seconds is None:
        return "-"
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds:.3g} s"


def fmt_int(value: Any) -> str:
    """Thousands separators."""
    return f"{int(value):,}" if isinstance(value, int | float) else str(value)


class Report:
    """Reads the run's JSON and answers ratio questions about it."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data
        self.cells: dict[str, dict[str, Any]] = data["cells"]
        self.systems: list[str] = list(data["probes"])

    def label(self, system: str) -> str:
        """Display name of a system."""
        return str(self.data["probes"][system].get("label") or system)

    def cell(self, key: str, system: str) -> dict[str, Any] | None:
        """The result of one workload on one system."""
        return self.cells.get(f"{key}/{system}")

    def median(self, key: str, system: str) -> float | None:
        """Median seconds, or None when not measured."""
        cell = self.cell(key, system)
        return None if cell is None else cell.get("median")

    def per_message(self, key: str, system: str) -> float | None:
        """W1: seconds per message (sizes differ for capped peers)."""
        cell = self.cell(key, system)
        median = self.median(key, system)
        if cell is None or median is None:
            return None
        messages: int = cell["info"].get("messages", 1)
        return median / max(messages, 1)

    def ratio(self, key: str, system: str, base: str = "floor") -> float | None:
        """Time of ``system`` over time of ``base`` on the same workload."""
        if key.startswith("W1"):
            mine, theirs = self.per_message(key, system), self.per_message(key, base)
        else:
            mine, theirs = self.median(key, system), self.median(key, base)
        if mine is None or not theirs:
            return None
        return mine / theirs

    def within(self, system: str, key: str, base_key: str) -> float | None:
        """Time of one workload over another, same system (flatness)."""
        mine, base = self.median(key, system), self.median(base_key, system)
        if mine is None or not base:
            return None
        return mine / base

    def bytes_per_message(
        self, system: str, *, warmup: bool = False
    ) -> tuple[float, int] | None:
        """Storage of the W1b file (or its warm-up): bytes per message, messages."""
        cell = self.cell("W1b", system)
        if cell is None or not cell.get("samples"):
            return None
        info = cell["info"].get("warmup") if warmup else cell["info"]
        if not info or not info.get("messages"):
            return None
        return info["bytes"] / info["messages"], info["messages"]

    def status(self, key: str, system: str) -> str:
        """Cell text: time and ratio, or why there is none."""
        probe = self.data["probes"][system]
        if not probe.get("available"):
            return "unavailable"
        cell = self.cell(key, system)
        if cell is None:
            return "-"
        if cell.get("na"):
            return "n/a"
        if cell.get("error"):
            return "error"
        median = cell.get("median")
        if median is None:
            return "-"
        text = fmt_time(median)
        ratio = self.ratio(key, system)
        if ratio is not None and system != "floor":
            text += f" ({ratio:.2f}×)"
        if key.startswith("W1"):
            messages = cell["info"].get("messages", 0)
            text += f", {messages / median:,.0f} msg/s"
            if messages != self.size_value("w1_messages"):
                text += f" @{messages:,} msgs"
        return text

    def size_value(self, name: str) -> Any:
        """A field of the run's Size."""
        return self.data["size"][name]

    # -- sections ------------------------------------------------------------------

    def header(self) -> list[str]:
        """Run facts: when, where, what."""
        machine = self.data["machine"]
        size = self.data["size"]
        stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
        lines = [
            f"# agentlog benchmarks — size `{size['name']}`",
            "",
            f"Run {stamp}; {self.data.get('elapsed_seconds', 0):.0f} s wall. Machine: "
            f"nproc={machine['nproc']}, {machine['implementation']} "
            f"{machine['python']}, SQLite {machine['sqlite']}, {machine['platform']}.",
            self.load_line(),
            f"Samples: W1 median of {size['write_repeats']} (each after an in-process "
            f"warm-up at {fmt_int(size['w1_warmup_messages'])} msgs); cold cases "
            f"median of {size['read_repeats']}"
            + (" after a discarded warm-up round." if size["warmup_round"] else "."),
            "",
            "| system | status | versions |",
            "|---|---|---|",
        ]
        for system in self.systems:
            probe = self.data["probes"][system]
            status = "available" if probe.get("available") else probe.get("reason")
            versions = ", ".join(
                f"{k} {v}" for k, v in (probe.get("versions") or {}).items()
            )
            lines.append(f"| {self.label(system)} | {status} | {versions} |")
        return lines

    def load_line(self) -> str:
        """1-minute load average seen before each job (nproc is the quiet level)."""
        load = self.data.get("load_average")
        if not load:
            return "Load average: not recorded."
        return (
            f"Load average before jobs: min {load['min']:.1f}, median "
            f"{load['median']:.1f}, max {load['max']:.1f} (a value above nproc means "
            "other work shared the machine and skews absolute times; ratios within "
            "a round are less affected)."
        )

    def method(self) -> list[str]:
        """How to read the numbers."""
        return [
            "",
            "How to read: every figure comes from this one run on this machine. Time "
            "is the median; `(x×)` is the time over the floor's on the same "
            "workload (per message for W1), so lower is better and 1.00× is the "
            "floor. Cold cases run each sample in a fresh process; the timer covers "
            "opening the store and the operation, not interpreter imports. Messages "
            "are ~1 KiB, alternating user/assistant, every 10th a tool call + result; "
            "assistant text is streamed as 5 `assistant/chunk` events (5.4 events "
            "per message). Peers store messages only (no chunks). `n/a` = the "
            "system has no such feature; LangGraph's W1 runs at a capped size "
            "because each checkpoint stores the whole history.",
        ]

    def times(self) -> list[str]:
        """The main matrix."""
        size = self.data["size"]
        names = {
            "w1": fmt_int(size["w1_messages"]),
            "main": fmt_int(size["main_messages"]),
            "short": fmt_int(size["short_events"]),
            "long": fmt_int(size["long_events"]),
            "list_small": fmt_int(size["list_small"]),
            "list_big": fmt_int(size["list_big"]),
            "ref": fmt_int(size["ref_messages"]),
        }
        lines = [
            "",
            "## Times",
            "",
            "| workload | " + " | ".join(self.label(s) for s in self.systems) + " |",
            "|---|" + "---|" * len(self.systems),
        ]
        for key, title in ROWS:
            cells = " | ".join(self.status(key, s) for s in self.systems)
            lines.append(f"| {title.format(**names)} | {cells} |")
        return lines

    def targets(self) -> list[str]:
        """The issue's targets for agentlog, met or missed."""

        def thr(system: str) -> float | None:
            per = self.per_message("W1b", system)
            return None if per is None else 1 / per

        def div(a: float | None, b: float | None) -> float | None:
            return None if a is None or not b else a / b

        agent_bytes = self.bytes_per_message("agentlog")
        floor_bytes = self.bytes_per_message("floor")
        rows: list[tuple[str, float | None, str, float]] = [
            (
                "W1b throughput ≥ 0.5× raw eventsourcing",
                div(thr("agentlog"), thr("raw_eventsourcing")),
                "≥",
                0.5,
            ),
            (
                "W1b throughput ≥ 1× OpenAI add_items (one call per step)",
                div(thr("agentlog"), thr("openai_agents")),
                "≥",
                1.0,
            ),
            ("W2a time ≤ 2× the floor", self.ratio("W2a", "agentlog"), "≤", 2.0),
            (
                "W2a ≥ 5× faster than LangGraph get_state",
                div(self.median("W2a", "langgraph"), self.median("W2a", "agentlog")),
                "≥",
                5.0,
            ),
        ]
        for title, key, base, limit in FLATNESS:
            rows.append(
                (f"{title} ≤ {limit}×", self.within("agentlog", key, base), "≤", limit)
            )
        rows.append(
            (
                "storage bytes/message ≤ 1.5× the floor",
                div(
                    agent_bytes[0] if agent_bytes else None,
                    floor_bytes[0] if floor_bytes else None,
                ),
                "≤",
                1.5,
            )
        )
        lines = [
            "",
            "## Targets (agentlog)",
            "",
            "| target | measured | verdict |",
            "|---|---|---|",
        ]
        available = self.data["probes"].get("agentlog", {}).get("available")
        for title, value, op, limit in rows:
            if value is None:
                verdict = "not measured" if available else "agentlog unavailable"
                lines.append(f"| {title} | - | {verdict} |")
                continue
            met = value >= limit if op == "≥" else value <= limit
            lines.append(
                f"| {title} | {value:.2f}× | {'met' if met else '**missed**'} |"
            )
        return lines

    def before_after(self) -> list[str]:
        """agentlog against another checkout's (``run --before``), same run."""
        probe = self.data["probes"].get("before")
        if not probe or not probe.get("available"):
            return []
        lines = [
            "",
            "## Before and after (agentlog)",
            "",
            f"`before` is agentlog at `{probe.get('checkout')}`, measured in this run "
            "with its own adapter, its samples taken in turn with the floor's and "
            "agentlog's. Ratios to the floor; after / before under 1 is faster.",
            "",
            "| workload | before | after | after / before |",
            "|---|---|---|---|",
        ]
        for key, _ in ROWS:
            old, new = self.ratio(key, "before"), self.ratio(key, "agentlog")
            if old is None or new is None:
                continue
            lines.append(f"| {key} | {old:.2f}× | {new:.2f}× | {new / old:.2f} |")
        return lines

    def flatness(self) -> list[str]:
        """The same size-sensitivity ratios for every system, for context."""
        lines = [
            "",
            "## Size sensitivity (every system)",
            "",
            "| ratio | " + " | ".join(self.label(s) for s in self.systems) + " |",
            "|---|" + "---|" * len(self.systems),
        ]
        for title, key, base, _ in FLATNESS:
            values = []
            for system in self.systems:
                value = self.within(system, key, base)
                values.append("-" if value is None else f"{value:.2f}×")
            lines.append(f"| {title} | " + " | ".join(values) + " |")
        return lines

    def storage(self) -> list[str]:
        """Bytes per message of the W1b files, and how they grow with length."""
        lines = [
            "",
            "## Storage (W1b files, WAL checkpointed)",
            "",
            "| system | bytes/msg | vs floor | bytes/msg at warm-up size | growth |",
            "|---|---|---|---|---|",
        ]
        floor = self.bytes_per_message("floor")
        for system in self.systems:
            full = self.bytes_per_message(system)
            if full is None:
                continue
            warm = self.bytes_per_message(system, warmup=True)
            ratio = f"{full[0] / floor[0]:.2f}×" if floor else "-"
            warm_text = f"{warm[0]:,.0f} @{warm[1]:,} msgs" if warm else "-"
            growth = f"{full[0] / warm[0]:.2f}×" if warm else "-"
            lines.append(
                f"| {self.label(system)} | {full[0]:,.0f} @{full[1]:,} msgs | {ratio} "
                f"| {warm_text} | {growth} |"
            )
        return lines

    def builds(self) -> list[str]:
        """Fixture build times (batch write path; informative only)."""
        lines = ["", "## Fixture builds (informative)", ""]
        rows = []
        for name, result in sorted(self.data.get("builds", {}).items()):
            if result.get("ok"):
                ref = result["ref"]
                rows.append(
                    f"| {name} | {fmt_time(result['seconds'])} | "
                    f"{ref['n_events']:,} | {ref['n_messages']:,} | "
                    f"{result['bytes']:,} |"
                )
            else:
                rows.append(f"| {name} | failed: {result.get('error')} | | | |")
        if rows:
            lines += [
                "| system/fixture | build | events (last session) | messages | bytes |",
                "|---|---|---|---|---|",
                *rows,
            ]
        return lines

    def problems(self) -> list[str]:
        """Errors and disagreements, so nothing silently drops out."""
        lines: list[str] = []
        for name, cell in sorted(self.cells.items()):
            if cell.get("error"):
                lines.append(f"- `{name}`: {cell['error']}")
        ours = ("floor", "raw_eventsourcing", "agentlog", "before")
        for key in ("W2a", "W2b", "W4", "W6", "W6-ref"):
            digests = {}
            for system in ours:
                found = self.cell(key, system)
                if found and found.get("samples"):
                    digests[system] = (
                        found["info"].get("count"),
                        found["info"].get("digest"),
                    )
            if len(set(digests.values())) > 1:
                lines.append(f"- `{key}`: derived histories differ: {digests}")
        if not lines:
            return [
                "",
                "No errors; floor, raw eventsourcing and agentlog derived equal histories.",
            ]
        return ["", "## Problems", "", *lines]


def render(data: dict[str, Any]) -> str:
    """The whole markdown document."""
    report = Report(data)
    parts = (
        report.header()
        + report.method()
        + report.times()
        + report.targets()
        + report.before_after()
        + report.flatness()
        + report.storage()
        + report.builds()
        + report.problems()
    )
    return "\n".join(parts) + "\n"


if __name__ == "__main__":
    source = Path(sys.argv[1])
    sys.stdout.write(render(json.loads(source.read_text())))
