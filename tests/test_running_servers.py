"""Running a server as its script does, in a subprocess: what the person at the terminal
sees when it starts, when they stop it, and when the port is taken.

``mcp.run(transport="streamable-http")`` writes one line to stderr once it listens, and
nothing else while it serves. Ctrl-C (SIGINT) stops HTTP and stdio servers without a
traceback, with exit status 130; SIGTERM and SIGHUP stop an HTTP server with status 0, and a
stdio server too, after the cleanup of the calls they cancel. A port in use
is one line naming it, status 1.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import re
import signal
import socket
import sys
from collections.abc import Iterator
from typing import Any

import anyio
import httpx2
import pytest
from anyio.abc import Process
from http_support import raw_initialize, read_line, rpc
from support import PATIENCE_SECONDS, SERVERS

from answerback import Client, MCPError, StdioServer
from answerback.server import MCPServer
from answerback.transports.http._uvicorn import listening_socket
from answerback.types import INTERNAL_ERROR, INVALID_REQUEST, TextContent

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals"),
]

HTTP_RUN_SERVER = SERVERS / "http_run_server.py"
PROCESS_SERVER = SERVERS / "process_server.py"
START_LINE = re.compile(
    r"answerback: serving MCP at (http://127\.0\.0\.1:\d+/mcp) \(Ctrl-C to stop\)\n"
)


async def stop(
    process: Process, signal_number: signal.Signals, buffer: bytearray
) -> tuple[int, str]:
    """Send the signal; the exit status and everything else the process wrote to stderr."""
    assert process.stderr is not None
    process.send_signal(signal_number)
    with anyio.fail_after(PATIENCE_SECONDS):
        async for chunk in process.stderr:
            buffer += chunk
        code = await process.wait()
    return code, buffer.decode()


async def call_echo(url: str) -> str:
    async with Client(url) as client:
        return await call_text(client, "echo", {"text": "over HTTP"})


async def call_text(client: Client, name: str, arguments: dict[str, str] | None = None) -> str:
    result = await client.call_tool(name, arguments)
    [content] = result.content
    assert isinstance(content, TextContent)
    return content.text


UVLOOP = "uvloop" if importlib.util.find_spec("uvloop") is not None else "asyncio"
"""The event loop a server program on asyncio runs on here: uvloop where it is installed
(answerback depends on it off Windows), else asyncio's own."""


async def test_a_stdio_server_program_runs_on_the_fastest_loop_installed() -> None:
    """``mcp.run()`` owns its process, so it chooses the loop (transports/_loop.py)."""
    async with Client(StdioServer(sys.executable, [str(PROCESS_SERVER)])) as client:
        assert (await call_text(client, "event_loop")).split(".")[0] == UVLOOP


async def test_an_http_server_program_runs_on_the_fastest_loop_installed() -> None:
    async with await anyio.open_process([sys.executable, str(HTTP_RUN_SERVER), "0"]) as process:
        buffer = bytearray()
        match = START_LINE.fullmatch(await read_line(process, buffer))
        assert match is not None
        async with Client(match.group(1)) as client:
            assert (await call_text(client, "event_loop")).split(".")[0] == UVLOOP
        code, _ = await stop(process, signal.SIGTERM, buffer)
    assert code == 0


async def test_a_server_started_with_stderr_closed_serves_on_asyncios_loop() -> None:
    """uvloop's libuv aborts the process when one of its own descriptors is numbered
    below 3, which it is when the process started with a standard one closed: such a
    server runs on asyncio's loop, and serves."""
    wrapper = ["-c", 'exec "$0" "$1" 2>&-', sys.executable, str(PROCESS_SERVER)]
    async with Client(StdioServer("sh", wrapper)) as client:
        assert (await call_text(client, "event_loop")).startswith("asyncio.")


@pytest.mark.parametrize(
    ("signal_number", "exit_code"),
    [(signal.SIGINT, 130), (signal.SIGTERM, 0), (signal.SIGHUP, 0)],
    ids=["ctrl-c", "sigterm", "sighup"],
)
async def test_an_http_server_says_where_it_listens_and_stops_cleanly(
    signal_number: signal.Signals, exit_code: int
) -> None:
    async with await anyio.open_process([sys.executable, str(HTTP_RUN_SERVER), "0"]) as process:
        buffer = bytearray()
        line = await read_line(process, buffer)
        match = START_LINE.fullmatch(line)
        assert match is not None, line
        assert await call_echo(match.group(1)) == "over HTTP"
        code, rest = await stop(process, signal_number, buffer)
    assert rest == "answerback: stopped\n"  # no traceback, no uvicorn chatter
    assert code == exit_code


async def test_a_client_that_does_not_read_cannot_keep_the_server_from_stopping() -> None:
    """A client leaves a chatty call's stream unread (the server's write waits on a full
    socket): SIGTERM still stops the server, after ``STOP_SECONDS`` at most, not once
    that client hangs up."""
    async with await anyio.open_process([sys.executable, str(HTTP_RUN_SERVER), "0"]) as process:
        buffer = bytearray()
        match = START_LINE.fullmatch(await read_line(process, buffer))
        assert match is not None
        url = match.group(1)
        async with httpx2.AsyncClient(timeout=PATIENCE_SECONDS) as http:
            session_id, _ = await raw_initialize(http, url)
        port = int(url.split(":")[2].split("/")[0])
        call = rpc("tools/call", {"name": "chatter", "arguments": {"count": 30}}, id=1)
        body = json.dumps(call).encode()
        head = (
            "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            "Accept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"
            f"Mcp-Session-Id: {session_id}\r\nMCP-Protocol-Version: 2025-11-25\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        )
        with socket.socket() as reluctant:
            reluctant.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            reluctant.connect(("127.0.0.1", port))
            reluctant.sendall(head.encode() + body)
            assert reluctant.recv(64).startswith(b"HTTP/1.1 200")  # the call is streaming
            code, _ = await stop(process, signal.SIGTERM, buffer)
    assert code == 0


@pytest.mark.parametrize("server_backend", ["asyncio", "trio"])
async def test_ctrl_c_stops_a_stdio_server_silently(server_backend: str) -> None:
    async with await anyio.open_process(stdio_server_command(server_backend)) as process:
        assert process.stdin is not None
        ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
        await process.stdin.send(json.dumps(ping).encode() + b"\n")
        answer = json.loads(await read_line(process, bytearray(), stdout=True))
        assert answer == {"jsonrpc": "2.0", "id": 1, "result": {}}
        code, rest = await stop(process, signal.SIGINT, bytearray())
    assert rest == ""
    assert code == 130


async def start_call(process: Process, tool: str) -> bytearray:
    """Start calling ``tool`` on a stdio server; once it has said "holding" on stderr,
    what else it wrote there so far."""
    assert process.stdin is not None
    initialize = {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    }
    for message in (
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": tool}},
    ):
        await process.stdin.send(json.dumps(message).encode() + b"\n")
    buffer = bytearray()
    assert await read_line(process, buffer) == "holding\n"
    return buffer


def stdio_server_command(server_backend: str) -> list[str]:
    command = [sys.executable, str(PROCESS_SERVER)]
    if server_backend == "trio":
        command.append("--trio")  # mcp.run(backend="trio")
    return command


@pytest.mark.parametrize("server_backend", ["asyncio", "trio"])
@pytest.mark.parametrize("stopping", [signal.SIGTERM, signal.SIGHUP], ids=["sigterm", "sighup"])
async def test_a_signal_stops_a_stdio_server_after_its_tools_clean_up(
    server_backend: str, stopping: signal.Signals
) -> None:
    """SIGTERM (a host stopping a server that outlived its closed stdin) and SIGHUP (its
    terminal closing) cancel the calls in flight, whose cleanup runs, and exit with
    status 0; they used to end the process on the spot, cleanup skipped."""
    async with await anyio.open_process(stdio_server_command(server_backend)) as process:
        buffer = await start_call(process, "hold_until_cancelled")
        code, rest = await stop(process, stopping, buffer)
    assert rest == "cleaned up\n"
    assert code == 0


@pytest.mark.parametrize("server_backend", ["asyncio", "trio"])
async def test_a_second_signal_ends_a_stdio_server_stuck_in_cleanup(server_backend: str) -> None:
    async with await anyio.open_process(stdio_server_command(server_backend)) as process:
        buffer = await start_call(process, "hang_in_cleanup")
        process.send_signal(signal.SIGTERM)
        assert await read_line(process, buffer) == "cleaning up\n"
        code, rest = await stop(process, signal.SIGTERM, buffer)
    assert rest == ""
    assert code == -signal.SIGTERM


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port something else listens on."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        yield listener.getsockname()[1]


async def test_a_port_in_use_is_one_line_naming_it(taken_port: int) -> None:
    command = [sys.executable, str(HTTP_RUN_SERVER), str(taken_port)]
    with anyio.fail_after(PATIENCE_SECONDS):
        finished = await anyio.run_process(command, check=False)
    assert finished.returncode == 1
    assert finished.stdout == b""
    assert finished.stderr.decode() == (
        f"answerback: cannot listen on 127.0.0.1:{taken_port}: port {taken_port} is already "
        "in use (is another server running?). Stop that program, or choose another port.\n"
    )


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_run_serves_with_nagles_algorithm_off() -> None:
    """``run()`` opens its own listening socket; the connections asyncio accepts on it
    must have TCP_NODELAY (asyncio sets it only on sockets that say TCP), or each small
    response waits some 40 ms for the client's delayed ACK."""
    nodelay: list[int] = []
    connected = asyncio.Event()

    class Probe(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            sock: socket.socket = transport.get_extra_info("socket")
            nodelay.append(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            connected.set()

    with listening_socket("127.0.0.1", 0) as listener:
        server = await asyncio.get_running_loop().create_server(Probe, sock=listener)
        async with server:
            port = listener.getsockname()[1]
            with socket.create_connection(("127.0.0.1", port)):
                await asyncio.wait_for(connected.wait(), PATIENCE_SECONDS)
    [flag] = nodelay
    assert flag != 0


# -- the stdio message limit, as mcp.run(max_message_bytes=...) sets it ---------------------

SMALL_LIMIT = 4096
"""A server program's ``mcp.run(max_message_bytes=...)`` here: a few kilobytes."""


def limited_server(*options: str) -> StdioServer:
    """``process_server.py`` run with ``mcp.run(max_message_bytes=SMALL_LIMIT)``."""
    limit = ["--max-message-bytes", str(SMALL_LIMIT)]
    return StdioServer(sys.executable, [str(PROCESS_SERVER), *limit, *options])


@pytest.mark.parametrize("server_backend", ["asyncio", "trio"])
async def test_run_sets_the_limit_a_stdio_server_holds_messages_to(server_backend: str) -> None:
    """A request over the limit ``run()`` was given gets an error response, and so does a
    request whose answer would be over it; each says where the limit is raised, and the
    server serves on. (``run()`` could not set the limit: it was always 64 MiB.)"""
    options = ["--trio"] if server_backend == "trio" else []
    with anyio.fail_after(PATIENCE_SECONDS):
        async with Client(limited_server(*options), mode="legacy") as client:
            with pytest.raises(MCPError) as too_large_request:
                await client.call_tool("echo", {"text": "y" * 2 * SMALL_LIMIT})
            with pytest.raises(MCPError) as too_large_answer:
                await client.call_tool("echo", {"text": "z" * (SMALL_LIMIT - 500)})
            assert await call_text(client, "echo", {"text": "still here"}) == "still here"
    request_error, answer_error = too_large_request.value, too_large_answer.value
    assert request_error.code == INVALID_REQUEST
    assert request_error.message == (
        f"Invalid request: the request is larger than this connection's limit of "
        f"{SMALL_LIMIT} bytes per message; send less in one message, or raise the limit "
        "with mcp.run(max_message_bytes=...)."
    )
    assert answer_error.code == INTERNAL_ERROR
    assert answer_error.message.startswith("Could not send the result: the message is ")
    assert answer_error.message.endswith(
        f"over this connection's limit of {SMALL_LIMIT} bytes per message; raise the limit "
        "with mcp.run(max_message_bytes=...)."
    )


async def test_a_round_whose_retry_would_not_fit_the_stdio_limit_fails_saying_why() -> None:
    """A 2026-07-28 round is checked against the limit ``run()`` was given: one whose
    retry would carry more fails naming that limit (it was checked against 64 MiB, so
    the answer was only refused as too large to send), and one that fits goes round."""
    with anyio.fail_after(PATIENCE_SECONDS):
        async with Client(limited_server(), mode="2026-07-28") as client:
            with pytest.raises(MCPError) as raised:
                await client.call_tool("hoard", {"size": SMALL_LIMIT})
            small = await client.call_tool("hoard", {"size": 10})
    assert small.content == [TextContent(text="done")]
    message = raised.value.message
    assert raised.value.code == INTERNAL_ERROR
    assert message.startswith("Tool 'hoard' cannot ask another round: the client's retry")
    assert f"this server accepts at most {SMALL_LIMIT} bytes in one request" in message
    assert "over stdio, mcp.run(max_message_bytes=...)" in message


@pytest.mark.parametrize(
    ("limit", "error"),
    [(0, ValueError), (-1, ValueError), (1.5, TypeError), ("4096", TypeError), (True, TypeError)],
)
async def test_a_message_limit_that_is_not_a_positive_int_is_refused_at_once(
    limit: Any, error: type[Exception]
) -> None:
    """Every way to set a stdio limit refuses it before serving or starting anything."""
    expected = (
        "max_message_bytes must be positive, got "
        if error is ValueError
        else "max_message_bytes must be an int (bytes), got "
    ) + repr(limit)
    with pytest.raises(error, match=f"^{re.escape(expected)}$"):
        MCPServer("limited").run(max_message_bytes=limit)
    with pytest.raises(error, match=f"^{re.escape(expected)}$"):
        await MCPServer("limited").run_stdio_async(max_message_bytes=limit)
    with pytest.raises(error, match=f"^{re.escape(expected)}$"):
        StdioServer(sys.executable, max_message_bytes=limit)


def test_run_over_streamable_http_takes_no_message_limit() -> None:
    """HTTP's limit is on request bodies, ``http_app(max_body_bytes=...)``: ``run()``
    says so rather than apply stdio's limit to it, before it listens."""
    with pytest.raises(ValueError, match=r"^max_message_bytes is stdio's limit; ") as raised:
        MCPServer("limited").run("streamable-http", port=1, max_message_bytes=SMALL_LIMIT)
    assert "mcp.http_app(max_body_bytes=...)" in str(raised.value)
    assert "run_uvicorn" in str(raised.value)
