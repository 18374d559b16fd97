"""Errors that tell the developer what to do (issue 13), each over a real transport.

- a refusal for a capability the client lacks names the callback to register, in both
  eras, from answerback's server, the official SDK's and a server that asks anyway;
- a pinned 2026-07-28 against a handshake-only server says so and suggests ``auto``;
- a peer's -32000 on a connection that is fine is a plain ``MCPError``;
- HTTP failures name the URL and the likely fix;
- a missing ``Mcp-Param-*`` header is reported as missing;
- a ``logging_callback`` without ``log_level`` gets one hint on 2026-07-28;
- ``error_details`` keeps an exception's text on the server, with a reference.
"""

from __future__ import annotations

import logging
import re
import shutil
import sys
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Annotated, Any

import httpx2
import pytest
from http_support import EVERYTHING_ENTRY, POST_HEADERS, free_port, serve, serve_process
from pydantic import BaseModel, Field
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from support import REPO, SERVERS, TESTS

from answerback import Client, MCPError, StdioServer
from answerback.client._callbacks import CAPABILITY_FIXES
from answerback.server import Context, MCPServer
from answerback.types import (
    ConnectionClosedError,
    LoggingMessageNotificationParams,
    MethodNotFoundError,
    TextContent,
)

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
CARELESS_SERVER = SERVERS / "careless_server.py"
OFFICIAL_SERVER = TESTS / "interop" / "official_server.py"
NODE = shutil.which("node")
needs_node = pytest.mark.skipif(
    NODE is None or not EVERYTHING_ENTRY.exists(),
    reason="node or interop/node_modules is missing: run `npm ci --prefix interop`",
)
ELICITATION_FIX = "pass elicitation_callback= to Client"


class Person(BaseModel):
    name: str


def asking_server(**options: Any) -> MCPServer:
    mcp = MCPServer("Asker", **options)

    @mcp.tool()
    async def greet(ctx: Context) -> str:
        answer = await ctx.elicit("Your name?", Person)
        return f"Hello, {answer.data.name}." if answer.action == "accept" else "Hello."

    @mcp.tool()
    def leak() -> str:
        raise RuntimeError("could not connect to postgres://admin:hunter2@db")

    @mcp.resource("notes://secret")
    def secret() -> str:
        raise RuntimeError("token=hunter2 was refused")

    return mcp


# -- 1. a refusal says which callback to register ---------------------------------------


async def test_legacy_refusal_keeps_its_words_and_notes_the_callback() -> None:
    """answerback's own server over stdio: the wire words stay, the fix is in a note
    (shown by tracebacks) and in ``data``."""
    server = StdioServer(sys.executable, [str(SERVERS / "asking_server.py")], cwd=REPO)
    async with Client(server, mode="legacy") as client:
        with pytest.raises(MethodNotFoundError) as caught:
            await client.call_tool("greet", {"who": "Ada"})
    assert str(caught.value) == "Elicitation not supported"
    assert ELICITATION_FIX in caught.value.__notes__[0]
    assert "elicitation_callback" in caught.value.data["reason"]


@pytest.mark.interop
async def test_the_official_servers_refusals_carry_the_fix_in_both_eras() -> None:
    """The SDK relays answerback's refusal (data included) on legacy; on 2026-07-28 it
    refuses with -32021 in its own words, to which the client adds the fix."""
    server = StdioServer(sys.executable, [str(OFFICIAL_SERVER)], cwd=REPO)
    async with Client(server, mode="legacy") as client:
        with pytest.raises(MCPError) as legacy:
            await client.call_tool("ask_name")
    async with Client(server, mode=MODERN) as client:
        with pytest.raises(MCPError) as modern:
            await client.call_tool("ask_name_mrtr")
    assert legacy.value.message == "Elicitation not supported"
    assert ELICITATION_FIX in legacy.value.data["reason"]
    assert ELICITATION_FIX in legacy.value.__notes__[0]
    assert modern.value.code == -32021
    assert f"which this client did not declare; {ELICITATION_FIX}" in modern.value.message


async def test_a_2026_question_the_client_cannot_answer_fails_here_naming_the_callback() -> None:
    """A server that asks anyway in an InputRequiredResult: the client refuses locally,
    and its exception says what to register."""
    server = StdioServer(sys.executable, [str(CARELESS_SERVER), "elicits-anyway"])
    async with Client(server, mode=MODERN) as client:
        with pytest.raises(MethodNotFoundError) as caught:
            await client.call_tool("anything")
    message = caught.value.message
    assert message.startswith("Elicitation not supported (input request 'name' from the server")
    assert "none of the round's questions was put to anyone" in message
    assert ": the server asked for 'elicitation', which this client did not declare" in message
    assert ELICITATION_FIX in message


async def test_a_host_tells_a_server_asking_anyway_its_own_reason_for_refusing() -> None:
    """A host whose users cannot pass callbacks (the command line) gives the reason a
    server passes on to its model or user; without one for the capability refused, the
    library's advice to the developer stays."""
    server = StdioServer(sys.executable, [str(CARELESS_SERVER), "samples-anyway"])
    told: list[Any] = []
    for reasons in ({"sampling": "nobody here approves a model's reply"}, {"roots": "none"}):
        async with Client(server, mode="legacy", refusal_reasons=reasons) as client:
            result = await client.call_tool("tell")
        assert result.is_error
        told.append(result.content)
    refused = "Sampling not supported: the client did not declare the 'sampling' capability: "
    assert told == [
        [TextContent(text=f"{refused}nobody here approves a model's reply")],
        [TextContent(text=f"{refused}{CAPABILITY_FIXES['sampling']}")],
    ]


def test_a_refusal_reason_for_no_capability_a_server_asks_for_is_refused() -> None:
    with pytest.raises(ValueError, match=r"refusal_reasons has 'tools': its keys are"):
        Client("http://127.0.0.1:8000/mcp", refusal_reasons={"tools": "no"})


async def test_a_declared_capability_gets_no_advice() -> None:
    """A refusal for something the client did declare is left as the server sent it."""

    async def decline(context: Any, params: Any) -> Any:
        from answerback.types import ErrorData

        return ErrorData(code=-32601, message="Elicitation not supported")

    async with Client(asking_server(), mode="legacy", elicitation_callback=decline) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("greet")
    assert str(caught.value) == "Elicitation not supported"
    assert not hasattr(caught.value, "__notes__")


# -- 2 and 3. a pinned 2026-07-28 against a handshake-only server -------------------------


def handshake_only_app() -> Starlette:
    """An HTTP server of the handshake era as the SDKs write them: a request outside a
    session gets HTTP 400 with a -32000 "Bad Request" error; the session works."""

    async def mcp(request: Request) -> Response:
        message = await request.json()
        if message.get("method") == "initialize":
            tools: dict[str, Any] = {}
            result: dict[str, Any] = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": tools},
                "serverInfo": {"name": "old", "version": "1"},
            }
            answer = {"jsonrpc": "2.0", "id": message["id"], "result": result}
            return JSONResponse(answer, headers={"mcp-session-id": "s1"})
        if "id" not in message:
            return Response(status_code=202)
        if request.headers.get("mcp-session-id") != "s1" or message["method"] == "tools/call":
            error = {"code": -32000, "message": "Bad Request: Server not initialized"}
            return JSONResponse({"jsonrpc": "2.0", "id": None, "error": error}, status_code=400)
        return JSONResponse({"jsonrpc": "2.0", "id": message["id"], "result": {}})

    return Starlette(routes=[Route("/mcp", mcp, methods=["POST"])])


def assert_suggests_auto(exc: MCPError) -> None:
    assert f"does not speak protocol version {MODERN}" in exc.message
    assert "handshake era" in exc.message
    assert "mode='auto'" in exc.message


async def test_pinned_modern_against_a_handshake_only_http_server() -> None:
    """The peer's -32000 "Bad Request" is kept as the code, explained, and is not a
    ConnectionClosedError; ``auto`` then connects."""
    async with serve(handshake_only_app()) as running:
        with pytest.raises(MCPError) as caught:
            async with Client(running.url, mode=MODERN):
                pass
        async with Client(running.url, mode="auto") as client:
            version = client.protocol_version
    assert not isinstance(caught.value, ConnectionClosedError)
    assert caught.value.code == -32000
    assert "'Bad Request: Server not initialized'" in caught.value.message
    assert_suggests_auto(caught.value)
    assert version == "2025-11-25"


async def test_a_peers_minus_32000_on_a_good_connection_is_a_plain_error() -> None:
    """An HTTP 400 with a -32000 error mid-session: the connection is fine (the next
    request works), so the error is not ConnectionClosedError."""
    async with serve(handshake_only_app()) as running, Client(running.url, mode="legacy") as c:
        with pytest.raises(MCPError) as caught:
            await c.call_tool("anything")
        await c.ping()
    assert type(caught.value) is MCPError
    assert caught.value.message == "Bad Request: Server not initialized"


async def test_pinned_modern_against_a_handshake_only_stdio_server() -> None:
    server = StdioServer(sys.executable, [str(CARELESS_SERVER), "legacy-only"])
    with pytest.raises(MethodNotFoundError) as caught:
        async with Client(server, mode=MODERN):
            pass
    assert "'Method not found'" in caught.value.message
    assert_suggests_auto(caught.value)


@pytest.mark.interop
@needs_node
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_pinned_modern_against_the_typescript_reference_server(transport: str) -> None:
    assert NODE is not None
    if transport == "stdio":
        with pytest.raises(MCPError) as caught:
            async with Client(StdioServer(NODE, [str(EVERYTHING_ENTRY), "stdio"]), mode=MODERN):
                pass
    else:
        port = free_port()
        argv = [NODE, str(EVERYTHING_ENTRY), "streamableHttp"]
        with serve_process(argv, port, env={"PORT": str(port)}), pytest.raises(MCPError) as caught:
            async with Client(f"http://127.0.0.1:{port}/mcp", mode=MODERN):
                pass
    assert not isinstance(caught.value, ConnectionClosedError)
    assert_suggests_auto(caught.value)


# -- 4. HTTP failures name the URL and the fix ------------------------------------------


async def connect_error(url: str) -> ConnectionClosedError:
    with pytest.raises(ConnectionClosedError) as caught:
        async with Client(url, mode="auto", connect_timeout_seconds=10):
            pass
    return caught.value


async def test_http_failures_name_the_url_and_the_fix() -> None:
    refused_url = f"http://127.0.0.1:{free_port()}/mcp"
    refused = await connect_error(refused_url)
    async with serve(asking_server().http_app()) as running:
        root = f"http://127.0.0.1:{running.port}/"
        wrong_path = await connect_error(root)
        tls = await connect_error(f"https://127.0.0.1:{running.port}/mcp")
    assert refused.message == (
        f"Connection failed: nothing is listening at {refused_url} (connection refused); "
        "start the server, or check the host and port."
    )
    assert wrong_path.message == (
        f"Connection failed: no MCP endpoint at {root} (HTTP 404 Not Found); "
        "MCP servers usually serve at /mcp."
    )
    assert "https:// against a server that speaks plain http?" in tls.message
    assert tls.message.endswith(f"try http://127.0.0.1:{running.port}/mcp.")


async def test_a_404_at_mcp_points_at_the_served_path() -> None:
    async with serve(asking_server().http_app(path="/tools"), path="/mcp") as running:
        failed = await connect_error(running.url)
    assert f"no MCP endpoint at {running.url} (HTTP 404 Not Found)" in failed.message
    assert "check the path the server serves" in failed.message


# -- 5. a missing Mcp-Param header is missing ---------------------------------------------


async def test_a_missing_parameter_header_is_reported_as_missing() -> None:
    mcp = MCPServer("Regions")

    @mcp.tool()
    def where(region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})]) -> str:
        return region

    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
    }
    params = {"name": "where", "arguments": {"region": "eu"}, "_meta": meta}
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}
    sent = {
        **POST_HEADERS,
        "accept": "application/json",
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/call",
        "mcp-name": "where",
    }
    async with serve(mcp.http_app()) as running, httpx2.AsyncClient() as http:
        missing = await http.post(running.url, json=call, headers=sent)
        wrong = await http.post(running.url, json=call, headers={**sent, "mcp-param-region": "us"})
    assert missing.status_code == wrong.status_code == 400
    assert missing.json()["error"]["code"] == wrong.json()["error"]["code"] == -32020
    assert missing.json()["error"]["message"].startswith(
        "Missing header: tool 'where' mirrors its argument 'region' in the Mcp-Param-Region "
        "header, which the request lacks."
    )
    assert wrong.json()["error"]["message"].startswith("Header mismatch: Mcp-Param-Region 'us'")


# -- 6. a logging callback without a level ----------------------------------------------


async def show(params: LoggingMessageNotificationParams) -> None:
    pass


def hints(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [
        record
        for record in caplog.records
        if record.name == "answerback.client" and "log_level" in record.getMessage()
    ]


async def test_a_logging_callback_without_a_level_is_hinted_once_on_2026(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="answerback.client")
    server = StdioServer(sys.executable, [str(SERVERS / "asking_server.py")], cwd=REPO)
    async with Client(server, mode=MODERN, logging_callback=show) as client:
        await client.list_tools()
        await client.list_tools()
    [hint] = hints(caplog)
    assert hint.levelno == logging.WARNING
    assert "Pass Client(log_level='info')" in hint.getMessage()
    caplog.clear()
    async with Client(server, mode="legacy", logging_callback=show):
        pass
    async with Client(server, mode=MODERN, logging_callback=show, log_level="info"):
        pass
    assert hints(caplog) == []


# -- 7. error_details ---------------------------------------------------------------------

REFERENCE = re.compile(r"the server logged the details under reference ([0-9a-f]{8})\.$")


def logged_reference(caplog: pytest.LogCaptureFixture, reference: str) -> logging.LogRecord:
    [record] = [r for r in caplog.records if reference in r.getMessage()]
    return record


async def test_by_default_local_clients_read_the_exception() -> None:
    async with Client(asking_server(), mode="legacy") as client:
        result = await client.call_tool("leak")
    assert result.content == [
        TextContent(text="Error executing tool: could not connect to postgres://admin:hunter2@db")
    ]


async def test_redacted_errors_give_a_reference_the_server_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Over HTTP, in both eras: the tool's error result and an internal error keep the
    secret on the server; the reference finds the log record with the traceback."""
    caplog.set_level(logging.WARNING)
    app = asking_server(error_details="redacted").http_app()
    seen: list[str] = []
    async with serve(app) as running:
        for mode in ("legacy", MODERN):
            async with Client(running.url, mode=mode) as client:
                result = await client.call_tool("leak")
                with pytest.raises(MCPError) as caught:
                    await client.read_resource("notes://secret")
            [block] = result.content
            assert isinstance(block, TextContent)
            seen += [block.text, caught.value.message]
            assert result.is_error
            assert caught.value.code == -32603
    for text in seen:
        assert "hunter2" not in text
        found = REFERENCE.search(text)
        assert found is not None, text
        record = logged_reference(caplog, found.group(1))
        assert record.exc_info is not None
        assert "hunter2" in str(record.exc_info[1])
    assert seen[0].startswith("Error executing tool;")
    assert seen[1].startswith("Internal error;")


Scope = MutableMapping[str, Any]
ASGIApp = Callable[[Scope, Any, Any], Awaitable[None]]


def from_far_away(app: ASGIApp) -> ASGIApp:
    """The app as a client on another machine reaches it (its address is not loopback)."""

    async def wrapped(scope: Scope, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            scope = {**scope, "client": ("203.0.113.7", 40000)}
        await app(scope, receive, send)

    return wrapped


@pytest.mark.parametrize("details", ["local", "full"])
async def test_local_redacts_for_remote_clients_only(details: str) -> None:
    app = asking_server(error_details=details).http_app()
    async with serve(from_far_away(app)) as running, Client(running.url, mode=MODERN) as client:
        result = await client.call_tool("leak")
    [block] = result.content
    assert isinstance(block, TextContent)
    assert ("hunter2" in block.text) is (details == "full")


def test_an_unknown_setting_is_refused() -> None:
    with pytest.raises(ValueError, match=r"'local' .*'full' or 'redacted'"):
        MCPServer("x", error_details="secret")  # type: ignore[arg-type]
