"""Which module defines each command, and what ``--help`` lists for it.

The command line imports a command's module only to run that command, so
``agentlog ls`` never pays for the MCP server, the web viewer or the demo, and
``agentlog --help`` for none of them: the list of commands is this table. A
test checks it against the commands themselves, so a new command (or a changed
docstring) fails the suite until it is listed here.
"""

from __future__ import annotations

from typing import NamedTuple


class Command(NamedTuple):
    """Where a command lives and how ``--help`` shows it."""

    module: str
    panel: str
    summary: str
    """The first paragraph of the command's docstring."""


COMMANDS: dict[str, Command] = {
    "demo": Command(
        "agentlog.infrastructure.cli.demo.command",
        "Start here",
        "Run a scripted agent session end to end, then show what was stored.",
    ),
    "ls": Command(
        "agentlog.infrastructure.cli.listing",
        "Read",
        "List sessions, newest first.",
    ),
    "show": Command(
        "agentlog.infrastructure.cli.reads",
        "Read",
        "A session's header, title and every event with its surface class.",
    ),
    "messages": Command(
        "agentlog.infrastructure.cli.reads",
        "Read",
        "The derived LLM message history (what the model sees next, or saw --at SEQ).",
    ),
    "surface": Command(
        "agentlog.infrastructure.cli.reads",
        "Read",
        "The current surface events (or as of --at SEQ), in model-history order.",
    ),
    "event": Command(
        "agentlog.infrastructure.cli.reads",
        "Read",
        "One event in full, with up to N raw events (at most 50) on each side.",
    ),
    "trace": Command(
        "agentlog.infrastructure.cli.reads",
        "Read",
        "A session's lineage: its ancestors and the sessions forked from it.",
    ),
    "trace-event": Command(
        "agentlog.infrastructure.cli.reads",
        "Read",
        "Where an event went: what replaced it, what it replaced, its provenance.",
    ),
    "search": Command(
        "agentlog.infrastructure.cli.search",
        "Read",
        "Find sessions (or, with --session, events) containing QUERY literally.",
    ),
    "import": Command(
        "agentlog.infrastructure.cli.writes",
        "Write",
        "Store log files as new sessions; prints each new session id.",
    ),
    "export": Command(
        "agentlog.infrastructure.cli.writes",
        "Write",
        "Write a session as our JSONL: a header line, then one event per line.",
    ),
    "fork": Command(
        "agentlog.infrastructure.cli.writes",
        "Write",
        "Start a new session seeded with this one's events up to a turn end.",
    ),
    "repair": Command(
        "agentlog.infrastructure.cli.writes",
        "Write",
        "Close a crashed session's open turn (docs/repair.md).",
    ),
    "erase": Command(
        "agentlog.infrastructure.cli.erasure",
        "Erase",
        "Erase a session everywhere: events, snapshots, listing, search, lineage.",
    ),
    "erasures": Command(
        "agentlog.infrastructure.cli.erasure",
        "Erase",
        "The audit: every erased session with its time (UTC) and reason.",
    ),
    "gc": Command(
        "agentlog.infrastructure.cli.erasure",
        "Erase",
        "Erase the sessions last written before a cutoff (retention).",
    ),
    "rotate-master-key": Command(
        "agentlog.infrastructure.cli.keys",
        "Store",
        "Wrap every session key with AGENTLOG_NEW_MASTER_KEY (docs/encryption.md).",
    ),
    "mcp": Command(
        "agentlog.infrastructure.cli.mcp",
        "Read",
        "Serve the model tools to an MCP client, bound to one caller session.",
    ),
    "migrate": Command(
        "agentlog.infrastructure.cli.migrate",
        "Store",
        "Create the store's tables and views (for services with create_tables=False).",
    ),
    "worker": Command(
        "agentlog.infrastructure.cli.worker",
        "Store",
        "Keep the views and search index current (PostgreSQL; SIGINT/SIGTERM stop).",
    ),
    "schema": Command(
        "agentlog.infrastructure.cli.schema",
        "Reference",
        "Print the event vocabulary: a JSON Schema (2020-12) of one log line.",
    ),
    "serve": Command(
        "agentlog.infrastructure.cli.serve",
        "Read",
        "Serve a read-only web viewer of the sessions (http://127.0.0.1:8766).",
    ),
}
"""Every command, in the order ``--help`` lists them."""
