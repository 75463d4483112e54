"""Use cases over the session domain: the ``Sessions`` application and its reads."""

from __future__ import annotations

from application.sessions import SessionHandle, Sessions

__all__ = ["SessionHandle", "Sessions"]
