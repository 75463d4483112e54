"""The viewer's JSON API: the same data as the command line's ``--json``.

Each route returns a query result's ``to_json()`` (camelCase keys, optional keys left
out), encoded by the domain's codec, so lone surrogates arrive as ``\\udxxx`` escapes
and 20,000-deep data is written without recursion. ``/api/openapi.json`` describes
every route (docs/viewer.md#json-api).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from starlette.responses import Response
from starlette.routing import Route

from agentlog.domain.json import dumps
from agentlog.infrastructure.web.params import (
    integer,
    listing_filter,
    optional_integer,
    session_id,
    types_param,
)

if TYPE_CHECKING:
    from starlette.requests import Request

    from agentlog.application.browse import Browser
    from agentlog.domain.json import Json

PAGE_MAX = 500


def json_response(value: Json, status: int = 200) -> Response:
    return Response(
        dumps(value), status_code=status, media_type="application/json; charset=utf-8"
    )


def routes(browser: Browser) -> list[Route]:
    """The API's routes over ``browser`` (sync: Starlette runs them in threads)."""

    def sessions(request: Request) -> Response:
        query = request.query_params
        limit = integer(query, "limit", 50, 1, PAGE_MAX)
        page = browser.listing(listing_filter(query), limit, query.get("cursor"))
        return json_response(page.to_json())

    def session(request: Request) -> Response:
        return json_response(browser.summary(session_id(request)).to_json())

    def messages(request: Request) -> Response:
        at = optional_integer(request.query_params, "at")
        return json_response(browser.reads.read_messages(session_id(request), at=at))

    def surface(request: Request) -> Response:
        at = optional_integer(request.query_params, "at")
        snapshot = browser.reads.read_surface(session_id(request), at=at)
        return json_response(snapshot.to_json())

    def events(request: Request) -> Response:
        sid = session_id(request)
        query = request.query_params
        count = browser.summary(sid).event_count
        page = browser.timeline(
            sid,
            integer(query, "from", 0, 0, 2**63 - 1),
            count,
            limit=integer(query, "limit", 200, 1, PAGE_MAX),
            types=types_param(query.get("types")),
        )
        items: list[Json] = [
            {
                "sessionId": sid,
                "seq": row.event["seq"],
                "type": row.event["type"],
                "time": row.event.get("time"),
                "surface": row.surface,
            }
            for row in page.rows
        ]
        body: dict[str, Json] = {"items": items}
        if page.next_start is not None:
            body["nextFrom"] = page.next_start
        return json_response(body)

    def event(request: Request) -> Response:
        query = request.query_params
        window = browser.reads.read_event(
            session_id(request),
            integer_path(request, "seq"),
            integer(query, "before", 0, 0, 50),
            integer(query, "after", 0, 0, 50),
        )
        return json_response(window.to_json())

    def trace_event(request: Request) -> Response:
        traced = browser.reads.trace_event(
            session_id(request), integer_path(request, "seq")
        )
        return json_response(traced.to_json())

    def lineage(request: Request) -> Response:
        return json_response(browser.lineage(session_id(request)).to_json())

    def search(request: Request) -> Response:
        query = request.query_params
        page = browser.search(
            query.get("q", ""), query.get("cursor"), integer(query, "limit", 20, 1, 100)
        )
        return json_response(page.to_json())

    def openapi(request: Request) -> Response:
        return json_response(OPENAPI)

    return [
        Route("/api/openapi.json", openapi),
        Route("/api/sessions", sessions),
        Route("/api/sessions/{id}", session),
        Route("/api/sessions/{id}/messages", messages),
        Route("/api/sessions/{id}/surface", surface),
        Route("/api/sessions/{id}/events", events),
        Route("/api/sessions/{id}/events/{seq}", event),
        Route("/api/sessions/{id}/events/{seq}/trace", trace_event),
        Route("/api/sessions/{id}/lineage", lineage),
        Route("/api/search", search),
    ]


def integer_path(request: Request, name: str) -> int:
    return integer(request.path_params, name, 0, 0, 2**63 - 1)


def _param(name: str, where: str, description: str, kind: str = "string") -> Json:
    return {
        "name": name,
        "in": where,
        "required": where == "path",
        "description": description,
        "schema": {"type": kind},
    }


_ID = _param("id", "path", "A session id.")
_SEQ = _param("seq", "path", "An event's seq.", "integer")
_AT = _param("at", "query", "As it was right after the event with this seq.", "integer")


def _get(summary: str, cli: str, *params: Json) -> Json:
    return {
        "get": {
            "summary": summary,
            "description": f"The same JSON as `agentlog {cli} --json`.",
            "parameters": list(params),
            "responses": {
                "200": {"description": "OK", "content": {"application/json": {}}},
                "400": {"description": "A bad argument: {error, code}."},
                "404": {"description": "No such session or event (or out of scope)."},
            },
        }
    }


OPENAPI: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {
        "title": "agentlog viewer API",
        "version": "1",
        "description": "Read-only. Errors are {error, code} with the query "
        "service's code (docs/query.md). A server bound to a scope answers "
        "404 for every session outside it.",
    },
    "paths": {
        "/api/sessions": _get(
            "Sessions, newest first, a page at a time",
            "ls",
            _param("limit", "query", "Rows per page (1-500).", "integer"),
            _param("cursor", "query", "The previous page's nextCursor."),
            _param("cwd", "query", "Only this workspace."),
            _param("owner", "query", "Only this owner."),
            _param("from", "query", "Created on or after (YYYY-MM-DD or epoch ms)."),
            _param("to", "query", "Created on or before (YYYY-MM-DD or epoch ms)."),
        ),
        "/api/sessions/{id}": _get("One listing row", "ls", _ID),
        "/api/sessions/{id}/messages": _get(
            "The derived message history", "messages ID [--at SEQ]", _ID, _AT
        ),
        "/api/sessions/{id}/surface": _get(
            "The surface events", "surface ID [--at SEQ]", _ID, _AT
        ),
        "/api/sessions/{id}/events": _get(
            "Raw events with their surface class, a page at a time "
            "({items, nextFrom}; items as in `show --json`)",
            "show ID",
            _ID,
            _param("from", "query", "First seq.", "integer"),
            _param("limit", "query", "Rows (1-500).", "integer"),
            _param("types", "query", "Comma-separated event types."),
        ),
        "/api/sessions/{id}/events/{seq}": _get(
            "One event and its raw neighbours",
            "event ID SEQ",
            _ID,
            _SEQ,
            _param("before", "query", "0-50", "integer"),
            _param("after", "query", "0-50", "integer"),
        ),
        "/api/sessions/{id}/events/{seq}/trace": _get(
            "Replacement and provenance of an event", "trace-event ID SEQ", _ID, _SEQ
        ),
        "/api/sessions/{id}/lineage": _get("Ancestors and forks", "trace ID", _ID),
        "/api/search": _get(
            "Sessions whose events contain the text",
            "search TEXT",
            _param("q", "query", "The literal text."),
            _param("cursor", "query", "The previous page's nextCursor."),
            _param("limit", "query", "1-100", "integer"),
        ),
    },
}

__all__ = ["OPENAPI", "json_response", "routes"]
