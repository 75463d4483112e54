"""Every failure at open is typed (issue 21): ``Sessions(store=pg)`` while the
server's backends are being killed (``pg_terminate_backend``) either opens or
raises ``StoreUnavailableError``; before, ``psycopg``'s ``AdminShutdown`` and
``OperationalError`` crossed the API (330 of 1,019 opens)."""

from __future__ import annotations

import collections
import logging
import random
import threading
import time

import psycopg
import pytest

from agentlog.application import Sessions
from agentlog.domain.errors import AgentlogError, StoreUnavailableError
from tests.conftest import PG_URL, pg_params, postgres_schema

NAME = "agentlog_open_under_kill"


@pytest.mark.slow
def test_opens_under_killed_backends_fail_only_typed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.ERROR)
    for schema in postgres_schema("k_"):
        url = f"{PG_URL}?schema={schema}&application_name={NAME}"
        Sessions(store=url).close()  # the tables exist; the opens race the kills
        stop = threading.Event()

        def kill(stop: threading.Event = stop) -> None:
            with psycopg.connect(**{**pg_params(), "autocommit": True}) as db:
                while not stop.is_set():
                    db.execute(
                        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                        "WHERE application_name = %s",
                        (NAME,),
                    )
                    time.sleep(random.uniform(0.0005, 0.01))

        killer = threading.Thread(target=kill)
        killer.start()
        outcomes: collections.Counter[str] = collections.Counter()
        try:
            for _ in range(150):
                try:
                    Sessions(store=url).close()
                    outcomes["opened"] += 1
                except StoreUnavailableError:
                    outcomes["typed"] += 1
                except AgentlogError as error:  # pragma: no cover - shown
                    outcomes[type(error).__name__] += 1
                except Exception as error:
                    outcomes[f"untyped {type(error).__name__}"] += 1
        finally:
            stop.set()
            killer.join()
        assert set(outcomes) <= {"opened", "typed"}, outcomes
