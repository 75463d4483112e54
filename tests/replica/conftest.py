"""Fixtures for the replica suite: one primary and hot standby per test process.

The server binaries come with the installed PostgreSQL. Without them the suite
is skipped, except with ``CI=true``, where it fails, as PostgreSQL does.
"""

from __future__ import annotations

import os
import uuid
from typing import TYPE_CHECKING

import pytest

from tests.replica import standby

if TYPE_CHECKING:
    from collections.abc import Iterator


@pytest.fixture(scope="session")
def pair() -> Iterator[standby.Pair]:
    """This process's primary and standby."""
    if standby.binaries() is None:
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("the PostgreSQL server binaries (initdb) are not installed")
        pytest.skip("the PostgreSQL server binaries (initdb) are not installed")
    with standby.running() as running:
        yield running


@pytest.fixture
def schema() -> str:
    """A fresh schema name: each test stores in its own (the clusters are
    thrown away whole, so nothing is dropped)."""
    return f"r_{uuid.uuid4().hex[:12]}"
