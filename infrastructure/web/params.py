"""Request parameters: parsed strictly, a bad one is a 400 with one line."""

from __future__ import annotations

import datetime
from typing import TYPE_CHECKING

from agentlog.application.browse import ListingFilter

if TYPE_CHECKING:
    from collections.abc import Mapping

    from starlette.requests import Request

DAY_MS = 86_400_000


class ParameterError(ValueError):
    """A request parameter out of its range (answered with 400)."""


def integer(
    params: Mapping[str, object], name: str, default: int, low: int, high: int
) -> int:
    raw = params.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(str(raw), 10)
    except ValueError:
        raise ParameterError(f"{name} must be an integer") from None
    if not low <= value <= high:
        raise ParameterError(f"{name} must be between {low} and {high}")
    return value


def optional_integer(params: Mapping[str, object], name: str) -> int | None:
    if params.get(name) in (None, ""):
        return None
    return integer(params, name, 0, 0, 2**63 - 1)


def session_id(request: Request) -> str:
    return str(request.path_params["id"])


def types_param(raw: str | None) -> frozenset[str] | None:
    if not raw:
        return None
    kinds = frozenset(part.strip() for part in raw.split(",") if part.strip())
    return kinds or None


def _moment(raw: str | None, name: str, *, end: bool) -> int | None:
    """``YYYY-MM-DD`` (a whole UTC day) or epoch ms; ``end``: the bound after it."""
    if not raw:
        return None
    if raw.isdigit():
        return int(raw) + (1 if end else 0)
    try:
        day = datetime.date.fromisoformat(raw)
    except ValueError:
        raise ParameterError(f"{name} must be YYYY-MM-DD or epoch ms") from None
    start = datetime.datetime(day.year, day.month, day.day, tzinfo=datetime.UTC)
    ms = int(start.timestamp() * 1000)
    return ms + DAY_MS if end else ms


def listing_filter(params: Mapping[str, str]) -> ListingFilter:
    return ListingFilter(
        cwd=params.get("cwd") or None,
        owner=params.get("owner") or None,
        created_from=_moment(params.get("from"), "from", end=False),
        created_before=_moment(params.get("to"), "to", end=True),
    )


__all__ = [
    "ParameterError",
    "integer",
    "listing_filter",
    "optional_integer",
    "session_id",
    "types_param",
]
