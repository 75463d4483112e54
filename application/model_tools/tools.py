"""``ModelTools``: the five tools bound to one caller, answering with text.

:meth:`ModelTools.call` is what a function-calling loop or the MCP server runs for
a model's tool call. It never raises for anything the model did or the store did:
invalid arguments come back as a message naming each argument; a session or event
that does not exist *for this caller* (missing, or outside its scope) comes back
as the same not-found text; every other failure is logged with its detail and
comes back as one fixed message that reveals nothing of the store.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

from agentlog.application.model_tools.arguments import (
    EventSearchArguments,
    SessionTargetArguments,
    parse_arguments,
)
from agentlog.application.model_tools.caller import Caller
from agentlog.application.model_tools.collect import DEFAULT_MAX_SEARCH_RESULTS
from agentlog.application.model_tools.definitions import TOOLS, tool_named
from agentlog.application.model_tools.operations import OPERATIONS, target_of
from agentlog.application.model_tools.text import line
from agentlog.domain.errors import ModelToolError, SessionQueryError
from agentlog.domain.json import loads

if TYPE_CHECKING:
    from agentlog.application.model_tools.arguments import ToolArguments
    from agentlog.application.sessions import Sessions

log = logging.getLogger(__name__)

FAILED: Final = (
    "The session history could not be read for this request. "
    "The error was logged; try again later or with other arguments."
)
"""The one model-safe message for every failure that is not the model's doing."""
SEARCH_OFF: Final = "Content search is disabled on this store."


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool call returns to the model: text, and whether it is an error."""

    text: str
    is_error: bool = False


class ModelTools:
    """The read-only tools of docs/tools.md, bound to ``caller_id``'s scope.

    The caller is resolved here: an unknown caller raises
    ``SESSION_QUERY_UNKNOWN_CALLER`` (fail closed). ``max_search_results``
    caps what one search call returns.
    """

    definitions = TOOLS

    def __init__(
        self,
        app: Sessions,
        caller_id: str,
        *,
        max_search_results: int = DEFAULT_MAX_SEARCH_RESULTS,
    ) -> None:
        if type(max_search_results) is not int or max_search_results < 1:
            msg = "max_search_results must be a positive integer"
            raise ModelToolError(msg)
        self.max_search_results = max_search_results
        self.caller = Caller.resolve(app, caller_id)
        self._app = app

    def call(self, name: object, arguments: object = None) -> ToolResult:
        """Run the tool ``name`` with ``arguments`` (a mapping, or its JSON text)."""
        tool = tool_named(name)
        if tool is None:
            known = ", ".join(tool.name for tool in TOOLS)
            shown = line(name) if isinstance(name, str) else type(name).__name__
            return ToolResult(f'unknown tool "{shown}"; the tools are {known}', True)
        args: ToolArguments | None = None
        try:
            args = parse_arguments(
                tool.name, tool.arguments, _decoded(tool.name, arguments)
            )
            self._check_caller()
            text = OPERATIONS[tool.name](self.caller, args, self.max_search_results)
        except ModelToolError as error:
            return ToolResult(str(error), is_error=True)
        except SessionQueryError as error:
            return ToolResult(self._query_failure(tool.name, args, error), True)
        except Exception as error:
            self._log(tool.name, error)
            return ToolResult(FAILED, is_error=True)
        return ToolResult(text)

    def _check_caller(self) -> None:
        """Fail closed once the caller is erased: its scope no longer exists.

        The scope comes from the caller's immutable header, so erasure is the only
        way it can end; one indexed read per call checks it.
        """
        if self._app.is_erased(self.caller.id):
            unknown = SessionQueryError.unknown_caller(line(self.caller.id))
            raise ModelToolError(str(unknown))

    def _query_failure(
        self, name: str, args: ToolArguments | None, error: SessionQueryError
    ) -> str:
        """Not-found in the words of the request, never of the error: a session
        outside the scope and one that never existed read the same."""
        if isinstance(args, SessionTargetArguments | EventSearchArguments):
            session_id = line(target_of(self.caller, args))
            if error.code == SessionQueryError.SESSION_NOT_FOUND:
                return f'session "{session_id}" not found'
            if error.code == SessionQueryError.EVENT_NOT_FOUND:
                seq = getattr(args, "seq", None)
                return f'session "{session_id}" has no event at seq {seq}'
        if error.code == SessionQueryError.SEARCH_DISABLED:
            return SEARCH_OFF
        self._log(name, error)
        return FAILED

    def _log(self, name: str, error: BaseException) -> None:
        log.warning(
            "model tool %s failed for caller %r: %r",
            name,
            self.caller.id,
            error,
            exc_info=error,
        )


def _decoded(name: str, arguments: object) -> object:
    """Arguments as the model sent them: a mapping, or a JSON object's text."""
    if not isinstance(arguments, str | bytes):
        return arguments
    try:
        return loads(arguments)
    except ValueError:
        msg = f"invalid arguments for {name}: not valid JSON"
        raise ModelToolError(msg) from None
