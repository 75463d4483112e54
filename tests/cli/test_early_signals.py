"""A stop signal during the command line's start (its imports, typer building the
command group, parsing) is the same one line and exit 130 as later in a command.

The console script's entry, :mod:`agentlog.__main__`, catches SIGINT and SIGTERM
before it imports anything heavy. Signals go to the installed console script at
delays from 0 to 0.5 s; the load decides where each lands, so every test accepts
each outcome a moment can give and none depends on speed. One moment no program
can cover: before the entry's first line (the interpreter starting, ``site``, the
console-script wrapper importing the entry). A signal there gets Python's own
behaviour: death by the signal, or, for SIGINT once the interpreter has its
handler, its ``KeyboardInterrupt`` report (an "Exception ignored in" one when
the signal lands in an import's callback, and the command then runs on), which
may show only the interpreter's and the entry's frames, never one of the
command line's imports.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import sysconfig
import time
from pathlib import Path

import pytest

from tests.cli.conftest import (
    CONSOLE_SCRIPT,
    REPO_ROOT,
    TIMEOUT,
    catching_stop_signals,
    cli_env,
)

pytestmark = [
    pytest.mark.slow,  # signals to agentlog processes
    pytest.mark.skipif(
        sys.platform == "win32", reason="POSIX signals to a child process"
    ),
]

DELAYS = [0.0, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.35, 0.5]
COMMANDS = [["--help"], ["--store", "memory:", "ls"]]
ENTRY_FILES = {
    REPO_ROOT / "agentlog" / "__init__.py",
    REPO_ROOT / "agentlog" / "__main__.py",
}
"""The only agentlog files a signal may find running before the handlers are set."""
_FRAME = re.compile(r'^  File "([^"]+)", line \d+', re.M)


def entry_program() -> list[str]:
    """The installed console script (``python -m agentlog`` where none is)."""
    if not CONSOLE_SCRIPT.exists():
        return [sys.executable, "-m", "agentlog"]
    wrapper = CONSOLE_SCRIPT.read_text(encoding="utf-8", errors="replace")
    assert "agentlog.__main__" in wrapper, (
        f"{CONSOLE_SCRIPT} is an older console script: run pip install -e ."
    )
    return [str(CONSOLE_SCRIPT)]


def before_agentlog_ran(frame_file: str) -> bool:
    """A frame a signal landing before the entry's handlers can show."""
    if frame_file.startswith("<"):  # <frozen site>, <string> (a .pth line)
        return True
    path = Path(frame_file).resolve()
    if path in ENTRY_FILES or path == CONSOLE_SCRIPT.resolve():
        return True
    stdlib = Path(sysconfig.get_paths()["stdlib"]).resolve()
    purelib = Path(sysconfig.get_paths()["purelib"]).resolve()
    if path.parent == purelib:  # the .pth hooks: editable finder, distutils shim
        return path.name.startswith(("__editable__", "_distutils_hack"))
    return stdlib in path.parents and purelib not in path.parents


def acceptable(signum: signal.Signals, code: int, stderr: str) -> bool:
    if code == 0:  # done before the signal; it is ignored while exiting
        return stderr == ""
    if code == 130:
        return stderr == f"interrupted by {signum.name}\n"
    if code == -signum and stderr == "":  # no handler yet: the default action
        return True
    # Python's report of its own KeyboardInterrupt, before the entry's handlers:
    # uncaught (exit 1 or -SIGINT), or swallowed in a callback of an import
    # ("Exception ignored in ...", the command then runs to its end).
    lines = stderr.rstrip().splitlines()
    if (
        signum == signal.SIGINT
        and code == 1
        and stderr.startswith("Fatal Python error: ")
        and "Python runtime state: core initialized" in stderr
        and all(before_agentlog_ran(file) for file in _FRAME.findall(stderr))
    ):
        # SIGINT while the interpreter itself still starts (its standard
        # streams not yet made): CPython's own fatal error, before any code of
        # the program could run (seen once in CI at 5 ms).
        return True
    return (
        signum == signal.SIGINT
        and code in (0, 1, -signal.SIGINT)
        and bool(lines)
        and lines[-1].rstrip(":") == "KeyboardInterrupt"
        and all(before_agentlog_ran(file) for file in _FRAME.findall(stderr))
    )


def stop_at(
    command: list[str], signum: signal.Signals, delay: float
) -> tuple[int, str]:
    process = subprocess.Popen(
        [*entry_program(), *command],
        env=cli_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=catching_stop_signals,
    )
    try:
        time.sleep(delay)
        process.send_signal(signum)
        _, stderr = process.communicate(timeout=TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return process.returncode, stderr.decode("utf-8", "replace")


def stop_handlers_set(pid: int) -> bool:
    """The entry's handlers are in place: the process catches SIGTERM (the
    interpreter alone leaves it at its default; the entry sets SIGINT's first)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text(encoding="ascii")
    except OSError:  # the process has exited
        return False
    (mask,) = re.findall(r"^SigCgt:\s*([0-9a-f]+)$", status, re.M)
    return bool(int(mask, 16) >> (signal.SIGTERM - 1) & 1)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
@pytest.mark.parametrize("command", COMMANDS, ids=["help", "ls"])
@pytest.mark.parametrize(
    "signum", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name
)
def test_a_signal_once_the_entry_caught_it_is_one_line_and_exit_130(
    command: list[str], signum: signal.Signals
) -> None:
    """Deterministic: the signal goes once ``/proc`` shows the entry's handlers
    set, so it lands while the command line still imports (or, at the latest,
    after the command finished, which exits 0 quietly)."""
    process = subprocess.Popen(
        [*entry_program(), *command],
        env=cli_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=catching_stop_signals,
    )
    try:
        deadline = time.monotonic() + TIMEOUT
        while not stop_handlers_set(process.pid) and process.poll() is None:
            assert time.monotonic() < deadline, "the entry never set its handlers"
            time.sleep(0.001)
        process.send_signal(signum)
        _, stderr = process.communicate(timeout=TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    outcome = (process.returncode, stderr.decode("utf-8", "replace"))
    assert outcome in {(130, f"interrupted by {signum.name}\n"), (0, "")}


@pytest.mark.quarantine
@pytest.mark.parametrize("command", COMMANDS, ids=["help", "ls"])
@pytest.mark.parametrize(
    "signum", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name
)
def test_a_signal_at_any_moment_of_the_start_is_one_line_and_exit_130(
    command: list[str], signum: signal.Signals
) -> None:
    """Quarantined (``-m quarantine`` runs it): signals at fixed delays land
    wherever the load puts them, including CPython's own start-up, whose outcomes
    no program controls and which kept growing (seen in CI one at a time). The
    test above checks agentlog's part deterministically."""
    outcomes = [(delay, *stop_at(command, signum, delay)) for delay in DELAYS]
    wrong = [outcome for outcome in outcomes if not acceptable(signum, *outcome[1:])]
    assert wrong == [], wrong


_RECORD_IMPORTS = """
import json, signal, sys
script = sys.argv[1]
unguarded = []
def hook(event, args):
    if event == "import" and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        unguarded.append(args[0])
sys.addaudithook(hook)
sys.argv = [script, "--help"]
code = compile(open(script, encoding="utf-8").read(), script, "exec")
try:
    exec(code, {"__name__": "__main__"})
except SystemExit:
    pass
sys.stderr.write("\\nUNGUARDED " + json.dumps(unguarded) + "\\n")
"""


@pytest.mark.skipif(not CONSOLE_SCRIPT.exists(), reason="no installed console script")
def test_the_console_script_sets_its_handlers_before_any_heavy_import() -> None:
    """The order the timing tests rely on, checked without timing: every module
    imported before SIGTERM is handled is the entry or the standard library's."""
    entry_program()  # the installed wrapper is the current one
    done = subprocess.run(
        [sys.executable, "-c", _RECORD_IMPORTS, str(CONSOLE_SCRIPT)],
        env=cli_env(),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    unguarded = json.loads(done.stderr.rpartition("UNGUARDED ")[2])
    outside = [
        name
        for name in unguarded
        # agentlog.lazy_exports: the package's PEP 562 helper, standard library only.
        if name not in {"agentlog", "agentlog.__main__", "agentlog.lazy_exports"}
        and name.partition(".")[0] not in sys.stdlib_module_names
    ]
    assert outside == []
    assert "agentlog.__main__" in unguarded  # the hook saw the entry's import
