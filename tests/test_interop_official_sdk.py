"""answerback and the official MCP Python SDK (``mcp`` 2.3.0) talking over stdio, legacy era.

Both directions: the SDK's client calls answerback's Library server and answers its
elicitation; answerback's client calls an SDK server (``tests/interop/official_server.py``)
whose tools elicit, sample, list roots and log, answered by answerback callbacks.
"""

from __future__ import annotations

import sys

import anyio
import pytest
from pydantic import FileUrl
from support import LIBRARY_SERVER, PATIENCE_SECONDS, REPO, SERVERS, TESTS

from answerback import Client, MCPError, StdioServer
from answerback.client import ClientRequestContext
from answerback.types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    ListRootsResult,
    LoggingMessageNotificationParams,
    Root,
    TextContent,
)

pytestmark = [pytest.mark.anyio, pytest.mark.interop]

OFFICIAL_CLIENT = TESTS / "interop" / "official_client.py"
OFFICIAL_SERVER = TESTS / "interop" / "official_server.py"


async def test_official_client_gets_a_card_from_answerbacks_library_server() -> None:
    """The SDK's client, answering the elicitation itself, prints the seed's line."""
    command = [
        sys.executable,
        str(OFFICIAL_CLIENT),
        "legacy",
        f"stdio:{sys.executable} {LIBRARY_SERVER}",
    ]
    with anyio.fail_after(PATIENCE_SECONDS * 3):
        done = await anyio.run_process(command, cwd=REPO, check=False)
    stdout, stderr = done.stdout.decode(), done.stderr.decode()
    assert done.returncode == 0, stderr
    assert stdout == "Card issued to Ada Lovelace.\n"


@pytest.mark.parametrize(
    ("tool", "first_text"),
    [
        ("stations", '[{"city": "Oslo", "celsius": 14}, {"city": "Bergen", "celsius": 11}]'),
        ("regions", '{"name": "Norway", "parts": [{"name": "Vestland", "parts": []}]}'),
        ("timetable", '{"1": {"train": "Dovrebanen", "leaves": "2026-12-06T09:02:00"}}'),
    ],
)
async def test_official_client_applies_the_output_schemas_of_answerbacks_models(
    tool: str, first_text: str
) -> None:
    """The SDK checks structured content against the listed output schema and refuses a
    schema whose ``$ref`` points nowhere: ``-> list[Model]`` once failed every call."""
    server = SERVERS / "structured_server.py"
    command = [
        sys.executable,
        str(OFFICIAL_CLIENT),
        "legacy",
        f"stdio:{sys.executable} {server}",
        "--tool",
        tool,
    ]
    with anyio.fail_after(PATIENCE_SECONDS * 3):
        done = await anyio.run_process(command, cwd=REPO, check=False)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode() == f"{first_text}\n"


class Answers:
    """answerback callbacks for the official server's questions, recording what they saw."""

    def __init__(self) -> None:
        self.elicitations: list[ElicitRequestParams] = []
        self.samplings: list[CreateMessageRequestParams] = []
        self.logs: list[LoggingMessageNotificationParams] = []

    async def elicit(
        self, context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult:
        self.elicitations.append(params)
        return ElicitResult(action="accept", content={"name": "Ada Lovelace"})

    async def sample(
        self, context: ClientRequestContext, params: CreateMessageRequestParams
    ) -> CreateMessageResult:
        self.samplings.append(params)
        return CreateMessageResult(
            role="assistant", content=TextContent(text="The answer is 42."), model="my-llm"
        )

    async def roots(self, context: ClientRequestContext) -> ListRootsResult:
        root = Root(uri=FileUrl("file:///home/ada/notebooks"), name="notebooks")
        return ListRootsResult(roots=[root])

    async def log(self, params: LoggingMessageNotificationParams) -> None:
        self.logs.append(params)


async def test_answerback_client_answers_an_official_server() -> None:
    """Elicitation, sampling, roots and logging from an SDK server, answered by callbacks."""
    answers = Answers()
    server = StdioServer(sys.executable, [str(OFFICIAL_SERVER)], cwd=REPO)
    async with Client(
        server,
        mode="legacy",
        elicitation_callback=answers.elicit,
        sampling_callback=answers.sample,
        list_roots_callback=answers.roots,
        logging_callback=answers.log,
    ) as client:
        assert client.protocol_version == "2025-11-25"
        assert client.server_info.name == "official-peer"
        name = await client.call_tool("ask_name")
        model = await client.call_tool("ask_model")
        roots = await client.call_tool("list_my_roots")
        logged = await client.call_tool("log_things")

    assert name.content == [TextContent(text="Hello, Ada Lovelace.")]
    [elicitation] = answers.elicitations
    assert elicitation.mode == "form"
    assert elicitation.message == "What is your name?"
    assert elicitation.requested_schema == {
        "properties": {"name": {"title": "Name", "type": "string"}},
        "required": ["name"],
        "title": "Person",
        "type": "object",
    }

    assert model.content == [TextContent(text="The answer is 42.")]
    [sampling] = answers.samplings
    assert sampling.max_tokens == 50
    assert sampling.messages[0].role == "user"
    assert sampling.messages[0].content == TextContent(text="What is 6 x 7?")

    assert roots.structured_content == {"result": ["file:///home/ada/notebooks"]}
    assert not roots.is_error

    assert logged.content == [TextContent(text="logged")]
    assert [(log.level, log.data) for log in answers.logs] == [
        ("info", "starting the things"),
        ("warning", "the things are getting loud"),
    ]


async def test_answerbacks_refusal_reaches_through_an_official_server() -> None:
    """No callback: the SDK server asks anyway, answerback refuses, the call fails clearly."""
    server = StdioServer(sys.executable, [str(OFFICIAL_SERVER)], cwd=REPO)
    async with Client(server, mode="legacy") as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("ask_name")
        assert caught.value.message == "Elicitation not supported"
        # The connection is still good for calls that need nothing from the client.
        logged = await client.call_tool("log_things")
    assert logged.content == [TextContent(text="logged")]
