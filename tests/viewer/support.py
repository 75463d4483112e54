"""Sessions for the viewer's tests: a scripted conversation, hostile strings, forks."""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentlog.application.browse import Browser
from agentlog.application.scope import Scope
from agentlog.infrastructure.cli.demo.agent import ScriptedAgent

if TYPE_CHECKING:
    from starlette.testclient import TestClient

    from agentlog.application import Sessions

HOSTILE = [
    "<script>window.__pwned = 1</script>",
    '"><img src=x onerror="window.__pwned = 2">',
    "</textarea></pre></table></main><h1>broken</h1>",
    "lone \ud83d high and \udc00 low",
    "nul \x00 byte, escape \x1b[31m red, bell \x07, DEL \x7f, C1 \x85",
    "bidi \u202e gnirts desrever \u202c and \u2066isolate\u2069 \u200f",
    "line\u2028separator\u2029paragraph \ufeff bom",
    "astral 🙂 and CJK 漢字 and combining e\u0301",
    "x" * 3000,
    "{{7*7}} ${7*7} javascript:alert(1)",
]
"""Strings of docs/strings.md that must show as text and never act or break a page."""


def scripted(
    app: Sessions,
    *,
    session_id: str | None = None,
    cwd: str = "/ws/a",
    owner: str | None = None,
    prompt: str = "Add a health endpoint",
    words: str = "alpha",
    turns: int = 1,
) -> str:
    """A session with a prompt, reasoning, a tool call and its (failed) result."""
    handle = app.create_session(session_id=session_id, cwd=cwd, owner=owner)
    agent = ScriptedAgent(handle)
    for turn in range(turns):
        agent.start_turn(f"{prompt} {turn}" if turn else prompt)
        if turn == 0:
            agent.title()
        [call] = agent.model_step(
            reasoning=f"thinking about {words}",
            text=f"Looking at {words}",
            calls=[("read_file", {"path": f"/src/{words}.py"})],
        )
        agent.tool_result(call, f"contents of {words}", is_error=True)
        agent.end_step()
        agent.model_step(text=f"Done with {words}")
        agent.end_step()
        agent.end_turn()
    app.flush(handle)
    return handle.id


def hostile(app: Sessions, cwd: str = "/ws/a") -> str:
    """A session whose prompt, title, reasoning, tool names, arguments and results
    are the hostile strings."""
    handle = app.create_session(cwd=cwd)
    agent = ScriptedAgent(handle)
    for number, value in enumerate(HOSTILE):
        agent.start_turn(value)
        if number == 0:
            agent.title()
        [call] = agent.model_step(
            reasoning=value, text=value, calls=[(value[:40] or "t", {"v": value})]
        )
        agent.tool_result(call, value, is_error=number % 2 == 0)
        agent.end_step()
        agent.end_turn()
    app.flush(handle)
    return handle.id


def client(
    app: Sessions, scope: Scope | None = None, token: str | None = None
) -> TestClient:
    from starlette.testclient import TestClient

    from agentlog.infrastructure.web.server import build_app

    return TestClient(build_app(Browser(app, scope), token=token))
