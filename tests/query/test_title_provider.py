"""Persistence scenarios 88 (providers on forks), 91 (result checks) and 92 (the
model request record), on every backend.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from agentlog.application import LlmTitleHelper, Sessions, SessionTitles, TitleRequest
from agentlog.domain.errors import TitleError
from agentlog.domain.title import TitleConfig, fold_session_title

MakeApp = Callable[..., Sessions]
USER = {"kind": "user"}
CONFIG = TitleConfig(5, 40, 80)
ROUTE_HEADER = {
    "header": {"config": {"provider": "acme", "model": "m1"}},
    "reason": "initial",
}


@dataclass
class Provider:
    id: str = "llm"
    mode: str = "all-user-messages"
    result: Any = None
    requests: list[TitleRequest] = field(default_factory=list)

    def title(self, request: TitleRequest) -> object:
        self.requests.append(request)
        if self.result is not None:
            return self.result
        return {
            "title": f"About {len(request.messages)} prompts",
            "messageSeqs": request.message_seqs,
            "model": {"provider": "acme", "model": "m1"},
        }


def prompt(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "source": USER}


def open_turn(handle: Any, turn: int = 1) -> None:
    handle.append(
        "turn/start", {"turn": turn, "trigger": {"kind": "message", "source": USER}}
    )
    handle.append("request/header", ROUTE_HEADER)


def test_a_second_provider_is_refused(make_app: MakeApp) -> None:
    titles = SessionTitles(make_app(), CONFIG)
    titles.register(Provider())
    with pytest.raises(
        TitleError, match='session-title provider "other" is already registered'
    ):
        titles.register(Provider(id="other"))


def test_pq_088_providers_on_a_fork(make_app: MakeApp) -> None:
    app = make_app()
    titles = SessionTitles(app, CONFIG)
    first = Provider(mode="first-message")
    titles.register(first)
    parent = app.create_session(session_id="parent")
    open_turn(parent)
    parent.append("user/message", prompt("parent question"), surface_op="append")
    parent.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    assert len(first.requests) == 1
    child = app.fork("parent")
    open_turn(child, 2)
    child.append("user/message", prompt("child question"), surface_op="append")
    assert len(first.requests) == 1  # first-message is not called for the child
    assert fold_session_title(child.events) == fold_session_title(parent.events)

    app2 = make_app()
    every = Provider()
    SessionTitles(app2, CONFIG).register(every)
    source = app2.create_session(session_id="p2")
    open_turn(source)
    source.append("user/message", prompt("inherited"), surface_op="append")
    source.append("turn/end", {"turn": 1, "reason": {"kind": "completed"}})
    kid = app2.fork("p2")
    open_turn(kid, 2)
    kid.append("user/message", prompt("child one"), surface_op="append")
    kid.append("user/message", prompt("child two"), surface_op="append")
    title = fold_session_title(kid.events)
    assert title is not None
    assert title.source.kind == "provider"
    assert len(title.message_seqs) == 3
    assert title.message_seqs[0] == 2  # the inherited prompt


@pytest.mark.parametrize(
    ("result", "message"),
    [
        ("not an object", "an invalid result"),
        ({"title": 3, "messageSeqs": [2]}, "title must be a string"),
        ({"title": " \x1b[0m ", "messageSeqs": [2]}, "an empty title"),
        ({"title": "t", "messageSeqs": []}, "at least one source message"),
        ({"title": "t", "messageSeqs": [2, 2]}, "unique, ordered seqs"),
        ({"title": "t", "messageSeqs": [99]}, "unique, ordered seqs"),
        (
            {"title": "t", "messageSeqs": [2], "model": {"provider": ""}},
            "model provenance",
        ),
    ],
)
def test_pq_091_invalid_provider_results(
    make_app: MakeApp, result: Any, message: str
) -> None:
    app = make_app()
    titles = SessionTitles(app, CONFIG)
    bad = Provider(result=result)
    titles.register(bad)
    handle = app.create_session(session_id="t")
    open_turn(handle)
    handle.append("user/message", prompt("keep the fallback"), surface_op="append")
    # the automatic run failed quietly; the fallback stands
    title = fold_session_title(handle.events)
    assert title is not None
    assert title.title == "keep the fallback"
    with pytest.raises(TitleError, match=message):
        titles.refresh("t")
    assert fold_session_title(handle.events) == title


def test_pq_092_the_model_request_is_logged_before_dispatch(make_app: MakeApp) -> None:
    app = make_app()
    handle = app.create_session(session_id="t")
    open_turn(handle)
    handle.append("user/message", prompt("what is this about"), surface_op="append")
    sent: list[Any] = []

    def complete(route: Any, system: str, messages: Any, max_tokens: int) -> str:
        sent.append([e["type"] for e in app.read_events("t")])
        return "A title"

    helper = LlmTitleHelper(app, "llm", complete, max_input_bytes=64)
    request = TitleRequest(
        "t",
        {"provider": "acme", "model": "m1"},
        [{"seq": 2, "text": "what is this about"}],
        80,
    )
    assert helper.ask(request) == "A title"
    record = app.read_events("t")[-1]
    assert record["type"] == "session/title-llm-request"
    assert set(record["data"]) == {
        "titleProvider",
        "messageSeqs",
        "route",
        "system",
        "messages",
        "maxTokens",
    }
    assert sent[0][-1] == "session/title-llm-request"
    oversized = TitleRequest("t", request.route, [{"seq": 2, "text": "x" * 65}], 80)
    before = len(app.read_events("t"))
    assert helper.ask(oversized) is None
    assert len(app.read_events("t")) == before
    assert len(sent) == 1
