"""Start-up of the command line against the floor, measured in one interleaved run.

``python -m bench.startup [ROUNDS] [--before CHECKOUT]`` from a directory holding
a small store (``agentlog.db``): each round runs the floor (``python -c "import
eventsourcing.application"``), ``agentlog --help`` and ``agentlog ls``, and the
medians are printed with their ratios to the floor (docs/performance.md). With
``--before``, each round also runs both commands from another checkout of the
repository (its folder first on ``PYTHONPATH``), so a change is compared with
the code before it in the same run.

Every command runs once before the timed rounds, with bytecode writing allowed
(``PYTHONDONTWRITEBYTECODE`` is dropped for the children): a user's installed
package has its ``.pyc`` files, and compiling every module from source on every
run would be measured instead of the start-up.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

MODULE = "agentlog"


def commands(before: str | None) -> dict[str, tuple[list[str], dict[str, str]]]:
    """Each measured command and its environment."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    found = {
        "floor": ([sys.executable, "-c", "import eventsourcing.application"], env),
        "help": ([sys.executable, "-m", MODULE, "--help"], env),
        "ls": ([sys.executable, "-m", MODULE, "ls"], env),
    }
    if before is not None:
        old = {
            **env,
            "PYTHONPATH": os.pathsep.join(
                filter(None, [before, env.get("PYTHONPATH")])
            ),
        }
        found["help-before"] = ([sys.executable, "-m", MODULE, "--help"], old)
        found["ls-before"] = ([sys.executable, "-m", MODULE, "ls"], old)
    return found


def main(rounds: int, before: str | None) -> None:
    measured = commands(before)
    for argv, env in measured.values():  # warm: .pyc files written, caches filled
        subprocess.run(argv, capture_output=True, check=True, env=env)
    times: dict[str, list[float]] = {name: [] for name in measured}
    for _ in range(rounds):
        for name, (argv, env) in measured.items():
            start = time.perf_counter()
            subprocess.run(argv, capture_output=True, check=True, env=env)
            times[name].append(time.perf_counter() - start)
    floor = statistics.median(times["floor"])
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    print(f"{rounds} rounds, load average {load}")
    for name, values in times.items():
        median = statistics.median(values)
        print(f"{name:11} median {median * 1000:7.0f} ms  ratio {median / floor:4.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rounds", nargs="?", type=int, default=7)
    parser.add_argument("--before", metavar="CHECKOUT", help="Also time this checkout.")
    arguments = parser.parse_args()
    main(arguments.rounds, arguments.before)
