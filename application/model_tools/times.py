"""Times at the model tools' boundary: timezone-qualified ISO 8601 in and out.

The store keeps epoch milliseconds (docs/events.md); a model reads and writes
ISO 8601 with ``Z`` or a numeric offset, so a time never depends on the zone of the
machine that serves the tools.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Final

from agentlog.domain.json import js_number

EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
EXAMPLE: Final = "2026-05-01T12:00:00Z or 2026-05-01T14:00:00+02:00"


def parse_time(value: str) -> int | float:
    """Epoch milliseconds of an ISO 8601 time that names its offset.

    Exact to the microsecond: a whole millisecond is an ``int``, anything finer
    a ``float``. A ``ValueError`` says what is wrong, without the argument's name.
    """
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        msg = f"must be an ISO 8601 time such as {EXAMPLE}"
        raise ValueError(msg) from None
    if moment.utcoffset() is None:
        msg = f"must name its timezone (Z or an offset), e.g. {EXAMPLE}"
        raise ValueError(msg)
    micros = (moment - EPOCH) // timedelta(microseconds=1)
    whole, rest = divmod(micros, 1000)
    return whole if rest == 0 else micros / 1000


def format_time(ms: object) -> str:
    """Epoch milliseconds as ISO 8601 in UTC (``…T12:00:00.000Z``).

    A time that is not a number reads ``unknown time``; one beyond the calendar is
    shown as the number of milliseconds it is.
    """
    if type(ms) is not int and type(ms) is not float:
        return "unknown time"
    try:
        moment = EPOCH + timedelta(milliseconds=ms)
    except (OverflowError, ValueError):
        return f"{js_number(ms)} ms after 1970-01-01T00:00:00Z"
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
