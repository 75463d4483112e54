"""The fork boundary rules of docs/fork.md#fork, as a pure function.

Which session may be forked (live, found) is the application's business; where it may
be cut is a domain rule: the boundary must be an existing ``turn/end``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agentlog.domain.errors import SessionForkError
from agentlog.domain.json import js_number

if TYPE_CHECKING:
    from collections.abc import Callable

MAX_SAFE_INTEGER = 2**53 - 1


def resolve_fork_boundary(
    session_id: str,
    boundary: object,
    length: int,
    type_at: Callable[[int], str],
) -> int | None:
    """The inclusive seq to copy up to, or ``None`` for an empty source.

    ``length`` is the number of events in the source; ``type_at(seq)`` returns the
    type of the event at ``seq``. Raises :class:`SessionForkError` with the spec's
    code and text.
    """
    if boundary is None:
        if length == 0:
            return None
        resolved = length - 1
    else:
        resolved = _safe_non_negative_int(session_id, boundary)
        if resolved >= length:
            last = "none" if length == 0 else str(length - 1)
            raise SessionForkError(
                f'fork boundary {resolved} does not exist in session "{session_id}" '
                f"(last seq: {last})",
                SessionForkError.INVALID_BOUNDARY,
            )
    event_type = type_at(resolved)
    if event_type != "turn/end":
        raise SessionForkError(
            f'fork boundary {resolved} in session "{session_id}" must be turn/end, '
            f"got {event_type}",
            SessionForkError.OPEN_TURN,
        )
    return resolved


def _safe_non_negative_int(session_id: str, boundary: object) -> int:
    ok = False
    value = 0
    if type(boundary) is int:
        ok, value = True, boundary
    elif type(boundary) is float and boundary.is_integer():
        ok, value = True, int(boundary)
    if not ok or value < 0 or value > MAX_SAFE_INTEGER:
        rendered = (
            js_number(boundary)
            if isinstance(boundary, (int, float))
            else repr(boundary)
        )
        raise SessionForkError(
            f'fork boundary for session "{session_id}" must be a non-negative safe '
            f"integer, got {rendered}",
            SessionForkError.INVALID_BOUNDARY,
        )
    return value
