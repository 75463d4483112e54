"""agentlog as a consumer gets it: a wheel built from the source tree, installed
non-editable into a fresh virtual environment.

The wheel is built once per test session (shared by the xdist workers through a
lock) from a copy of the files a clean clone holds, with build isolation, so the
build backend is the one ``pyproject.toml`` names. The fresh venv has no pip and no
agentlog of its own beyond the wheel: its dependencies come from this venv's
site-packages through a plain ``.pth`` path line, which adds the directory to
``sys.path`` without running that directory's own ``.pth`` hooks, so the editable
install of the checkout stays invisible. Everything runs offline.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import sysconfig
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # builds and installs a wheel

fcntl = pytest.importorskip("fcntl")  # the shared build lock (POSIX)

REPO = Path(__file__).resolve().parents[2]
SOURCE_ITEMS = (
    *("pyproject.toml", "README.md", "agentlog"),
    *("domain", "application", "infrastructure"),
)
README_EXAMPLE = re.search(
    r"```python\n(.*?)```", (REPO / "README.md").read_text(encoding="utf-8"), re.S
)


@dataclass(frozen=True)
class Installed:
    wheel: Path
    python: Path


def _run(
    *args: str | Path, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(arg) for arg in args],
        cwd=cwd,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def _build_and_install(root: Path) -> Installed:
    source = root / "source"
    source.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info", "build")
    for item in SOURCE_ITEMS:
        path = REPO / item
        if path.is_dir():
            shutil.copytree(path, source / item, symlinks=True, ignore=ignore)
        else:
            shutil.copy2(path, source / item)
    built = _run(
        sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", root, source
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = root.glob("agentlog-*.whl")
    venv = root / "venv"
    made = _run(sys.executable, "-m", "venv", "--without-pip", venv)
    assert made.returncode == 0, made.stderr
    python = venv / ("Scripts/python.exe" if sys.platform == "win32" else "bin/python")
    purelib = _run(
        python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    ).stdout.strip()
    deps = sysconfig.get_paths()["purelib"]
    (Path(purelib) / "agentlog-test-deps.pth").write_text(deps + "\n")
    installed = _run(
        sys.executable,
        *("-m", "pip", "--python", python, "install", "-q"),
        *("--no-deps", "--no-index", wheel),
    )
    assert installed.returncode == 0, installed.stderr
    return Installed(wheel, python)


@pytest.fixture(scope="session")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    shared = tmp_path_factory.getbasetemp().parent  # one directory for all workers
    root = shared / "agentlog-wheel"
    with (shared / "agentlog-wheel.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = root / "installed.txt"
        if done.exists():
            wheel, python = done.read_text().splitlines()
            return Installed(Path(wheel), Path(python))
        if root.exists():
            shutil.rmtree(root)
        root.mkdir()
        result = _build_and_install(root)
        done.write_text(f"{result.wheel}\n{result.python}\n")
        return result


def test_the_wheel_holds_only_the_agentlog_package_and_py_typed(
    installed: Installed,
) -> None:
    names = zipfile.ZipFile(installed.wheel).namelist()
    tops = {name.split("/", 1)[0] for name in names}
    assert tops == {"agentlog", installed.wheel.name.split("-py3")[0] + ".dist-info"}
    assert "agentlog/py.typed" in names
    for layer in ("domain", "application", "infrastructure"):
        assert f"agentlog/{layer}/__init__.py" in names
    assert not [name for name in names if "__pycache__" in name or "/tests/" in name]


def test_the_readme_example_runs_beside_a_host_package_named_domain(
    installed: Installed, tmp_path: Path
) -> None:
    assert README_EXAMPLE is not None
    host = tmp_path / "service"
    (host / "domain").mkdir(parents=True)
    (host / "domain" / "__init__.py").write_text('ORDERS = "the host\'s own domain"\n')
    (host / "main.py").write_text(
        "import domain\n"
        + README_EXAMPLE.group(1)
        + 'assert domain.ORDERS == "the host\'s own domain"\n'
        + "import agentlog\nprint(agentlog.__file__)\n"
    )
    ran = _run(installed.python, "main.py", cwd=host)
    assert ran.returncode == 0, ran.stderr
    assert "'role': 'user'" in ran.stdout
    *_, location = ran.stdout.strip().splitlines()
    assert "site-packages" in location  # the wheel, not the checkout
    assert not location.startswith(str(REPO))


CONSUMER = """\
from __future__ import annotations

from agentlog import (
    AgentlogError,
    SessionHandle,
    SessionQuery,
    SessionQueryError,
    Sessions,
    TitleConfig,
)

reveal_type(Sessions().create_session())


def append_prompt(app: Sessions, text: str) -> int:
    handle: SessionHandle = app.create_session(cwd="/srv/app")
    user = {"kind": "user"}
    handle.append("turn/start", {"turn": 1, "trigger": {"kind": "message", "source": user}})
    event = handle.append(
        "user/message",
        {"content": [{"type": "text", "text": text}], "source": user},
        surface_op="append",
    )
    seq: int = event["seq"]
    return seq


def listed(app: Sessions) -> list[str]:
    try:
        return [record.header["id"] for record in SessionQuery(app).list_sessions()]
    except SessionQueryError as error:
        code: str | None = error.code
        raise AgentlogError(code) from error


LIMITS = TitleConfig(5, 40, 80)
"""


def test_a_consumer_type_checks_under_mypy_strict_with_the_wheel(
    installed: Installed, tmp_path: Path
) -> None:
    (tmp_path / "consumer.py").write_text(CONSUMER)
    checked = _run(
        sys.executable,
        *("-m", "mypy", "--strict", "--no-incremental"),
        *("--python-executable", installed.python, "consumer.py"),
        cwd=tmp_path,
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    (revealed,) = re.findall(r'Revealed type is "([^"]+)"', checked.stdout)
    assert revealed == "agentlog.application.handle.SessionHandle"
    assert "Any" not in revealed


def test_the_wheel_installs_the_agentlog_command(installed: Installed) -> None:
    """The console script enters through ``agentlog.__main__`` (stop signals are
    caught before the heavy imports: tests/cli/test_early_signals.py)."""
    script = installed.python.with_name("agentlog")
    assert "from agentlog.__main__ import main" in script.read_text()
    ran = _run(script, "--help")
    assert ran.returncode == 0, ran.stderr
    assert "Usage: agentlog" in ran.stdout
    assert _run(installed.python, "-m", "agentlog", "--help").stdout == ran.stdout
