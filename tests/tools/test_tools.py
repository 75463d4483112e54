"""The five tools on a small store: titles, a compaction, a fork, a caller mid-step."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, timezone

import pytest

from agentlog.application import Sessions
from agentlog.application.model_tools import FAILED, ModelTools
from agentlog.application.model_tools.text import CAPPED, NO_EVENT_MATCHES
from agentlog.domain.errors import ModelToolError, SessionQueryError
from agentlog.infrastructure.cli.demo.agent import ScriptedAgent
from tests.tools.support import T0, WORKSPACE, Corpus

Call = Callable[..., str]


def result_seqs(text: str) -> list[int]:
    return [int(seq) for seq in re.findall(r"^\d+\. seq (\d+) ", text, re.M)]


def sessions_listed(text: str) -> list[str]:
    return re.findall(r"^\d+\. Session (\S+) — ", text, re.M)


# ------------------------------------------------------------ session_search


def test_session_search_titles_parents_and_never_the_caller(call: Call) -> None:
    text = call("session_search", query="parser")
    listed = sessions_listed(text)
    assert {"plan", "plan-fork"} <= set(listed)
    assert "me" not in listed
    assert text.startswith(f"Session search results ({len(listed)}):")
    assert "1. Session plan — Parser rewrite plan" in text or (
        "Session plan — Parser rewrite plan" in text
    )
    fork = text[text.index("Session plan-fork") :].split("\n\n")[0]
    assert "   Parent: plan" in fork
    assert "   Availability: persisted" in fork
    assert "   Best match: seq 1 | user/message | shadowed | " in fork
    assert "   Snippet: Plan the parser rewrite" in fork
    assert CAPPED not in text


def test_session_search_filters(call: Call, app: Sessions, corpus: Corpus) -> None:
    by_parent = call("session_search", query="parser", parent_session_ids=["plan"])
    assert sessions_listed(by_parent) == ["plan-fork"]
    roots = call("session_search", query="parser", include_root_sessions=True)
    assert "plan" in sessions_listed(roots)
    assert "plan-fork" not in sessions_listed(roots)
    only = call("session_search", query="parser", session_ids=["plan-fork"])
    assert sessions_listed(only) == ["plan-fork"]
    current = call(
        "session_search",
        query="parser",
        session_ids=["plan"],
        event_surfaces=["current"],
        event_types=["assistant/message"],
    )
    assert "| assistant/message | current |" in current
    created = app.header(corpus.fork)["createdAt"]
    later = call(
        "session_search",
        query="parser",
        session_ids=["plan", "plan-fork"],
        created_at_from=datetime.fromtimestamp(created / 1000).astimezone().isoformat(),
    )
    assert sessions_listed(later) == ["plan-fork"]
    none = call("session_search", query="no such words anywhere")
    assert none == "No prior session matches found."


def test_session_search_needs_a_workspace(app: Sessions, corpus: Corpus) -> None:
    lone = app.create_session(session_id="lone")
    ScriptedAgent(lone).start_turn("parser without a workspace")
    app.close(lone)
    result = ModelTools(app, "lone").call("session_search", {"query": "parser"})
    assert result.is_error
    assert result.text == (
        "cross-session search is unavailable because the caller session has no workspace"
    )


# ------------------------------------------------------ session_event_search


def test_event_search_in_another_session(call: Call) -> None:
    text = call("session_event_search", session_id="plan", query="tokenizer")
    assert text.startswith(
        "Session plan — Parser rewrite plan\n\nEvent search results ("
    )
    assert "| assistant/message | current |" in text
    assert "| assistant/message | shadowed |" in text
    shadowed = call(
        "session_event_search",
        session_id="plan",
        query="tokenizer",
        surfaces=["shadowed"],
    )
    assert "| current |" not in shadowed


def test_event_search_of_the_caller_excludes_its_current_step(
    call: Call, corpus: Corpus, app: Sessions
) -> None:
    step = corpus.seqs["step"]
    own = app.read_events(corpus.caller)
    indexed = ("assistant/message", "tool/call")
    later = [e["seq"] for e in own if e["seq"] >= step and e["type"] in indexed]
    assert later, "the current step holds the call searching for 'parser'"
    for explicit in ({}, {"session_id": corpus.caller}):
        text = call("session_event_search", query="parser", **explicit)
        found = result_seqs(text)
        assert corpus.seqs["earlier"] in found
        assert all(seq < step for seq in found), found
        wide = call("session_event_search", query="parser", seq_to=10**6, **explicit)
        assert result_seqs(wide) == found
    # The same events read from another caller's point of view are all there.
    other = ModelTools(app, corpus.plan)
    seen = other.call(
        "session_event_search", {"session_id": corpus.caller, "query": "parser"}
    )
    assert set(later) <= set(result_seqs(seen.text))


def test_event_search_when_the_step_starts_the_log(app: Sessions) -> None:
    me = app.create_session(cwd=WORKSPACE, session_id="fresh")
    agent = ScriptedAgent(me)
    agent.start_turn("parser question")
    app.flush(me)
    # No step yet: nothing can be the call itself, so nothing is excluded.
    tools = ModelTools(app, "fresh")
    text = tools.call("session_event_search", {"query": "parser"}).text
    assert result_seqs(text) == [1]
    agent.model_step(calls=[("session_event_search", {"query": "parser"})])
    app.flush(me)
    text = tools.call("session_event_search", {"query": "parser"}).text
    assert result_seqs(text) == [1]
    assert tools.call(
        "session_event_search", {"query": "parser", "seq_from": 3}
    ).text.endswith(NO_EVENT_MATCHES)


def test_times_in_and_out_are_iso_8601_with_offsets(call: Call, app: Sessions) -> None:
    events = app.read_events("plan")
    target = next(e for e in events if e["type"] == "assistant/message")
    moment = datetime.fromtimestamp(target["time"] / 1000, UTC)
    shifted = moment.astimezone(timezone(timedelta(hours=2))).isoformat()
    assert shifted.endswith("+02:00")
    exact = call(
        "session_event_search",
        session_id="plan",
        query="tokenizer",
        time_from=shifted,
        time_to=shifted,
    )
    assert result_seqs(exact) == [target["seq"]]
    stamp = re.search(r"\| (\S+)\n   Snippet", exact)
    assert stamp is not None
    shown = datetime.fromisoformat(stamp.group(1))
    assert shown.utcoffset() is not None
    assert shown.timestamp() * 1000 == target["time"]
    after = (
        (moment + timedelta(milliseconds=1))
        .astimezone(timezone(timedelta(hours=-5, minutes=-30)))
        .isoformat()
    )
    missed = call(
        "session_event_search", session_id="plan", query="tokenizer", time_from=after
    )
    assert target["seq"] not in result_seqs(missed)
    assert target["time"] >= T0


# ------------------------------------------------------------------- traces


def test_session_trace_ancestors_and_descendants(call: Call) -> None:
    fork = call("session_trace", session_id="plan-fork")
    assert fork.startswith(
        "Session plan-fork — Parser rewrite plan\nCreated: 2026-05-01T"
    )
    ancestors = fork.split("Ancestors (nearest first):\n")[1].split("\n\n")[0]
    assert ancestors.startswith(
        "- plan — Parser rewrite plan | 2026-05-01T12:00:00.000Z"
    )
    assert fork.endswith("Descendants:\n- none")
    plan = call("session_trace", session_id="plan")
    assert "- none (target is a root session)" in plan
    assert "Descendants:\n- plan-fork — Parser rewrite plan | " in plan
    mine = call("session_trace")
    assert mine.startswith("Session me — untitled\n")


def test_session_event_trace(call: Call, corpus: Corpus) -> None:
    checkpoint = corpus.seqs["checkpoint"]
    text = call("session_event_trace", session_id="plan", seq=1)
    assert text.splitlines()[1].startswith("Target: seq 1 | user/message | shadowed | ")
    assert f"Replaced by: {checkpoint}" in text
    assert f"Replacement chain: {checkpoint}" in text
    assert "Events replaced by target: none" in text
    assert f"Direct derived events: {checkpoint}" in text
    replacement = call("session_event_trace", session_id="plan", seq=checkpoint)
    assert "Replaced by: none" in replacement
    assert "Events replaced by target: 1, " in replacement


# --------------------------------------------------------------------- read


def json_block(text: str) -> object:
    body = text.split("```json\n", 1)[1].split("\n```", 1)[0]
    return json.loads(body)


def test_event_read_is_exact_with_a_bounded_window(call: Call, app: Sessions) -> None:
    events = app.read_events("plan")
    seq = next(e["seq"] for e in events if e["type"] == "assistant/message")
    text = call("session_event_read", session_id="plan", seq=seq, before=2, after=3)
    assert json_block(text) == events[seq]
    assert text.startswith("Session plan — Parser rewrite plan\n")
    before = text.split("\nBefore:\n")[1].split("\n\nAfter:")[0]
    after = text.split("\nAfter:\n")[1]
    assert re.findall(r"^- seq (\d+)", before, re.M) == [str(seq - 2), str(seq - 1)]
    assert re.findall(r"^- seq (\d+)", after, re.M) == [
        str(s) for s in range(seq + 1, seq + 4)
    ]
    alone = call("session_event_read", session_id="plan", seq=seq)
    assert "Before:" not in alone and "After:" not in alone
    mine = call("session_event_read", seq=0)
    assert json_block(mine) == app.read_events("me")[0]


# ------------------------------------------------------------ missing things


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("session_event_search", {"query": "parser"}),
        ("session_trace", {}),
        ("session_event_trace", {"seq": 0}),
        ("session_event_read", {"seq": 0}),
    ],
)
def test_a_missing_session_reads_as_not_found(
    tools: ModelTools, name: str, arguments: dict[str, object]
) -> None:
    result = tools.call(name, {**arguments, "session_id": "never\x1b[2J"})
    assert result.is_error
    assert result.text == 'session "never\\x1b[2J" not found'


def test_a_missing_event_reads_as_not_found(tools: ModelTools) -> None:
    for name in ("session_event_trace", "session_event_read"):
        result = tools.call(name, {"session_id": "plan", "seq": 9999})
        assert result.is_error
        assert result.text == 'session "plan" has no event at seq 9999'


def test_unknown_caller_fails_closed(app: Sessions, corpus: Corpus) -> None:
    with pytest.raises(SessionQueryError) as caught:
        ModelTools(app, "nobody")
    assert caught.value.code == SessionQueryError.UNKNOWN_CALLER
    with pytest.raises(SessionQueryError):
        ModelTools(app, "")
    with pytest.raises(ModelToolError, match="max_search_results must be a positive"):
        ModelTools(app, corpus.caller, max_search_results=0)


def test_other_failures_are_one_model_safe_message(
    tools: ModelTools, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(*args: object, **kwargs: object) -> object:
        raise RuntimeError("disk /var/lib/agentlog/x.db is on fire")

    def persistence(*args: object, **kwargs: object) -> object:
        error = OSError("/var/lib/agentlog/y.db: locked")
        raise SessionQueryError.listing_failed(error)

    reads = tools.caller.reads
    for method, fault in (("trace_session", broken), ("trace_event", persistence)):
        setattr(reads, method, fault)
    with caplog.at_level("WARNING", logger="agentlog"):
        first = tools.call("session_trace", {})
        second = tools.call("session_event_trace", {"seq": 0})
    for result in (first, second):
        assert result.is_error and result.text == FAILED
        assert "/var/lib" not in result.text
    assert "x.db is on fire" in caplog.text and "y.db: locked" in caplog.text


def test_unknown_tool_and_json_text_arguments(tools: ModelTools) -> None:
    unknown = tools.call("rm_rf", {})
    assert unknown.is_error and unknown.text.startswith(
        'unknown tool "rm_rf"; the tools are'
    )
    as_text = tools.call("session_trace", '{"session_id": "plan"}')
    assert not as_text.is_error and as_text.text.startswith("Session plan — ")
    broken = tools.call("session_trace", "{not json")
    assert broken.is_error
    assert broken.text == "invalid arguments for session_trace: not valid JSON"


def test_an_erased_session_reads_as_never_existing(
    tools: ModelTools, app: Sessions, corpus: Corpus
) -> None:
    app.erase(corpus.fork, reason="test")
    for name, arguments in (
        ("session_event_search", {"query": "lexer"}),
        ("session_trace", {}),
        ("session_event_trace", {"seq": 0}),
        ("session_event_read", {"seq": 0}),
    ):
        result = tools.call(name, {**arguments, "session_id": corpus.fork})
        assert result.text == f'session "{corpus.fork}" not found', name
    assert tools.call("session_search", {"query": "lexer"}).text == (
        "No prior session matches found."
    )
    plan = tools.call("session_trace", {"session_id": corpus.plan}).text
    assert corpus.fork not in plan


def test_an_erased_caller_fails_closed(
    tools: ModelTools, app: Sessions, corpus: Corpus
) -> None:
    # The tools were bound while the caller existed; its workspace must not stay
    # searchable through them once it is erased.
    assert not tools.call("session_search", {"query": "lexer"}).is_error
    app.erase(corpus.caller, reason="test")
    for name, arguments in (
        ("session_search", {"query": "lexer"}),
        ("session_event_search", {"query": "lexer", "session_id": corpus.plan}),
        ("session_trace", {"session_id": corpus.plan}),
        ("session_event_read", {"session_id": corpus.plan, "seq": 0}),
    ):
        result = tools.call(name, arguments)
        assert result.is_error, name
        assert result.text == (
            f'caller session "{corpus.caller}" not found; no scope can be derived'
        ), name


def test_the_largest_seq_reads_as_no_event(tools: ModelTools) -> None:
    largest = 2**63 - 1
    for name, extra in (
        ("session_event_read", {"before": 50, "after": 50}),
        ("session_event_read", {}),
        ("session_event_trace", {}),
    ):
        result = tools.call(name, {"session_id": "plan", "seq": largest, **extra})
        assert result.text == f'session "plan" has no event at seq {largest}', name


def test_the_query_reads_a_window_at_the_largest_seq(
    app: Sessions, corpus: Corpus
) -> None:
    from agentlog.application.query import SessionQuery

    largest = 2**63 - 1
    for before, after in ((0, 0), (50, 50), (0, 50)):
        with pytest.raises(SessionQueryError) as caught:
            SessionQuery(app).read_event(corpus.plan, largest, before, after)
        assert caught.value.code == SessionQueryError.EVENT_NOT_FOUND
