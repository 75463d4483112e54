"""The caller's current step, found from the end of its log: the same answer as
reading the whole log, for steps shorter and longer than the read windows."""

from __future__ import annotations

import pytest

from agentlog.application import Sessions
from agentlog.application.model_tools import ModelTools
from agentlog.application.model_tools import caller as caller_module
from tests.builders import SE, SS, TE, TS, U, chunk, log
from tests.query.support import header, raw_write
from tests.tools.support import WORKSPACE


def logged(*, steps: int, chunks: int, open_step: bool) -> list[dict[str, object]]:
    items = [TS(1), U("q")]
    for step in range(1, steps + 1):
        items += [SS(1, step), *[chunk(1, step) for _ in range(chunks)]]
        if step < steps or not open_step:
            items.append(SE(1, step))
    if not open_step:
        items.append(TE(1))
    return log(*items)


def expected(events: list[dict[str, object]]) -> int | None:
    starts = [e["seq"] for e in events if e["type"] == "step/start"]
    return int(starts[-1]) if starts else None  # type: ignore[call-overload]


@pytest.mark.parametrize(
    ("steps", "chunks", "open_step"),
    [
        (0, 0, False),
        (1, 0, True),
        (1, 3, True),
        (3, 10, True),
        (2, 10, False),
        (2, 49, True),
        (2, 50, True),
        (2, 51, True),
        (3, 120, True),
        (1, 300, True),
    ],
)
@pytest.mark.parametrize("windows", [20, 2])
def test_the_last_step_start_from_the_end(
    app: Sessions,
    monkeypatch: pytest.MonkeyPatch,
    steps: int,
    chunks: int,
    open_step: bool,
    windows: int,
) -> None:
    monkeypatch.setattr(caller_module, "STEP_WINDOWS", windows)  # 2: the fallback
    events = logged(steps=steps, chunks=chunks, open_step=open_step)
    raw_write(app, header("me", 1, cwd=WORKSPACE), events)
    tools = ModelTools(app, "me")
    assert tools.caller.current_step_start() == expected(events)


def test_a_live_caller_without_events(app: Sessions) -> None:
    handle = app.create_session(cwd=WORKSPACE, session_id="new")
    tools = ModelTools(app, handle.id)
    assert tools.caller.current_step_start() is None
