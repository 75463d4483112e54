"""Peer: LangGraph with ``langgraph-checkpoint-sqlite``'s ``SqliteSaver``, defaults.

A one-node ``StateGraph(MessagesState)`` (the ``add_messages`` reducer) compiled
with a ``SqliteSaver`` on a SQLite file; writes are ``update_state`` (per message,
or per step), reads ``get_state``. Each checkpoint stores the whole message
list, so per-message writes grow quadratically: the runner caps W1's size for
this peer and says so. Fixtures are written with two ``update_state`` calls (the
first ends at the fork midpoint, whose checkpoint W4 forks from: LangGraph's
time-travel fork). W6 uses the documented summarisation pattern
(``RemoveMessage(REMOVE_ALL_MESSAGES)`` + summary + kept messages). No
listing of titled threads: W3 is n/a. Stream chunks are not stored.
"""

from __future__ import annotations

import json
import sqlite3
from importlib.metadata import version
from typing import TYPE_CHECKING, Any, ClassVar

from .base import BenchSystem, Flush, SessionRef

if TYPE_CHECKING:
    from collections.abc import Sequence

    from langgraph.graph import MessagesState

    from .workload import Conversation, Group, Intent

NODE = "agent"


def _agent(_state: MessagesState) -> dict[str, Any]:
    """The graph's one node; never run here (state is written with update_state)."""
    return {"messages": []}


def _content(blocks: list[dict[str, Any]]) -> Any:
    texts = [b for b in blocks if b.get("type") == "text"]
    if len(texts) == 1:
        return texts[0]["text"]
    return [{"type": "text", "text": b["text"]} for b in texts]


def message_of(intent: Intent) -> Any | None:
    """LangChain message for a surface event (HumanMessage/AIMessage/ToolMessage)."""
    from langchain_core.messages import (
        AIMessage,
        HumanMessage,
        ToolMessage,
    )

    data = intent.data
    mid = f"m{intent.seq}"
    if intent.type == "user/message":
        return HumanMessage(content=_content(data["content"]), id=mid)
    if intent.type == "assistant/message":
        calls = [
            {
                "id": b["id"],
                "name": b["name"],
                "args": json.loads(b["arguments"]),
                "type": "tool_call",
            }
            for b in data["content"]
            if b["type"] == "tool-call"
        ]
        return AIMessage(content=_content(data["content"]), id=mid, tool_calls=calls)
    if intent.type == "tool/result":
        return ToolMessage(
            content=_content(data["content"]), tool_call_id=data["callId"], id=mid
        )
    return None


def messages_of(intents: Sequence[Intent]) -> list[Any]:
    """Messages of several events, in order."""
    return [m for m in map(message_of, intents) if m is not None]


class LangGraphSystem(BenchSystem):
    """StateGraph(MessagesState) + SqliteSaver."""

    name: ClassVar[str] = "langgraph"
    label: ClassVar[str] = "LangGraph SqliteSaver"
    features: ClassVar[frozenset[str]] = frozenset(
        {"w1", "w2a", "w2b", "w4", "w5", "w6"}
    )
    quadratic_writes: ClassVar[bool] = True
    _conn: sqlite3.Connection | None = None
    _graph: Any = None

    @classmethod
    def unavailable_reason(cls) -> str | None:
        """Optional peer: absent unless the bench extra is installed."""
        try:
            from langgraph.checkpoint.sqlite import SqliteSaver  # noqa: F401
            from langgraph.graph import StateGraph  # noqa: F401
        except ImportError as error:
            return f"langgraph / langgraph-checkpoint-sqlite not installed ({error})"
        return None

    @classmethod
    def versions(cls) -> dict[str, str]:
        """The packages that make up this peer."""
        names = (
            "langgraph",
            "langgraph-checkpoint",
            "langgraph-checkpoint-sqlite",
            "langchain-core",
        )
        return {name: version(name) for name in names}

    @classmethod
    def preload(cls) -> None:
        """Import LangGraph and LangChain outside the timers."""
        import langchain_core.messages  # noqa: F401
        import langgraph.checkpoint.sqlite
        import langgraph.graph
        import langgraph.graph.message  # noqa: F401

    def _compiled(self) -> Any:
        if self._graph is None:
            from langgraph.checkpoint.sqlite import SqliteSaver
            from langgraph.graph import END, START, MessagesState, StateGraph

            self._conn = sqlite3.connect(str(self.db_path), check_same_thread=False)
            builder = StateGraph(MessagesState)
            builder.add_node(NODE, _agent)  # type: ignore[call-overload]
            builder.add_edge(START, NODE)
            builder.add_edge(NODE, END)
            self._graph = builder.compile(checkpointer=SqliteSaver(self._conn))
        return self._graph

    @staticmethod
    def _config(session_id: str) -> dict[str, Any]:
        return {"configurable": {"thread_id": session_id}}

    def _update(self, config: dict[str, Any], messages: list[Any]) -> dict[str, Any]:
        result: dict[str, Any] = self._compiled().update_state(
            config, {"messages": messages}, as_node=NODE
        )
        return result

    def write(self, conversation: Conversation, flush: Flush) -> dict[str, Any]:
        """update_state per message or per step; fixtures in two calls."""
        config = self._config(conversation.session_id)
        if flush == "event":
            for message in messages_of(conversation.intents()):
                self._update(config, [message])
            return {}
        if flush == "step":
            for group in conversation.groups:
                self._update(config, messages_of(group))
            return {}
        boundary = conversation.fork_boundary()
        intents = conversation.intents()
        mid = self._update(
            config, messages_of([i for i in intents if i.seq <= boundary])
        )
        self._update(config, messages_of([i for i in intents if i.seq > boundary]))
        return {"mid": mid}

    def _messages(self, config: dict[str, Any]) -> list[Any]:
        state = self._compiled().get_state(config)
        messages: list[Any] = state.values.get("messages", [])
        return messages

    def read_all(self, ref: SessionRef) -> Sequence[Any]:
        """get_state: the latest checkpoint's messages."""
        return self._messages(self._config(ref.session_id))

    def read_tail(self, ref: SessionRef) -> Sequence[Any]:
        """get_state, then the last 50 (there is no partial read)."""
        return self._messages(self._config(ref.session_id))[-50:]

    def fork_read(self, ref: SessionRef, child_id: str) -> Sequence[Any]:
        """Time-travel fork: update_state on the midpoint checkpoint, read it."""
        del child_id  # a LangGraph fork is a new checkpoint branch in the thread
        child = self._update(ref.extra["mid"], [])
        return self._messages(child)

    def append_group(self, ref: SessionRef, group: Group) -> None:
        """One update_state with the step's messages."""
        self._update(self._config(ref.session_id), messages_of(group))

    def compact(self, ref: SessionRef, conversation: Conversation) -> None:
        """Replace all messages by the compacted surface (summary + kept)."""
        from langchain_core.messages import RemoveMessage
        from langgraph.graph.message import REMOVE_ALL_MESSAGES

        by_seq = {intent.seq: intent for intent in conversation.intents()}
        kept = messages_of([by_seq[seq] for seq in conversation.surface])
        remove = RemoveMessage(id=REMOVE_ALL_MESSAGES)
        self._update(self._config(ref.session_id), [remove, *kept])

    def close(self) -> None:
        """Close the saver's connection."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None
            self._graph = None


System = LangGraphSystem
