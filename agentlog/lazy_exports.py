"""A package's public names, each imported from its module on first use (PEP 562).

The four public packages (``agentlog`` and its ``domain``, ``application`` and
``infrastructure``) use it, so importing one costs nothing until a name is read,
and a command that needs only the errors does not pay for the payload models.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping


def lazy_exports(
    package: str, homes: Mapping[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``, whose public names live
    in the modules ``homes`` maps them to; a name read once is kept in
    ``namespace`` (the package's globals), so later reads skip this."""

    def get(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            msg = f"module {package!r} has no attribute {name!r}"
            raise AttributeError(msg)
        value = getattr(import_module(home), name)
        namespace[name] = value
        return value

    def names() -> list[str]:
        return sorted({*namespace, *homes})

    return get, names
