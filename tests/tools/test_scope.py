"""The tools see only the caller's scope: sessions of another workspace, and forks
across workspaces, read exactly like sessions that never existed, and no result
carries a byte of them.

Paths tried (each with ids of the other workspace, and with a never-existing id):
every tool's ``session_id`` (``session_event_search``, ``session_trace``,
``session_event_trace``, ``session_event_read`` with a window); ``session_search``'s
``session_ids``, ``parent_session_ids``, ``include_root_sessions`` and
``availability``; queries only the other workspace's text matches; lineage across
a fork whose child is in the other workspace and whose grandchild is back in the
caller's (traced from both ends, and listed by search with its parent hidden);
every event of every visible session read with the widest window; a caller in the
other workspace; a caller without a workspace; a session of the same workspace
with another owner, and a caller with an owner. Over MCP: the same ids through the
SDK's client (tests/tools/test_mcp.py).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from agentlog.application import Sessions
from agentlog.application.model_tools import ModelTools
from agentlog.infrastructure.cli.demo.agent import ScriptedAgent
from tests.builders import TE, TS, U, log
from tests.query.support import header, raw_write
from tests.tools.support import OTHER_WORKSPACE, SECRETS, WORKSPACE, Corpus

OUTSIDE = ("alien", "alien-child")
"""Ids of the other workspace: in no output, and read as missing."""


@pytest.fixture
def crossed(app: Sessions, corpus: Corpus) -> Corpus:
    """A fork of ``plan`` in the other workspace, and a fork of that one back in
    the caller's workspace."""
    child = header(
        "alien-child", 10**12, cwd=OTHER_WORKSPACE, parentSession="plan", seedLength=3
    )
    raw_write(app, child, log(TS(1), U("zebra child parser"), TE(1)))
    grandchild = header(
        "plan-grandchild",
        10**12 + 1,
        cwd=WORKSPACE,
        parentSession="alien-child",
        seedLength=3,
    )
    raw_write(app, grandchild, log(TS(1), U("grandchild parser"), TE(1)))
    return corpus


def calls(session_id: str) -> Iterator[tuple[str, dict[str, object]]]:
    yield "session_event_search", {"session_id": session_id, "query": "parser"}
    yield "session_trace", {"session_id": session_id}
    yield "session_event_trace", {"session_id": session_id, "seq": 1}
    yield "session_event_read", {"session_id": session_id, "seq": 1, "after": 2}


def assert_clean(text: str) -> None:
    for secret in (*SECRETS, *OUTSIDE):
        assert secret not in text, (secret, text)


def test_out_of_scope_ids_read_as_never_existing(
    app: Sessions, crossed: Corpus
) -> None:
    tools = ModelTools(app, crossed.caller)
    for session_id in OUTSIDE:
        for name, arguments in calls(session_id):
            result = tools.call(name, arguments)
            missing = tools.call(name, {**arguments, "session_id": "never-was"})
            assert result.is_error and missing.is_error
            assert result.text == f'session "{session_id}" not found', name
            assert missing.text == 'session "never-was" not found'


def test_searches_and_filters_never_reach_the_other_workspace(
    app: Sessions, crossed: Corpus
) -> None:
    tools = ModelTools(app, crossed.caller)
    searches: list[dict[str, object]] = [
        {"query": "parser"},
        {"query": "zebra"},
        {"query": "Xenon vault"},
        {"query": "parser", "session_ids": list(OUTSIDE)},
        {"query": "parser", "parent_session_ids": list(OUTSIDE)},
        {
            "query": "parser",
            "parent_session_ids": ["alien"],
            "include_root_sessions": True,
        },
        {"query": "parser", "include_root_sessions": True},
        {"query": "parser", "availability": ["persisted"]},
    ]
    for arguments in searches:
        result = tools.call("session_search", arguments)
        assert not result.is_error
        assert_clean(result.text)
    assert tools.call("session_search", {"query": "zebra"}).text == (
        "No prior session matches found."
    )


def test_lineage_stops_at_the_workspace_without_naming_what_is_beyond(
    app: Sessions, crossed: Corpus
) -> None:
    tools = ModelTools(app, crossed.caller)
    plan = tools.call("session_trace", {"session_id": "plan"}).text
    assert "plan-fork" in plan
    assert_clean(plan)
    grandchild = tools.call("session_trace", {"session_id": "plan-grandchild"})
    assert not grandchild.is_error
    assert "[not visible from this workspace]" in grandchild.text
    assert_clean(grandchild.text)
    found = tools.call("session_search", {"query": "grandchild"}).text
    assert "Parent: [not visible from this workspace]" in found
    assert_clean(found)


def test_every_output_of_every_tool_is_clean(app: Sessions, crossed: Corpus) -> None:
    tools = ModelTools(app, crossed.caller)
    outputs: list[str] = []
    for session_id in (crossed.plan, crossed.fork, crossed.caller, "plan-grandchild"):
        for name, arguments in calls(session_id):
            outputs.append(tools.call(name, arguments).text)
        for seq in range(30):
            outputs.append(
                tools.call(
                    "session_event_read",
                    {"session_id": session_id, "seq": seq, "before": 50, "after": 50},
                ).text
            )
    for query in ("parser", "zebra", "alien", "vault", "child", "secret"):
        outputs.append(tools.call("session_search", {"query": query}).text)
        outputs.append(tools.call("session_event_search", {"query": query}).text)
    blob = "\n".join(outputs)
    assert_clean(blob)


def test_a_caller_in_the_other_workspace_sees_only_it(
    app: Sessions, crossed: Corpus
) -> None:
    tools = ModelTools(app, "alien")
    result = tools.call("session_search", {"query": "parser"})
    assert "Session alien-child" in result.text
    assert "plan" not in result.text
    for name, arguments in calls("plan"):
        assert tools.call(name, arguments).text == 'session "plan" not found'


def test_a_caller_without_a_workspace_sees_only_itself(
    app: Sessions, crossed: Corpus
) -> None:
    lone = app.create_session(session_id="lone")
    ScriptedAgent(lone).start_turn("parser alone")
    app.close(lone)
    tools = ModelTools(app, "lone")
    assert tools.call("session_search", {"query": "parser"}).is_error
    own = tools.call("session_event_search", {"query": "parser"})
    assert not own.is_error and "Session lone" in own.text
    for name, arguments in calls("plan"):
        assert tools.call(name, arguments).text == 'session "plan" not found'


def test_owners_divide_a_workspace(app: Sessions, crossed: Corpus) -> None:
    owned = app.create_session(cwd=WORKSPACE, session_id="tenant-b", owner="b")
    agent = ScriptedAgent(owned)
    agent.start_turn("owned parser notes of the Xenon vault")
    agent.end_turn()
    app.close(owned)
    mine = ModelTools(app, crossed.caller)  # no owner: sees no owned session
    assert "tenant-b" not in mine.call("session_search", {"query": "parser"}).text
    for name, arguments in calls("tenant-b"):
        assert mine.call(name, arguments).text == 'session "tenant-b" not found'
    theirs = ModelTools(app, "tenant-b")  # owner b: sees only owner b's sessions
    assert theirs.call("session_search", {"query": "parser"}).text == (
        "No prior session matches found."
    )
    for name, arguments in calls(crossed.plan):
        assert theirs.call(name, arguments).text == 'session "plan" not found'
