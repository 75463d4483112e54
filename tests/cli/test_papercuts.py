"""Papercuts of a first hour with the command line (issue 22), in process."""

from __future__ import annotations

import json
import os
import shlex
import stat
from typing import TYPE_CHECKING

import pytest
from click.testing import CliRunner
from rich.console import Console

from agentlog.application import Sessions
from agentlog.application.query import SessionQuery
from agentlog.domain.errors import StoreUnavailableError
from agentlog.infrastructure.cli import cli
from agentlog.infrastructure.cli.render import (
    header_view,
    seq_ranges,
    short_when,
    summaries_table,
    when,
)
from agentlog.infrastructure.formats.jsonl import import_log, write_atomically
from agentlog.infrastructure.store import open_sessions
from tests.formats.samples import HARNESS_HEAD, SEED_ERA, substituted

if TYPE_CHECKING:
    from pathlib import Path


def test_times_are_iso_8601_utc_with_the_year() -> None:
    assert when(0) == "1970-01-01T00:00:00Z"
    assert short_when(0) == "1970-01-01T00:00Z"
    assert when(1783352113760) == "2026-07-06T15:35:13Z"
    assert when(None) == "?"


def test_the_ls_more_hint_keeps_the_store_and_the_limit(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/elsewhere.db"
    app = Sessions(
        env={
            "PERSISTENCE_MODULE": "eventsourcing.sqlite",
            "SQLITE_DBNAME": str(tmp_path / "elsewhere.db"),
        }
    )
    for path in SEED_ERA[-3:]:  # three distinct header ids
        import_log(app, substituted(path))
    app.close()
    runner = CliRunner()
    first = runner.invoke(cli, ["--store", url, "ls", "--limit", "2"])
    assert first.exit_code == 0, first.output
    hint = first.output.strip().splitlines()[-1]
    assert hint.startswith("more: agentlog --store ")
    args = shlex.split(hint.removeprefix("more: "))[1:]
    assert args[:5] == ["--store", url, "ls", "--limit", "2"]
    second = runner.invoke(cli, args)
    assert second.exit_code == 0, second.output
    assert "more:" not in second.output
    assert len([line for line in second.output.splitlines() if "  " in line]) >= 1


def test_export_into_a_missing_folder_names_the_folder(tmp_path: Path) -> None:
    target = tmp_path / "missing" / "f.jsonl"
    with pytest.raises(FileNotFoundError) as caught:
        write_atomically(target, lambda sink: sink.write(b"x\n"))
    assert str(caught.value) == (
        f"cannot write {target}: no such folder: {tmp_path / 'missing'}"
    )
    assert list(tmp_path.iterdir()) == []


def test_an_exported_file_honours_the_umask(tmp_path: Path) -> None:
    previous = os.umask(0o027)
    try:
        target = tmp_path / "f.jsonl"
        write_atomically(target, lambda sink: sink.write(b"x\n"))
    finally:
        os.umask(previous)
    assert stat.S_IMODE(target.stat().st_mode) == 0o640


def test_trace_event_seqs_show_as_ranges() -> None:
    assert seq_ranges([5, 6, 7, *range(8, 88), 90, 92, 93]) == "5–87, 90, 92–93"
    assert seq_ranges([3]) == "3"
    assert seq_ranges([]) == ""
    assert seq_ranges([4, 3]) == "4, 3"


def test_ls_keeps_the_sessions_of_a_cwd_and_an_owner(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/agentlog.db"
    app = Sessions(
        env={
            "PERSISTENCE_MODULE": "eventsourcing.sqlite",
            "SQLITE_DBNAME": str(tmp_path / "agentlog.db"),
        }
    )
    for number, (cwd, owner) in enumerate(
        [("/a", "ann"), ("/a", "bob"), ("/b", "ann"), ("/a", None)]
    ):
        handle = app.create_session(
            cwd, session_id=f"s{number}", owner=owner, created_at=number
        )
        app.close(handle)
    app.close()
    runner = CliRunner()

    def listed(*args: str) -> list[str]:
        done = runner.invoke(cli, ["--store", url, "ls", "--json", *args])
        assert done.exit_code == 0, done.output
        return [item["id"] for item in json.loads(done.output)["items"]]

    assert listed() == ["s3", "s2", "s1", "s0"]
    assert listed("--cwd", "/a") == ["s3", "s1", "s0"]
    assert listed("--owner", "ann") == ["s2", "s0"]
    assert listed("--cwd", "/a", "--owner", "ann") == ["s0"]
    assert listed("--cwd", "/nowhere") == []
    first = runner.invoke(cli, ["--store", url, "ls", "--cwd", "/a", "--limit", "1"])
    hint = first.output.strip().splitlines()[-1].removeprefix("more: ")
    args = shlex.split(hint)[1:]
    assert args[:7] == ["--store", url, "ls", "--limit", "1", "--cwd", "/a"]
    second = runner.invoke(cli, [*args, "--json"])
    assert [item["id"] for item in json.loads(second.output)["items"]] == ["s1"]
    empty = runner.invoke(cli, ["--store", url, "ls", "--owner", "eve"])
    assert empty.output == "no sessions match --cwd/--owner\n"


def _multi_turn_store(tmp_path: Path) -> tuple[str, str]:
    """A SQLite store holding the multi-turn fixture (streamed replies); its URL
    and the session's id."""
    app = Sessions(
        env={
            "PERSISTENCE_MODULE": "eventsourcing.sqlite",
            "SQLITE_DBNAME": str(tmp_path / "agentlog.db"),
        }
    )
    (path,) = [path for path in SEED_ERA if path.name.startswith("multi-turn")]
    session_id = import_log(app, substituted(path)).session_id
    app.close()
    return f"sqlite:///{tmp_path}/agentlog.db", session_id


def test_show_folds_each_run_of_chunks_into_one_row(tmp_path: Path) -> None:
    url, session_id = _multi_turn_store(tmp_path)
    runner = CliRunner()
    folded = runner.invoke(cli, ["--store", url, "show", session_id]).output
    each = runner.invoke(cli, ["--store", url, "show", session_id, "--chunks"]).output
    records = json.loads(
        runner.invoke(cli, ["--store", url, "show", session_id, "--json"]).output
    )["events"]
    chunks = sum(record["type"] == "assistant/chunk" for record in records)
    assert chunks > 10
    assert each.count("assistant/chunk ") == chunks
    assert "assistant/chunk ×" not in each
    runs = [line for line in folded.splitlines() if "assistant/chunk" in line]
    assert runs and all("assistant/chunk ×" in line for line in runs)
    assert sum(int(line.split("×")[1].split()[0]) for line in runs) == chunks
    assert len(folded.splitlines()) < len(each.splitlines()) - chunks / 2


def test_show_filters_by_type_and_surface_and_pages(tmp_path: Path) -> None:
    url, session_id = _multi_turn_store(tmp_path)
    runner = CliRunner()

    def shown(*args: str) -> list[dict[str, object]]:
        done = runner.invoke(cli, ["--store", url, "show", session_id, "--json", *args])
        assert done.exit_code == 0, done.output
        return json.loads(done.output)["events"]

    every = shown()
    assert {e["type"] for e in shown("--type", "user/message")} == {"user/message"}
    both = shown("--type", "user/message", "--type", "turn/end")
    assert {e["type"] for e in both} == {"user/message", "turn/end"}
    current = shown("--surface", "current")
    assert current == [e for e in every if e["surface"] == "current"]
    assert shown("--from", "5") == [e for e in every if e["seq"] >= 5]
    page = json.loads(
        runner.invoke(
            cli, ["--store", url, "show", session_id, "--json", "--limit", "2"]
        ).output
    )
    assert page["events"] == every[:2]
    assert page["nextFrom"] == every[2]["seq"]
    first = runner.invoke(cli, ["--store", url, "show", session_id, "--limit", "3"])
    hint = first.output.strip().splitlines()[-1].removeprefix("more: ")
    args = shlex.split(hint)[1:]
    assert args[:4] == ["--store", url, "show", session_id]
    assert args[-4:] == ["--limit", "3", "--from", "3"]
    second = runner.invoke(cli, args)
    assert " 3   " in second.output and " 2   " not in second.output
    bad = runner.invoke(cli, ["--store", url, "show", session_id, "--surface", "x"])
    assert bad.exit_code == 2


def test_a_store_in_a_missing_folder_names_the_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(StoreUnavailableError) as caught:
        Sessions(store="sqlite:///nodir/x.db")
    assert str(caught.value) == (
        "cannot open the store sqlite:///nodir/x.db: unable to open database file:"
        f" no such folder: {tmp_path / 'nodir'}"
    )
    assert list(tmp_path.iterdir()) == []


def test_erase_names_the_forks_left_and_descendants_go_after_the_parent(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path}/agentlog.db"
    runner = CliRunner()
    assert runner.invoke(cli, ["--store", url, "demo"]).exit_code == 0
    listing = runner.invoke(cli, ["--store", url, "ls", "--json"]).output
    items = json.loads(listing)["items"]
    (fork,) = [item["id"] for item in items if item.get("parentSession")]
    (main,) = [item["id"] for item in items if not item.get("parentSession")]
    first = runner.invoke(cli, ["--store", url, "erase", main, "--reason", "r"])
    assert first.exit_code == 0, first.output
    assert f"erased {main}\n" in first.output
    assert (
        f"note: 1 fork(s) keep their own copy of the events they were seeded with:"
        f" {fork}; erase them with: agentlog erase {main} --descendants" in first.output
    )
    again = ["--store", url, "erase", main, "--reason", "r", "--descendants"]
    second = runner.invoke(cli, again)
    assert second.exit_code == 0, second.output
    assert second.output == (
        f"erased 1 descendant(s) of {main} (already gone): {fork}\n"
    )
    assert (
        json.loads(runner.invoke(cli, ["--store", url, "ls", "--json"]).output)["items"]
        == []
    )
    third = runner.invoke(cli, again)
    assert third.exit_code == 1
    assert f'session "{main}" not found' in third.output


def test_a_subagent_origin_is_kept_through_import_and_export(tmp_path: Path) -> None:
    (path,) = [path for path in HARNESS_HEAD if "subagent" in path.name]
    first = f"sqlite:///{tmp_path}/first.db"
    runner = CliRunner()
    imported = runner.invoke(
        cli, ["--store", first, "import", "--set", "cwd=/srv/app", str(path)]
    )
    assert imported.exit_code == 0, imported.output
    assert '"origin"' not in imported.output  # no longer reported as dropped
    (item,) = json.loads(runner.invoke(cli, ["--store", first, "ls", "--json"]).output)[
        "items"
    ]
    assert item["header"]["origin"] == "subagent"
    wide = Console(width=200, record=True)  # the CLI's console may be narrow here
    app = open_sessions(first, create=False)
    try:
        page = SessionQuery(app).list_summaries(10)
        wide.print(summaries_table(page.items, "Sessions"))
        wide.print(header_view(app.header(item["id"]), None))
    finally:
        app.close()
    drawn = wide.export_text()
    assert f"(subagent of {item['parentSession'][:8]})" in drawn
    assert f"subagent of       {item['parentSession']}" in drawn
    exported = tmp_path / "child.jsonl"
    done = runner.invoke(
        cli, ["--store", first, "export", item["id"], "-o", str(exported)]
    )
    assert done.exit_code == 0, done.output
    header = json.loads(exported.read_bytes().splitlines()[0])
    assert header["origin"] == "subagent"
    second = f"sqlite:///{tmp_path}/second.db"
    again = runner.invoke(cli, ["--store", second, "import", str(exported)])
    assert again.exit_code == 0, again.output
    (copy,) = json.loads(
        runner.invoke(cli, ["--store", second, "ls", "--json"]).output
    )["items"]
    assert copy["header"] == item["header"]
