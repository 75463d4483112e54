"""The Starlette application of ``agentlog serve``: pages, API, live updates.

Pages are rendered on the server (:mod:`~agentlog.infrastructure.web.pages`); the
JavaScript in ``static/`` only enhances them (live rows, folding). Every read goes
through a :class:`~agentlog.application.browse.Browser` bound to the server's scope.
Live updates follow the store's notification log: a session page's event stream
reads it when the store says it was written (:mod:`~agentlog.infrastructure.web.live`)
and sends the session's new events as server-sent events.
"""

from __future__ import annotations

import importlib.resources
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.responses import (
    HTMLResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Route

from agentlog.domain.errors import AgentlogError, SessionQueryError
from agentlog.domain.json import dumps
from agentlog.infrastructure.web import api, pages
from agentlog.infrastructure.web.guard import Guard
from agentlog.infrastructure.web.html import error_page
from agentlog.infrastructure.web.live import LiveSignal
from agentlog.infrastructure.web.params import (
    ParameterError,
    integer,
    listing_filter,
    session_id,
    types_param,
)
from agentlog.infrastructure.web.session_page import (
    SessionView,
    session_page,
    titles_page,
)

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Callable

    from starlette.requests import Request

    from agentlog.application.browse import Browser

LISTING_PAGE = 50
TIMELINE_PAGE = 200
CONVERSATION_PAGE = 100
TRACE_MAX = 20_000
"""An event trace folds the whole log: longer sessions show the event's own links."""
HEARTBEAT_SECONDS = 15.0
STATIC = {"viewer.css": "text/css", "viewer.js": "text/javascript"}
_NOT_FOUND = {SessionQueryError.SESSION_NOT_FOUND, SessionQueryError.EVENT_NOT_FOUND}


def _status(error: Exception) -> tuple[int, str, str | None]:
    """HTTP status, one-line message and code of a read's failure."""
    if isinstance(error, ParameterError):
        return 400, str(error), "INVALID_PARAMETER"
    if isinstance(error, SessionQueryError):
        status = 404 if error.code in _NOT_FOUND else 400
        if error.code == SessionQueryError.PERSISTENCE_FAILED:
            status = 503
        return status, str(error), error.code
    if isinstance(error, LookupError):
        return 404, str(error), None
    code = getattr(error, "code", None)
    return 400, str(error), code if isinstance(code, str) else None


def build_app(
    browser: Browser, *, token: str | None = None, signal: LiveSignal | None = None
) -> Guard:
    """The ASGI application (wrapped in the security headers and token check).

    ``signal`` wakes the event streams (one per server; its owner closes it)."""
    signal = signal if signal is not None else LiveSignal(browser.app)

    def page(render: Callable[[Request], str]) -> Callable[[Request], Response]:
        def endpoint(request: Request) -> Response:
            try:
                return HTMLResponse(render(request))
            except (AgentlogError, ParameterError) as error:
                status, message, _ = _status(error)
                return HTMLResponse(error_page(status, message), status)

        return endpoint

    def listing(request: Request) -> str:
        query = request.query_params
        wanted = listing_filter(query)
        result = browser.listing(wanted, LISTING_PAGE, query.get("cursor"))
        filters = {k: query[k] for k in ("cwd", "owner", "from", "to") if query.get(k)}
        more = (
            "/?" + urlencode({**filters, "cursor": result.next_cursor})
            if result.next_cursor
            else None
        )
        return pages.listing(result, filters, more)

    def search(request: Request) -> str:
        query = request.query_params
        text = query.get("q", "")
        if not text.strip():
            return pages.search_results(text, None, None)
        found = browser.search(text, query.get("cursor"))
        more = (
            "/search?" + urlencode({"q": text, "cursor": found.next_cursor})
            if found.next_cursor
            else None
        )
        return pages.search_results(text, found, more)

    def session(request: Request) -> str:
        sid = session_id(request)
        query = request.query_params
        summary = browser.summary(sid)
        count = summary.event_count
        types = query.get("types", "")
        last_page = max(0, count - TIMELINE_PAGE)
        start = integer(query, "t", last_page, 0, 2**63 - 1)
        timeline = browser.timeline(
            sid, start, count, limit=TIMELINE_PAGE, types=types_param(types)
        )
        c_start = integer(query, "c", 0, 0, 2**63 - 1)
        talk, surface_length = browser.conversation(sid, c_start, CONVERSATION_PAGE)
        return session_page(
            SessionView(
                summary=summary,
                conversation=talk,
                surface_length=surface_length,
                conversation_start=c_start,
                timeline=timeline,
                types=types,
                lineage=browser.lineage(sid),
            )
        )

    def event(request: Request) -> str:
        sid = session_id(request)
        seq = api.integer_path(request, "seq")
        target = browser.event(sid, seq)
        trace = None
        if browser.summary(sid).event_count <= TRACE_MAX:
            try:
                trace = browser.trace_event(sid, seq)
            except SessionQueryError as error:
                if error.code != SessionQueryError.INVALID_SURFACE:
                    raise
        return pages.event_page(sid, target, trace)

    def titles(request: Request) -> str:
        sid = session_id(request)
        count = browser.summary(sid).event_count
        return titles_page(sid, browser.title_history(sid, count))

    def step(request: Request) -> str:
        sid = session_id(request)
        seq = api.integer_path(request, "seq")
        return pages.step_page(sid, browser.step(sid, seq))

    async def live(request: Request) -> Response:
        sid = session_id(request)
        try:
            summary = await run_in_threadpool(browser.summary, sid)
        except AgentlogError as error:
            status, message, _ = _status(error)
            return Response(message, status_code=status, media_type="text/plain")
        recorder: Any = browser.app.recorder
        position = await run_in_threadpool(recorder.max_notification_id) or 0
        return StreamingResponse(
            _follow(request, browser, signal, sid, summary.event_count, position),
            media_type="text/event-stream",
            headers={"cache-control": "no-store", "x-accel-buffering": "no"},
        )

    def static(request: Request) -> Response:
        name = request.path_params["name"]
        kind = STATIC.get(name)
        if kind is None:
            raise HTTPException(404)
        body = (
            importlib.resources.files(__package__).joinpath("static", name).read_bytes()
        )
        return Response(body, media_type=f"{kind}; charset=utf-8")

    def api_index(request: Request) -> Response:
        return RedirectResponse("/api/openapi.json")

    def api_errors(
        endpoint: Callable[[Request], Response],
    ) -> Callable[[Request], Response]:
        def guarded(request: Request) -> Response:
            try:
                return endpoint(request)
            except (AgentlogError, ParameterError) as error:
                status, message, code = _status(error)
                body: dict[str, Any] = {"error": message}
                if code:
                    body["code"] = code
                return api.json_response(body, status)

        return guarded

    api_routes = [
        Route(r.path, api_errors(r.endpoint), methods=["GET", "HEAD"])
        for r in api.routes(browser)
    ]
    routes = [
        Route("/", page(listing)),
        Route("/search", page(search)),
        Route("/s/{id}", page(session)),
        Route("/s/{id}/event/{seq}", page(event)),
        Route("/s/{id}/step/{seq}", page(step)),
        Route("/s/{id}/titles", page(titles)),
        Route("/s/{id}/live", live),
        Route("/static/{name}", static),
        Route("/api", api_index),
        Route("/favicon.ico", lambda request: Response(status_code=204)),
        *api_routes,
    ]
    return Guard(Starlette(routes=routes), token)


async def _follow(
    request: Request,
    browser: Browser,
    live: LiveSignal,
    sid: str,
    next_seq: int,
    position: int,
) -> AsyncIterator[bytes]:
    """New events of ``sid`` as ``append`` events, read after each notification
    that names it; every read is the scoped one, so nothing outside the scope
    is ever sent."""
    recorder: Any = browser.app.recorder
    idle = 0.0
    yield b"retry: 2000\n\n"
    while not await request.is_disconnected():
        mark = live.mark()
        rows = await run_in_threadpool(recorder.select_notifications, position + 1, 500)
        touched = False
        for row in rows:
            position = max(position, row.id)
            touched = touched or row.originator_id == sid
        if touched:
            try:
                summary = await run_in_threadpool(browser.summary, sid)
            except AgentlogError:
                return
            while next_seq < summary.event_count:
                window = await run_in_threadpool(
                    browser.reads.read_event, sid, next_seq, 0, 49
                )
                for event in window.events:
                    record = {
                        "seq": event["seq"],
                        "type": event["type"],
                        "time": event.get("time"),
                        "surface": "current" if "surfaceOp" in event else "log-only",
                        "count": summary.event_count,
                    }
                    yield (
                        b"event: append\ndata: " + dumps(record).lstrip(b" ") + b"\n\n"
                    )
                    next_seq = event["seq"] + 1
                if not window.events:
                    break
            idle = 0.0
        if rows:
            continue
        if not await live.wait(mark):
            idle += live.every
        if idle >= HEARTBEAT_SECONDS:
            idle = 0.0
            yield b": ping\n\n"


__all__ = ["build_app"]
