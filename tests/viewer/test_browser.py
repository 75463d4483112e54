"""The viewer in a real browser: Playwright driving Debian's Chromium.

One SQLite store (demo-like sessions, a fork, the hostile strings and one
100,000-event session) served by ``agentlog serve`` in a subprocess. Screenshots of
every page go to ``.artifacts/viewer/`` (or ``AGENTLOG_ARTIFACTS``) for a person
to look at. Playwright's own browser download is not used: the system Chromium is.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import pytest

from agentlog import open_sessions
from agentlog.infrastructure.cli.demo.agent import ScriptedAgent
from tests.viewer.support import HOSTILE, hostile, scripted

if TYPE_CHECKING:
    from collections.abc import Iterator

pytestmark = pytest.mark.slow

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
BIG_EVENTS = 100_000
ARTIFACTS = (
    Path(
        os.environ.get("AGENTLOG_ARTIFACTS")
        or Path(__file__).resolve().parents[2] / ".artifacts"
    )
    / "viewer"
)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def write_big(url: str, events: int) -> None:
    app = open_sessions(url)
    handle = app.create_session(session_id="big", cwd="/ws/big")
    agent = ScriptedAgent(handle)
    turn = 0
    while handle.seq < events - 40:
        agent.start_turn(f"prompt {turn}")
        for _ in range(5):
            agent.model_step(text=f"answer {turn} " * 3)
            agent.end_step()
        agent.end_turn()
        turn += 1
        if turn % 50 == 0:
            app.flush(handle)
    app.flush(handle)
    app.close()


@contextlib.contextmanager
def serving(url: str, *extra: str) -> Iterator[str]:
    """``agentlog serve`` on a free port until the block ends (ended by its pid)."""
    port = free_port()
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "agentlog",
            "serve",
            "--store",
            url,
            "--port",
            str(port),
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with (
                contextlib.suppress(OSError),
                socket.create_connection(("127.0.0.1", port), 0.5),
            ):
                break
            assert process.poll() is None, process.stderr.read()  # type: ignore[union-attr]
            time.sleep(0.2)
        yield base
    finally:
        process.terminate()
        process.wait(timeout=30)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    directory = tmp_path_factory.mktemp("viewer")
    url = f"sqlite:///{directory / 'agentlog.db'}"
    app = open_sessions(url)
    ids: dict[str, Any] = {"url": url}
    ids["main"] = scripted(app, words="gamma", turns=3)
    ends = [e["seq"] for e in app.read_events(ids["main"]) if e["type"] == "turn/end"]
    ids["fork"] = app.fork(ids["main"], ends[0]).id
    app.flush()
    ids["hostile"] = hostile(app)
    ids["other"] = scripted(
        app, cwd="/ws/other", words="zanzibar", prompt="Secret plan"
    )
    app.close()
    write_big(url, BIG_EVENTS)
    return ids


@pytest.fixture(scope="module")
def server(store: dict[str, Any]) -> Iterator[str]:
    with serving(store["url"]) as base:
        yield base


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    playwright_api = pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists():
        pytest.skip("no Chromium at /usr/bin/chromium (.ci/run installs it)")
    with playwright_api.sync_playwright() as driver:
        chromium = driver.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda error: errors.append(str(error)))
    tab.on(
        "console",
        lambda message: (
            errors.append(message.text) if message.type == "error" else None
        ),
    )
    tab.errors = errors
    yield tab
    context.close()


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=False)


def session_path(session_id: str, tail: str = "") -> str:
    return f"/s/{quote(session_id, safe='')}{tail}"


def test_listing_search_session_tool_call_and_fork(
    page: Any, server: str, store: dict[str, Any]
) -> None:
    page.goto(server + "/")
    rows = page.locator("table.sessions tbody tr")
    assert rows.count() >= 5
    assert page.locator(f'a[href="{session_path(store["main"])}"]').count() >= 1
    shot(page, "listing")
    page.set_viewport_size({"width": 390, "height": 844})
    shot(page, "listing-narrow")
    assert page.evaluate("document.documentElement.scrollWidth <= innerWidth + 1")
    page.set_viewport_size({"width": 1280, "height": 900})

    page.fill("header.top input[name=q]", "gamma")
    page.press("header.top input[name=q]", "Enter")
    page.wait_for_selector("ol.hits li mark")
    assert page.locator("ol.hits mark").first.inner_text().lower() == "gamma"
    shot(page, "search")

    page.goto(server + session_path(store["main"]))
    assert page.locator("article.msg.user").first.is_visible()
    tool = page.locator("details.tool").first
    assert not tool.locator(".result").is_visible()
    tool.locator("summary").click()
    assert tool.locator(".result.error").is_visible()
    assert "contents of gamma" in tool.locator(".result").inner_text()
    shot(page, "session-tool-call")
    page.set_viewport_size({"width": 390, "height": 844})
    shot(page, "session-narrow")
    assert page.evaluate("document.documentElement.scrollWidth <= innerWidth + 1")
    page.set_viewport_size({"width": 1280, "height": 900})

    page.locator(f'section.lineage a[href="{session_path(store["fork"])}"]').click()
    page.wait_for_url("**" + session_path(store["fork"]))
    assert store["fork"] in page.locator("dl.meta").inner_text()
    assert page.locator(
        f'section.lineage a[href="{session_path(store["main"])}"]'
    ).count()
    shot(page, "fork")
    page.goto(server + session_path(store["main"], "/step/20"))
    assert "What the model saw after #20" in page.inner_text("h1")
    shot(page, "step")
    assert page.errors == []


def live_event_arrives(page: Any, base: str, url: str, name: str) -> None:
    """A session page open in the browser shows an event flushed after it loaded."""
    app = open_sessions(url)
    handle = app.create_session(cwd="/ws/a")
    agent = ScriptedAgent(handle)
    agent.start_turn("watch me")
    app.flush(handle)
    page.goto(base + session_path(handle.id))
    page.wait_for_selector("#live-status:text('live')", timeout=20_000)
    before = page.locator("#timeline-rows tr").count()
    agent.model_step(text="a new answer")
    agent.end_step()
    agent.end_turn()
    app.flush(handle)
    page.wait_for_selector("#timeline-rows tr.fresh", timeout=20_000)
    page.wait_for_function(
        "n => document.querySelectorAll('#timeline-rows tr').length > n", arg=before
    )
    assert page.locator("#event-count").inner_text() == str(handle.seq)
    page.locator("#timeline-rows tr.fresh").last.scroll_into_view_if_needed()
    shot(page, name)
    app.close()


def test_a_live_event_arrives(page: Any, server: str, store: dict[str, Any]) -> None:
    live_event_arrives(page, server, store["url"], "live")


def test_a_live_event_arrives_on_postgresql(page: Any) -> None:
    """On PostgreSQL the server's stream is woken by ``LISTEN`` (docs/viewer.md)."""
    from tests.conftest import PG_URL, postgres_schema

    for schema in postgres_schema("view_"):
        url = f"{PG_URL}?schema={schema}"
        scripted(open_sessions(url), words="postgres")
        with serving(url) as base:
            live_event_arrives(page, base, url, "live-postgresql")


def test_a_100000_event_session_opens_and_pages(
    page: Any, server: str, store: dict[str, Any]
) -> None:
    page.goto(server + session_path("big"))  # the first visit catches the views up
    started = time.monotonic()
    page.goto(server + session_path("big"))
    loaded = time.monotonic() - started
    count = int(page.locator("#event-count").inner_text())
    assert count > BIG_EVENTS - 100
    rows = page.locator("#timeline-rows > tr.ev")
    assert rows.last.locator("td").first.inner_text() == str(count - 1)
    shot(page, "big-session")
    page.locator("section.timeline nav a", has_text="earlier").click()
    page.wait_for_load_state()
    first = int(page.locator("#timeline-rows > tr.ev td").first.inner_text())
    assert first < count - 200
    page.fill("input[name=t]", "50000")
    page.press("input[name=t]", "Enter")
    page.wait_for_load_state()
    assert page.locator("#timeline-rows > tr.ev td").first.inner_text() == "50000"
    page.locator("#timeline").scroll_into_view_if_needed()
    shot(page, "big-session-paged")
    print(f"\n100,000-event session page loaded in the browser in {loaded:.2f} s")


def test_hostile_strings_run_nothing_and_break_no_layout(
    page: Any, server: str, store: dict[str, Any]
) -> None:
    sid = store["hostile"]
    paths = [
        "/",
        session_path(sid),
        session_path(sid, "/event/3"),
        session_path(sid, "/step/12"),
    ]
    paths += [
        "/search?q=" + quote("window.__pwned"),
        "/search?q=" + quote(HOSTILE[5][:8]),
    ]
    for number, path in enumerate(paths):
        page.goto(server + path)
        page.evaluate(
            "document.querySelectorAll('details').forEach(d => d.open = true)"
        )
        assert page.evaluate("typeof window.__pwned") == "undefined", path
        assert page.locator("img").count() == 0, path
        assert page.locator("main h1").count() == 1, path  # no injected heading
        assert page.evaluate(
            "document.documentElement.scrollWidth <= innerWidth + 1"
        ), path
        # Every element of main stays inside it (no text escapes its box).
        assert page.evaluate(
            """() => { const m = document.querySelector('main').getBoundingClientRect();
               return [...document.querySelectorAll('main *')].every(e => {
                 const r = e.getBoundingClientRect();
                 return r.width === 0 || (r.left >= m.left - 1 && r.right <= m.right + 1); }); }"""
        ), path
        shot(page, f"hostile-{number}")
    page.goto(server + "/")
    # The rows keep their order and their own cells: the hostile session's title
    # (a reversed-text override) is one cell of one row.
    ids = page.eval_on_selector_all(
        "table.sessions tbody tr", "rs => rs.map(r => r.dataset.id)"
    )
    assert sid in ids
    row = page.locator(f'tr[data-id="{sid}"]')
    assert row.locator("td").count() == 6
    assert page.errors == []


def test_scope_bound_server_never_sends_another_workspace(
    store: dict[str, Any],
) -> None:
    import http.client
    import urllib.request

    secrets = [store["other"].encode(), b"zanzibar", b"Secret plan"]
    with serving(store["url"], "--cwd", "/ws/a") as base:
        inside = store["main"]
        paths = ["/", "/api/sessions", "/api/sessions?limit=500", "/search?q=contents"]
        paths += [
            "/api/search?q=contents",
            "/api/search?q=Looking",
            "/api/openapi.json",
        ]
        paths += [session_path(inside), f"/api/sessions/{inside}/lineage"]
        paths += [session_path(store["fork"]), session_path(inside, "/step/10")]
        for path in paths:
            with urllib.request.urlopen(base + path, timeout=30) as response:
                body = response.read()
            for secret in secrets:
                assert secret not in body, path
        # The live stream of an inside session, while an outside one is written.
        app = open_sessions(store["url"])
        mine = app.create_session(cwd="/ws/a")
        inside_agent = ScriptedAgent(mine)
        inside_agent.start_turn("inside")
        app.flush(mine)
        host, port = base.removeprefix("http://").split(":")
        connection = http.client.HTTPConnection(host, int(port), timeout=30)
        connection.request("GET", session_path(mine.id, "/live"))
        stream = connection.getresponse()
        assert stream.status == 200
        outside = app.create_session(cwd="/ws/other")
        agent = ScriptedAgent(outside)
        agent.start_turn("zanzibar again")
        agent.end_turn()
        app.flush(outside)
        secrets.append(outside.id.encode())
        inside_agent.end_turn()
        app.flush(mine)
        received = b""
        while b"turn/end" not in received:
            piece = stream.read1(4096)
            assert piece, received
            received += piece
        connection.close()
        app.close()
        assert received.startswith(b"retry:")
        assert b"event: append" in received
        for secret in secrets:
            assert secret not in received
