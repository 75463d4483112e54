"""A pydantic-ai message history kept in an agentlog session (docs/pydantic-ai.md).

``PydanticAIHistory.save(result.new_messages())`` writes one run as one turn: its
requests' user prompts open it, each model response is a step with the tool
returns and retries that answer it, and the turn ends with the run. Each message
is also kept whole (pydantic-ai's own JSON of it, timestamps included) on the first
content block it produced, so ``load()`` gives back exactly the messages saved,
for ``Agent.run(..., message_history=history.load())``.

Requires pydantic-ai (``pip install pydantic-ai-slim``).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

from pydantic_ai.messages import ModelMessagesTypeAdapter

if TYPE_CHECKING:
    from collections.abc import Sequence

    from pydantic_ai.messages import ModelMessage

    from agentlog.application.agent_turns import StepBase, Turn
    from agentlog.application.handle import SessionHandle
    from agentlog.application.sessions import Sessions

KEY: Final = "pydanticAi"
"""The block key holding one whole message (pydantic-ai's JSON of it)."""
PART: Final = "pydantic-ai-part"
"""The block type of a part agentlog has no block for."""
SOURCE: Final = {"kind": "plugin", "plugin": "pydantic-ai"}
ANSWERS: Final = frozenset({"tool-return", "retry-prompt"})


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return json.dumps(content, ensure_ascii=False)


def _response_block(part: dict[str, Any]) -> dict[str, Any]:
    kind = part.get("part_kind")
    if kind == "text":
        return {"type": "text", "text": part.get("content", "")}
    if kind == "thinking":
        return {"type": "reasoning", "text": part.get("content", "")}
    if kind == "tool-call":
        args = part.get("args")
        arguments = args if isinstance(args, str) else json.dumps(args or {})
        return {
            "type": "tool-call",
            "id": part.get("tool_call_id", ""),
            "name": part.get("tool_name", ""),
            "arguments": arguments,
        }
    return {"type": PART, "partKind": kind}


def _request_blocks(part: dict[str, Any]) -> list[dict[str, Any]]:
    content = part.get("content")
    if part.get("part_kind") in ("user-prompt", "system-prompt") and isinstance(
        content, str
    ):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        texts = [{"type": "text", "text": c} for c in content if isinstance(c, str)]
        if texts:
            return texts
    return [{"type": PART, "partKind": part.get("part_kind")}]


class _Carrier:
    """Puts a message's JSON on the first block written for it."""

    def __init__(self, message: dict[str, Any]) -> None:
        self.message: dict[str, Any] | None = message

    def blocks(self, blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if self.message is not None and blocks:
            blocks[0] = {**blocks[0], KEY: self.message}
            self.message = None
        return blocks


class PydanticAIHistory:
    """A pydantic-ai message history stored as an agentlog session.

    ``save`` appends messages (one unit of work: all or nothing); ``load``
    returns every saved message in order. ``cwd`` and ``owner`` go into the
    session's header when the first save creates it.
    """

    def __init__(
        self,
        app: Sessions,
        session_id: str,
        *,
        cwd: str | None = None,
        owner: str | None = None,
    ) -> None:
        self.app = app
        self.session_id = session_id
        self.cwd = cwd
        self.owner = owner

    def load(self) -> list[ModelMessage]:
        """Every saved message, as pydantic-ai's own objects."""
        from agentlog.domain.errors import SessionNotFoundError

        try:
            messages = self.app.messages(self.session_id)
        except SessionNotFoundError:
            return []
        found: list[Any] = []
        for message in messages:
            for block in message["content"]:
                if KEY in block:
                    found.append(block[KEY])
                for inner in (
                    block.get("content", [])
                    if block.get("type") == "tool-result"
                    else []
                ):
                    if isinstance(inner, dict) and KEY in inner:
                        found.append(inner[KEY])
        return ModelMessagesTypeAdapter.validate_python(found)

    def save(self, messages: Sequence[ModelMessage]) -> None:
        """Store one run's new messages as one turn."""
        dumped: list[dict[str, Any]] = ModelMessagesTypeAdapter.dump_python(
            list(messages), mode="json"
        )
        if not dumped:
            return
        with self.app.command(
            self.session_id, create=True, cwd=self.cwd, owner=self.owner
        ) as handle:
            self._write(handle, dumped)

    def _write(self, handle: SessionHandle, dumped: list[dict[str, Any]]) -> None:
        turns = handle.aggregate.turns
        if turns.open_turn is not None:
            self.app.turn(handle).open(join=True).close()
        turn = self.app.turn(handle).open()
        index = 0
        while index < len(dumped):
            message = dumped[index]
            if message.get("kind") == "response":
                answer = None
                following = dumped[index + 1] if index + 1 < len(dumped) else None
                if following is not None and _answers(following):
                    answer = following
                self._step(turn, message, answer)
                index += 2 if answer is not None else 1
            else:
                self._request(turn, None, message)
                index += 1
        turn.close()

    def _step(
        self, turn: Turn, response: dict[str, Any], answer: dict[str, Any] | None
    ) -> None:
        carrier = _Carrier(response)
        blocks = [_response_block(part) for part in response.get("parts", [])]
        with turn.step() as step:
            step.assistant(content=carrier.blocks(blocks or [{"type": PART}]))
            step.tool_calls  # noqa: B018 - writes the message and its calls now
            if answer is not None:
                self._request(turn, step, answer)

    def _request(
        self, turn: Turn, step: StepBase | None, request: dict[str, Any]
    ) -> None:
        carrier = _Carrier(request)
        calls = {call.id for call in step.tool_calls} if step is not None else set()
        for part in request.get("parts", []):
            call_id = part.get("tool_call_id")
            if (
                step is not None
                and part.get("part_kind") in ANSWERS
                and call_id in calls
            ):
                content = carrier.blocks(
                    [{"type": "text", "text": _text(part.get("content"))}]
                )
                retry = part.get("part_kind") == "retry-prompt" or part.get(
                    "outcome"
                ) not in (None, "success")
                step.tool_result(call_id, content, is_error=retry)
                calls.discard(call_id)
                continue
            user = part.get("part_kind") == "user-prompt"
            turn.user(
                carrier.blocks(_request_blocks(part)), source=None if user else SOURCE
            )
        if carrier.message is not None:
            turn.user(carrier.blocks([{"type": PART}]), source=SOURCE)


def _answers(message: dict[str, Any]) -> bool:
    """Whether a request answers the response before it (tool returns, retries)."""
    return message.get("kind") == "request" and any(
        part.get("part_kind") in ANSWERS and part.get("tool_call_id")
        for part in message.get("parts", [])
    )


__all__ = ["PydanticAIHistory"]
