"""Every item kind the OpenAI Agents SDK can store round-trips through AgentlogSession.

The model's side is built from the ``openai`` package's own output types and turned
into input items by the SDK's own ``ModelResponse.to_input_items`` (what the runner
saves); the caller's and the tools' side are the SDK's input item types. Every item
is checked against ``TResponseInputItem`` first, and the kinds covered are checked
against both unions, so an SDK release that adds a kind fails here until it is
covered. Side by side with ``SQLiteSession``: the same items back, whole and by
``limit``, after reopening the store, and popped one by one to the empty session;
then random batches of these kinds, in any order, against an in-memory one.
"""

from __future__ import annotations

import asyncio
import copy
import typing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

agents = pytest.importorskip("agents")

from agents import SQLiteSession  # noqa: E402
from agents.items import ModelResponse, TResponseInputItem  # noqa: E402
from agents.usage import Usage  # noqa: E402
from openai.types import responses as types  # noqa: E402
from openai.types.responses import response_output_item as output_item  # noqa: E402
from pydantic import TypeAdapter  # noqa: E402

from agentlog import Sessions  # noqa: E402
from agentlog.integrations.openai_agents import AgentlogSession  # noqa: E402
from tests.invariant_checker import InvariantChecker  # noqa: E402

INPUT_ITEM: TypeAdapter[Any] = TypeAdapter(TResponseInputItem)
FUNCTION = {"type": "function", "name": "f", "parameters": {}, "strict": True}


def response(*outputs: Any) -> list[Any]:
    """One model response's items, as the runner saves them."""
    usage = Usage(requests=1, input_tokens=1, output_tokens=1, total_tokens=2)
    return ModelResponse(
        output=list(outputs), usage=usage, response_id=None
    ).to_input_items()


def message(text: str, item_id: str) -> types.ResponseOutputMessage:
    return types.ResponseOutputMessage.model_validate(
        {
            "id": item_id,
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [
                {"type": "output_text", "text": text, "annotations": []},
                {"type": "refusal", "refusal": "not that"},
            ],
        }
    )


def runs() -> list[list[Any]]:
    """The add_items batches of a few runs using every item kind."""
    return [
        [  # a run's input: every message shape and role
            {"role": "developer", "content": "Be careful."},
            {"role": "system", "content": [{"type": "input_text", "text": "Sys."}]},
            {
                "type": "message",
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "Look at these"},
                    {
                        "type": "input_image",
                        "image_url": "https://x/a.png",
                        "detail": "low",
                    },
                    {"type": "input_image", "file_id": "file_img", "detail": "auto"},
                    {"type": "input_file", "file_id": "file_1", "filename": "a.pdf"},
                    {
                        "type": "input_file",
                        "file_data": "data:application/pdf;base64,AA==",
                    },
                ],
            },
            {"type": "item_reference", "id": "msg_old"},
            {"type": "compaction_trigger"},
            {"type": "configuration_update", "reasoning": {"effort": "low"}},
        ],
        response(
            types.ResponseReasoningItem.model_validate(
                {
                    "id": "rs_1",
                    "type": "reasoning",
                    "summary": [{"type": "summary_text", "text": "Plan."}],
                    "content": [{"type": "reasoning_text", "text": "Raw."}],
                    "encrypted_content": "ENC",
                }
            ),
            types.ResponseFileSearchToolCall.model_validate(
                {
                    "id": "fs_1",
                    "type": "file_search_call",
                    "status": "completed",
                    "queries": ["cats"],
                    "results": [
                        {
                            "file_id": "f",
                            "text": "cat",
                            "score": 0.5,
                            "attributes": {"k": 1},
                        }
                    ],
                }
            ),
            types.ResponseFunctionWebSearch.model_validate(
                {
                    "id": "ws_1",
                    "type": "web_search_call",
                    "status": "completed",
                    "action": {
                        "type": "search",
                        "query": "cats",
                        "sources": [{"type": "url", "url": "https://c"}],
                    },
                }
            ),
            types.ResponseCodeInterpreterToolCall.model_validate(
                {
                    "id": "ci_1",
                    "type": "code_interpreter_call",
                    "status": "completed",
                    "container_id": "cnt",
                    "code": "print(1)",
                    "outputs": [
                        {"type": "logs", "logs": "1"},
                        {"type": "image", "url": "https://i"},
                    ],
                }
            ),
            output_item.ImageGenerationCall.model_validate(
                {
                    "id": "ig_1",
                    "type": "image_generation_call",
                    "status": "completed",
                    "result": "iVBORw0KGgo=",
                }
            ),
            output_item.McpListTools.model_validate(
                {
                    "id": "ml_1",
                    "type": "mcp_list_tools",
                    "server_label": "srv",
                    "tools": [
                        {
                            "name": "t",
                            "input_schema": {"type": "object"},
                            "description": "T",
                        }
                    ],
                }
            ),
            output_item.McpCall.model_validate(
                {
                    "id": "mcp_1",
                    "type": "mcp_call",
                    "server_label": "srv",
                    "name": "t",
                    "arguments": "{}",
                    "output": "ok",
                    "status": "completed",
                }
            ),
            output_item.McpApprovalRequest.model_validate(
                {
                    "id": "mar_1",
                    "type": "mcp_approval_request",
                    "server_label": "srv",
                    "name": "t",
                    "arguments": "{}",
                }
            ),
            types.ResponseToolSearchCall.model_validate(
                {
                    "id": "ts_1",
                    "type": "tool_search_call",
                    "status": "completed",
                    "execution": "server",
                    "arguments": {"query": "weather"},
                }
            ),
            types.ResponseToolSearchOutputItem.model_validate(
                {
                    "id": "tso_1",
                    "type": "tool_search_output",
                    "status": "completed",
                    "execution": "server",
                    "tools": [FUNCTION],
                }
            ),
            output_item.Program.model_validate(
                {
                    "id": "pg_1",
                    "type": "program",
                    "call_id": "c9",
                    "code": "x()",
                    "fingerprint": "fp",
                }
            ),
            output_item.ProgramOutput.model_validate(
                {
                    "id": "po_1",
                    "type": "program_output",
                    "call_id": "c9",
                    "result": "7",
                    "status": "completed",
                }
            ),
            output_item.AdditionalTools.model_validate(
                {
                    "id": "at_1",
                    "type": "additional_tools",
                    "role": "developer",
                    "tools": [FUNCTION],
                }
            ),
            types.ResponseCompactionItem.model_validate(
                {"id": "cmp_1", "type": "compaction", "encrypted_content": "ENC2"}
            ),
            message("Working on it.", "msg_1"),
        ),
        [  # a run's input between runs: an approval
            {
                "type": "mcp_approval_response",
                "approval_request_id": "mar_1",
                "approve": True,
            },
        ],
        [  # every client-executed call and its output, in one step
            *response(
                types.ResponseFunctionToolCall.model_validate(
                    {
                        "id": "fc_1",
                        "type": "function_call",
                        "call_id": "c1",
                        "name": "f",
                        "arguments": "{}",
                    }
                ),
                types.ResponseCustomToolCall.model_validate(
                    {
                        "id": "ct_1",
                        "type": "custom_tool_call",
                        "call_id": "c2",
                        "name": "g",
                        "input": "raw text",
                    }
                ),
                types.ResponseComputerToolCall.model_validate(
                    {
                        "id": "cu_1",
                        "type": "computer_call",
                        "call_id": "c3",
                        "status": "completed",
                        "pending_safety_checks": [
                            {"id": "sc", "code": "x", "message": "careful"}
                        ],
                        "action": {"type": "click", "button": "left", "x": 1, "y": 2},
                    }
                ),
                output_item.LocalShellCall.model_validate(
                    {
                        "id": "ls_1",
                        "type": "local_shell_call",
                        "call_id": "c4",
                        "status": "completed",
                        "action": {"type": "exec", "command": ["ls"], "env": {}},
                    }
                ),
                types.ResponseFunctionShellToolCall.model_validate(
                    {
                        "id": "sh_1",
                        "type": "shell_call",
                        "call_id": "c5",
                        "status": "completed",
                        "action": {
                            "commands": ["ls"],
                            "timeout_ms": 1000,
                            "max_output_length": 100,
                        },
                        "created_by": "server",
                    }
                ),
                types.ResponseApplyPatchToolCall.model_validate(
                    {
                        "id": "ap_1",
                        "type": "apply_patch_call",
                        "call_id": "c6",
                        "status": "completed",
                        "operation": {
                            "type": "create_file",
                            "path": "a.txt",
                            "diff": "+a",
                        },
                    }
                ),
                types.ResponseToolSearchCall.model_validate(
                    {
                        "id": "ts_2",
                        "type": "tool_search_call",
                        "status": "completed",
                        "execution": "client",
                        "call_id": "c7",
                        "arguments": {"query": "maps"},
                    }
                ),
            ),
            {
                "type": "function_call_output",
                "call_id": "c1",
                "output": [
                    {"type": "input_text", "text": "done"},
                    {"type": "input_image", "image_url": "https://x/b.png"},
                ],
            },
            {
                "type": "custom_tool_call_output",
                "call_id": "c2",
                "output": "custom done",
            },
            {
                "type": "computer_call_output",
                "call_id": "c3",
                "output": {
                    "type": "computer_screenshot",
                    "image_url": "https://x/s.png",
                },
                "acknowledged_safety_checks": [
                    {"id": "sc", "code": "x", "message": "careful"}
                ],
            },
            {"type": "local_shell_call_output", "id": "ls_1", "output": "a.txt"},
            {
                "type": "shell_call_output",
                "call_id": "c5",
                "output": [
                    {
                        "stdout": "a.txt",
                        "stderr": "",
                        "outcome": {"type": "exit", "exit_code": 0},
                    }
                ],
            },
            {
                "type": "apply_patch_call_output",
                "call_id": "c6",
                "status": "completed",
                "output": "ok",
            },
            {
                "type": "tool_search_output",
                "execution": "client",
                "call_id": "c7",
                "status": "completed",
                "tools": [FUNCTION],
            },
        ],
        response(message("All done.", "msg_2")),
        [{"role": "user", "content": "Thanks"}],
        [
            {
                "type": "message",
                "role": "assistant",
                "content": "You're welcome",
                "id": "msg_3",
                "status": "completed",
            }
        ],
    ]


def kinds(item: Any) -> str:
    kind = item.get("type", "message")
    return str(kind)


def union_kinds(union: Any) -> set[str]:
    """The ``type`` literals of a union's members (pydantic models or TypedDicts)."""
    found: set[str] = set()
    for member in typing.get_args(union):
        if typing.get_origin(member) is typing.Annotated:
            found |= union_kinds(typing.get_args(member)[0])
            continue
        fields = getattr(member, "model_fields", None)
        if fields is not None:
            annotation = fields["type"].annotation
        else:
            annotation = typing.get_type_hints(member)["type"]
        for arg in typing.get_args(annotation):
            if isinstance(arg, str):
                found.add(arg)
    return found


def test_every_item_kind_is_covered() -> None:
    items = [item for batch in runs() for item in batch]
    for item in items:
        INPUT_ITEM.validate_python(item)  # each is an item the SDK accepts
    covered = {kinds(item) for item in items}
    input_union = (
        typing.get_args(TResponseInputItem)[0]
        if typing.get_origin(TResponseInputItem) is typing.Annotated
        else TResponseInputItem
    )
    output_union = typing.get_args(types.ResponseOutputItem)[0]
    missing = (union_kinds(input_union) | union_kinds(output_union)) - covered
    assert missing == set()


def test_every_item_kind_round_trips_like_sqlite_session(tmp_path: Path) -> None:
    async def main() -> None:
        reference = SQLiteSession("ref", str(tmp_path / "ref.db"))
        url = f"sqlite:///{tmp_path / 'agentlog.db'}"
        app = Sessions(store=url)
        ours = AgentlogSession("s", app)
        for batch in runs():
            await reference.add_items(batch)
            await ours.add_items(batch)
        expected = await reference.get_items()
        assert len(expected) == sum(len(batch) for batch in runs())
        assert await ours.get_items() == expected
        for limit in (1, 2, 3, 7, 15, 40):
            assert await ours.get_items(limit) == expected[-limit:]
        app.close()
        reopened = Sessions(store=url)
        ours = AgentlogSession("s", reopened)
        assert await ours.get_items() == expected
        checker = InvariantChecker()
        events = reopened.read_events("s")
        for event in events:
            checker.feed(event)
        assert checker.turns.open_turn is None
        steps = [e["data"]["turn"] for e in events if e["type"] == "step/start"]
        assert steps == [1, 2, 2, 3]  # each model response is one step
        messages = reopened.messages("s")
        assert messages[0]["content"][0]["text"] == "Be careful."
        while expected:
            popped = await ours.pop_item()
            assert popped == await reference.pop_item() == expected.pop()
            assert await ours.get_items() == expected
        assert await ours.pop_item() is None
        assert reopened.messages("s") == []
        reopened.close()
        reference.close()

    asyncio.run(main())


CATALOGUE = [item for batch in runs() for item in batch]


@st.composite
def sessions_of_batches(draw: st.DrawFn) -> list[list[Any]]:
    """Batches of items of any kind, in any order, some texts replaced."""
    batches = []
    for _ in range(draw(st.integers(1, 6))):
        batch = []
        for index in draw(st.lists(st.sampled_from(range(len(CATALOGUE))), max_size=5)):
            item = copy.deepcopy(CATALOGUE[index])
            if item.get("role") == "user" and draw(st.booleans()):
                item = {"role": "user", "content": draw(st.text(max_size=12))}
            batch.append(item)
        batches.append(batch)
    return batches


@settings(max_examples=40, deadline=None)
@given(batches=sessions_of_batches(), pops=st.integers(0, 4))
def test_random_item_sequences_round_trip(batches: list[list[Any]], pops: int) -> None:
    async def main() -> None:
        reference = SQLiteSession("ref")
        app = Sessions()
        ours = AgentlogSession("s", app)
        for batch in batches:
            await reference.add_items(batch)
            await ours.add_items(batch)
        expected = await reference.get_items()
        assert await ours.get_items() == expected
        for limit in (1, 3, 10):
            assert await ours.get_items(limit) == expected[-limit:]
        for _ in range(pops):
            assert await ours.pop_item() == await reference.pop_item()
        assert await ours.get_items() == await reference.get_items()
        if app.is_stored("s"):
            checker = InvariantChecker()
            for event in app.read_events("s"):
                checker.feed(event)
        app.close()
        reference.close()

    asyncio.run(main())
