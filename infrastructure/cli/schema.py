"""The ``schema`` command: the event vocabulary reference, from the payload models.

It prints what :mod:`~agentlog.infrastructure.schema_doc` generates (the same text as
``docs/vocabulary.schema.json`` and ``docs/vocabulary.md``), so the reference a user
reads always matches the installed version. It opens no store.
"""

from __future__ import annotations

import json
import sys

import click

from agentlog.infrastructure.cli.program import cli
from agentlog.infrastructure.schema_doc import (
    vocabulary_json_schema,
    vocabulary_markdown,
)


@cli.command()
@click.option(
    "--markdown",
    is_flag=True,
    help="The Markdown reference: a table per type and value.",
)
def schema(markdown: bool) -> None:
    """Print the event vocabulary: a JSON Schema (2020-12) of one log line."""
    if markdown:
        text = vocabulary_markdown()
    else:
        text = json.dumps(vocabulary_json_schema(), indent=2, ensure_ascii=False) + "\n"
    sys.stdout.flush()
    sys.stdout.buffer.write(text.encode("utf-8"))
    sys.stdout.buffer.flush()
