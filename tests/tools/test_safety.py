"""Hostile data never reaches the model raw: control characters, bidirectional
overrides and lone surrogates are escaped; 20,000-deep data is read exactly."""

from __future__ import annotations

import json
import re

from agentlog.application import Sessions
from agentlog.application.model_tools import ModelTools
from agentlog.domain.json import dumps, loads
from agentlog.infrastructure.cli.demo.agent import ScriptedAgent
from tests.tools.support import WORKSPACE, fixed_clock, titled

UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]"
)
EVIL = "evil\x1b]0;pwn\x07\u202e\x9b"


def hostile_store(app: Sessions) -> list[dict[str, object]]:
    fixed_clock(app)
    handle = app.create_session(cwd=WORKSPACE, session_id=EVIL)
    agent = ScriptedAgent(handle)
    agent.start_turn("needle \x1b[2J \udcff \x00 \u2066 text\r\nsecond line")
    titled(agent, "title \x1b[31m\udcff")
    deep: object = "leaf \x1b"
    for _ in range(20_000):
        deep = [deep]
    agent.append("custom/deep", {"deep": deep})
    agent.model_step(text="answer with \x07 bell and \u202e override needle")
    agent.end_step()
    agent.end_turn()
    app.close(handle)
    me = app.create_session(cwd=WORKSPACE, session_id="me")
    ScriptedAgent(me).start_turn("caller")
    app.close(me)
    return app.read_events(EVIL)


def test_no_result_carries_a_raw_control_character(app: Sessions) -> None:
    events = hostile_store(app)
    tools = ModelTools(app, "me")
    calls = [
        ("session_search", {"query": "needle"}),
        ("session_event_search", {"session_id": EVIL, "query": "needle"}),
        ("session_trace", {"session_id": EVIL}),
        ("session_event_trace", {"session_id": EVIL, "seq": 1}),
        (
            "session_event_read",
            {"session_id": EVIL, "seq": 4, "before": 4, "after": 50},
        ),
        ("session_event_read", {"session_id": EVIL + "x", "seq": 1}),
    ]
    for name, arguments in calls:
        result = tools.call(name, arguments)
        assert UNSAFE.search(result.text) is None, (name, result.text[:300])
        result.text.encode("utf-8")  # no lone surrogate left
        assert "evil\\x1b]0;pwn\\x07\\u202e\\x9b" in result.text, name
    read = tools.call("session_event_read", {"session_id": EVIL, "seq": 1})
    body = read.text.split("```json\n", 1)[1].split("\n```", 1)[0]
    assert json.loads(body) == events[1]  # the exact event, lone surrogate and all
    assert "title \\x1b[31m\\udcff" in read.text


def test_twenty_thousand_deep_data_is_read_exactly(app: Sessions) -> None:
    events = hostile_store(app)
    tools = ModelTools(app, "me")
    deep_seq = next(e["seq"] for e in events if e["type"] == "custom/deep")
    result = tools.call("session_event_read", {"session_id": EVIL, "seq": deep_seq})
    assert not result.is_error
    body = result.text.split("```json\n", 1)[1].split("\n```", 1)[0]
    # Compared as canonical bytes: == on 20,000-deep lists recurses.
    assert dumps(loads(body)) == dumps(events[deep_seq])
    assert UNSAFE.search(result.text) is None
