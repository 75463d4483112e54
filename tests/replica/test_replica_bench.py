"""The replica-lag benchmark runs (tiny sizes) and measures every lag."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import pytest

from agentlog.application import Sessions
from bench import replica_lag
from bench.worker_lag import worker

if TYPE_CHECKING:
    from tests.replica.standby import Pair

pytestmark = pytest.mark.slow  # two PostgreSQL servers and a worker process


def test_the_replica_lag_figures_run(pair: Pair, schema: str) -> None:
    url = pair.primary(schema)
    Sessions(store=url).close()
    with worker(url) as running:
        lags = replica_lag.probe(pair, schema, 0.3, 0.05, running)
    assert set(lags) == {"events", "listing", "search"}
    assert all(
        values and all(math.isfinite(v) for v in values) for values in lags.values()
    )
    pair.wait_for_replay()
    times = replica_lag.reads(pair, schema, 2)
    assert {name.split()[-1] for name in times} == {"primary", "standby"}
