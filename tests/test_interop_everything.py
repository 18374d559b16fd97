"""answerback's client against the TypeScript reference server,
``@modelcontextprotocol/server-everything`` (pinned in interop/package.json, installed
by ``make`` with ``npm ci --prefix interop``), over stdio and over streamable HTTP.

The server's asking tools are registered only for clients that declare the matching
capability, and answered through the client's ordinary callbacks:

- ``trigger-elicitation-request``: a form-mode ``elicitation/create``;
- ``trigger-url-elicitation``: a URL-mode ``elicitation/create`` (and, with
  ``errorPath``, error -32042 carrying the URL elicitation to complete first);
- ``trigger-sampling-request``: ``sampling/createMessage``;
- ``get-roots-list``: ``roots/list`` (the server also asks on its own right after
  initialization, over HTTP on the GET stream, and logs what it got);
- ``toggle-simulated-logging``: ``notifications/message`` at random levels.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from http_support import (
    EVERYTHING_DIR,
    EVERYTHING_ENTRY,
    PATIENCE_SECONDS,
    free_port,
    serve_process,
)
from pydantic import FileUrl

from answerback import Client, MCPError, StdioServer
from answerback.client import ClientRequestContext
from answerback.types import (
    CallToolResult,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestFormParams,
    ElicitRequestParams,
    ElicitRequestURLParams,
    ElicitResult,
    ListRootsResult,
    LoggingMessageNotificationParams,
    Root,
    TextContent,
    URLElicitationRequiredError,
)

NODE = shutil.which("node")

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.interop,
    pytest.mark.skipif(NODE is None, reason="node is not installed"),
    pytest.mark.skipif(
        not EVERYTHING_ENTRY.exists(),
        reason=f"{EVERYTHING_DIR} is missing: run `npm ci --prefix interop` (make does)",
    ),
]

ROOT = Root(uri=FileUrl("file:///home/ada/notes"), name="Ada's notes")
AUTH_URL = "https://example.com/authorize?client=answerback"


@pytest.fixture(scope="module")
def http_url() -> Iterator[str]:
    """One reference server over streamable HTTP for the module (each test its own
    session)."""
    assert NODE is not None
    port = free_port()
    argv = [NODE, str(EVERYTHING_ENTRY), "streamableHttp"]
    with serve_process(argv, port, env={"PORT": str(port)}):
        yield f"http://127.0.0.1:{port}/mcp"


@pytest.fixture(params=["stdio", "http"])
def everything(request: pytest.FixtureRequest) -> Any:
    """The reference server, as a ``Client`` target."""
    if request.param == "stdio":
        assert NODE is not None
        return StdioServer(NODE, [str(EVERYTHING_ENTRY), "stdio"])
    return request.getfixturevalue("http_url")


class Recorder:
    """Callbacks that answer like a user and a model would, keeping what they were asked."""

    def __init__(self) -> None:
        self.elicitations: list[ElicitRequestParams] = []
        self.samplings: list[CreateMessageRequestParams] = []
        self.roots_asked = 0
        self.logs: list[LoggingMessageNotificationParams] = []
        self.logged = anyio.Event()

    async def elicit(
        self, context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult:
        self.elicitations.append(params)
        if isinstance(params, ElicitRequestURLParams):
            return ElicitResult(action="accept")
        return ElicitResult(
            action="accept",
            content={
                "name": "Ada Lovelace",
                "check": True,
                "email": "ada@example.com",
                "integer": 7,
            },
        )

    async def sample(
        self, context: ClientRequestContext, params: CreateMessageRequestParams
    ) -> CreateMessageResult:
        self.samplings.append(params)
        return CreateMessageResult(
            role="assistant", content=TextContent(text="Forty-two."), model="answerback-test-llm"
        )

    async def roots(self, context: ClientRequestContext) -> ListRootsResult:
        self.roots_asked += 1
        return ListRootsResult(roots=[ROOT])

    async def log(self, params: LoggingMessageNotificationParams) -> None:
        self.logs.append(params)
        self.logged.set()

    def client(self, target: Any, **options: Any) -> Client:
        return Client(
            target,
            mode="legacy",
            elicitation_callback=self.elicit,
            sampling_callback=self.sample,
            list_roots_callback=self.roots,
            logging_callback=self.log,
            **options,
        )


def text_of(result: CallToolResult) -> str:
    assert result.is_error is not True, result
    return "\n".join(item.text for item in result.content if isinstance(item, TextContent))


async def test_the_asking_tools_are_offered(everything: Any) -> None:
    """Declaring every callback makes the server register its conditional tools."""
    recorder = Recorder()
    with anyio.fail_after(PATIENCE_SECONDS):
        async with recorder.client(everything) as client:
            assert client.server_info.name == "mcp-servers/everything"
            names = {tool.name for tool in await client.list_all_tools()}
    assert {
        "trigger-elicitation-request",
        "trigger-url-elicitation",
        "trigger-sampling-request",
        "get-roots-list",
        "toggle-simulated-logging",
    } <= names


async def test_form_elicitation(everything: Any) -> None:
    recorder = Recorder()
    with anyio.fail_after(PATIENCE_SECONDS):
        async with recorder.client(everything) as client:
            result = await client.call_tool("trigger-elicitation-request")
    [params] = recorder.elicitations
    assert isinstance(params, ElicitRequestFormParams)
    assert params.requested_schema["required"] == ["name"]
    assert "email" in params.requested_schema["properties"]
    text = text_of(result)
    assert "User provided the requested information" in text
    assert "- Name: Ada Lovelace" in text
    assert "- Email: ada@example.com" in text
    assert "- Favorite Integer: 7" in text


async def test_url_elicitation(everything: Any) -> None:
    recorder = Recorder()
    with anyio.fail_after(PATIENCE_SECONDS):
        async with recorder.client(everything) as client:
            result = await client.call_tool(
                "trigger-url-elicitation",
                {"url": AUTH_URL, "message": "Sign in", "elicitationId": "el-1"},
            )
    [params] = recorder.elicitations
    assert isinstance(params, ElicitRequestURLParams)
    assert params.url == AUTH_URL
    assert params.message == "Sign in"
    assert params.elicitation_id == "el-1"
    text = text_of(result)
    assert "User completed the URL elicitation flow" in text
    assert "Elicitation ID: el-1" in text


async def test_url_elicitation_required_error(everything: Any) -> None:
    """The error path: -32042 carries the URL elicitation to complete; after it, the same
    call succeeds."""
    recorder = Recorder()
    arguments = {"url": AUTH_URL, "errorPath": True}
    with anyio.fail_after(PATIENCE_SECONDS):
        async with recorder.client(everything) as client:
            with pytest.raises(URLElicitationRequiredError) as caught:
                await client.call_tool("trigger-url-elicitation", arguments)
            [required] = caught.value.data["elicitations"]
            assert required["mode"] == "url"
            assert required["url"] == "https://modelcontextprotocol.io"
            assert required["elicitationId"]
            assert caught.value.code == -32042
            assert isinstance(caught.value, MCPError)
            retried = await client.call_tool("trigger-url-elicitation", arguments)
    assert "User completed the URL elicitation flow" in text_of(retried)


async def test_sampling(everything: Any) -> None:
    recorder = Recorder()
    with anyio.fail_after(PATIENCE_SECONDS):
        async with recorder.client(everything) as client:
            result = await client.call_tool(
                "trigger-sampling-request", {"prompt": "What is 6 x 7?", "maxTokens": 20}
            )
    [params] = recorder.samplings
    assert params.max_tokens == 20
    assert params.system_prompt == "You are a helpful test server."
    [message] = params.messages
    assert isinstance(message.content, TextContent)
    assert "What is 6 x 7?" in message.content.text
    text = text_of(result)
    assert "LLM sampling result" in text
    assert "Forty-two." in text
    assert "answerback-test-llm" in text


async def test_roots(everything: Any) -> None:
    """The server asks for roots itself after initialization and through the tool; it
    logs what it received."""
    recorder = Recorder()
    with anyio.fail_after(PATIENCE_SECONDS):
        async with recorder.client(everything, log_level="debug") as client:
            result = await client.call_tool("get-roots-list")
            while not any("Roots updated" in str(log.data) for log in recorder.logs):
                await recorder.logged.wait()
                recorder.logged = anyio.Event()
    assert recorder.roots_asked >= 1
    text = text_of(result)
    assert "Current MCP Roots (1 total)" in text
    assert "Ada's notes" in text
    assert "file:///home/ada/notes" in text
    [update] = [log for log in recorder.logs if "Roots updated" in str(log.data)]
    assert update.level == "info"
    assert update.logger == "everything-server"
    assert update.data == "Roots updated: 1 root(s) received from client"


async def test_logging(everything: Any) -> None:
    """Simulated logging sends a message at once (a random level, all allowed here)."""
    recorder = Recorder()
    levels = {"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}
    with anyio.fail_after(PATIENCE_SECONDS):
        async with recorder.client(everything, log_level="debug") as client:
            started = await client.call_tool("toggle-simulated-logging")
            assert "Started simulated, random-leveled logging" in text_of(started)
            while not any("message" in str(log.data).lower() for log in recorder.logs):
                await recorder.logged.wait()
                recorder.logged = anyio.Event()
            stopped = await client.call_tool("toggle-simulated-logging")
            assert "Stopped simulated logging" in text_of(stopped)
    simulated = [log for log in recorder.logs if "level" in str(log.data).lower()]
    assert simulated
    assert all(log.level in levels for log in simulated)


async def test_many_asking_calls_at_once(everything: Any) -> None:
    """Elicitation, URL elicitation and sampling calls in flight together on one
    connection, each answered through its callback."""
    recorder = Recorder()
    results: dict[str, str] = {}
    with anyio.fail_after(PATIENCE_SECONDS):
        async with recorder.client(everything) as client:

            async def call(key: str, name: str, arguments: dict[str, Any]) -> None:
                results[key] = text_of(await client.call_tool(name, arguments))

            async with anyio.create_task_group() as tg:
                for index in range(3):
                    no_args: dict[str, Any] = {}
                    tg.start_soon(call, f"form{index}", "trigger-elicitation-request", no_args)
                    url_args = {"url": AUTH_URL, "elicitationId": f"el-{index}"}
                    tg.start_soon(call, f"url{index}", "trigger-url-elicitation", url_args)
                    sample_args = {"prompt": f"question {index}"}
                    tg.start_soon(call, f"sample{index}", "trigger-sampling-request", sample_args)
    assert len(results) == 9
    for index in range(3):
        assert "- Name: Ada Lovelace" in results[f"form{index}"]
        assert f"Elicitation ID: el-{index}" in results[f"url{index}"]
        assert "Forty-two." in results[f"sample{index}"]
