"""The error classes of agentlog.

``str(error)`` is always the specification's message, verbatim, so callers and tests
can match on it; ``code`` is set where the specification names one.
"""

from __future__ import annotations


class AgentlogError(Exception):
    """Base class of every error agentlog raises on purpose."""

    code: str | None = None


class SessionError(AgentlogError, ValueError):
    """A session rule was broken; nothing was recorded."""

    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code

    @property
    def message(self) -> str:
        return str(self.args[0])


class NonJsonDataError(SessionError, TypeError):
    """Data is not losslessly JSON-serialisable (docs/events.md#lossless-json)."""


class SurfaceIntentError(SessionError):
    """A surface marker is missing, forbidden or malformed.

    See docs/events.md#surface-markers.
    """


class PayloadError(SessionError):
    """A known event type's payload does not match its model.

    See docs/events.md#payload-checks.
    """


class SurfaceError(SessionError):
    """A surface fold or replace failed (docs/surface.md)."""


class SeedError(SessionError):
    """A seed (inherited or imported history) broke a seed rule (docs/fork.md#seeds)."""


class InvariantError(SessionError):
    """A turn/step/tool-call invariant was violated (docs/invariants.md)."""

    code = "INVARIANT"
    PREFIX = "invariant violated: "

    def __init__(self, detail: str) -> None:
        super().__init__(self.PREFIX + detail, code="INVARIANT")
        self.detail = detail


class SessionForkError(SessionError):
    """A fork was refused (docs/fork.md#fork); ``code`` is one of the spec's codes."""

    INVALID_BOUNDARY = "INVALID_BOUNDARY"
    OPEN_TURN = "OPEN_TURN"
    SESSION_NOT_FOUND = "SESSION_NOT_FOUND"
    SESSION_NOT_LIVE = "SESSION_NOT_LIVE"
    SESSION_ALREADY_EXISTS = "SESSION_ALREADY_EXISTS"

    def __init__(self, message: str, code: str) -> None:
        super().__init__(message, code=code)


class PersistenceError(AgentlogError):
    """Base class of the store's errors (docs/errors.md)."""


class SessionNotFoundError(PersistenceError, LookupError):
    """``session "<id>" not found``."""

    def __init__(self, session_id: str) -> None:
        super().__init__(f'session "{session_id}" not found')
        self.session_id = session_id


class EventNotFoundError(PersistenceError, LookupError):
    """``session "<id>" has no event at seq <seq>`` (an as-of read past the log)."""

    def __init__(self, session_id: str, seq: int) -> None:
        super().__init__(f'session "{session_id}" has no event at seq {seq}')
        self.session_id = session_id
        self.seq = seq


class SessionKeyForgottenError(SessionNotFoundError):
    """The session's data key was forgotten (erased): it reads as never stored.

    Same message as :class:`SessionNotFoundError`; see docs/encryption.md.
    """


class EncryptionError(PersistenceError):
    """Per-session encryption cannot be used as configured, or a key does not open.

    The message never holds a key (docs/encryption.md).
    """


class SessionAlreadyExistsError(PersistenceError):
    """A session with this id is live here or already stored."""


class SessionConflictError(PersistenceError):
    """Another writer appended to this session first; reload and re-apply.

    Raised by ``flush`` when the store already holds an event at a version this
    handle meant to write (optimistic concurrency). Nothing was written.
    """

    def __init__(self, session_id: str, expected_seq: int) -> None:
        super().__init__(
            f'append seq mismatch for "{session_id}": expected {expected_seq} to be '
            "the next free seq, but another writer recorded it first; reload the "
            "session and re-apply the command"
        )
        self.session_id = session_id
        self.expected_seq = expected_seq


class SessionErasedError(PersistenceError):
    """The session was erased: its id can never be written again (docs/erasure.md).

    Raised by a flush of a handle opened before the erase (in any process), and by
    creating, importing or forking into an erased id. Nothing was written. Reads
    never raise it: to every read an erased session is a missing one.
    """

    def __init__(self, session_id: str) -> None:
        super().__init__(
            f'session "{session_id}" was erased; an erased id cannot be written again'
        )
        self.session_id = session_id


class StaleSessionError(PersistenceError):
    """The handle lost a concurrency conflict and must be reloaded before use."""

    def __init__(self, session_id: str) -> None:
        super().__init__(
            f'session "{session_id}" is stale after a concurrency conflict; '
            "reload it with get_session() and re-apply the command"
        )
        self.session_id = session_id


class SessionBusyError(PersistenceError):
    """Another command holds the session in this process past the timeout."""

    def __init__(self, session_id: str, timeout: float) -> None:
        super().__init__(
            f'session "{session_id}" is busy: another command held it for more than '
            f"{timeout:g} s; retry later or raise the command timeout"
        )
        self.session_id = session_id
        self.timeout = timeout


class SessionClosedError(PersistenceError):
    """The handle was closed, discarded or evicted; its appends would be lost."""

    def __init__(self, session_id: str) -> None:
        super().__init__(
            f'session handle "{session_id}" is closed; open the session again '
            "(command() or get_session()) to append"
        )
        self.session_id = session_id


class StoreUnavailableError(PersistenceError):
    """The store could not be reached or opened; the original error is the cause.

    Nothing was lost: a flush that raises this keeps its pending events.
    """


class StoreNotFoundError(StoreUnavailableError):
    """A store opened without creating it does not exist (a missing SQLite file)."""


class StoreReadOnlyError(StoreUnavailableError):
    """The store was opened read-only (a read-only SQLite file, a PostgreSQL
    standby, or ``?mode=ro``): every read works, every write is refused and
    stores nothing."""

    @classmethod
    def views_never_built(cls) -> StoreReadOnlyError:
        """A read-only store no query (nor worker) ever built the views of."""
        return cls(
            "the store is read-only and its views were never built: open it"
            " writable once to build them"
        )


class StoreClosedError(StoreUnavailableError):
    """The ``Sessions`` was closed: nothing more is read or written through it."""

    MESSAGE = "the store is closed (Sessions.close() was called); open it again"

    def __init__(self) -> None:
        super().__init__(self.MESSAGE)


class CorruptSessionLogError(PersistenceError):
    """A stored log cannot be decoded or fails the strict surface fold."""

    def __init__(self, message: str, *, session_id: str, seq: int | None) -> None:
        super().__init__(message)
        self.session_id = session_id
        self.seq = seq


class UnsupportedSessionFormatError(PersistenceError):
    """A stored header has another format version, or a log holds legacy shapes."""


class LineageCycleError(AgentlogError):
    """The parent walk of a lineage revisits ``session_id``: the headers are
    inconsistent (a query reports it as ``SESSION_QUERY_INVALID_LINEAGE``)."""

    def __init__(self, session_id: str) -> None:
        super().__init__(f'session lineage contains a cycle at "{session_id}"')
        self.session_id = session_id


class SessionQueryError(AgentlogError):
    """A query failed; ``code`` is one of the closed set in docs/query.md."""

    INVALID_CONFIG = "SESSION_QUERY_INVALID_CONFIG"
    INVALID_WINDOW = "SESSION_QUERY_INVALID_WINDOW"
    SESSION_NOT_FOUND = "SESSION_QUERY_SESSION_NOT_FOUND"
    EVENT_NOT_FOUND = "SESSION_QUERY_EVENT_NOT_FOUND"
    PERSISTENCE_FAILED = "SESSION_QUERY_PERSISTENCE_FAILED"
    SOURCE_CONFLICT = "SESSION_QUERY_SOURCE_CONFLICT"
    INVALID_SURFACE = "SESSION_QUERY_INVALID_SURFACE"
    INVALID_LINEAGE = "SESSION_QUERY_INVALID_LINEAGE"
    INVALID_SEARCH = "SESSION_QUERY_INVALID_SEARCH"
    INVALID_CURSOR = "SESSION_QUERY_INVALID_CURSOR"
    SEARCH_DISABLED = "SESSION_QUERY_SEARCH_DISABLED"
    INVALID_SCOPE = "SESSION_QUERY_INVALID_SCOPE"
    UNKNOWN_CALLER = "SESSION_QUERY_UNKNOWN_CALLER"

    def __init__(
        self, message: str, code: str, cause: BaseException | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.cause = cause

    # One constructor per documented failure, so each message lives here once.

    @classmethod
    def invalid_config(cls) -> SessionQueryError:
        msg = "session-query: readWindowMax must be a non-negative integer"
        return cls(msg, cls.INVALID_CONFIG)

    @classmethod
    def invalid_window(cls, message: str) -> SessionQueryError:
        """A read window or listing page argument out of range (``message`` says so)."""
        return cls(message, cls.INVALID_WINDOW)

    @classmethod
    def not_found(cls, session_id: object) -> SessionQueryError:
        return cls(f'session "{session_id}" not found', cls.SESSION_NOT_FOUND)

    @classmethod
    def event_not_found(cls, session_id: str, seq: str) -> SessionQueryError:
        """``seq`` as JavaScript renders it (the caller formats it)."""
        msg = f'session "{session_id}" has no event at seq {seq}'
        return cls(msg, cls.EVENT_NOT_FOUND)

    @classmethod
    def listing_failed(cls, error: BaseException) -> SessionQueryError:
        msg = f"session persistence listing failed: {_reason(error)}"
        return cls(msg, cls.PERSISTENCE_FAILED, error)

    @classmethod
    def load_failed(cls, session_id: str, error: BaseException) -> SessionQueryError:
        msg = f'failed to load session "{session_id}": {_reason(error)}'
        return cls(msg, cls.PERSISTENCE_FAILED, error)

    @classmethod
    def source_conflict(cls, session_id: str) -> SessionQueryError:
        msg = f'live and persisted headers conflict for session "{session_id}"'
        return cls(msg, cls.SOURCE_CONFLICT)

    @classmethod
    def invalid_surface(cls, error: BaseException) -> SessionQueryError:
        return cls(f"invalid session surface: {error}", cls.INVALID_SURFACE, error)

    @classmethod
    def lineage_cycle(cls, session_id: str) -> SessionQueryError:
        msg = f'session lineage contains a cycle at "{session_id}"'
        return cls(msg, cls.INVALID_LINEAGE)

    @classmethod
    def invalid_search(cls, message: str) -> SessionQueryError:
        """A search query, filter or limit that cannot be run (docs/search.md)."""
        return cls(f"invalid search: {message}", cls.INVALID_SEARCH)

    @classmethod
    def invalid_cursor(cls) -> SessionQueryError:
        msg = "search cursor is malformed or belongs to another query"
        return cls(msg, cls.INVALID_CURSOR)

    @classmethod
    def invalid_scope(cls, message: str) -> SessionQueryError:
        """A ``Scope`` built from values it cannot hold (docs/scope.md)."""
        return cls(f"invalid scope: {message}", cls.INVALID_SCOPE)

    @classmethod
    def unknown_caller(cls, session_id: object) -> SessionQueryError:
        """``for_caller`` with an id that names no session: no scope at all."""
        msg = f'caller session "{session_id}" not found; no scope can be derived'
        return cls(msg, cls.UNKNOWN_CALLER)

    @classmethod
    def search_disabled(cls) -> SessionQueryError:
        msg = "content search is disabled (AGENTLOG_SEARCH=off)"
        return cls(msg, cls.SEARCH_DISABLED)


def _reason(error: BaseException) -> str:
    """A failure's message; one that carries none is an ``unknown error``."""
    return str(error) or "unknown error"


class ModelToolError(AgentlogError, ValueError):
    """A model tool was called wrongly or configured wrongly (docs/tools.md).

    The message names the argument or setting and what was wrong with it; a model
    reads it as the tool's error result.
    """


class StoreURLError(AgentlogError, ValueError):
    """A store URL (or a store setting) this build cannot use."""


class TitleError(AgentlogError, ValueError):
    """A title limit, configuration or provider result is invalid (docs/titles.md)."""


class TitleEventError(TitleError, TypeError):
    """A stored ``session/title`` event is not the documented shape.

    A ``TypeError`` too, as the original fold raised; appends never record one.
    """


class LogImportError(AgentlogError, ValueError):
    """A log file cannot be imported; the message names the file and its line."""

    def __init__(self, message: str, *, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


class LineTooLongError(LogImportError):
    """A log line is longer than the import's limit; refused while it was read.

    ``line`` is the file line (from 1) and ``limit`` the limit in bytes.
    """

    def __init__(self, message: str, *, line: int, limit: int) -> None:
        super().__init__(message, line=line)
        self.limit = limit


class UnknownEventTypeError(SessionError):
    """A strict writer refused an undeclared type in a core family (docs/agents.md).

    Without strictness such a type is a log-only plugin event, so a typo such as
    ``user/mesage`` would never reach the history.
    """
