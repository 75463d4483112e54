"""Headers every response carries, and the token a non-loopback server requires.

The Content-Security-Policy allows scripts, styles and connections from the server
itself only (no inline script or style, no frames, no form posts elsewhere), so even
markup that escaped the escaping could not run. With a token, every request must
carry it: ``Authorization: Bearer <token>``, or the ``agentlog_token`` cookie that a
first visit with ``?token=<token>`` sets (then redirected to drop it from the URL).
"""

from __future__ import annotations

import hmac
from http.cookies import SimpleCookie
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, MutableMapping

    Message = MutableMapping[str, Any]
    Receive = Callable[[], Awaitable[Message]]
    Send = Callable[[Message], Awaitable[None]]
    ASGIApp = Callable[[Message, Receive, Send], Awaitable[None]]

CSP = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = [
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
]
COOKIE = "agentlog_token"


class Guard:
    """ASGI middleware: security headers on every response; the token check."""

    def __init__(self, app: ASGIApp, token: str | None) -> None:
        self.app = app
        self.token = token

    async def __call__(self, scope: Message, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def guarded(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                headers.extend(SECURITY_HEADERS)
                message["headers"] = headers
            await send(message)

        if self.token is not None:
            verdict = self._check(scope)
            if verdict is not None:
                status, headers, body = verdict
                await guarded(
                    {
                        "type": "http.response.start",
                        "status": status,
                        "headers": headers,
                    }
                )
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, guarded)

    def _check(
        self, scope: Message
    ) -> tuple[int, list[tuple[bytes, bytes]], bytes] | None:
        """``None`` when the request carries the token; else the response to send."""
        assert self.token is not None
        expected = self.token.encode()
        headers = dict(scope.get("headers", []))
        bearer = headers.get(b"authorization", b"")
        if bearer.startswith(b"Bearer ") and hmac.compare_digest(bearer[7:], expected):
            return None
        cookie = SimpleCookie()
        try:
            cookie.load(headers.get(b"cookie", b"").decode("latin-1"))
        except Exception:  # a malformed cookie is no token
            cookie = SimpleCookie()
        held = cookie.get(COOKIE)
        if held is not None and hmac.compare_digest(held.value.encode(), expected):
            return None
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"))
        given = [value for key, value in query if key == "token"]
        if given and hmac.compare_digest(given[0].encode(), expected):
            rest = urlencode([(k, v) for k, v in query if k != "token"])
            location = scope.get("path", "/") + ("?" + rest if rest else "")
            set_cookie = f"{COOKIE}={self.token}; HttpOnly; SameSite=Strict; Path=/"
            return (
                303,
                [
                    (b"location", location.encode("utf-8", "replace")),
                    (b"set-cookie", set_cookie.encode()),
                ],
                b"",
            )
        return (
            401,
            [(b"content-type", b"text/plain; charset=utf-8")],
            b"401: this server needs its token (Authorization: Bearer, or ?token=)\n",
        )


__all__ = ["CSP", "Guard"]
