"""Session titles: the fallback producer and one optional provider.

docs/titles.md#producers: after an eligible human prompt, if the session has no title
yet, append ``session/title`` with the fallback of the first eligible prompt. One
provider (a model, typically) may be registered: it runs once a route is logged (a
``request/header``), always after the fallback, on the first message only
(``first-message``) or on every eligible prompt (``all-user-messages``), and its
result is checked before it is appended. Titles are ordinary log events, so they
round-trip through every backend and forks inherit them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from agentlog.domain.errors import TitleError
from agentlog.domain.title import (
    TITLE_EVENT,
    TitleConfig,
    TitleSnapshot,
    check_provider_result,
    eligible_messages,
    fold_session_title,
    is_eligible_message,
    message_text,
    plan_fallback_title,
)

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from agentlog.application.handle import SessionHandle
    from agentlog.application.sessions import Sessions
    from agentlog.domain.json import Envelope

LOGGER = logging.getLogger(__name__)
TITLE_REQUEST_EVENT = "session/title-llm-request"


@dataclass(frozen=True)
class TitleRequest:
    """What a provider titles: the session's route and its eligible prompts."""

    session_id: str
    route: dict[str, Any]
    messages: list[dict[str, Any]]
    """``[{"seq": int, "text": str}]`` in log order."""
    max_title_bytes: int

    @property
    def message_seqs(self) -> list[int]:
        return [message["seq"] for message in self.messages]


class TitleProvider(Protocol):
    """A title source: ``id``, ``mode``, and ``title(request) -> result``."""

    id: str
    mode: Literal["first-message", "all-user-messages"]

    def title(self, request: TitleRequest) -> object: ...


class SessionTitles:
    """Watches appends, writes the fallback title, runs the registered provider."""

    def __init__(self, app: Sessions, config: TitleConfig) -> None:
        self.app = app
        self.config = config
        self.provider: TitleProvider | None = None
        self._titled: set[str] = set()
        self._unsubscribe: Callable[[], None] = app.subscribe(event=self._observe)

    def close(self) -> None:
        """Stop watching appends."""
        self._unsubscribe()

    def register(self, provider: TitleProvider) -> None:
        """Register the one provider this service runs."""
        if self.provider is not None:
            msg = f'session-title provider "{provider.id}" is already registered'
            raise TitleError(msg)
        self.provider = provider

    def _observe(self, handle: SessionHandle, event: Envelope) -> None:
        if event["type"] == TITLE_EVENT:
            self._titled.add(handle.id)
            return
        if not is_eligible_message(event):
            return
        if handle.id not in self._titled:
            self.ensure_fallback(handle.id)
        provider = self.provider
        if provider is not None:
            try:
                self._run_provider(handle.id, provider, automatic=True)
            except TitleError as error:
                # Automatic failures keep the current title (docs/titles.md#producers).
                LOGGER.warning("session %s: %s", handle.id, error)

    def ensure_fallback(self, session_id: str) -> TitleSnapshot | None:
        """Write the fallback title if the session has none; return its title.

        Does nothing when any title exists (later prompts never replace it). The
        title rides an open turn, or gets a zero-step turn of its own.
        """
        handle = self.app.live_session(session_id) or self.app.get_session(session_id)
        events = self.app.read_events(session_id)
        data: dict[str, Any] | None = plan_fallback_title(events, self.config)
        if data is not None:
            self.app.append_out_of_band(handle, TITLE_EVENT, data)
            events = self.app.read_events(session_id)
        title = fold_session_title(events)
        if title is not None:
            self._titled.add(session_id)
        return title

    def refresh(self, session_id: str) -> TitleSnapshot | None:
        """Ensure the fallback, then run the provider now; returns the title.

        An explicit refresh raises the provider's invalid result as a
        :class:`TitleError`; the current title stays.
        """
        title = self.ensure_fallback(session_id)
        if self.provider is None:
            return title
        return self._run_provider(session_id, self.provider, automatic=False)

    def _run_provider(
        self, session_id: str, provider: TitleProvider, *, automatic: bool
    ) -> TitleSnapshot | None:
        events = self.app.read_events(session_id)
        current = fold_session_title(events)
        route = _route(events)
        prompts = eligible_messages(events)
        if route is None or not prompts:
            return current
        if provider.mode == "first-message":
            header = self.app.header(session_id)
            provider_titled = current is not None and current.source.kind == "provider"
            if header.get("parentSession") is not None or provider_titled:
                return current
            if automatic and len(prompts) > 1:
                return current
            prompts = prompts[:1]
        request = TitleRequest(
            session_id,
            route,
            [{"seq": e["seq"], "text": message_text(e)} for e in prompts],
            self.config.max_title_bytes,
        )
        data = check_provider_result(
            provider.id,
            provider.title(request),
            request.message_seqs,
            self.config.max_title_bytes,
        )
        handle = self.app.live_session(session_id) or self.app.get_session(session_id)
        self.app.append_out_of_band(handle, TITLE_EVENT, data)
        return fold_session_title(self.app.read_events(session_id))


def _route(events: Sequence[Envelope]) -> dict[str, Any] | None:
    """The model route of the latest ``request/header``, if any was logged."""
    for event in reversed(events):
        if event.get("type") == "request/header":
            config = event["data"].get("header", {}).get("config", {})
            provider, model = config.get("provider"), config.get("model")
            if isinstance(provider, str) and isinstance(model, str):
                return {"provider": provider, "model": model}
    return None


@dataclass
class LlmTitleHelper:
    """Asks a model for a title, logging the request before it is sent.

    See docs/titles.md#events.

    ``complete(route, system, messages, max_tokens)`` is the model call. An input
    over ``max_input_bytes`` is refused before anything is logged or sent.
    """

    app: Sessions
    provider_id: str
    complete: Callable[[dict[str, Any], str, list[dict[str, Any]], int], str]
    system: str = "Write a short title for this conversation."
    max_tokens: int = 32
    max_input_bytes: int = 8_000

    def ask(self, request: TitleRequest) -> str | None:
        """The model's text, or ``None`` when the input is too large to send."""
        text = "\n\n".join(message["text"] for message in request.messages)
        if len(text.encode("utf-8", "surrogatepass")) > self.max_input_bytes:
            return None
        messages = [{"role": "user", "content": [{"type": "text", "text": text}]}]
        record = {
            "titleProvider": self.provider_id,
            "messageSeqs": request.message_seqs,
            "route": request.route,
            "system": self.system,
            "messages": messages,
            "maxTokens": self.max_tokens,
        }
        handle = self.app.live_session(request.session_id) or self.app.get_session(
            request.session_id
        )
        self.app.append_out_of_band(handle, TITLE_REQUEST_EVENT, record)
        return self.complete(request.route, self.system, messages, self.max_tokens)
