"""Pausing the cyclic garbage collector around bulk decoding and folding.

Decoding and folding thousands of rows allocates many small containers and no
cycles. In a process with a large heap (an agent framework imported, a long
session cached), the collector's passes that this allocation triggers cost
more than the work itself: a read of 1,000 messages measured 3 to 5 times
slower with it running (docs/agents-figures.md).
"""

from __future__ import annotations

import contextlib
import gc
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Disable the collector for the block, if it was enabled, and restore it.

    Another thread pausing at the same time is harmless: whichever block saw
    the collector enabled turns it back on, so it never stays off.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
