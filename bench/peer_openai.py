"""Peer: the OpenAI Agents SDK's ``SQLiteSession`` (``agents.memory``), defaults.

Its API is ``await add_items(items)`` / ``await get_items(limit=None)`` over
Responses-API input items stored as JSON rows, so the workload's messages map to
``message`` / ``function_call`` / ``function_call_output`` items. It stores no
stream chunks, offers no listing, fork or compaction of its own: W3, W4, W6 are
n/a. One event loop per process; every call hops to a worker thread as the SDK
does.
"""

from __future__ import annotations

import asyncio
from importlib.metadata import version
from typing import TYPE_CHECKING, Any, ClassVar

from .base import BATCH_GROUPS, BenchSystem, Flush, SessionRef

if TYPE_CHECKING:
    from collections.abc import Coroutine, Sequence

    from .workload import Conversation, Group, Intent


def items_of(intent: Intent) -> list[dict[str, Any]]:
    """The Responses-API input items the SDK's Runner would store for an event."""
    data = intent.data
    if intent.type == "user/message":
        return [{"content": data["content"][0]["text"], "role": "user"}]
    if intent.type == "assistant/message":
        seq = intent.seq
        items: list[dict[str, Any]] = []
        for block in data["content"]:
            if block["type"] == "text":
                items.append(
                    {
                        "id": f"msg_{seq}",
                        "content": [
                            {
                                "annotations": [],
                                "text": block["text"],
                                "type": "output_text",
                                "logprobs": [],
                            }
                        ],
                        "role": "assistant",
                        "status": "completed",
                        "type": "message",
                    }
                )
            elif block["type"] == "tool-call":
                items.append(
                    {
                        "arguments": block["arguments"],
                        "call_id": block["id"],
                        "name": block["name"],
                        "type": "function_call",
                        "id": f"fc_{seq}",
                        "status": "completed",
                    }
                )
        return items
    if intent.type == "tool/result":
        return [
            {
                "call_id": data["callId"],
                "output": data["content"][0]["text"],
                "type": "function_call_output",
            }
        ]
    return []


def group_items(intents: Sequence[Intent]) -> list[dict[str, Any]]:
    """Items of several events, in order."""
    return [item for intent in intents for item in items_of(intent)]


class OpenAIAgentsSystem(BenchSystem):
    """``agents.memory.SQLiteSession`` on a SQLite file."""

    name: ClassVar[str] = "openai_agents"
    label: ClassVar[str] = "OpenAI Agents SQLiteSession"
    features: ClassVar[frozenset[str]] = frozenset({"w1", "w2a", "w2b", "w5"})

    def __init__(self, db_path: Any) -> None:
        super().__init__(db_path)
        self._loop = asyncio.new_event_loop()
        self._sessions: list[Any] = []

    @classmethod
    def unavailable_reason(cls) -> str | None:
        """Optional peer: absent unless the bench extra is installed."""
        try:
            from agents.memory import SQLiteSession  # noqa: F401
        except ImportError as error:
            return f"openai-agents not installed ({error})"
        return None

    @classmethod
    def versions(cls) -> dict[str, str]:
        """The SDK version."""
        return {"openai-agents": version("openai-agents")}

    @classmethod
    def preload(cls) -> None:
        """Import the SDK outside the timers."""
        import agents.memory  # noqa: F401

    def _session(self, session_id: str) -> Any:
        from agents.memory import SQLiteSession

        session = SQLiteSession(session_id, self.db_path)
        self._sessions.append(session)
        return session

    def _run(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        return self._loop.run_until_complete(coroutine)

    def write(self, conversation: Conversation, flush: Flush) -> dict[str, Any]:
        """add_items per item, per step, or per batch of steps."""
        session = self._session(conversation.session_id)
        groups = conversation.groups

        async def run() -> None:
            if flush == "event":
                for item in group_items([i for g in groups for i in g]):
                    await session.add_items([item])
            elif flush == "step":
                for group in groups:
                    await session.add_items(group_items(group))
            else:
                for k in range(0, len(groups), BATCH_GROUPS):
                    chunk = [i for g in groups[k : k + BATCH_GROUPS] for i in g]
                    await session.add_items(group_items(chunk))

        self._run(run())
        return {}

    def read_all(self, ref: SessionRef) -> Sequence[Any]:
        """get_items(): every stored item."""
        items: list[Any] = self._run(self._session(ref.session_id).get_items())
        return items

    def read_tail(self, ref: SessionRef) -> Sequence[Any]:
        """get_items(limit=50): the latest 50 items."""
        session = self._session(ref.session_id)
        items: list[Any] = self._run(session.get_items(limit=50))
        return items

    def append_group(self, ref: SessionRef, group: Group) -> None:
        """One add_items call with the step's items."""
        self._run(self._session(ref.session_id).add_items(group_items(group)))

    def close(self) -> None:
        """Close every session and the loop's executor."""
        for session in self._sessions:
            session.close()
        self._sessions.clear()
        if not self._loop.is_closed():
            self._loop.run_until_complete(self._loop.shutdown_default_executor())
            self._loop.close()


System = OpenAIAgentsSystem
