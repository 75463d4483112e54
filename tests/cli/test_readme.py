"""The README a newcomer follows: its Python example runs, its command table is whole."""

from __future__ import annotations

import re

import click

from agentlog.infrastructure.cli import cli
from tests.cli.conftest import REPO_ROOT

README = (REPO_ROOT / "README.md").read_text()


def test_the_python_example_runs_in_ten_lines() -> None:
    (code,) = re.findall(r"```python\n(.*?)```", README, re.DOTALL)
    lines = [line for line in code.splitlines() if line.strip()]
    assert len(lines) <= 10
    namespace: dict[str, object] = {}
    exec(compile(code, "README.md", "exec"), namespace)
    app = namespace["app"]
    messages = app.messages("s1")
    assert [message["role"] for message in messages] == [
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    assert messages[0]["content"] == [{"type": "text", "text": "Is it up?"}]
    (call,) = messages[1]["content"]
    assert (call["type"], call["name"]) == ("tool-call", "http_get")
    (result,) = messages[2]["content"]
    assert (result["toolCallId"], result["isError"]) == (call["id"], False)
    assert result["content"] == [{"type": "text", "text": "200 OK"}]
    assert messages[3]["content"] == [
        {"type": "reasoning", "text": "The GET succeeded."},
        {"type": "text", "text": "Yes, it answers 200."},
    ]
    (record,) = namespace["SessionQuery"](app).list_sessions()
    assert record.header["id"] == "s1"
    assert record.header["cwd"] == "/srv/app"


def test_the_command_table_lists_every_command() -> None:
    commands = set(cli.list_commands(click.Context(cli)))
    documented = set(re.findall(r"^\| `agentlog ([a-z-]+)", README, re.MULTILINE))
    assert documented == commands


def test_the_fresh_machine_commands_are_there() -> None:
    assert 'pip install -e ".[dev]"\nagentlog demo' in README
    assert 'pip install -e ".[dev]"\npython -m pytest -n 2 --full' in README
    assert "\npython -m pytest -n 2 --full\n" in (REPO_ROOT / ".ci" / "run").read_text()
    assert "python -m bench.run" in README
