"""An OpenAI Agents SDK session stored as an agentlog session (docs/openai-agents.md).

``AgentlogSession`` implements the SDK's ``Session`` protocol. Each run's input
opens a turn, each model response (with its tool outputs) is a step written by the
turn writer, and the turn ends when the model answers without pending calls. Items
are kept verbatim on the content blocks that show them to the model, so
``get_items`` gives back exactly what ``add_items`` was given. ``pop_item`` and
``clear_session`` shadow items on the surface: the model stops seeing them, the
log keeps them.

Requires the ``openai-agents`` extra.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from agents.memory.session_settings import SessionSettings, resolve_session_limit

from agentlog.application.async_sessions import AsyncSessions
from agentlog.application.gc_pause import gc_paused
from agentlog.domain.errors import NonJsonDataError, SessionNotFoundError
from agentlog.domain.json import NotJsonError, copy_json, snapshot_json
from agentlog.domain.messages import derive_message
from agentlog.integrations.openai_items import (
    CALL_TYPES,
    ITEM,
    OTHER,
    OUTPUT_TYPES,
    is_model_item,
    items_of,
    message_blocks,
    model_block,
    output_blocks,
)

if TYPE_CHECKING:
    from collections.abc import Callable

    from agentlog.application.agent_turns import Turn
    from agentlog.application.handle import SessionHandle
    from agentlog.application.sessions import Sessions

USER_ROLES = frozenset({"user"})
SDK_SOURCE = {"kind": "plugin", "plugin": "openai-agents"}
"""The source of input messages not from the user (system, developer, outputs)."""


def _groups(items: list[Any]) -> list[tuple[str, list[Any]]]:
    """Split items into runs of input and steps (model output, then tool outputs)."""
    groups: list[tuple[str, list[Any]]] = []
    outputs_started = False
    for item in items:
        if is_model_item(item):
            if not groups or groups[-1][0] != "step" or outputs_started:
                groups.append(("step", []))
                outputs_started = False
            groups[-1][1].append(item)
        elif groups and groups[-1][0] == "step" and _is_output(item):
            outputs_started = True
            groups[-1][1].append(item)
        else:
            if not groups or groups[-1][0] != "input":
                groups.append(("input", []))
            groups[-1][1].append(item)
    return groups


def _is_output(item: Any) -> bool:
    kind = item.get("type") if isinstance(item, dict) else None
    return isinstance(kind, str) and (
        kind.endswith("_output") or kind == "mcp_approval_response"
    )


class AgentlogSession:
    """The SDK's ``Session`` over agentlog: ``Runner.run(agent, x, session=...)``.

    ``app`` is a :class:`Sessions` or :class:`AsyncSessions`; the session is
    created (with ``cwd`` and ``owner``) by the first ``add_items``. Each call
    is one unit of work: it stores all its items or none.
    """

    def __init__(
        self,
        session_id: str,
        app: Sessions | AsyncSessions,
        *,
        cwd: str | None = None,
        owner: str | None = None,
        session_settings: SessionSettings | None = None,
    ) -> None:
        self.session_id = session_id
        self.session_settings = session_settings or SessionSettings()
        if isinstance(app, AsyncSessions):
            self._pool: AsyncSessions | None = app
            self.app = app.app
        else:
            self._pool = None
            self.app = app
        self.cwd = cwd
        self.owner = owner

    async def _run(self, function: Callable[..., Any], *args: Any) -> Any:
        if self._pool is not None:
            return await self._pool.finish(function, *args)
        return await asyncio.to_thread(function, *args)

    # ------------------------------------------------------------------ reads

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The items the model sees next, oldest first; the latest ``limit``."""
        limit = resolve_session_limit(limit, self.session_settings)
        items: list[Any] = await self._run(self.read_items, limit)
        return items

    def read_items(self, limit: int | None = None) -> list[Any]:
        """:meth:`get_items`, synchronously."""
        if limit is not None and limit <= 0:
            return []
        # The cached messages themselves (never mutated here): only the items
        # handed out are copied, not every block of every message.
        reads = self.app.reads
        try:
            messages = reads.messages(self.session_id, last=limit, shared=True)
        except SessionNotFoundError:
            return []
        items = items_of(messages)
        if limit is not None and len(items) < limit and len(messages) == limit:
            # Some messages carried no item: read the whole history.
            items = items_of(reads.messages(self.session_id, shared=True))
        if limit is not None:
            items = items[-limit:]
        with gc_paused():
            return [copy_json(item) for item in items]

    # ----------------------------------------------------------------- writes

    async def add_items(self, items: list[Any]) -> None:
        """Store items: a run's input opens a turn, a model response is a step."""
        await self._run(self.write_items, items)

    def write_items(self, items: list[Any]) -> None:
        """:meth:`add_items`, synchronously."""
        try:
            copies = [snapshot_json(_plain(item)) for item in items]
        except NotJsonError:
            msg = "an OpenAI Agents item carries non-JSON-serializable data"
            raise NonJsonDataError(msg) from None
        if not copies:
            return
        # Only appends, so safe to run again: the flush's version check replaces
        # the read of the stored version before the block (one query fewer).
        self.app.unit_of_work.run_optimistic(
            self.session_id,
            lambda handle: self._write_groups(handle, copies),
            create=True,
            cwd=self.cwd,
            owner=self.owner,
        )

    def _write_groups(self, handle: SessionHandle, copies: list[Any]) -> None:
        for kind, group in _groups(copies):
            if kind == "input":
                self._write_input(handle, group)
            else:
                self._write_step(handle, group)

    def _turn(self, handle: SessionHandle, **options: Any) -> Turn:
        return self.app.turn(handle, **options)

    def _write_input(self, handle: SessionHandle, group: list[Any]) -> None:
        turns = handle.aggregate.turns
        if turns.open_turn is not None and turns.next_step > 1:
            # The last run's turn had steps: this input starts the next run.
            self._turn(handle).open(join=True).close()
        for item in group:
            is_message = isinstance(item, dict) and "role" in item
            if is_message:
                blocks = message_blocks(item)
            else:
                blocks = [{"type": OTHER, ITEM: item}]
            user = is_message and item.get("role") in USER_ROLES
            source = None if user else SDK_SOURCE
            self._turn(handle, user=blocks, source=source).open(join=True)

    def _write_step(self, handle: SessionHandle, group: list[Any]) -> None:
        turn = self._turn(handle).open(join=True)
        model = [item for item in group if is_model_item(item)]
        outputs = [item for item in group if not is_model_item(item)]
        with turn.step() as step:
            step.assistant(content=[model_block(item) for item in model])
            pending = {call.id for call in step.tool_calls}
            for item in outputs:
                call_id = item.get("call_id")
                if item.get("type") in OUTPUT_TYPES and call_id in pending:
                    step.tool_result(call_id, output_blocks(item))
                    pending.discard(call_id)
                else:
                    turn.user([{"type": OTHER, ITEM: item}], source=SDK_SOURCE)
        answered = not pending
        final = any(item.get("role") == "assistant" for item in model) and not any(
            item.get("type") in CALL_TYPES for item in model
        )
        if final and answered:
            turn.close()

    async def pop_item(self) -> Any:
        """Take the latest item off what the model sees and return it (``None``
        when there is none). It stays in the log, shadowed."""
        return await self._run(self.pop)

    def pop(self) -> Any:
        """:meth:`pop_item`, synchronously."""
        try:
            with self.app.command(self.session_id) as handle:
                for seq in reversed(handle.surface.seqs):
                    after = seq - 1 if seq else None
                    (event,) = self.app.read_events(self.session_id, after, 1)
                    message = derive_message(event)
                    items = items_of([message]) if message is not None else []
                    if not items:
                        continue
                    popped = items[-1]
                    kept = _without(event, popped)
                    _shadow(handle, [seq], kept)
                    return copy_json(popped)
        except SessionNotFoundError:
            return None
        return None

    async def clear_session(self) -> None:
        """Take every item off what the model sees (the log keeps them)."""
        await self._run(self.clear)

    def clear(self) -> None:
        """:meth:`clear_session`, synchronously."""
        try:
            with self.app.command(self.session_id) as handle:
                seqs = handle.surface.seqs
                if seqs:
                    _shadow(handle, seqs, [])
        except SessionNotFoundError:
            return


def _plain(item: Any) -> Any:
    dump = getattr(item, "model_dump", None)
    return dump(mode="json", exclude_unset=True) if dump is not None else item


def _without(event: dict[str, Any], popped: Any) -> list[Any]:
    """An assistant message's blocks without the one carrying ``popped``."""
    if event.get("type") != "assistant/message":
        return []
    content = event["data"]["content"]
    for index in range(len(content) - 1, -1, -1):
        block = content[index]
        if isinstance(block, dict) and block.get(ITEM) == popped:
            return [*content[:index], *content[index + 1 :]]
    return []


def _shadow(handle: SessionHandle, seqs: list[int], kept: list[Any]) -> None:
    """Replace the surface nodes ``seqs`` (a contiguous run) by an assistant
    message of ``kept`` blocks (empty: the model sees nothing there), inside a
    step of the open turn or of a one-step turn of its own."""
    turns = handle.aggregate.turns
    replace = {"op": "replace", "start": seqs[0], "end": seqs[-1]}
    if turns.open_step is not None:  # another writer's step: replace inside it
        where = {"turn": turns.open_turn, "step": turns.open_step}
        message = {**where, "content": kept}
        handle.append("assistant/message", message, replace, list(seqs))
        return
    own_turn = turns.open_turn is None
    if own_turn:
        trigger = {"kind": "session-edit", "source": SDK_SOURCE}
        handle.append("turn/start", {"turn": turns.next_turn, "trigger": trigger})
    where = {"turn": turns.open_turn, "step": turns.next_step}
    handle.append("step/start", where)
    handle.append(
        "assistant/message",
        {**where, "content": kept},
        surface_op=replace,
        source_event_seqs=list(seqs),
    )
    handle.append("step/end", where)
    if own_turn:
        end = {"turn": where["turn"], "reason": {"kind": "completed"}}
        handle.append("turn/end", end)


__all__ = ["AgentlogSession"]
