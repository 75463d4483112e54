"""The model tools run on POPO, SQLite and PostgreSQL (the MCP end-to-end tests
start the server on SQLite)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from agentlog.application import Sessions
from agentlog.application.model_tools import ModelTools
from tests.tools.support import Corpus, build


@pytest.fixture(params=["popo", "sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def corpus(app: Sessions) -> Corpus:
    return build(app)


@pytest.fixture
def tools(app: Sessions, corpus: Corpus) -> ModelTools:
    return ModelTools(app, corpus.caller)


@pytest.fixture
def call(tools: ModelTools) -> Callable[..., str]:
    """Call a tool that must succeed; its text."""

    def run(name: str, **arguments: object) -> str:
        result = tools.call(name, arguments)
        assert not result.is_error, result.text
        return result.text

    return run
