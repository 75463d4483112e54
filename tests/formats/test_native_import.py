"""Import rules: our own format is stored by value (its own form byte for byte),
defects refused naming the file line; the later format is mapped with a report;
malformed input is one typed error.

Issue 11 classes 3 and 4, the malformed-input cases, and the streamed import of a log
longer than one batch (all or nothing).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from agentlog.application import Sessions, transfer
from agentlog.domain.errors import (
    AgentlogError,
    CorruptSessionLogError,
    LogImportError,
    SeedError,
    SessionAlreadyExistsError,
    SurfaceIntentError,
)
from agentlog.infrastructure.formats.jsonl import (
    LogFile,
    export_session,
    import_log,
)
from tests.formats.samples import header_line, lines, turn1

MakeApp = Callable[..., Sessions]

NATIVE_HEAD = header_line(delegationDepth=0) + b"\n"
LATER_HEAD = b'{"type":"session","id":"s1","createdAt":1}\n'


def memory_app() -> Sessions:
    return Sessions(env={"PERSISTENCE_MODULE": "eventsourcing.popo"})


def refusal(data: bytes, app: Sessions | None = None) -> AgentlogError:
    app = app or memory_app()
    with pytest.raises(AgentlogError) as caught:
        import_log(app, data)
    assert not app.is_stored("s1")
    assert "\n" not in str(caught.value)
    return caught.value


def turns(count: int) -> list[dict[str, Any]]:
    """``count`` balanced turns, contiguous seqs."""
    events = []
    for turn in range(count):
        for event in turn1(start_time=10 * turn):
            data = dict(event["data"])
            if "turn" in data:
                data["turn"] = turn + 1
            events.append({**event, "seq": len(events), "data": data})
    return events


# --------------------------------------------------------- class 4: ours, exactly


def test_our_format_is_stored_exactly_and_exports_the_same_bytes(
    make_app: MakeApp,
) -> None:
    hostile = {
        "type": "plugin/x",
        "seq": 6,
        "time": 9,
        "data": {"lone": "\ud83d", "nul": "a\u0000b", "big": 2**70, "deep": [[["x"]]]},
    }
    data = NATIVE_HEAD + lines(*turn1(), hostile)
    app = make_app()
    result = import_log(app, data)
    assert result.report == []
    assert export_session(app, "s1") == data


@pytest.mark.slow
def test_twenty_thousand_deep_data_and_lone_surrogates_round_trip() -> None:
    deep = b"[" * 20_000 + b"]" * 20_000
    line = (
        b'{"type":"plugin/x","seq":6,"time":9,"data":{"d":' + deep + b',"s":"\\ud83d"}}'
    )
    data = NATIVE_HEAD + lines(*turn1()) + line + b"\n"
    app = memory_app()
    import_log(app, data)
    assert export_session(app, "s1") == data


def test_an_event_without_seq_in_the_committed_region_is_a_seq_gap() -> None:
    events = turn1()
    del events[2]["seq"]
    error = refusal(NATIVE_HEAD + lines(*events))
    assert isinstance(error, CorruptSessionLogError)
    assert str(error) == (
        "corrupt session log: seq gap in committed region at line 4"
        " (expected 2, got undefined)"
    )


def test_a_surface_op_on_a_type_that_is_not_surface_eligible_is_refused() -> None:
    events = turn1()
    events[2]["surfaceOp"] = "append"  # step/start
    error = refusal(NATIVE_HEAD + lines(*events))
    assert isinstance(error, SurfaceIntentError)
    assert str(error).startswith("line 4: ")


NORMALISED_ONE = "normalised 1 line: export will differ in bytes, not in values"


@pytest.mark.parametrize(
    ("original", "respelled"),
    [
        (b'"text":"caf\xc3\xa9"', b'"text":"caf\\u00e9"'),
        (b'"turn":1,"step":1', b'"turn": 1, "step": 1'),
    ],
    ids=["ascii-escape", "spacing"],
)
def test_a_line_in_another_spelling_is_stored_by_value_and_reported(
    original: bytes, respelled: bytes
) -> None:
    events = turn1()
    events[3]["data"]["content"][0]["text"] = "café"
    ours = lines(*events)
    written = ours.split(b"\n")
    line = written[3]
    assert original in line
    written[3] = line.replace(original, respelled, 1)
    app = memory_app()
    result = import_log(app, NATIVE_HEAD + b"\n".join(written))
    assert result.report == [NORMALISED_ONE]
    stored = app.read_events("s1")
    assert stored == [json.loads(text) for text in ours.splitlines()]
    assert export_session(app, "s1") == NATIVE_HEAD + ours


def test_an_event_keeps_its_own_key_order_byte_for_byte() -> None:
    events = turn1()
    reordered = {"seq": 3, **events[3]}
    data = NATIVE_HEAD + lines(*events[:3], reordered, *events[4:])
    app = memory_app()
    assert import_log(app, data).report == []
    assert export_session(app, "s1") == data


def test_negative_zero_and_small_exponents_are_values_not_refusals() -> None:
    line = b'{"type":"plugin/x","seq":6,"time":9,"data":{"z":-0,"e":1e-07,"f":-0.0}}'
    app = memory_app()
    result = import_log(app, NATIVE_HEAD + lines(*turn1()) + line + b"\n")
    assert result.report == [NORMALISED_ONE]
    data = app.read_events("s1")[6]["data"]
    assert data == {"z": 0, "e": 1e-07, "f": -0.0}
    assert str(data["f"]) == "-0.0"
    assert export_session(app, "s1").endswith(b'{"z":0,"e":1e-7,"f":-0.0}}\n')


def test_a_header_in_another_key_order_is_stored_by_value() -> None:
    header = (
        b'{"createdAt":1, "id":"s1","type":"session","delegationDepth":0,"version":0}'
    )
    app = memory_app()
    result = import_log(app, header + b"\n" + lines(*turn1()))
    assert result.report == [NORMALISED_ONE]
    assert export_session(app, "s1") == NATIVE_HEAD + lines(*turn1())


def test_a_seed_era_header_without_depth_is_ours_and_reported() -> None:
    app = memory_app()
    result = import_log(app, header_line() + b"\n" + lines(*turn1()))
    assert result.report == [
        "the header has no delegationDepth; stored and exported as 0"
    ]
    assert app.read_events("s1") == turn1()


def test_the_torn_tail_rule_still_applies_to_our_format() -> None:
    app = memory_app()
    result = import_log(app, NATIVE_HEAD + lines(*turn1()) + b'{"type":"turn/st')
    assert result.report == ["ignored a torn final line without a newline (16 bytes)"]
    assert len(app.read_events("s1")) == 6


# ------------------------------------------------------- malformed input: one line


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (
            {"type": "turn/start", "seq": 0, "time": 1},
            'line 2: seed event "turn/start" (seq 0) has no data',
        ),
        (
            {"type": {"a": 1}, "seq": 0, "time": 1, "data": {}},
            "line 2: seed event at index 0 has no type",
        ),
        (
            {"type": 5, "seq": 0, "time": 1, "data": {}},
            "line 2: seed event at index 0 has no type",
        ),
        (
            {"type": "step/start", "seq": 0, "time": "1", "data": {}},
            'line 2: seed event "step/start" (seq 0) has a time that is not an'
            " integer (epoch ms)",
        ),
    ],
)
def test_malformed_rows_of_our_format_are_one_typed_line(
    row: dict[str, Any], message: str
) -> None:
    error = refusal(NATIVE_HEAD + lines(row))
    assert isinstance(error, SeedError)
    assert str(error) == message


@pytest.mark.parametrize(
    "row",
    [
        b'{"type":{"a":1},"data":{}}',
        b'{"type":5}',
        b'{"type":"text-chunks","data":5}',
    ],
)
def test_malformed_rows_of_the_later_format_are_defects(row: bytes) -> None:
    turn_end = b'{"type":"turn/end","data":{"turn":1,"reason":{"kind":"completed"}}}'
    error = refusal(LATER_HEAD + row + b"\n" + turn_end + b"\n")
    assert isinstance(error, CorruptSessionLogError)
    assert str(error).startswith(
        "corrupt session log: unparsable committed event at line 2 ("
    )


def test_a_later_row_without_data_is_refused_naming_its_line() -> None:
    error = refusal(LATER_HEAD + b'{"type":"step/start"}\n')
    assert str(error).startswith("line 2: ")


# ----------------------------------------------------- class 3: header-only, version


def test_a_later_era_header_without_version_is_a_valid_header() -> None:
    app = memory_app()
    row = b'{"type":"turn/start","data":{"turn":1}}'
    end = b'{"type":"turn/end","data":{"turn":1,"reason":{"kind":"completed"}}}'
    result = import_log(app, LATER_HEAD + row + b"\n" + end + b"\n")
    assert "the header has no version; stored as version 0" in result.report
    assert app.header("s1")["version"] == 0


@pytest.mark.parametrize("head", [NATIVE_HEAD, LATER_HEAD])
def test_a_header_only_log_is_stored_with_zero_events(
    make_app: MakeApp, head: bytes
) -> None:
    app = make_app()
    result = import_log(app, head)
    assert result.events == 0
    assert app.is_stored("s1")
    assert app.read_events("s1") == []
    assert export_session(app, "s1").startswith(b'{"type":"session","version":0')


def test_the_later_hook_dialect_claude_code_is_mapped_to_claude() -> None:
    app = memory_app()
    rows = [
        b'{"type":"turn/start","data":{"turn":1}}',
        b'{"type":"hook/invoked","data":{"turn":1,"point":"Stop",'
        b'"dialect":"claude-code","handlerId":"claude-code:Stop:1"}}',
        b'{"type":"turn/end","data":{"turn":1,"reason":{"kind":"completed"}}}',
    ]
    result = import_log(app, LATER_HEAD + b"\n".join(rows) + b"\n")
    assert app.read_events("s1")[1]["data"]["dialect"] == "claude"
    assert 'hook/invoked: dialect "claude-code" mapped to "claude" (seq 1)' in (
        result.report
    )


# ------------------------------------------------- longer than a batch: streamed


@pytest.fixture
def small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transfer, "BATCH_EVENTS", 7)
    monkeypatch.setattr(transfer, "ONE_PASS_EVENTS", 7)


@pytest.mark.usefixtures("small_batches")
def test_a_log_longer_than_a_batch_is_stored_whole(make_app: MakeApp) -> None:
    events = turns(5)
    data = NATIVE_HEAD + lines(*events)
    app = make_app()
    result = import_log(app, data)
    assert result.events == 30
    assert app.read_events("s1") == events
    assert export_session(app, "s1") == data


@pytest.mark.usefixtures("small_batches")
def test_a_refusal_late_in_a_long_log_stores_nothing(make_app: MakeApp) -> None:
    events = turns(5)
    events[26]["surfaceOp"] = "append"  # a step/start, past three batches
    app = make_app()
    error = refusal(NATIVE_HEAD + lines(*events), app)
    assert str(error).startswith("line 28: ")


class _StopsWhileStoring:
    """A log whose storing pass is interrupted after ``after`` events (a signal, a
    lost file), once the first batches are already written in the transaction."""

    def __init__(self, log: LogFile, after: int) -> None:
        self.log, self.after = log, after
        self.name, self.header = log.name, log.header

    @property
    def report(self) -> list[str]:
        return self.log.report

    def events(self, phase: str) -> Iterator[tuple[int, Any]]:
        for index, item in enumerate(self.log.events(phase)):
            if phase == "storing" and index == self.after:
                raise KeyboardInterrupt
            yield item


@pytest.mark.usefixtures("small_batches")
def test_a_long_import_stopped_while_storing_stores_nothing(make_app: MakeApp) -> None:
    data = NATIVE_HEAD + lines(*turns(5))
    app = make_app()
    stopped = _StopsWhileStoring(LogFile(lambda: _bytes(data), name="f"), after=23)
    with pytest.raises(KeyboardInterrupt):
        transfer.import_session(app, stopped)
    assert not app.is_stored("s1")
    assert app.live_session("s1") is None
    assert import_log(app, data).events == 30  # and the same id imports afterwards
    assert export_session(app, "s1") == data


@pytest.mark.usefixtures("small_batches")
def test_a_torn_tail_of_a_long_log_is_dropped_and_reported(make_app: MakeApp) -> None:
    events = turns(4)
    data = NATIVE_HEAD + lines(*events, {**turn1()[0], "seq": 99})
    app = make_app()
    result = import_log(app, data)
    assert result.events == 24
    assert result.report == [
        "dropped a torn tail after the last turn/end: 1 line(s) from line 26 on"
        " (seq gap in committed region at line 26 (expected 24, got 99))"
    ]


def test_a_new_id_and_parent_replace_the_headers(make_app: MakeApp) -> None:
    app = make_app()
    data = NATIVE_HEAD + lines(*turn1())
    import_log(app, data)
    log = LogFile(lambda: _bytes(data), name="again")
    with pytest.raises(SessionAlreadyExistsError, match='session "s1" already exists'):
        transfer.import_session(app, log)
    result = transfer.import_session(app, log, session_id="s2", parent_session="parent")
    assert result.session_id == "s2"
    assert app.header("s2")["parentSession"] == "parent"
    assert app.read_events("s2") == app.read_events("s1")


def _bytes(data: bytes) -> Any:
    import io

    return io.BytesIO(data)


def test_a_later_turn_end_outside_a_turn_without_turn_or_reason_is_refused() -> None:
    """The original says "malformed pre-react-loop turn/end at seq 0" (issue 22)."""
    error = refusal(
        LATER_HEAD + b'{"type":"turn/end","data":{"error":"model exploded"}}\n'
    )
    assert isinstance(error, LogImportError)
    assert error.line == 2
    assert str(error).startswith("line 2: malformed pre-react-loop turn/end at seq 0:")


def test_a_later_turn_end_outside_a_turn_with_turn_and_reason_imports() -> None:
    app = memory_app()
    end = b'{"type":"turn/end","data":{"turn":1,"reason":{"kind":"error","error":{"code":"AUTH","message":"no"}}}}'
    result = import_log(app, LATER_HEAD + end + b"\n")
    assert app.read_events(result.session_id)[0]["type"] == "turn/end"
