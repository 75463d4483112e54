"""The ``import`` command's work: open each file, store it, say what happened.

Kept apart from the command's options so the flow reads in one place: every file is
imported on its own (one bad file does not stop the others), with a progress bar
per pass. ``--new-id`` gives every file its own fresh UUID4, chosen before the
first import, so a child imported with its parent points at the parent's new id
whatever the order of the files. Only a header id that names exactly one file of
the import is such a link: many snapshots share one id (``{{sessionId}}``), and a
parent link to it would be a guess.
"""

from __future__ import annotations

import uuid
from collections import Counter
from typing import TYPE_CHECKING

from agentlog.application.transfer import ImportResult, import_session
from agentlog.domain.errors import AgentlogError, SessionAlreadyExistsError
from agentlog.infrastructure.formats.jsonl import LogFile, open_log

if TYPE_CHECKING:
    from collections.abc import Callable, Iterator, Mapping

    from agentlog.application.sessions import Sessions
    from agentlog.infrastructure.cli.progress import Meter

_PHASES = {"reading": "checking", "storing": "storing"}


class Imports:
    """Imports files into one store, yielding ``(file, result or error line)``."""

    def __init__(
        self,
        app: Sessions,
        meter: Meter,
        substitutions: Mapping[str, str],
        *,
        strict: bool,
        new_id: bool,
    ) -> None:
        self.app = app
        self.meter = meter
        self.substitutions = substitutions
        self.strict = strict
        self.new_id = new_id
        self.fresh_ids: dict[str, str] = {}
        """Each file's new id under ``--new-id``."""
        self.links: dict[str, str] = {}
        """A header id that names one file of this import -> that file's new id."""
        self.shared: Counter[str] = Counter()
        """How many files of this import carry each header id."""
        self.sizes: dict[str, int | None] = {}
        self.stored: list[str] = []
        self.writing: str | None = None
        """The new session being written now, for the report of a stop signal."""

    def run(self, paths: list[str]) -> Iterator[tuple[str, ImportResult | str]]:
        fresh = [str(uuid.uuid4()) if self.new_id else None for _ in paths]
        opened: list[tuple[str, LogFile | str, str | None]] = [
            (path, self._open(path, new), new)
            for path, new in zip(paths, fresh, strict=True)
        ]
        logs = [(log, new) for _, log, new in opened if isinstance(log, LogFile)]
        for path, log, _ in opened:
            if isinstance(log, LogFile):
                self.sizes[path] = log.size
        self.shared = Counter(str(log.header["id"]) for log, _ in logs)
        self.links = {
            str(log.header["id"]): new
            for log, new in logs
            if new is not None and self.shared[str(log.header["id"])] == 1
        }
        for path, log, new in opened:
            if isinstance(log, str):
                yield path, log
                continue
            yield path, self._import(log, new)

    def _open(self, path: str, fresh_id: str | None) -> LogFile | str:
        try:
            return open_log(
                path,
                substitutions=self.substitutions,
                on_bytes=self._on_bytes(path),
                fresh_id=fresh_id,
            )
        except (AgentlogError, OSError) as error:
            return _line(error)

    def _on_bytes(self, path: str) -> Callable[[str, int], None]:
        """Progress of one file: a new bar phase per pass, advanced by bytes read."""
        current = [""]

        def advance(phase: str, size: int) -> None:
            if phase != current[0]:
                current[0] = phase
                label = f"{_PHASES.get(phase, phase)} {path}"
                self.meter.phase(label, self.sizes.get(path))
            self.meter.advance(size)

        return advance

    def _import(self, log: LogFile, fresh_id: str | None) -> ImportResult | str:
        target = str(log.header["id"]) if fresh_id is None else fresh_id
        parent = log.header.get("parentSession")
        parent_link = self.links.get(parent) if isinstance(parent, str) else None
        self.writing = None if self.app.is_stored(target) else target
        try:
            result = import_session(
                self.app,
                log,
                session_id=fresh_id,
                parent_session=parent_link,
                strict=self.strict,
            )
        except SessionAlreadyExistsError as error:
            self.writing = None
            return f"{_line(error)}; use --new-id to import it as a new session"
        except AgentlogError as error:
            self.writing = None
            return _line(error)
        # Not in a ``finally``: after a stop signal, ``writing`` names what to check.
        self.writing = None
        self.stored.append(result.session_id)
        result.report.extend(self._link_notes(parent, parent_link))
        return result

    def _link_notes(self, parent: object, link: str | None) -> list[str]:
        """What ``--new-id`` did to the parent link, when it did anything."""
        if not self.new_id or not isinstance(parent, str):
            return []
        if link is not None:
            return [f"parentSession {parent} was imported here: now {link}"]
        if self.shared[parent] > 1:
            return [
                f"parentSession {parent} names {self.shared[parent]} files of this"
                " import; kept as written"
            ]
        return []

    def stored_now(self, app: Sessions) -> list[str]:
        """After a stop: the sessions imported, and how far the one in progress got."""
        names = [session_id for session_id in self.stored if app.is_stored(session_id)]
        if self.writing is not None and app.is_stored(self.writing):
            count = app.stored_length(self.writing)
            names.append(f"{self.writing} ({count} events)")
        return names


def _line(error: BaseException) -> str:
    """The error as the one line the command prints."""
    text = str(error) if not isinstance(error, OSError) else _os_error(error)
    return " ".join(text.split())


def _os_error(error: OSError) -> str:
    return error.strerror or str(error)
