"""What the backends' view recorders share (each backend's are in its package,
``backends/<name>/views.py``, named by its descriptor). The helpers here turn
row values into column values and back, the same way on every SQL backend.

Text columns hold bytes, not SQL text (docs/strings.md). A session's strings are
whatever JavaScript can hold: lone surrogates cannot be encoded as UTF-8 (SQLite's
driver refuses them) and PostgreSQL ``text`` cannot hold NUL, so one such string in
one header or prompt used to fail the views' batch, and with it every read of every
session. UTF-8 with ``surrogatepass`` in a BLOB/``bytea`` column is lossless for
every Python string, NUL included, and it keeps code-point order (the order Python
sorts ids in), so keyset paging, ``=`` and the lineage joins work on the bytes
unchanged. JSON-escaped text would also be lossless, but its order differs from
code-point order for escaped characters.
"""

from __future__ import annotations

from decimal import Decimal
from typing import TYPE_CHECKING, Any

from eventsourcing.persistence import IntegrityError

from agentlog.application.projections import BatchTracking
from agentlog.domain.json import dumps, loads
from agentlog.infrastructure.eventsourcing_seam import insert_tracking

if TYPE_CHECKING:
    from collections.abc import Callable

    from eventsourcing.persistence import Tracking

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def write_tracked(
    recorder: Any, tracking: Tracking, write: Callable[[Any], None]
) -> bool:
    """Run ``write(cursor)`` and record ``tracking`` in one transaction of an SQL
    view recorder; False when that position was already recorded (by another
    writer: the view change is then dropped with the transaction).

    Tracking goes first: on PostgreSQL its row lock serialises concurrent writers
    of the view, and a position already recorded fails before any work is done.
    A :class:`BatchTracking` is recorded only from its ``after`` position: one
    that another writer moved meanwhile, but not as far, raises
    ``IntegrityError`` (the caller folds again from the position recorded).
    """
    try:
        with recorder.datastore.transaction(commit=True) as cursor:
            if isinstance(tracking, BatchTracking):
                recorder.advance_tracking(cursor, tracking, tracking.after)
            else:
                insert_tracking(recorder, cursor, tracking)
            write(cursor)
    except IntegrityError:
        if recorder.has_tracking_id(
            tracking.application_name, tracking.notification_id
        ):
            return False
        raise
    return True


def encode_text(value: str) -> bytes:
    """A string as column bytes: lossless for every code point, order-preserving."""
    return value.encode("utf-8", "surrogatepass")


def decode_text(value: bytes | bytearray | memoryview) -> str:
    return bytes(value).decode("utf-8", "surrogatepass")


def encode_column(kind: str, value: Any, *, bounded_ints: bool) -> Any:
    """A row value as a database parameter (``None`` is SQL NULL).

    JSON and text go in as bytes; a number column only orders rows (the exact
    value lives in the JSON), so SQLite gets a float for an int beyond 64 bits.
    A ``raw`` column (sealed content, a filter token) is bytes already.
    """
    if value is None or kind == "raw":
        return value
    if kind == "json":
        return dumps(value)
    if kind == "text":
        return encode_text(value)
    if (
        kind == "number"
        and bounded_ints
        and type(value) is int
        and not INT64_MIN <= value <= INT64_MAX
    ):
        return float(value)
    return value


def decode_column(kind: str, value: Any) -> Any:
    """A database value back as the row value."""
    return None if value is None else column_decoder(kind)(value)


def column_decoder(kind: str) -> Callable[[Any], Any]:
    """The function that turns a non-NULL value of a ``kind`` column back.

    Views look their decoders up once per table, not once per value: a listing
    page decodes some 500 values.
    """
    return _DECODERS.get(kind, _decode_number)


def _decode_raw(value: Any) -> bytes:
    return bytes(value)


def _decode_json(value: Any) -> Any:
    return loads(bytes(value))


def _decode_number(value: Any) -> Any:
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    return value


_DECODERS: dict[str, Callable[[Any], Any]] = {
    "json": _decode_json,
    "text": decode_text,
    "raw": _decode_raw,
}


def column_param(value: str | bytes) -> bytes:
    """A filter's value as a parameter: a string as column bytes, a token as is."""
    return value if isinstance(value, bytes) else encode_text(value)
