"""View recorders per backend (POPO, SQLite, PostgreSQL) for the read models.

Each module exports ``VIEW_CLASSES``;
``agentlog.application.projections.view_classes_for``
picks the module from the application's infrastructure factory. The helpers here
turn row values into column values and back, the same way on every SQL backend.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from agentlog.domain.json import dumps, loads

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def encode_column(kind: str, value: Any, *, bounded_ints: bool) -> Any:
    """A row value as a database parameter (``None`` is SQL NULL).

    JSON goes in as bytes; a number column only orders rows (the exact value
    lives in the JSON), so SQLite gets a float for an int beyond 64 bits.
    """
    if value is None:
        return None
    if kind == "json":
        return dumps(value)
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
    if value is None:
        return None
    if kind == "json":
        return loads(bytes(value))
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    return value
