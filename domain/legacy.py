"""Refused shapes of older formats, checked on append, load and import.

See docs/persistence.md#format-versions-and-legacy-shapes. Apart from the
vocabulary (which re-exports them) because a stored log is checked with them on
every read, and the store's reader must not load the payload models to do so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Final

from agentlog.domain.errors import UnsupportedSessionFormatError

if TYPE_CHECKING:
    from collections.abc import Callable

    from agentlog.domain.json import Json


def _legacy_header_delta(event_type: str, data: Json) -> str | None:
    if event_type == "request/header-delta":
        return "request/header-delta event"
    return None


def _legacy_fallback_header(event_type: str, data: Json) -> str | None:
    if (
        event_type == "request/header"
        and type(data) is dict
        and data.get("reason") == "fallback"
    ):
        return 'request/header reason "fallback"'
    return None


LEGACY_SHAPES: Final[tuple[Callable[[str, Json], str | None], ...]] = (
    _legacy_header_delta,
    _legacy_fallback_header,
)
"""Refused legacy shapes: each names what it found, or None.

See docs/persistence.md#format-versions-and-legacy-shapes.
"""


def check_legacy(session_id: str, event_type: str, data: Json, seq: int) -> None:
    """Refuse an event in a shape of an older format, on append, load and import.

    Raises :class:`~agentlog.domain.errors.UnsupportedSessionFormatError`.
    """
    for shape in LEGACY_SHAPES:
        found = shape(event_type, data)
        if found is not None:
            msg = (
                f'session "{session_id}" contains unsupported legacy {found} '
                f"at seq {seq}"
            )
            raise UnsupportedSessionFormatError(msg)
