"""``agentlog erase``, ``erasures`` and ``gc``: one line on success and on every
error, and an erased id reads exactly as a missing one (docs/erasure.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.cli.conftest import CLI_BACKENDS, Result, Store, make_store

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path


pytestmark = pytest.mark.slow  # every test runs the agentlog command in a process

MISSING = "00000000-0000-4000-8000-000000000000"  # as long as a demo id


@pytest.fixture(params=CLI_BACKENDS)
def demo(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """A fresh store holding the demo's session and its fork."""
    for store in make_store(str(request.param), tmp_path):
        store("demo").ok()
        items = store("ls", "--json").json()["items"]
        (fork,) = [item for item in items if "parentSession" in item]
        store.ids = {"main": fork["parentSession"], "fork": fork["id"]}
        yield store


def one_error_line(result: Result, session_id: str) -> str:
    assert result.returncode == 1, result
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0].replace(session_id, "<id>")


def test_erase_prints_one_line_and_the_session_reads_as_missing(demo: Store) -> None:
    main, fork = demo.ids["main"], demo.ids["fork"]
    result = demo("erase", main, "--reason", "customer request").ok()
    assert result.stdout == f"erased {main}\n"

    for command in (
        ["show", "{}"],
        ["messages", "{}"],
        ["surface", "{}"],
        ["trace", "{}"],
        ["export", "{}"],
        ["event", "{}", "0"],
        ["trace-event", "{}", "0"],
        ["erase", "{}", "--reason", "again"],
    ):
        erased = demo(*(arg.format(main) for arg in command))
        missing = demo(*(arg.format(MISSING) for arg in command))
        assert one_error_line(erased, main) == one_error_line(missing, MISSING)
    listed = [item["id"] for item in demo("ls", "--json").json()["items"]]
    assert listed == [fork]
    trace = demo("trace", fork, "--json").json()
    assert trace["complete"] is False


def test_erase_with_descendants_and_the_audit(demo: Store) -> None:
    main, fork = demo.ids["main"], demo.ids["fork"]
    result = demo("erase", main, "--reason", "leak", "--descendants").ok()
    assert result.stdout == f"erased {main} and 1 descendant(s): {fork}\n"
    assert demo("ls", "--json").json()["items"] == []
    audit = demo("erasures", "--json").json()
    assert sorted(record["id"] for record in audit) == sorted([main, fork])
    assert {record["reason"] for record in audit} == {"leak"}
    text = demo("erasures").ok().stdout.splitlines()
    assert len(text) == 2
    assert all(line.endswith("  leak") for line in text)


@pytest.mark.parametrize("demo", ["sqlite"], indirect=True)
def test_usage_errors_exit_2(demo: Store) -> None:
    main = demo.ids["main"]
    assert demo("erase", main).returncode == 2  # no --reason
    assert demo("erase", main, "--reason", "").returncode == 2
    for bad in ("30", "3w", "-1d", "1.5h", "d"):
        result = demo("gc", "--older-than", bad)
        assert result.returncode == 2, bad
        assert "a duration is a whole number and a unit" in result.stderr
    assert demo("ls", "--json").json()["items"]  # nothing was erased


def test_gc_dry_run_then_gc(demo: Store) -> None:
    main, fork = demo.ids["main"], demo.ids["fork"]
    assert demo("gc", "--older-than", "30d").ok().stdout == "erased 0 of 0 session(s)\n"
    dry = demo("gc", "--older-than", "0s", "--dry-run").ok()
    assert dry.stdout.splitlines()[0] == "would erase 2 session(s) (dry run)"
    assert sorted(dry.stdout.splitlines()[1:]) == sorted([main, fork])
    dry_json = demo("gc", "--older-than", "0s", "--dry-run", "--json").json()
    assert sorted(dry_json["candidates"]) == sorted([main, fork])  # was a count
    assert (dry_json["dryRun"], dry_json["erased"]) == (True, [])
    assert len(demo("ls", "--json").json()["items"]) == 2
    report = demo("gc", "--older-than", "0s", "--reason", "ttl", "--json").json()
    assert sorted(report["erased"]) == sorted([main, fork])
    assert report["kept"] == []
    assert report["scrubbed"] is True
    assert demo("ls", "--json").json()["items"] == []
    assert {r["reason"] for r in demo("erasures", "--json").json()} == {"ttl"}


def test_an_erased_id_cannot_be_imported_again(demo: Store) -> None:
    main = demo.ids["main"]
    exported = demo.cwd / "main.jsonl"
    demo("export", main, "-o", str(exported)).ok()
    demo("erase", main, "--reason", "request").ok()
    refused = demo("import", str(exported))
    assert refused.returncode == 1
    assert refused.stderr == (
        f'{exported}: session "{main}" was erased; an erased id cannot be written '
        "again\n"
    )
    fresh = demo("import", "--new-id", str(exported)).ok().stdout.strip()
    assert fresh != main
    assert [e["id"] for e in demo("erasures", "--json").json()] == [main]
