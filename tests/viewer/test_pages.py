"""The viewer's pages and JSON API, in process (Starlette's test client).

The pages are server-rendered: the HTML holds the listing's links and a session's
messages. Every session string is escaped; the JSON API gives the CLI's ``--json``
data; the security headers and the token are on every response.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING
from urllib.parse import quote

import pytest

from agentlog import SessionQuery
from agentlog.application.browse import Browser
from agentlog.application.scope import Scope
from agentlog.infrastructure.web.guard import CSP
from tests.viewer.support import HOSTILE, client, hostile, scripted

if TYPE_CHECKING:
    from agentlog.application import Sessions

pytestmark = pytest.mark.parametrize(
    "backend", ["sqlite", "postgres"], indirect=True
)  # the PostgreSQL leg is in the full tier (tests/conftest.py)


API_TAILS = ("", "/messages", "/surface", "/events", "/events/1", "/lineage")
API_TAILS += ("/events/1/trace", "/messages?at=1", "/surface?at=1")
PAGE_TAILS = ("", "/event/1", "/step/1", "/live", "/titles")


def url(session_id: str, tail: str = "") -> str:
    return f"/s/{quote(session_id, safe='')}{tail}"


def test_listing_links_every_session_newest_first(app: Sessions) -> None:
    first = scripted(app, words="first")
    second = scripted(app, words="second")
    fork = app.fork(second, None).id
    app.flush()
    page = client(app).get("/")
    assert page.status_code == 200
    assert page.headers["content-security-policy"] == CSP
    body = page.text
    for session_id in (first, second, fork):
        assert f'href="{url(session_id)}"' in body
    assert body.index(fork) < body.index(second) < body.index(first)
    assert "fork</a>" in body
    assert '<script src="/static/viewer.js" defer></script>' in body
    assert "<script>" not in body and "style=" not in body


def test_listing_pages_and_filters(app: Sessions) -> None:
    ids = [
        scripted(app, cwd=f"/ws/{n % 2}", owner="o" if n < 3 else None)
        for n in range(5)
    ]
    view = client(app)
    first = view.get("/api/sessions?limit=2").json()
    assert len(first["items"]) == 2
    rest = view.get(f"/api/sessions?limit=10&cursor={first['nextCursor']}").json()
    assert [i["id"] for i in first["items"] + rest["items"]] == ids[::-1]
    assert {
        i["id"] for i in view.get("/api/sessions?cwd=/ws/0").json()["items"]
    } == set(ids[0::2])
    owned = view.get("/api/sessions?owner=o&cwd=/ws/1").json()["items"]
    assert [i["id"] for i in owned] == [ids[1]]
    html = view.get("/?cwd=/ws/1").text
    assert ids[1] in html and ids[0] not in html
    assert view.get("/api/sessions?from=2999-01-01").json()["items"] == []
    assert len(view.get("/api/sessions?to=2999-01-01").json()["items"]) == 5
    assert view.get("/api/sessions?limit=0").status_code == 400


def test_session_page_shows_the_conversation_and_timeline(app: Sessions) -> None:
    session_id = scripted(app, words="gamma")
    body = client(app).get(url(session_id)).text
    assert "Add a health endpoint" in body
    assert "<details class=reasoning><summary>reasoning</summary>" in body
    assert "thinking about gamma" in body
    # The failed result sits beside its call, marked as an error.
    assert re.search(
        r"<div class=pair><div class=call><b>read_file</b>.*result error", body
    )
    assert "contents of gamma" in body
    assert "streamed chunks" in body  # chunk runs fold into one row
    assert "<td>tool/result <span class=bad>error</span></td>" in body
    assert 'class="surface current"' in body and 'class="surface log-only"' in body
    assert f'data-live="{url(session_id, "/live")}"' in body


def test_event_step_and_lineage_pages(app: Sessions) -> None:
    parent = scripted(app, words="delta", turns=2)
    ends = [e["seq"] for e in app.read_events(parent) if e["type"] == "turn/end"]
    child = app.fork(parent, ends[0]).id
    app.flush()
    view = client(app)
    assert f'href="{url(child)}"' in view.get(url(parent)).text
    assert f'href="{url(parent)}"' in view.get(url(child)).text
    titles = view.get(url(parent, "/titles")).text
    assert "Add a health endpoint" in titles and "#2</a>" in titles
    event = view.get(url(parent, "/event/1")).text
    assert "sources" in event and "replaced by" in event
    step = view.get(url(parent, f"/step/{ends[0]}")).text
    assert "What the model saw after" in step
    messages = app.messages(parent, at=ends[0])
    assert len(re.findall(r"<li class=\"(?:added)?\">", step)) >= len(messages)
    assert view.get(url(parent, "/step/99999")).status_code == 404


def test_api_is_the_cli_json(app: Sessions) -> None:
    session_id = scripted(app, words="epsilon")
    query = SessionQuery(app)
    view = client(app)
    assert view.get(f"/api/sessions/{session_id}/messages").json() == app.messages(
        session_id
    )
    assert view.get(f"/api/sessions/{session_id}/messages?at=5").json() == app.messages(
        session_id, at=5
    )
    surface = view.get(f"/api/sessions/{session_id}/surface?at=5").json()
    assert surface == query.read_surface(session_id, at=5).to_json()
    window = view.get(f"/api/sessions/{session_id}/events/3?before=1&after=2").json()
    assert window == query.read_event(session_id, 3, 1, 2).to_json()
    trace = view.get(f"/api/sessions/{session_id}/events/3/trace").json()
    assert trace == query.trace_event(session_id, 3).to_json()
    assert view.get(f"/api/sessions/{session_id}/lineage").json() == (
        query.trace_session(session_id).to_json()
    )
    records = [r.to_json() for r in query.list_events(session_id)]
    assert view.get(f"/api/sessions/{session_id}/events?limit=500").json() == {
        "items": records
    }
    tools = view.get(
        f"/api/sessions/{session_id}/events?types=tool/call,tool/result"
    ).json()
    assert {i["type"] for i in tools["items"]} == {"tool/call", "tool/result"}
    missing = view.get("/api/sessions/nope/messages")
    assert missing.status_code == 404
    assert missing.json()["code"] == "SESSION_QUERY_SESSION_NOT_FOUND"
    spec = view.get("/api/openapi.json").json()
    assert "/api/sessions/{id}/surface" in spec["paths"]


def test_search_highlights_and_follows_cursors(app: Sessions) -> None:
    ids = [scripted(app, words=f"needle{n}") for n in range(3)]
    view = client(app)
    seen = set()
    path = "/search?q=Looking"
    pages = 0
    while path:
        body = view.get(path).text
        assert "<mark>Looking</mark>" in body
        seen |= {i for i in ids if i in body}
        more = re.search(r'<a href="([^"]+)" class=more rel=next>', body)
        path = more.group(1).replace("&amp;", "&") if more else ""
        pages += 1
    assert seen == set(ids)
    api = view.get("/api/search?q=Looking&limit=1").json()
    assert len(api["items"]) == 1 and api["nextCursor"]


def test_hostile_strings_are_text_everywhere(app: Sessions) -> None:
    session_id = hostile(app)
    view = client(app)
    pages = [
        "/",
        url(session_id),
        url(session_id, "/event/0"),
        url(session_id, "/step/5"),
        "/search?q=script",
        "/search?q=" + quote(HOSTILE[0]),
    ]
    for path in pages:
        response = view.get(path)
        assert response.status_code == 200, path
        body = response.content.decode("utf-8")  # valid UTF-8: no lone surrogate
        assert "<script>" not in body, path
        assert "<img" not in body and "<h1>broken" not in body, path
        assert "\x00" not in body and "\u202e" not in body and "\x1b" not in body, path
    body = view.get(url(session_id)).text
    assert "&lt;script&gt;window.__pwned = 1&lt;/script&gt;" in body
    assert '<span class="cp">\\ud83d</span>' in body
    assert '<span class="cp">\\u202e</span>' in body


def test_scope_binding_hides_everything_else(app: Sessions) -> None:
    inside = scripted(app, cwd="/ws/in", words="visible")
    outside = scripted(app, cwd="/ws/out", words="zanzibar", prompt="Secret plan")
    view = client(app, Scope(cwd="/ws/in"))
    responses = [
        view.get("/"),
        view.get("/?cwd=/ws/out"),
        view.get("/api/sessions"),
        view.get("/api/sessions?cwd=/ws/out"),
        view.get("/search?q=contents"),
        view.get("/api/search?q=contents"),
        view.get("/api/search?q=Looking"),
        view.get(url(inside)),
    ]
    for response in responses:
        for secret in (outside.encode(), b"zanzibar", b"Secret plan"):
            assert secret not in response.content, response.url
    # A request naming the outside id gets exactly a never-stored id's answer.
    never = "0" * len(outside)
    paths = [f"/api/sessions/{{}}{tail}" for tail in API_TAILS]
    paths += [url("{}", tail).replace("%7B%7D", "{}") for tail in PAGE_TAILS]
    for path in paths:
        hidden = view.get(path.format(outside))
        missing = view.get(path.format(never))
        assert hidden.status_code == missing.status_code == 404, path
        assert (
            hidden.content.replace(outside.encode(), never.encode()) == missing.content
        )
    # A query naming the outside text finds nothing (the page echoes the query).
    assert view.get("/api/search?q=zanzibar").json()["items"] == []
    assert "No matches" in view.get("/search?q=zanzibar").text
    assert view.get(url(outside)).status_code == 404
    assert view.get(url("never-stored")).status_code == 404
    assert inside.encode() in view.get("/").content


def test_a_token_guards_every_route(app: Sessions) -> None:
    session_id = scripted(app)
    view = client(app, token="s3cret")
    assert view.get("/").status_code == 401
    assert view.get(f"/api/sessions/{session_id}").status_code == 401
    assert b"Add a health" not in view.get(url(session_id)).content
    ok = view.get("/", headers={"Authorization": "Bearer s3cret"})
    assert ok.status_code == 200 and session_id in ok.text
    entered = view.get("/?token=s3cret", follow_redirects=False)
    assert entered.status_code == 303 and entered.headers["location"] == "/"
    assert "HttpOnly" in entered.headers["set-cookie"]
    assert view.get("/").status_code == 200  # the cookie now
    assert view.get("/?token=wrong", headers={"cookie": ""}).status_code in (200, 401)


def test_browser_reads_are_bounded_by_the_page(app: Sessions) -> None:
    session_id = scripted(app, turns=30)
    browser = Browser(app)
    count = browser.summary(session_id).event_count
    page = browser.timeline(session_id, 10, count, limit=20)
    assert [r.event["seq"] for r in page.rows] == list(range(10, 30))
    assert page.next_start == 30 and page.previous_start == 0
    records = {r.seq: r.surface for r in SessionQuery(app).list_events(session_id)}
    assert all(records[r.event["seq"]] == r.surface for r in page.rows)
    typed = browser.timeline(
        session_id, 0, count, limit=5, types=frozenset({"turn/end"})
    )
    assert [r.event["type"] for r in typed.rows] == ["turn/end"] * 5


def test_a_typed_query_stays_as_typed_in_its_field(app: Sessions) -> None:
    scripted(app)
    body = client(app).get("/search?q=" + quote("bidi \u202e <b>")).text
    assert 'value="bidi \u202e &lt;b&gt;"' in body


def test_a_step_is_the_surface_as_of_its_seq(app: Sessions) -> None:
    session_id = scripted(app, turns=3)
    browser = Browser(app)
    query = SessionQuery(app)
    steps = [e["seq"] for e in app.read_events(session_id) if e["type"] == "step/start"]
    for seq in (0, steps[1], steps[2] + 3, len(app.read_events(session_id)) - 1):
        step = browser.step(session_id, seq)
        assert step.events == query.read_surface(session_id, at=seq).events
        assert step.total == len(step.events)
        before = (
            [] if step.previous is None else app.messages(session_id, at=step.previous)
        )
        assert len(before) <= step.total


def test_a_conversation_page_is_a_slice_of_the_surface(app: Sessions) -> None:
    session_id = scripted(app, turns=4)
    surface = SessionQuery(app).read_surface(session_id).events
    browser = Browser(app)
    for start, limit in ((0, 3), (2, 5), (len(surface) - 1, 10), (len(surface), 10)):
        events, total = browser.conversation(session_id, start, limit)
        assert events == surface[start : start + limit]
        assert total == len(surface)
