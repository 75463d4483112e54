"""``import --new-id`` and placeholder ids: a fresh id per file (issue 22).

The command's work (:class:`~agentlog.infrastructure.cli.imports.Imports`) runs in
this process: what it stores and reports is what the command prints.
"""

from __future__ import annotations

import io
import uuid
from typing import TYPE_CHECKING

import pytest
from rich.console import Console

from agentlog.application import Sessions
from agentlog.domain.errors import LogImportError
from agentlog.infrastructure.cli.imports import Imports
from agentlog.infrastructure.cli.progress import Meter
from agentlog.infrastructure.formats.jsonl import import_log
from tests.formats.samples import FIXTURES, HARNESS_HEAD, SEED_ERA, header_line, lines
from tests.formats.samples import turn1 as turn

if TYPE_CHECKING:
    from pathlib import Path

    from agentlog.application.transfer import ImportResult

CWD = {"cwd": "/srv/app"}


def memory_app() -> Sessions:
    return Sessions(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})


def run_imports(
    app: Sessions, paths: list[Path], *, new_id: bool, substitutions: dict[str, str]
) -> list[tuple[str, ImportResult | str]]:
    with Meter(Console(file=io.StringIO())) as meter:
        imports = Imports(app, meter, substitutions, strict=False, new_id=new_id)
        return list(imports.run([str(path) for path in paths]))


def placeholder_log(tmp_path: Path, name: str, **header: object) -> Path:
    path = tmp_path / name
    head = header_line(id="{{sessionId}}", delegationDepth=0, **header)
    path.write_bytes(head + b"\n" + lines(*turn()))
    return path


def test_every_file_sharing_a_placeholder_id_gets_its_own_new_id(
    tmp_path: Path,
) -> None:
    paths = [placeholder_log(tmp_path, f"{n}.jsonl") for n in range(3)]
    outcomes = run_imports(memory_app(), paths, new_id=True, substitutions={})
    ids = [
        outcome.session_id for _, outcome in outcomes if not isinstance(outcome, str)
    ]
    assert len(set(ids)) == 3, outcomes
    assert all(uuid.UUID(session_id).version == 4 for session_id in ids)


def test_all_the_fixtures_import_in_one_new_id_command() -> None:
    paths = [*SEED_ERA, *HARNESS_HEAD]
    app = memory_app()
    outcomes = run_imports(app, paths, new_id=True, substitutions=CWD)
    refused = [
        (path, outcome) for path, outcome in outcomes if isinstance(outcome, str)
    ]
    assert refused == []
    assert len({outcome.session_id for _, outcome in outcomes}) == len(paths)  # type: ignore[union-attr]
    assert FIXTURES.is_dir()


def test_a_placeholder_id_is_filled_with_the_new_id_and_the_warning_says_so(
    tmp_path: Path,
) -> None:
    path = tmp_path / "p.jsonl"
    events = turn()
    events[1]["data"]["content"][0]["text"] = "I am {{sessionId}}"
    path.write_bytes(
        header_line(id="{{sessionId}}", delegationDepth=0) + b"\n" + lines(*events)
    )
    app = memory_app()
    [(_, outcome)] = run_imports(app, [path], new_id=True, substitutions={})
    assert not isinstance(outcome, str)
    new = outcome.session_id
    assert app.header(new)["id"] == new
    text = app.read_events(new)[1]["data"]["content"][0]["text"]
    assert text == f"I am {new}"
    assert any(
        "{{sessionId}} is a placeholder" in line and new in line
        for line in outcome.report
    )
    assert not any("kept literally" in line for line in outcome.report)


def test_a_placeholder_id_is_refused_without_new_id(tmp_path: Path) -> None:
    path = placeholder_log(tmp_path, "p.jsonl")
    app = memory_app()
    [(_, outcome)] = run_imports(app, [path], new_id=False, substitutions={})
    assert outcome == (
        'line 1: the session id "{{sessionId}}" is a placeholder, not an id;'
        " import it under a new id (agentlog import --new-id)"
    )
    with pytest.raises(LogImportError, match="is a placeholder"):
        import_log(app, path)
    assert not app.is_stored("{{sessionId}}")


def test_a_parent_link_is_rewritten_only_to_a_file_of_this_import(
    tmp_path: Path,
) -> None:
    parent = tmp_path / "parent.jsonl"
    parent.write_bytes(header_line(id="p", delegationDepth=0) + b"\n" + lines(*turn()))
    child = tmp_path / "child.jsonl"
    child.write_bytes(
        header_line(id="c", parentSession="p", seedLength=6, delegationDepth=1)
        + b"\n"
        + lines(*turn())
    )
    twins = [tmp_path / f"t{n}.jsonl" for n in range(2)]
    for twin in twins:
        twin.write_bytes(
            header_line(id="dup", delegationDepth=0) + b"\n" + lines(*turn())
        )
    orphan = tmp_path / "orphan.jsonl"
    orphan.write_bytes(
        header_line(id="o", parentSession="dup", delegationDepth=1)
        + b"\n"
        + lines(*turn())
    )
    app = memory_app()
    outcomes = dict(
        run_imports(app, [child, parent, *twins, orphan], new_id=True, substitutions={})
    )
    results = {
        path: outcome
        for path, outcome in outcomes.items()
        if not isinstance(outcome, str)
    }
    assert len(results) == 5, outcomes
    child_result = results[str(child)]
    parent_id = results[str(parent)].session_id
    assert app.header(child_result.session_id)["parentSession"] == parent_id
    assert f"parentSession p was imported here: now {parent_id}" in child_result.report
    orphan_result = results[str(orphan)]
    assert app.header(orphan_result.session_id)["parentSession"] == "dup"
    assert (
        "parentSession dup names 2 files of this import; kept as written"
        in orphan_result.report
    )
