"""The package imports without a cycle: no module needs one that needs it back.

The graph is read from the source (every ``import``, at module level or inside a
function, except ``TYPE_CHECKING`` blocks), so a cycle hidden behind a lazy import
counts too. ``from package import module`` is an edge to the package as well: it
runs the package's ``__init__``, which is how the command line had one (its
``__init__`` imported the commands, and the commands imported the package back).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
LAYERS = ("domain", "application", "infrastructure")


def module_files() -> dict[str, Path]:
    """``agentlog.<dotted name>`` to its file, for the three layer folders."""
    modules: dict[str, Path] = {}
    for layer in LAYERS:
        for path in (REPO_ROOT / layer).rglob("*.py"):
            parts = list(path.relative_to(REPO_ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join(["agentlog", *parts])] = path
    return modules


def _runtime_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    found: list[ast.Import | ast.ImportFrom] = []
    stack: list[ast.AST] = list(tree.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            stack.extend(node.orelse)
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        stack.extend(ast.iter_child_nodes(node))
    return found


def import_graph() -> dict[str, set[str]]:
    """Each module and the package modules it imports when it runs."""
    modules = module_files()
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in _runtime_imports(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Import):
                edges.update(alias.name for alias in node.names)
                continue
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0]
                base = f"{anchor}.{base}" if base else anchor
            edges.add(base)
            edges.update(f"{base}.{alias.name}" for alias in node.names)
        graph[name] = {edge for edge in edges if edge in modules} - {name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle as a path that returns to its start, or None (iterative DFS)."""
    state: dict[str, int] = {}  # 1 on the current path, 2 finished
    for root in sorted(graph):
        if root in state:
            continue
        path = [root]
        state[root] = 1
        iterators = [iter(sorted(graph[root]))]
        while iterators:
            following = next(iterators[-1], None)
            if following is None:
                state[path.pop()] = 2
                iterators.pop()
            elif state.get(following) == 1:
                return [*path[path.index(following) :], following]
            elif following not in state:
                state[following] = 1
                path.append(following)
                iterators.append(iter(sorted(graph[following])))
    return None


def test_the_package_has_no_import_cycle() -> None:
    cycle = find_cycle(import_graph())
    assert cycle is None, " -> ".join(cycle or [])


@pytest.mark.parametrize(
    ("graph", "has_cycle"),
    [
        ({"a": {"b"}, "b": {"c"}, "c": set()}, False),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}}, True),
        ({"pkg": {"pkg.cmd"}, "pkg.cmd": {"pkg"}}, True),
    ],
)
def test_the_cycle_finder_finds_cycles(
    graph: dict[str, set[str]], has_cycle: bool
) -> None:
    assert (find_cycle(graph) is not None) is has_cycle


def test_the_graph_sees_a_package_imported_for_its_submodule() -> None:
    """The edge that hid the command line's cycle: ``from pkg import module``.

    ``formats/jsonl.py`` does ``from agentlog.infrastructure.formats import zstd``,
    which runs the package's ``__init__`` before the submodule.
    """
    graph = import_graph()
    jsonl = graph["agentlog.infrastructure.formats.jsonl"]
    assert "agentlog.infrastructure.formats" in jsonl
    assert "agentlog.infrastructure.formats.zstd" in jsonl
