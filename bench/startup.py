"""Start-up of the command line against the floor, measured in one interleaved run.

``python -m bench.startup [ROUNDS]`` from a directory holding a small store
(``agentlog.db``): each round runs the floor (``python -c "import
eventsourcing.application"``), ``agentlog --help`` and ``agentlog ls``, and the
medians are printed with their ratios to the floor (docs/performance.md).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time


def main(rounds: int) -> None:
    commands = {
        "floor": [sys.executable, "-c", "import eventsourcing.application"],
        "help": ["agentlog", "--help"],
        "ls": ["agentlog", "ls"],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(rounds):
        for name, argv in commands.items():
            start = time.perf_counter()
            subprocess.run(argv, capture_output=True, check=True)
            times[name].append(time.perf_counter() - start)
    floor = statistics.median(times["floor"])
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:6} median {median * 1000:7.0f} ms  ratio {median / floor:4.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 7)
