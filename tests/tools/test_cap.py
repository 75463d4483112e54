"""One search call follows cursors up to ``max_search_results`` and says when it
capped; the caller's own session never counts."""

from __future__ import annotations

import re

import pytest

from agentlog.application import Sessions
from agentlog.application.model_tools import FAILED, ModelTools
from agentlog.application.model_tools import collect as collect_module
from agentlog.application.model_tools.collect import Collected, collect
from agentlog.application.model_tools.text import CAPPED
from agentlog.infrastructure.cli.demo.agent import ScriptedAgent
from tests.tools.support import WORKSPACE, fixed_clock


def listed(text: str) -> list[str]:
    return re.findall(r"^\d+\. Session (\S+) — ", text, re.M)


def hits(text: str) -> list[int]:
    return [int(seq) for seq in re.findall(r"^\d+\. seq (\d+) ", text, re.M)]


def needles(app: Sessions, sessions: int, prompts: int = 1) -> None:
    fixed_clock(app)
    for number in range(sessions):
        handle = app.create_session(cwd=WORKSPACE, session_id=f"s{number:02}")
        agent = ScriptedAgent(handle)
        for prompt in range(prompts):
            agent.start_turn(f"needle {number} {prompt}")
            agent.end_turn()
        app.close(handle)
    me = app.create_session(cwd=WORKSPACE, session_id="me")
    ScriptedAgent(me).start_turn("needle of the caller")
    app.close(me)


def test_session_search_caps_and_says_so(app: Sessions) -> None:
    needles(app, 7)
    capped = ModelTools(app, "me", max_search_results=5).call(
        "session_search", {"query": "needle"}
    )
    assert len(listed(capped.text)) == 5
    assert "me" not in listed(capped.text)
    assert capped.text.endswith("\n\n" + CAPPED)
    # Seven other sessions: a cap of seven shows them all, and is not "capped",
    # although the caller's own session matched too.
    whole = ModelTools(app, "me", max_search_results=7).call(
        "session_search", {"query": "needle"}
    )
    assert len(listed(whole.text)) == 7 and CAPPED not in whole.text


def test_cursors_are_followed_inside_one_call(
    app: Sessions, monkeypatch: pytest.MonkeyPatch
) -> None:
    needles(app, 7, prompts=3)
    tools = ModelTools(app, "me", max_search_results=100)
    one_page = tools.call("session_search", {"query": "needle"}).text
    events_one_page = tools.call(
        "session_event_search", {"session_id": "s03", "query": "needle"}
    ).text
    monkeypatch.setattr(collect_module, "PAGE_MAX", 2)
    assert tools.call("session_search", {"query": "needle"}).text == one_page
    paged = tools.call("session_event_search", {"session_id": "s03", "query": "needle"})
    assert paged.text == events_one_page
    assert len(hits(paged.text)) == 3
    small = ModelTools(app, "me", max_search_results=2)
    capped = small.call(
        "session_event_search", {"session_id": "s03", "query": "needle"}
    )
    assert hits(capped.text) == hits(events_one_page)[:2]
    assert capped.text.endswith(CAPPED)


class Page:
    def __init__(self, items: list[int], next_cursor: str | None) -> None:
        self.items = items
        self.next_cursor = next_cursor


def test_collect_stops_at_the_cap_and_on_a_repeated_cursor() -> None:
    pages = {None: Page([1, 2], "a"), "a": Page([3, 4], "b"), "b": Page([5], None)}
    asked: list[tuple[str | None, int]] = []

    def fetch(cursor: str | None, size: int) -> Page:
        asked.append((cursor, size))
        return pages[cursor]

    assert collect(fetch, 10) == Collected([1, 2, 3, 4, 5], capped=False)
    assert asked == [(None, 11), ("a", 11), ("b", 11)]
    assert collect(fetch, 3) == Collected([1, 2, 3], capped=True)
    assert collect(fetch, 5) == Collected([1, 2, 3, 4, 5], capped=False)
    assert collect(fetch, 10, keep=lambda n: n % 2 == 1).items == [1, 3, 5]
    asked.clear()
    assert collect(fetch, 1, keep=lambda n: n != 1, dropped=1) == Collected(
        [2], capped=True
    )
    assert asked[0] == (None, 3)  # the refused item is asked for on the first page
    loop = {None: Page([1], "a"), "a": Page([2], "a")}
    with pytest.raises(RuntimeError, match="repeated a continuation cursor"):
        collect(lambda cursor, size: loop[cursor], 10)


def test_a_looping_search_is_a_model_safe_failure(
    app: Sessions, monkeypatch: pytest.MonkeyPatch
) -> None:
    needles(app, 1)
    tools = ModelTools(app, "me")

    def looping(*args: object, **kwargs: object) -> Page:
        return Page([], "again")

    monkeypatch.setattr(tools.caller.reads, "search_events", looping)
    result = tools.call("session_event_search", {"session_id": "s00", "query": "x"})
    assert result.is_error and result.text == FAILED
