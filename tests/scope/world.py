"""Two workspaces, two owners, forks and delegations across them: the store the
adversarial scope tests read from.

Every session carries its own token in its prompt, reply and title, and every
prompt holds the shared word ``needle``, so a search matches every session of
every scope and only the scope can keep one out of a result.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any

from agentlog import Scope, Sessions
from agentlog.application.handle import SessionHandle
from tests.builders import Append
from tests.scenarios.harness import SE, SS, TE, TS, A, U, add

W1, W2 = "/ws/one", "/ws/two"
O1, O2 = "alice", "bob"
SCOPE_A = Scope(cwd=W1, owner=O1)
"""The scope most tests read in."""
NEVER_PARENT = "never-parent-" + "5b1e0c"
NEVER = "never-existed-" + "9d2f41"


def title(value: str, seq: int) -> Append:
    data = {"title": value, "messageSeqs": [seq], "source": {"kind": "fallback"}}
    return Append("session/title", data)


@dataclass
class Spec:
    name: str
    cwd: str | None
    owner: str | None
    parent: str | None = None  # a name, or NEVER_PARENT
    fork_of: str | None = None  # a name: app.fork at the first turn end
    state: str = "stored"  # stored | flushed-live | unflushed


SPECS = [
    Spec("a-root", W1, O1),
    Spec("a-fork", W1, O1, fork_of="a-root"),
    Spec("a-from-b", W1, O1, parent="b-root"),  # delegation from another workspace
    Spec("a-orphan", W1, O1, parent=NEVER_PARENT),  # its parent was never stored
    Spec("b-of-a", W2, O1, parent="a-root"),  # out-of-scope child of an in-scope one
    Spec("a-under-b", W1, O1, parent="b-of-a"),  # in scope, below an unseen session
    Spec("a-live", W1, O1, state="unflushed"),
    Spec("b-root", W2, O1),
    Spec("b-fork", W2, O1, fork_of="b-root"),
    Spec("b-live", W2, O1, state="unflushed"),
    Spec("b-flushed-live", W2, O1, state="flushed-live"),
    Spec("c-root", W1, O2),  # same workspace, other owner
    Spec("c-live", W1, O2, state="flushed-live"),
    Spec("d-root", W1, None),  # same workspace, no owner
    Spec("e-nocwd", None, O1),
    Spec("f-nothing", None, None),
]


@dataclass
class World:
    app: Sessions
    ids: dict[str, str] = field(default_factory=dict)
    """Spec name -> session id."""
    headers: dict[str, dict[str, Any]] = field(default_factory=dict)
    handles: list[SessionHandle] = field(default_factory=list)

    def token(self, name: str) -> str:
        return f"tok{self.ids[name].rsplit('-', 1)[1]}"

    def title_of(self, name: str) -> str:
        return f"Title {self.token(name)}"

    def names_in(self, scope: Scope) -> set[str]:
        return {name for name, header in self.headers.items() if scope.admits(header)}

    def ids_in(self, scope: Scope) -> set[str]:
        return {self.ids[name] for name in self.names_in(scope)}

    def secrets_outside(self, scope: Scope) -> set[str]:
        """Every id, title and token of a session outside ``scope``, and the
        ids it cannot see at all."""
        found = {NEVER_PARENT}
        for name in set(self.ids) - self.names_in(scope):
            found |= {self.ids[name], self.title_of(name), self.token(name)}
        return found


def turn(world: World, name: str, number: int, first: int) -> tuple[Append, ...]:
    """One turn from seq ``first``: prompt, reply and title (``first + 6`` ends it)."""
    token = world.token(name)
    return (
        TS(number),
        U(f"needle prompt {token} turn {number}"),
        SS(number, 1),
        A(f"reply {token} turn {number}", turn=number),
        SE(number, 1),
        title(world.title_of(name), first + 1),
        TE(number),
    )


def build(app: Sessions) -> World:
    """Store (and keep live) every session of ``SPECS`` through the public API."""
    world = World(app)
    created = 1_000
    for spec in SPECS:
        world.ids[spec.name] = f"{spec.name}-{uuid.uuid4().hex[:12]}"
    for spec in SPECS:
        created += 10
        session_id = world.ids[spec.name]
        if spec.fork_of is not None:
            handle = app.fork(world.ids[spec.fork_of], 6, child_session_id=session_id)
        else:
            parent = spec.parent
            if parent is not None and parent != NEVER_PARENT:
                parent = world.ids[parent]
            handle = app.create_session(
                cwd=spec.cwd,
                owner=spec.owner,
                session_id=session_id,
                parent_session=parent,
                created_at=created,
            )
        number = 2 if spec.fork_of is not None else 1
        add(handle, *turn(world, spec.name, number, handle.seq))
        world.headers[spec.name] = handle.header
        if spec.state == "stored":
            app.close(handle)
        elif spec.state == "flushed-live":
            app.flush(handle)
            world.handles.append(handle)
        else:
            world.handles.append(handle)
    return world
