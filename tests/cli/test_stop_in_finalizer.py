"""A stop while starting whose handler runs inside a finalizer or a weakref
callback (importlib's module locks have one) is not lost, and not printed.

Python swallows what such a callback raises and prints ``Exception ignored in
...``: the early-signal test saw a SIGINT land in importlib's module-lock
callback. The entry keeps every stop it raised and exits with the one line once
its imports are done; its unraisable hook keeps Python from printing the
swallowed one. The signal is raised by the process itself inside ``__del__``:
no timing involved.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.cli.conftest import catching_stop_signals

pytestmark = pytest.mark.slow  # signals to agentlog processes

SCRIPT = """
import gc, os, signal, sys
{install}

class Finalized:
    def __del__(self):
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):  # the handler runs here, inside __del__
            pass

try:
    Finalized()
    gc.collect()
    for _ in range(1000):
        pass
    print("went on")
except KeyboardInterrupt as stop:
    print("stopped by", type(stop).__name__)
print("kept:", [stop.signal_name for stop in entry._arrived])
"""


def test_a_stop_swallowed_by_a_finalizer_while_starting_is_kept() -> None:
    install = (
        "import agentlog.__main__ as entry\n"
        "signal.signal(signal.SIGINT, entry._raise_stopped)"
    )
    run = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(install=install)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        preexec_fn=catching_stop_signals,
    )
    assert (run.stdout, run.stderr) == ("went on\nkept: ['SIGINT']\n", "")
