"""A store opened without its encryption settings cannot read sealed rows; its
views must not skip them for good.

They did: one ``agentlog ls`` without ``AGENTLOG_ENCRYPTION`` logged "views skip
undecodable notification N" for every row and moved the listing past them, so
with the right settings again ``ls`` said "no sessions yet" and ``show`` "not
found" (docs/encryption.md#sessions-stored-before-encryption-was-on).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from agentlog import SessionQuery, SessionQueryError
from agentlog.application import Sessions
from tests.crypto.test_round_trip import write

if TYPE_CHECKING:
    from collections.abc import Callable


def test_a_read_without_the_settings_fails_and_the_views_keep_the_rows(
    open_app: Callable[..., Sessions], plain_env: dict[str, str]
) -> None:
    write(open_app(), "s1")
    plain = Sessions(env=plain_env)
    try:
        with pytest.raises(SessionQueryError, match='session "s1" is encrypted'):
            SessionQuery(plain).list_summaries()
    finally:
        plain.close()
    reader = SessionQuery(open_app())
    assert [item.id for item in reader.list_summaries().items] == ["s1"]
    assert [hit.session_id for hit in reader.search_sessions("again").items] == ["s1"]
