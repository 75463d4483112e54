"""Every wrapper of the query service offers every declared read, with its scope
shaping (``agentlog.application.read_operations``).

The declaration is the one list of reads. Here each wrapper — the scoped view,
the coroutines, the model tools' ``CallerReads`` — is checked against it, and
every declared read is called through a scope whose sessions have parents,
children and forks outside it: no byte of any result may name, title or quote a
session outside the scope. A read added to the declaration without a call here,
or to a wrapper without its shaping, fails.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import TYPE_CHECKING, Any

import pytest

from agentlog import AsyncSessions, SessionQuery
from agentlog.application.async_sessions import AsyncSessionQuery
from agentlog.application.model_tools.caller import CallerReads, scoped_reads
from agentlog.application.read_operations import (
    READ_OPERATIONS,
    read_operation_names,
)
from agentlog.application.scope import ScopedSessionQuery
from tests.scope.paths import text
from tests.scope.world import SCOPE_A, build

if TYPE_CHECKING:
    from collections.abc import Callable

    from agentlog import Sessions

    MakeApp = Callable[..., Sessions]

CALLS: dict[str, Callable[[Any, str], tuple[tuple[Any, ...], dict[str, Any]]]] = {
    "list_sessions": lambda q, s: ((), {}),
    "list_summaries": lambda q, s: ((50,), {}),
    "read_title": lambda q, s: ((s,), {}),
    "list_events": lambda q, s: ((s,), {}),
    "read_surface": lambda q, s: ((s,), {}),
    "read_messages": lambda q, s: ((s,), {}),
    "stream_surface": lambda q, s: ((s,), {}),
    "read_event": lambda q, s: ((s, 0), {}),
    "trace_event": lambda q, s: ((s, 1), {}),
    "trace_session": lambda q, s: ((s,), {}),
    "filter_sessions": lambda q, s: ((None,), {}),
    "filter_events": lambda q, s: ((s,), {}),
    "search_sessions": lambda q, s: (("needle",), {}),
    "search_events": lambda q, s: ((s, "needle"), {}),
}
"""How the conformance test calls each read (``s``: a session in the scope
whose parent, child or fork lies outside it)."""

TARGETS = ("a-from-b", "a-root", "a-under-b", "a-orphan")


def parameters(method: Any) -> list[tuple[str, Any]]:
    signature = inspect.signature(method)
    return [(p.name, p.kind) for p in signature.parameters.values()]


def test_the_declaration_lists_every_public_read_of_the_query_service() -> None:
    public = {
        name
        for name, member in inspect.getmembers(SessionQuery, inspect.isfunction)
        if not name.startswith("_")
    }
    not_reads = {"mount", "unmount", "scoped", "for_caller", "store_reader"}
    assert public - not_reads == read_operation_names()
    assert set(CALLS) == read_operation_names()


@pytest.mark.parametrize("op", READ_OPERATIONS, ids=lambda op: op.name)
def test_every_wrapper_offers_the_read(op: Any) -> None:
    query = getattr(SessionQuery, op.name)
    scoped = getattr(ScopedSessionQuery, op.name, None)
    assert scoped is not None, f"ScopedSessionQuery lacks {op.name}"
    assert parameters(scoped) == parameters(query), op.name
    coroutine = getattr(AsyncSessionQuery, op.name, None)
    if op.awaitable:
        assert coroutine is not None, f"AsyncSessionQuery lacks {op.name}"
        assert inspect.iscoroutinefunction(coroutine), op.name
    if op.model_tool:
        assert op.name in dir(CallerReads), f"CallerReads lacks {op.name}"


def test_the_model_tools_read_exactly_the_declared_tool_reads() -> None:
    members = {
        name
        for name in vars(CallerReads)
        if not name.startswith("_") and callable(vars(CallerReads)[name])
    }
    assert members == read_operation_names(model_tool=True)


def test_every_read_through_every_wrapper_keeps_the_scope(
    make_app: MakeApp,
) -> None:
    app = make_app()
    world = build(app)
    secrets = world.secrets_outside(SCOPE_A)
    query = SessionQuery(app).scoped(SCOPE_A)
    sessions = AsyncSessions(app)
    coroutines = sessions.query().scoped(SCOPE_A)
    leaks: list[str] = []
    try:
        for name in TARGETS:
            target = world.ids[name]
            caller = scoped_reads(app, target)
            for op in READ_OPERATIONS:
                args, kwargs = CALLS[op.name](query, target)
                results = [getattr(query, op.name)(*args, **kwargs)]
                if op.awaitable:
                    method = getattr(coroutines, op.name)
                    results.append(asyncio.run(method(*args, **kwargs)))
                if op.model_tool:
                    results.append(getattr(caller, op.name)(*args, **kwargs))
                for result in results:
                    dump = text(result)
                    leaks += [
                        f"{op.name}({name}): {secret}"
                        for secret in secrets
                        if secret in dump
                    ]
    finally:
        sessions.executor.shutdown(wait=True)
        for handle in world.handles:
            app.discard(handle)
    assert leaks == []
