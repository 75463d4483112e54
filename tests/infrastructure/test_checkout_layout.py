"""A checkout works with its symlinks, and without them fails at import in one
line, never importing another copy of agentlog (docs/backends.md, "Layout")."""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LAYERS = ("domain", "application", "infrastructure")
IMPORT_ALL = (
    "import agentlog.domain, agentlog.application, agentlog.infrastructure; "
    "print(agentlog.domain.__file__); print(agentlog.infrastructure.__file__)"
)

pytestmark = pytest.mark.slow


def run(args: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        args,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, **env},
        check=False,
    )


def clone(tmp_path: Path, name: str, *, symlinks: bool) -> Path:
    target = tmp_path / name
    setting = "true" if symlinks else "false"
    done = run(
        [
            "git",
            "-c",
            f"core.symlinks={setting}",
            "clone",
            "-q",
            str(ROOT),
            str(target),
        ],
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    return target


def fresh_venv(tmp_path: Path, source: Path) -> Path:
    """A new venv with ``source`` installed editable (its dependencies come
    from this interpreter's site-packages, on ``PYTHONPATH``)."""
    venv = tmp_path / f"venv-{source.name}"
    done = run([sys.executable, "-m", "venv", str(venv)], tmp_path)
    assert done.returncode == 0, done.stderr
    python = venv / "bin" / "python"
    done = run(
        [str(python), "-m", "pip", "install", "-q", "--no-deps", "-e", str(source)],
        tmp_path,
    )
    assert done.returncode == 0, done.stderr
    return python


def deps(tmp_path: Path) -> str:
    """This interpreter's installed packages, without its own agentlog install
    (its editable finder has the same module name as the fresh venv's)."""
    farm = tmp_path / "deps"
    if not farm.exists():
        farm.mkdir()
        for entry in Path(sysconfig.get_paths()["purelib"]).iterdir():
            if "agentlog" not in entry.name and entry.suffix != ".pth":
                (farm / entry.name).symlink_to(entry)
    return str(farm)


def test_a_checkout_with_symlinks_imports_its_own_code(tmp_path: Path) -> None:
    source = clone(tmp_path, "with-links", symlinks=True)
    python = fresh_venv(tmp_path, source)
    done = run([str(python), "-c", IMPORT_ALL], tmp_path, PYTHONPATH=deps(tmp_path))
    assert done.returncode == 0, done.stderr
    for line in done.stdout.splitlines():
        assert Path(line).resolve().is_relative_to(source.resolve())


def test_a_checkout_without_symlinks_fails_in_one_line(tmp_path: Path) -> None:
    source = clone(tmp_path, "no-links", symlinks=False)
    assert (source / "agentlog" / "domain").is_file()  # git's stand-in text file
    python = fresh_venv(tmp_path, source)
    done = run([str(python), "-c", IMPORT_ALL], tmp_path, PYTHONPATH=deps(tmp_path))
    assert done.returncode != 0
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("ImportError: agentlog at ")
    assert "is not a folder" in last and "symlinks" in last


def test_without_symlinks_another_installed_copy_is_never_imported(
    tmp_path: Path,
) -> None:
    """The venv holds one clone (with links) editable; code run inside a second,
    link-less clone finds that clone's ``agentlog`` first and must refuse."""
    installed = clone(tmp_path, "installed", symlinks=True)
    python = fresh_venv(tmp_path, installed)
    other = clone(tmp_path, "other", symlinks=False)
    done = run([str(python), "-c", IMPORT_ALL], other, PYTHONPATH=deps(tmp_path))
    assert done.returncode != 0
    assert str(installed) not in done.stdout
    assert "is not a folder" in done.stderr.strip().splitlines()[-1]
