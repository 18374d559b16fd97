"""Streamable HTTP interop with the official ``mcp`` SDK (2.3.0), both ways.

- The SDK's client (legacy mode) against answerback's servers: the seed scenario through
  ``tests/interop/official_client.py`` against the Library example served by
  ``mcp.run(transport="streamable-http")``, and the SDK's ``Client`` answering
  elicitation, sampling and roots requests and receiving log messages.
- answerback's client against the SDK's HTTP server (``tests/interop/official_server.py``)
  whose tools elicit, sample, list roots and log.
"""

from __future__ import annotations

import runpy
import sys
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from http_support import (
    INTEROP,
    LIBRARY_SERVER,
    PATIENCE_SECONDS,
    REPO,
    free_port,
    python_server,
    serve,
    serve_process,
)
from pydantic import FileUrl

from answerback import Client
from answerback.client import ClientRequestContext
from answerback.server import MCPServer
from answerback.transports.http import StreamableHTTPApp
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

SERVE_SCRIPT = REPO / "tests" / "http_support" / "serve_script.py"
OFFICIAL_CLIENT = INTEROP / "official_client.py"
OFFICIAL_SERVER = INTEROP / "official_server.py"
ASKING_SERVER = REPO / "tests" / "servers" / "asking_server.py"


# -- the official client against answerback --------------------------------------------


@pytest.fixture(scope="module")
def library_url() -> Iterator[str]:
    """examples/library_server.py's server, run by ``mcp.run(transport="streamable-http")``."""
    port = free_port()
    with serve_process(python_server(SERVE_SCRIPT, str(LIBRARY_SERVER), str(port)), port):
        yield f"http://127.0.0.1:{port}/mcp"


async def test_official_client_gets_the_seed_card(library_url: str) -> None:
    result = await anyio.run_process(
        [sys.executable, str(OFFICIAL_CLIENT), "legacy", library_url, "--timeout", "20"],
        check=False,
    )
    assert result.stderr.decode() == ""
    assert result.returncode == 0
    assert result.stdout.decode() == "Card issued to Ada Lovelace.\n"


async def test_official_client_sessions_are_ended(library_url: str) -> None:
    """Several SDK clients in a row, each ending its session; all get the card."""
    for _ in range(3):
        result = await anyio.run_process(
            [sys.executable, str(OFFICIAL_CLIENT), "legacy", library_url], check=False
        )
        assert result.returncode == 0, result.stderr.decode()
        assert result.stdout.decode() == "Card issued to Ada Lovelace.\n"


def asking_server() -> MCPServer:
    server = runpy.run_path(str(ASKING_SERVER), run_name="asking_server_for_http")["mcp"]
    assert isinstance(server, MCPServer)
    return server


async def test_official_client_answers_answerbacks_questions() -> None:
    """The SDK's Client (legacy, over HTTP) answers sampling, roots and elicitation
    requests from answerback's server and receives its log messages."""
    from mcp import Client as OfficialClient
    from mcp import types as sdk

    async def sample(context: Any, params: sdk.CreateMessageRequestParams) -> Any:
        return sdk.CreateMessageResult(
            role="assistant", content=sdk.TextContent(type="text", text="42."), model="sdk-llm"
        )

    async def roots(context: Any) -> Any:
        return sdk.ListRootsResult(roots=[sdk.Root(uri=FileUrl("file:///srv/data"), name="data")])

    async def elicit(context: Any, params: sdk.ElicitRequestParams) -> Any:
        return sdk.ElicitResult(action="accept", content={"name": "Grace Hopper"})

    logs: list[sdk.LoggingMessageNotificationParams] = []

    async def log(params: sdk.LoggingMessageNotificationParams) -> None:
        logs.append(params)

    app = StreamableHTTPApp(asking_server())
    async with serve(app) as running:
        client = OfficialClient(
            running.url,
            mode="legacy",
            sampling_callback=sample,
            list_roots_callback=roots,
            elicitation_callback=elicit,
            logging_callback=log,
        )
        with anyio.fail_after(PATIENCE_SECONDS):
            async with client:
                model = await client.call_tool("ask_model", {"question": "6 x 7?"})
                listed = await client.call_tool("list_my_roots")
                named = await client.call_tool("wait_for_name", {"tag": "sdk"})
                logged = await client.call_tool("log_every_level")
        assert await _settled(lambda: not app.sessions)
    assert [c.text for c in model.content if isinstance(c, sdk.TextContent)] == [
        "sdk-llm said: 42."
    ]
    assert listed.structured_content == {"result": ["data=file:///srv/data"]}
    assert [c.text for c in named.content if isinstance(c, sdk.TextContent)] == ["accept"]
    assert [c.text for c in logged.content if isinstance(c, sdk.TextContent)] == ["logged"]
    assert [(entry.level, entry.data) for entry in logs][-1] == (
        "emergency",
        "a emergency message",
    )
    assert all(entry.logger == "asking" for entry in logs)


async def _settled(condition: Any) -> bool:
    with anyio.move_on_after(10):
        while not condition():  # noqa: ASYNC110 (polls app state)
            await anyio.sleep(0.05)
        return True
    return False


# -- answerback's client against the official server -----------------------------------


@pytest.fixture(scope="module")
def official_url() -> Iterator[str]:
    port = free_port()
    with serve_process(python_server(OFFICIAL_SERVER, "--http", str(port)), port):
        yield f"http://127.0.0.1:{port}/mcp"


class Answers:
    """answerback callbacks that answer like a person, a model and a workspace would."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.logs: list[LoggingMessageNotificationParams] = []

    async def elicit(
        self, context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult:
        self.asked.append(f"elicit:{params.message}")
        return ElicitResult(action="accept", content={"name": "Ada Lovelace"})

    async def sample(
        self, context: ClientRequestContext, params: CreateMessageRequestParams
    ) -> CreateMessageResult:
        [message] = params.messages
        assert isinstance(message.content, TextContent)
        self.asked.append(f"sample:{message.content.text}")
        return CreateMessageResult(
            role="assistant", content=TextContent(text="42"), model="answerback-llm"
        )

    async def roots(self, context: ClientRequestContext) -> ListRootsResult:
        self.asked.append("roots")
        return ListRootsResult(
            roots=[
                Root(uri=FileUrl("file:///home/ada"), name="home"),
                Root(uri=FileUrl("file:///srv/engines"), name="engines"),
            ]
        )

    async def log(self, params: LoggingMessageNotificationParams) -> None:
        self.logs.append(params)

    def client(self, url: str) -> Client:
        return Client(
            url,
            mode="legacy",
            elicitation_callback=self.elicit,
            sampling_callback=self.sample,
            list_roots_callback=self.roots,
            logging_callback=self.log,
        )


def texts(result: Any) -> list[str]:
    assert result.is_error is not True, result
    return [item.text for item in result.content if isinstance(item, TextContent)]


async def test_answerback_client_against_the_official_server(official_url: str) -> None:
    answers = Answers()
    with anyio.fail_after(PATIENCE_SECONDS):
        async with answers.client(official_url) as client:
            assert client.server_info.name == "official-peer"
            assert texts(await client.call_tool("ask_name")) == ["Hello, Ada Lovelace."]
            assert texts(await client.call_tool("ask_model")) == ["42"]
            assert texts(await client.call_tool("list_my_roots")) == [
                "file:///home/ada",
                "file:///srv/engines",
            ]
            assert texts(await client.call_tool("log_things")) == ["logged"]
    assert answers.asked == ["elicit:What is your name?", "sample:What is 6 x 7?", "roots"]
    assert [(entry.level, entry.data) for entry in answers.logs] == [
        ("info", "starting the things"),
        ("warning", "the things are getting loud"),
    ]


async def test_official_resolver_tools_over_legacy_http(official_url: str) -> None:
    """The SDK's dual-era resolver tools send real mid-call requests on a legacy
    connection; answerback answers them through the same callbacks."""
    answers = Answers()
    with anyio.fail_after(PATIENCE_SECONDS):
        async with answers.client(official_url) as client:
            assert texts(await client.call_tool("ask_name_mrtr")) == ["Hello, Ada Lovelace."]
            assert texts(await client.call_tool("ask_model_mrtr")) == ["42"]
            assert texts(await client.call_tool("list_my_roots_mrtr")) == [
                "file:///home/ada",
                "file:///srv/engines",
            ]


async def test_concurrent_calls_against_the_official_server(official_url: str) -> None:
    """Several asking calls in flight at once on one connection, all answered."""
    answers = Answers()
    results: dict[str, list[str]] = {}
    with anyio.fail_after(PATIENCE_SECONDS):
        async with answers.client(official_url) as client:

            async def call(key: str, tool: str) -> None:
                results[key] = texts(await client.call_tool(tool))

            async with anyio.create_task_group() as tg:
                for index in range(3):
                    tg.start_soon(call, f"name{index}", "ask_name")
                    tg.start_soon(call, f"model{index}", "ask_model")
                    tg.start_soon(call, f"roots{index}", "list_my_roots")
    for index in range(3):
        assert results[f"name{index}"] == ["Hello, Ada Lovelace."]
        assert results[f"model{index}"] == ["42"]
        assert results[f"roots{index}"] == ["file:///home/ada", "file:///srv/engines"]
