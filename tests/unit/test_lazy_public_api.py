"""``import agentlog`` is cheap: each public name is imported on first use.

The console script relies on it (its entry, ``agentlog.__main__``, must run before
the heavy imports). The names a type checker sees and the names imported at run
time are declared side by side in ``agentlog/__init__.py``; these tests keep the
two lists one.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import agentlog
from agentlog import application

INIT = Path(agentlog.__file__)


def checker_imports() -> dict[str, str]:
    """Each name imported under ``if TYPE_CHECKING:`` and its module."""
    tree = ast.parse(INIT.read_text(encoding="utf-8"))
    (block,) = [
        node
        for node in tree.body
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
    ]
    return {
        alias.name: str(node.module)
        for node in block.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }


def test_the_runtime_exports_are_the_names_checkers_see() -> None:
    assert checker_imports() == agentlog._EXPORTS
    assert sorted(agentlog._EXPORTS) == sorted(agentlog.__all__)


@pytest.mark.parametrize("name", agentlog.__all__)
def test_every_public_name_resolves_to_its_module_object(name: str) -> None:
    module = importlib.import_module(agentlog._EXPORTS[name])
    assert getattr(agentlog, name) is getattr(module, name)
    assert name in dir(agentlog)


@pytest.mark.parametrize("name", application.__all__)
def test_every_name_of_the_application_package_resolves(name: str) -> None:
    """Its lazy table (``_HOMES``) lists every exported name."""
    module = importlib.import_module(application._HOMES[name])
    assert getattr(application, name) is getattr(module, name)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        agentlog.Nope  # noqa: B018
    with pytest.raises(ImportError):
        from agentlog import Nope  # noqa: F401


@pytest.mark.slow
def test_importing_agentlog_imports_none_of_its_layers() -> None:
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, agentlog; "
            "print(sorted(m for m in sys.modules if m.startswith('agentlog')))",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout
    assert loaded.strip() == "['agentlog', 'agentlog.lazy_exports']"
