"""``agentlog demo``: a scripted agent session, end to end, through the public API.

A newcomer's first run. It writes what an agent loop writes — turns, streamed chunks,
parallel tool calls, injected context, steering, a todo list, a title, a compaction
(docs/surface.md#compaction), a crash mid-turn and its repair on reload, a fork — so
every other command has a realistic session to read. Only ids and times vary between
runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from eventsourcing.persistence import ApplicationRecorder, EventStore

from agentlog.application.query import SessionQuery
from agentlog.application.sessions import Sessions
from agentlog.infrastructure.cli.demo.agent import COMPACT_PREAMBLE, ScriptedAgent
from agentlog.infrastructure.cli.storage import abandon
from agentlog.infrastructure.store import (
    open_sessions,
    parse_store_url,
    store_url_from_environment,
)

if TYPE_CHECKING:
    from agentlog.domain.json import Envelope

Narrate = Callable[[str], None]
DEMO_CWD = "/workspace/weather-api"
__all__ = ["COMPACT_PREAMBLE", "DemoResult", "ScriptedAgent", "restart", "run_demo"]


# ---------------------------------------------------------------- the script


def _turn_one(agent: ScriptedAgent) -> str | None:
    agent.start_turn(
        "Add a /health endpoint to the weather API and make sure the tests pass."
    )
    title = agent.title()
    agent.inject_context(
        "AGENTS.md (repository root): handlers live in api/routes.py; "
        "run the tests with `pytest -q`.",
        plugin="agents-md",
    )
    agent.write_todos(
        ("Read the router and its tests", "in_progress"),
        ("Add the /health handler", "pending"),
        ("Run the tests", "pending"),
    )
    first, second = agent.model_step(
        reasoning="The router and its tests tell me where a new handler goes.",
        text="Let me read the router and its tests first.",
        calls=[
            ("read_file", {"path": "api/routes.py"}),
            ("read_file", {"path": "tests/test_routes.py"}),
        ],
    )
    # Parallel calls: both run at once; the second one finishes first.
    agent.tool_result(second, "def test_forecast(client): ...  # 11 tests")
    agent.tool_result(first, "router = APIRouter()\n@router.get('/forecast') ...")
    agent.end_step()
    agent.steer("Please include the service version in the health payload.")
    agent.write_todos(
        ("Read the router and its tests", "completed"),
        ("Add the /health handler", "in_progress"),
        ("Run the tests", "pending"),
    )
    (edit,) = agent.model_step(
        text="Adding GET /health, returning the status and the version as asked.",
        calls=[
            ("edit_file", {"path": "api/routes.py", "insert": "@router.get('/health')"})
        ],
    )
    agent.tool_result(edit, "Applied 1 edit to api/routes.py")
    agent.end_step()
    (tests,) = agent.model_step(calls=[("run", {"command": "pytest -q"})])
    agent.tool_result(tests, "12 passed in 0.41s")
    agent.end_step()
    agent.write_todos(
        ("Read the router and its tests", "completed"),
        ("Add the /health handler", "completed"),
        ("Run the tests", "completed"),
    )
    agent.model_step(
        text="Done: GET /health returns {status, version}; all 12 tests pass."
    )
    agent.end_step()
    agent.end_turn()
    return title


def _turn_two(agent: ScriptedAgent) -> tuple[int, list[int], int]:
    agent.start_turn("Now add request logging middleware.")
    checkpoint, shadowed = agent.compact(
        "The user asked for a /health endpoint. GET /health in api/routes.py now "
        "returns the status and the service version; all 12 tests pass."
    )
    app_py, grep = agent.model_step(
        reasoning="Middleware is registered where the app is built.",
        text="Looking at how the app is assembled and whether logging exists.",
        calls=[
            ("read_file", {"path": "api/app.py"}),
            ("grep", {"pattern": "logging", "path": "api/"}),
        ],
    )
    agent.tool_result(app_py, "app = FastAPI()\napp.include_router(router)")
    agent.tool_result(grep, "no matches")
    agent.end_step()
    (edit,) = agent.model_step(
        text="Adding a middleware that logs method, path, status and duration.",
        calls=[
            ("edit_file", {"path": "api/app.py", "insert": "@app.middleware('http')"})
        ],
    )
    agent.tool_result(edit, "Applied 1 edit to api/app.py")
    agent.end_step()
    agent.model_step(text="Request logging is in place in api/app.py.")
    agent.end_step()
    return checkpoint, shadowed, agent.end_turn()


def _turn_three_crashes(agent: ScriptedAgent) -> None:
    """A turn whose process dies while a tool runs (flushed up to that point)."""
    agent.start_turn("Run the full test suite and the linter.")
    _running, lint = agent.model_step(
        text="Running both in parallel.",
        calls=[("run", {"command": "pytest"}), ("run", {"command": "ruff check ."})],
    )
    agent.tool_result(lint, "All checks passed!")
    # pytest is still running when the process dies: it never gets a result.


def _fork_turn(agent: ScriptedAgent) -> None:
    agent.start_turn("Run only the fast tests this time.")
    (tests,) = agent.model_step(
        text="Running the fast tests.",
        calls=[("run", {"command": "pytest -m 'not slow'"})],
    )
    agent.tool_result(tests, "12 passed, 3 deselected in 0.38s")
    agent.end_step()
    agent.model_step(text="The fast tests pass (12 passed, 3 slow ones deselected).")
    agent.end_step()
    agent.end_turn()


# ---------------------------------------------------------- crash and reload


class _RestartedMemorySessions(Sessions):
    """A second application over the first one's in-memory recorders.

    On ``memory:`` the store lives in the process, so "open the store again" means
    new application objects over the same recorders, as a new process would find
    a database. Only the library's ``construct_*`` hooks are overridden.
    """

    name: ClassVar[str] = "Sessions"  # type: ignore[misc]

    def __init__(self, previous: Sessions) -> None:
        self._previous = previous
        super().__init__({"PERSISTENCE_MODULE": "eventsourcing.popo"})

    def construct_recorder(self) -> ApplicationRecorder:
        return self._previous.recorder

    def construct_snapshot_store(self) -> EventStore[str]:
        snapshots = self._previous.snapshots
        assert snapshots is not None
        return EventStore(mapper=self.mapper, recorder=snapshots.recorder)


def restart(crashed: Sessions, url: str) -> Sessions:
    """Open the store again as a new process would; the crashed one never closes.

    Its connections go away the way a dead process's do (no flush: it holds no
    unflushed events, so nothing can be written).
    """
    if parse_store_url(url).env["PERSISTENCE_MODULE"] == "eventsourcing.popo":
        return _RestartedMemorySessions(crashed)
    fresh = open_sessions(url)
    crashed.factory.close()
    return fresh


# ------------------------------------------------------------------- driver


@dataclass
class DemoResult:
    """What the demo wrote, and the application to read it with (keep it open)."""

    app: Sessions
    query: SessionQuery
    session_id: str
    fork_id: str
    title: str | None
    checkpoint_seq: int
    shadowed_seqs: list[int]
    fork_boundary: int
    closers: list[Envelope]


def run_demo(url: str | None = None, narrate: Narrate = print) -> DemoResult:
    """Drive the scripted session on the store ``url`` names; narrate each stage.

    Stopped or failed part-way (SIGINT), every application it opened is closed
    without a flush: nothing half-written is saved later by a garbage-collected
    application's ``close()``.
    """
    opened: list[Sessions] = []
    try:
        return _drive(store_url_from_environment(url), narrate, opened)
    except BaseException:
        for app in opened:
            abandon(app)
        raise


def _drive(url: str, narrate: Narrate, opened: list[Sessions]) -> DemoResult:
    app = open_sessions(url)
    opened.append(app)
    handle = app.create_session(cwd=DEMO_CWD)
    agent = ScriptedAgent(handle)
    session_id = handle.id
    narrate(f"session {session_id} (cwd {DEMO_CWD})")

    title = _turn_one(agent)
    app.flush(handle)
    narrate(
        f"turn 1: prompt, title “{title}”, AGENTS.md context, todos, 4 streamed "
        f"steps, parallel tool calls, steering; flushed at seq {handle.seq - 1}"
    )
    checkpoint, shadowed, boundary = _turn_two(agent)
    app.flush(handle)
    narrate(
        f"turn 2: compaction replaced {len(shadowed)} surface events "
        f"(seq {shadowed[0]} to {shadowed[-1]}) with the checkpoint at seq "
        f"{checkpoint}; 3 steps; flushed at seq {handle.seq - 1}"
    )
    _turn_three_crashes(agent)
    app.flush(handle)
    stored = handle.seq
    narrate(
        f"turn 3: flushed mid-step at seq {stored - 1} (one tool still running), "
        "then the process crashes"
    )

    del agent, handle
    app = restart(app, url)
    opened.append(app)
    handle = app.get_session(session_id)
    closers = app.read_events(session_id, after=stored - 1)
    kinds = ", ".join(_closer_label(event) for event in closers)
    narrate(f"reload: get_session repaired the open turn by appending {kinds}")

    child = app.fork(session_id, boundary=boundary)
    _fork_turn(ScriptedAgent(child))
    fork_id = child.id
    app.close(child)
    app.close(handle)
    narrate(
        f"fork: {fork_id} inherits seqs 0..{boundary} (up to turn 2's end) "
        "and retries turn 3 its own way"
    )
    return DemoResult(
        app=app,
        query=SessionQuery(app),
        session_id=session_id,
        fork_id=fork_id,
        title=title,
        checkpoint_seq=checkpoint,
        shadowed_seqs=shadowed,
        fork_boundary=boundary,
        closers=closers,
    )


def _closer_label(event: Envelope) -> str:
    data = event["data"]
    if event["type"] == "tool/result":
        return f"an interrupted tool/result for {data['callId']}"
    if event["type"] == "turn/end":
        return f"turn/end ({data['reason']['kind']})"
    return str(event["type"])
