"""Import and export through the application, on every backend."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentlog.application import Sessions
from agentlog.domain.errors import (
    SessionAlreadyExistsError,
    SessionError,
    UnsupportedSessionFormatError,
)
from agentlog.infrastructure.formats.jsonl import (
    decode_log,
    encode_log,
    export_session,
    import_log,
)
from tests.formats.samples import (
    HARNESS_HEAD,
    SEED_ERA,
    SUBSTITUTIONS,
    event,
    header_line,
    lines,
    substituted,
    turn1,
)

ALL_FIXTURES = SEED_ERA + HARNESS_HEAD
MakeApp = Callable[..., Sessions]


def ids(paths: list[Path]) -> list[str]:
    return [path.name.removesuffix(".jsonl") for path in paths]


def fresh_app() -> Sessions:
    return Sessions(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})


def normalised(header: dict[str, Any]) -> dict[str, Any]:
    """Headers compare with an absent ``delegationDepth`` equal to 0."""
    return {**header, "delegationDepth": header.get("delegationDepth", 0)}


@pytest.mark.parametrize("path", ALL_FIXTURES, ids=ids(ALL_FIXTURES))
def test_every_fixture_imports_exports_and_re_imports(
    make_app: MakeApp, path: Path
) -> None:
    app = make_app()
    result = import_log(app, path, substitutions=SUBSTITUTIONS)
    events = app.read_events(result.session_id)
    messages = app.messages(result.session_id)
    assert events
    assert [event["seq"] for event in events] == list(range(len(events)))
    exported = export_session(app, result.session_id)
    assert decode_log(exported, source="export").events == events
    # A second store gets the same events, messages and header from the export.
    other = fresh_app()
    again = import_log(other, exported)
    assert again.session_id == result.session_id
    assert all(line.startswith("placeholder {{") for line in again.report)
    assert other.read_events(again.session_id) == events
    assert other.messages(again.session_id) == messages
    assert normalised(other.header(again.session_id)) == normalised(
        app.header(result.session_id)
    )
    assert export_session(other, again.session_id) == exported


@pytest.mark.parametrize("path", SEED_ERA, ids=ids(SEED_ERA))
def test_seed_era_fixtures_export_byte_identically(
    make_app: MakeApp, path: Path
) -> None:
    app = make_app()
    result = import_log(app, substituted(path))
    assert result.report == [] or all("placeholder" in line for line in result.report)
    assert export_session(app, result.session_id) == substituted(path)


def test_import_substitutes_placeholders_in_our_format(make_app: MakeApp) -> None:
    path = next(p for p in SEED_ERA if p.name.startswith("cancel--"))
    app = make_app()
    result = import_log(app, path, substitutions=SUBSTITUTIONS)
    assert result.session_id == "imported-session"
    assert app.header("imported-session")["cwd"] == SUBSTITUTIONS["cwd"]
    assert result.report == [
        "placeholder {{system}} has no substitution; kept literally (1 occurrence(s))",
        "placeholder {{tools}} has no substitution; kept literally (1 occurrence(s))",
    ]


def test_a_compressed_export_re_imports(make_app: MakeApp) -> None:
    app = make_app()
    result = import_log(app, HARNESS_HEAD[0], substitutions=SUBSTITUTIONS)
    compressed = export_session(app, result.session_id, compress=True)
    assert compressed[:4] == bytes.fromhex("28b52ffd")
    other = fresh_app()
    import_log(other, compressed)
    assert other.read_events(result.session_id) == app.read_events(result.session_id)


def test_export_includes_unflushed_events(make_app: MakeApp) -> None:
    app = make_app()
    handle = app.create_session(cwd="/w", session_id="live", created_at=5)
    for envelope in turn1():
        kwargs = (
            {"surface_op": envelope["surfaceOp"]} if "surfaceOp" in envelope else {}
        )
        handle.append(envelope["type"], envelope["data"], **kwargs)
    exported = export_session(app, "live")
    decoded = decode_log(exported, source="x")
    assert [e["type"] for e in decoded.events] == [e["type"] for e in turn1()]
    assert decoded.header == {
        "version": 0,
        "id": "live",
        "createdAt": 5,
        "cwd": "/w",
        "delegationDepth": 0,
    }


def log(*rows: bytes | dict[str, Any], **header: Any) -> bytes:
    return header_line(delegationDepth=0, **header) + b"\n" + lines(*rows)


def test_an_invalid_log_stores_nothing(make_app: MakeApp) -> None:
    app = make_app()
    events = turn1()
    del events[1]["surfaceOp"]
    with pytest.raises(SessionError):
        import_log(app, log(*events))
    assert not app.is_stored("s1")
    assert app.live_session("s1") is None


def test_pq_014_import_refuses_legacy_vocabulary(make_app: MakeApp) -> None:
    app = make_app()
    legacy = [*turn1(), event(6, "request/header-delta", {})]
    with pytest.raises(UnsupportedSessionFormatError) as caught:
        import_log(app, log(*legacy))
    assert str(caught.value) == (
        'line 8: session "s1" contains unsupported legacy'
        " request/header-delta event at seq 6"
    )
    assert not app.is_stored("s1")


def test_a_strict_import_checks_the_turn_invariants(make_app: MakeApp) -> None:
    app = make_app()
    path = next(p for p in HARNESS_HEAD if "compaction" in p.name)
    with pytest.raises(SessionError, match="invariant violated"):
        import_log(app, path, strict=True, substitutions=SUBSTITUTIONS)
    assert not app.is_stored("imported-session")
    import_log(app, path, substitutions=SUBSTITUTIONS)
    assert app.is_stored("imported-session")


def test_a_torn_tail_is_reported_and_the_open_turn_repaired_on_take_over(
    make_app: MakeApp,
) -> None:
    app = make_app()
    open_turn = [
        event(
            6,
            "turn/start",
            {"turn": 2, "trigger": {"kind": "message", "source": {"kind": "user"}}},
        ),
        event(7, "step/start", {"turn": 2, "step": 1}),
    ]
    result = import_log(app, log(*turn1(), *open_turn) + b'{"type":"assistant/ch')
    assert result.report == ["ignored a torn final line without a newline (21 bytes)"]
    assert len(app.read_events("s1")) == 8
    app.get_session("s1")
    events = app.read_events("s1")
    assert [e["type"] for e in events[8:]] == ["step/end", "turn/end"]
    assert events[-1]["data"]["reason"] == {"kind": "interrupted"}


def test_a_header_only_log_is_stored_as_its_header(make_app: MakeApp) -> None:
    app = make_app()
    data = log()
    result = import_log(app, data)
    assert result.report == []
    assert result.events == 0
    assert app.is_stored("s1")
    assert app.read_events("s1") == []
    assert app.header("s1")["createdAt"] == 1
    assert export_session(app, "s1") == data


def test_a_second_import_of_the_same_id_is_refused(make_app: MakeApp) -> None:
    app = make_app()
    data = log(*turn1())
    import_log(app, data)
    with pytest.raises(SessionAlreadyExistsError, match='session "s1" already exists'):
        import_log(app, data)
    assert len(app.read_events("s1")) == 6


def test_pq_012_import_keeps_lineage_and_depth(make_app: MakeApp) -> None:
    app = make_app()
    data = encode_log(
        {
            "version": 0,
            "id": "child",
            "createdAt": 3,
            "parentSession": "p",
            "seedLength": 6,
            "delegationDepth": 2,
        },
        turn1(),
    )
    import_log(app, data)
    assert app.header("child") == {
        "version": 0,
        "id": "child",
        "createdAt": 3,
        "parentSession": "p",
        "seedLength": 6,
        "delegationDepth": 2,
    }
    assert export_session(app, "child") == data


def test_import_reads_a_path_or_bytes(make_app: MakeApp, tmp_path: Path) -> None:
    file = tmp_path / "s.jsonl.zst"
    file.write_bytes(
        encode_log({"version": 0, "id": "s1", "createdAt": 1}, turn1(), compress=True)
    )
    app = make_app()
    assert import_log(app, str(file)).session_id == "s1"
    assert app.read_events("s1") == turn1()


def test_header_extras_that_cannot_be_stored_are_reported(make_app: MakeApp) -> None:
    app = make_app()
    result = import_log(app, log(*turn1(), note="x"))
    assert result.report == [
        'header key "note" ("x") has no place in our header; dropped'
    ]
