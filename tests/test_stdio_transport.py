"""The stdio transport for real: servers run as subprocesses of the test.

The child gets a minimal environment, its stderr stays visible, it is always reaped
(also when the client is cancelled, and when it will not leave politely), a child that
dies mid-request fails the call with its exit code, and a server survives garbage on
its stdin.
"""

from __future__ import annotations

import asyncio
import codecs
import errno
import io
import json
import math
import os
import select
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, cast

import anyio
import pytest
from anyio.abc import Process
from support import LIBRARY_SERVER, PATIENCE_SECONDS, SERVERS, ended, load_module

from answerback import Client, StdioServer
from answerback.client import ClientRequestContext, IncomingMessage
from answerback.interact import Roots
from answerback.jsonrpc import Envelope, JSONObject, MalformedMessage
from answerback.transports import stdio_server_streams
from answerback.transports._framing import LineReader, decode, line_for, oversized_replies
from answerback.transports._pipes import UNREAD_BYTES_HELD, PipeInput
from answerback.transports._stdio_server import StdioFailedError, greet_a_person_at_a_terminal
from answerback.types import (
    INTERNAL_ERROR,
    INVALID_REQUEST,
    PARSE_ERROR,
    CallToolResult,
    ConnectionClosedError,
    ErrorData,
    ListRootsResult,
    LoggingMessageNotificationParams,
    MCPError,
    RequestTimeoutError,
    TextContent,
)

pytestmark = pytest.mark.anyio

PROCESS_SERVER = SERVERS / "process_server.py"
STUBBORN_SERVER = SERVERS / "stubborn_server.py"


def process_server(**options: Any) -> StdioServer:
    return StdioServer(sys.executable, [str(PROCESS_SERVER)], **options)


def assert_reaped(pid: int) -> None:
    """The process is gone and has been waited for (not left as a zombie)."""
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # a zombie would still accept signal 0


async def text_of(client: Client, tool: str, arguments: dict[str, Any] | None = None) -> str:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    [content] = result.content
    assert isinstance(content, TextContent)
    return content.text


# -- environment ---------------------------------------------------------------------------


async def test_the_child_does_not_inherit_the_parents_secrets(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A variable set in the parent (an API key, say) is not handed to the server."""
    monkeypatch.setenv("ANSWERBACK_TEST_SECRET", "hunter2")
    async with Client(process_server(), mode="legacy") as client:
        names = await client.call_tool("environment_names")
        value = await text_of(client, "environment_value", {"name": "ANSWERBACK_TEST_SECRET"})
    assert names.structured_content is not None
    inherited: list[str] = names.structured_content["result"]
    assert "ANSWERBACK_TEST_SECRET" not in inherited
    assert value == "<unset>"
    assert "PATH" in inherited  # enough to run programs


async def test_variables_given_explicitly_are_passed(monkeypatch: pytest.MonkeyPatch) -> None:
    """``env=`` is how a variable reaches the child, on top of the minimal environment."""
    monkeypatch.setenv("ANSWERBACK_TEST_SECRET", "hunter2")
    server = process_server(env={"ANSWERBACK_TEST_SECRET": "given on purpose"})
    async with Client(server, mode="legacy") as client:
        value = await text_of(client, "environment_value", {"name": "ANSWERBACK_TEST_SECRET"})
        path = await text_of(client, "environment_value", {"name": "PATH"})
    assert value == "given on purpose"
    assert path == os.environ["PATH"]


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    """A fresh directory, symlinks resolved (as a process sees its own cwd)."""
    return tmp_path.resolve()


async def test_cwd_is_where_the_child_runs(workdir: Path) -> None:
    """``cwd=`` sets the child's working directory."""
    async with Client(process_server(cwd=workdir), mode="legacy") as client:
        where = await text_of(client, "working_directory")
    assert where == str(workdir)


async def test_the_childs_stderr_is_passed_through(capfd: pytest.CaptureFixture[str]) -> None:
    """What a server writes to stderr (its logs) shows up on ours."""
    async with Client(process_server(), mode="legacy") as client:
        assert await text_of(client, "tell_stderr", {"text": "server says hi on stderr"}) == "told"
    assert "server says hi on stderr" in capfd.readouterr().err


async def test_big_and_awkward_messages_survive_the_line_framing() -> None:
    """Newlines, unicode and a megabyte of text cross the newline-delimited pipe intact."""
    text = "line one\nline two\r\n\u2028 Ada Lovelace \U0001f4da " + "x" * 1_000_000
    async with Client(process_server(), mode="legacy") as client:
        assert await text_of(client, "echo", {"text": text}) == text


# -- the child's life and death ------------------------------------------------------------


async def test_a_child_that_dies_fails_the_pending_call_with_its_exit_code() -> None:
    """The call does not hang: it fails with ``ConnectionClosedError`` naming the exit code."""
    async with Client(process_server(), mode="legacy") as client:
        pid = int(await text_of(client, "pid"))
        with pytest.raises(ConnectionClosedError) as caught:
            await client.call_tool("exit_now", {"code": 3})
        assert "exited with code 3" in caught.value.message
        with pytest.raises(ConnectionClosedError):
            await client.call_tool("pid")
    assert_reaped(pid)


async def test_a_child_killed_by_a_signal_mid_session_is_said_to_be() -> None:
    """It was "exited with code -9", where the same death before answering named the
    signal."""
    async with Client(process_server(), mode="legacy") as client:
        pid = int(await text_of(client, "pid"))
        os.kill(pid, signal.SIGKILL)
        with anyio.fail_after(PATIENCE_SECONDS), pytest.raises(ConnectionClosedError) as caught:
            await client.call_tool("wait_forever")
    assert "was killed by signal 9 (SIGKILL)" in caught.value.message
    assert_reaped(pid)


PARENT_SERVER = """
import subprocess
import sys
from pathlib import Path

from answerback.server import MCPServer

# The helper says it is ready once it has set up its signals (argv[2] may ignore SIGTERM).
helper_code = (
    "import signal, time; " + sys.argv[2] + "; print('ready', flush=True); time.sleep(3600)"
)
helper = subprocess.Popen([sys.executable, "-c", helper_code], stdout=subprocess.PIPE)
assert helper.stdout is not None and helper.stdout.readline() == b"ready\\n"
Path(sys.argv[1]).write_text(str(helper.pid))
mcp = MCPServer("parent")


@mcp.tool()
def hello() -> str:
    return "hi"


mcp.run()
"""


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc to see a process's state")
@pytest.mark.parametrize(
    "signals", ["pass", "signal.signal(signal.SIGTERM, signal.SIG_IGN)"], ids=["plain", "deaf"]
)
async def test_a_helper_the_server_started_ends_with_it(tmp_path: Path, signals: str) -> None:
    """It was left running, adopted by init, after the client closed the server; one
    that ignores SIGTERM gets SIGKILL after the grace (it was left running too)."""
    pid_file = tmp_path / "helper.pid"
    server = StdioServer(sys.executable, ["-c", PARENT_SERVER, str(pid_file), signals])
    async with Client(server, mode="legacy") as client:
        assert await text_of(client, "hello") == "hi"
    helper = int(pid_file.read_text())
    with anyio.fail_after(PATIENCE_SECONDS):
        while not ended(helper):  # noqa: ASYNC110 (another process's state)
            await anyio.sleep(0.05)


DYING_SERVER = SERVERS / "dying_server.py"


async def test_a_child_that_dies_mid_answer_fails_the_call_and_its_half_line_is_dropped() -> None:
    """Half a line and then the end of stdout: the call fails with the exit code, and
    the unfinished line is not reported as output of its own."""
    seen: list[IncomingMessage] = []

    async def message_handler(message: IncomingMessage) -> None:
        seen.append(message)

    server = StdioServer(sys.executable, [str(DYING_SERVER), "half-line"])
    async with Client(server, mode="legacy", message_handler=message_handler) as client:
        with anyio.fail_after(PATIENCE_SECONDS), pytest.raises(ConnectionClosedError) as caught:
            await client.call_tool("anything")
    assert "exited with code 7" in caught.value.message
    assert all(isinstance(item, ConnectionClosedError) for item in seen), seen


async def test_a_call_written_to_a_child_that_has_exited_fails_with_its_exit_code() -> None:
    """The child exits once connected, reading nothing more: whether the call is written
    before or after the pipe breaks, it fails (it does not wait for ever) and says why."""
    server = StdioServer(sys.executable, [str(DYING_SERVER), "at-once"])
    async with Client(server, mode="legacy") as client:
        for _ in range(3):  # the first write may still fit into the pipe; later ones break it
            with anyio.fail_after(PATIENCE_SECONDS), pytest.raises(ConnectionClosedError) as caught:
                await client.call_tool("anything")
            assert "exited with code 9" in caught.value.message


async def test_a_child_that_dies_leaving_a_process_on_its_stdout_fails_the_call() -> None:
    """The child's stdout ends only when the last process holding it closes it: a
    helper it started and left running kept the call waiting as long as it lived."""
    server = StdioServer(sys.executable, [str(DYING_SERVER), "leaving-a-helper"])
    async with Client(server, mode="legacy") as client:
        with anyio.fail_after(PATIENCE_SECONDS), pytest.raises(ConnectionClosedError) as caught:
            await client.call_tool("anything")
    assert "exited with code 5" in caught.value.message
    assert "a process it started still holds its stdout open" in caught.value.message


async def test_the_child_is_reaped_when_the_client_exits() -> None:
    """Leaving ``async with Client`` ends the child process and waits for it."""
    async with Client(process_server(), mode="legacy") as client:
        pid = int(await text_of(client, "pid"))
        os.kill(pid, 0)  # alive while connected
    assert_reaped(pid)


async def test_the_child_is_reaped_when_the_client_is_cancelled() -> None:
    """Cancelling the task that holds the client (busy with a call) still ends the child."""
    pids: list[int] = []
    connected = anyio.Event()

    async def use_the_server() -> None:
        async with Client(process_server(), mode="legacy") as client:
            pids.append(int(await text_of(client, "pid")))
            connected.set()
            await client.call_tool("wait_forever")

    async with anyio.create_task_group() as tg:
        tg.start_soon(use_the_server)
        with anyio.fail_after(PATIENCE_SECONDS):
            await connected.wait()
        tg.cancel_scope.cancel()
    [pid] = pids
    assert_reaped(pid)


async def test_a_child_that_ignores_sigterm_is_killed_and_reaped() -> None:
    """A server that lingers after stdin closes and ignores SIGTERM is killed in the end."""
    async with Client(StdioServer(sys.executable, [str(STUBBORN_SERVER)]), mode="legacy") as client:
        pid = int(await text_of(client, "pid"))
    assert_reaped(pid)


async def test_a_child_that_exits_at_once_is_a_clear_connection_error() -> None:
    """A server that crashes on start fails the connect, naming its exit code."""
    crashing = StdioServer(sys.executable, ["-c", "import sys; sys.exit(5)"])
    with pytest.raises(ConnectionClosedError) as caught:
        async with Client(crashing, mode="legacy"):
            pass
    assert "exited with code 5" in caught.value.message


async def test_a_print_in_a_tool_goes_to_stderr_not_into_the_protocol(
    capfd: pytest.CaptureFixture[str],
) -> None:
    """The stdio server keeps stdout for protocol messages: a ``print`` in a tool shows on
    its stderr, and the client sees nothing but answers. (A server that does write junk
    to stdout is tests/test_stdio_diagnostics.py's subject.)"""
    seen: list[IncomingMessage] = []

    async def message_handler(message: IncomingMessage) -> None:
        seen.append(message)

    async with Client(process_server(), mode="legacy", message_handler=message_handler) as client:
        printed = await text_of(client, "print_to_stdout", {"text": "debugging, oops"})
        again = await text_of(client, "echo", {"text": "still here"})
    assert printed == "printed"
    assert again == "still here"
    assert seen == []
    assert "debugging, oops" in capfd.readouterr().err


async def test_a_missing_command_is_a_clear_connection_error() -> None:
    """A command that does not exist fails at connect, naming the command."""
    missing = "/nonexistent/answerback-test-server"
    with pytest.raises(ConnectionClosedError) as caught:
        async with Client(StdioServer(missing), mode="legacy"):
            pass
    assert missing in caught.value.message
    assert "Could not start" in caught.value.message


async def test_a_nul_byte_in_an_argument_is_the_same_clear_connection_error() -> None:
    with pytest.raises(ConnectionClosedError, match=r"Could not start the server .*null byte"):
        async with Client(StdioServer(sys.executable, ["a\x00b"]), mode="legacy"):
            pass


# -- the server side: garbage on stdin -----------------------------------------------------


async def read_json_line(process: Process, buffer: bytearray) -> Any:
    """The next newline-terminated JSON message the process writes to stdout."""
    assert process.stdout is not None
    with anyio.fail_after(PATIENCE_SECONDS):
        while b"\n" not in buffer:
            buffer += await process.stdout.receive()
    line, _, rest = bytes(buffer).partition(b"\n")
    buffer[:] = rest
    return json.loads(line)


async def test_the_server_survives_a_malformed_line_on_stdin() -> None:
    """A line that is not JSON gets -32700 (id null); the next request is served normally."""
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "raw-test", "version": "0"},
        },
    }
    async with await anyio.open_process(
        [sys.executable, str(LIBRARY_SERVER)], stderr=None
    ) as process:
        assert process.stdin is not None
        await process.stdin.send(b"this is { not json\n" + json.dumps(initialize).encode() + b"\n")
        buffer = bytearray()
        parse_error = await read_json_line(process, buffer)
        result = await read_json_line(process, buffer)
        await process.stdin.aclose()  # end of input: the server exits by itself
        with anyio.fail_after(PATIENCE_SECONDS):
            code = await process.wait()
    assert parse_error["jsonrpc"] == "2.0"
    assert parse_error["id"] is None
    assert parse_error["error"]["code"] == PARSE_ERROR
    assert result["id"] == 1
    assert result["result"]["protocolVersion"] == "2025-11-25"
    assert result["result"]["serverInfo"]["name"] == "Library"
    assert code == 0


async def test_the_end_of_input_ends_an_open_subscription_and_the_server_exits() -> None:
    """A 2026-07-28 ``subscriptions/listen`` never ends by itself, so a server answering
    what it read after its input ends waited on it for ever (the MCP Inspector's client
    then killed it). It now ends the subscription as the specification has a server
    tear one down, answers the rest, and exits."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw-test", "version": "0"},
    }
    listen = {
        "jsonrpc": "2.0",
        "id": "sub",
        "method": "subscriptions/listen",
        "params": {"notifications": {"toolsListChanged": True}, "_meta": meta},
    }
    tools = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"_meta": meta}}
    requests = (json.dumps(listen) + "\n" + json.dumps(tools) + "\n").encode()
    with anyio.fail_after(PATIENCE_SECONDS):
        done = await anyio.run_process(
            [sys.executable, str(LIBRARY_SERVER)], input=requests, check=False, stderr=None
        )
    assert done.returncode == 0
    messages = [json.loads(line) for line in done.stdout.decode().splitlines()]
    acknowledged = [
        m for m in messages if m.get("method") == "notifications/subscriptions/acknowledged"
    ]
    assert len(acknowledged) == 1
    [listed] = [m for m in messages if m.get("id") == 2]
    assert [tool["name"] for tool in listed["result"]["tools"]]
    [ended_subscription] = [m for m in messages if m.get("id") == "sub"]
    result = ended_subscription["result"]
    assert result["resultType"] == "complete"
    assert result["_meta"]["io.modelcontextprotocol/subscriptionId"] == "sub"


# -- what cannot be sent, and messages over the limit --------------------------------------

FRAMING_SERVER = SERVERS / "framing_server.py"
SMALL_LIMIT = 4096


def framing_server(*args: str, **options: Any) -> StdioServer:
    return StdioServer(sys.executable, [str(FRAMING_SERVER), *args], **options)


async def test_a_tool_returning_infinity_fails_alike_in_process_and_on_stdio() -> None:
    """In-process, which writes no JSON, the call succeeded with ``{"result": inf}``; on
    stdio it failed as an internal error. The tool layer refuses it for every transport."""
    in_process = load_module(FRAMING_SERVER).mcp
    results: list[CallToolResult] = []
    for target in (in_process, framing_server()):
        async with Client(target, mode="legacy") as client:
            results.append(await client.call_tool("infinity"))
            assert await text_of(client, "echo", {"text": "still here"}) == "still here"
    expected = (
        "Tool 'infinity' returned NaN or Infinity, which JSON cannot carry: have it "
        "return None or a string instead."
    )
    for result in results:
        assert result.is_error
        assert result.structured_content is None
        assert result.content == [TextContent(text=expected)]


async def test_a_result_holding_infinity_fails_the_call_and_the_server_carries_on() -> None:
    """The server cannot write ``inf`` as JSON: the call gets an internal error naming the
    problem (not a line the client cannot parse, and not a wait for ever). A content block
    is sent as built, so it reaches this net past the tool layer's own check."""
    async with Client(framing_server(), mode="legacy") as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("infinite_priority")
        assert await text_of(client, "echo", {"text": "still here"}) == "still here"
    assert caught.value.error.code == INTERNAL_ERROR
    assert "NaN or Infinity" in caught.value.message


@pytest.mark.parametrize("tool", ["listed_name", "missing_file"])
async def test_text_utf8_cannot_write_fails_the_call_and_the_server_carries_on(tool: str) -> None:
    """A file name that is not UTF-8 (``os.listdir`` decodes it with a lone surrogate), in
    a result or in an error's message: the answer was never written and nothing was
    logged, so the call waited for ever. It now fails, saying what to do."""
    async with Client(framing_server(), mode="legacy") as client:
        with anyio.fail_after(PATIENCE_SECONDS):
            with pytest.raises(MCPError) as caught:
                await client.call_tool(tool)
        assert await text_of(client, "echo", {"text": "still here"}) == "still here"
    assert caught.value.error.code == INTERNAL_ERROR
    assert caught.value.message.startswith("Could not send the result: the message holds text")
    assert "lone surrogate" in caught.value.message
    assert "backslashreplace" in caught.value.message


async def test_arguments_utf8_cannot_write_fail_the_call_before_it_is_sent() -> None:
    """The client's side of the same rule: its request fails at once, and the
    connection carries on."""
    name = b"caf\xe9".decode("utf-8", "surrogateescape")
    async with Client(framing_server(), mode="legacy") as client:
        with anyio.fail_after(PATIENCE_SECONDS):
            with pytest.raises(MCPError) as caught:
                await client.call_tool("echo", {"text": name})
        assert await text_of(client, "echo", {"text": "next"}) == "next"
    assert "Could not send the request" in caught.value.message
    assert "lone surrogate" in caught.value.message


async def test_arguments_holding_nan_fail_the_call_before_it_is_sent() -> None:
    """A request the client cannot write fails at once, and the connection carries on."""
    async with Client(framing_server(), mode="legacy") as client:
        with anyio.fail_after(PATIENCE_SECONDS):
            with pytest.raises(MCPError) as caught:
                await client.call_tool("echo", {"text": float("nan")})
        assert await text_of(client, "echo", {"text": "next"}) == "next"
    assert caught.value.error.code == INTERNAL_ERROR
    assert "Could not send the request" in caught.value.message
    assert "NaN or Infinity" in caught.value.message


async def test_an_answer_over_the_servers_limit_is_replaced_by_an_error() -> None:
    """The server does not write an answer larger than its limit; the call fails with
    an error that says so."""
    server = framing_server("--max-bytes", str(SMALL_LIMIT))
    async with Client(server, mode="legacy") as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("text_of_size", {"size": SMALL_LIMIT})
        assert await text_of(client, "text_of_size", {"size": 10}) == "x" * 10
    assert caught.value.error.code == INTERNAL_ERROR
    assert f"limit of {SMALL_LIMIT} bytes" in caught.value.message
    assert caught.value.message.endswith("raise the limit with mcp.run(max_message_bytes=...).")


async def test_a_request_over_the_servers_limit_gets_an_error_response() -> None:
    """The server skips a request larger than its limit and answers it with -32600."""
    server = framing_server("--max-bytes", str(SMALL_LIMIT))
    async with Client(server, mode="legacy") as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("echo", {"text": "y" * 3 * SMALL_LIMIT})
        assert await text_of(client, "echo", {"text": "small"}) == "small"
    assert caught.value.error.code == INVALID_REQUEST
    assert f"limit of {SMALL_LIMIT} bytes" in caught.value.message
    assert "raise the limit with mcp.run(max_message_bytes=...)" in caught.value.message


async def test_an_answer_over_the_clients_limit_fails_the_call() -> None:
    """Issue 10 item 14: the client skips an answer larger than its limit and fails the
    call it answers (it used to drop it and wait for ever)."""
    async with Client(framing_server(max_message_bytes=SMALL_LIMIT), mode="legacy") as client:
        with anyio.fail_after(PATIENCE_SECONDS):
            with pytest.raises(MCPError) as caught:
                await client.call_tool("text_of_size", {"size": 3 * SMALL_LIMIT})
        assert await text_of(client, "text_of_size", {"size": 10}) == "x" * 10
    assert caught.value.error.code == INTERNAL_ERROR
    assert f"limit of {SMALL_LIMIT} bytes" in caught.value.message
    assert "raise the limit with StdioServer(..., max_message_bytes=...)" in caught.value.message


async def test_a_request_over_the_clients_limit_fails_before_it_is_sent() -> None:
    async with Client(framing_server(max_message_bytes=SMALL_LIMIT), mode="legacy") as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("echo", {"text": "y" * SMALL_LIMIT})
        assert await text_of(client, "echo", {"text": "small"}) == "small"
    assert caught.value.error.code == INTERNAL_ERROR
    assert "Could not send the request" in caught.value.message
    assert "raise the limit with StdioServer(..., max_message_bytes=...)" in caught.value.message


def request_line(request_id: int, method: str, params: dict[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode() + b"\n"


def initialize_line(client_name: str) -> bytes:
    """Request 0: a 2025-11-25 client named ``client_name`` that declares nothing."""
    client_info = {"name": client_name, "version": "0"}
    params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": client_info}
    return request_line(0, "initialize", params)


async def test_nan_and_infinity_on_the_wire_are_parse_errors() -> None:
    """Strict JSON: a request holding NaN or Infinity is a parse error, not a number. Its
    first members still name it, so the error goes to its id (the caller does not wait)."""
    lines = [
        b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":NaN}}\n',
        b'{"jsonrpc":"2.0","id":2,"method":"ping","params":{"x":Infinity}}\n',
        b'{"jsonrpc":"2.0","id":3,"method":"ping","params":{"x":-Infinity}}\n',
    ]
    async with await anyio.open_process([sys.executable, str(FRAMING_SERVER)]) as process:
        assert process.stdin is not None
        await process.stdin.send(b"".join(lines) + request_line(4, "ping"))
        buffer = bytearray()
        answers = [await read_json_line(process, buffer) for _ in range(4)]
        await process.stdin.aclose()
        with anyio.fail_after(PATIENCE_SECONDS):
            await process.wait()
    for request_id, answer in enumerate(answers[:3], start=1):
        assert answer["id"] == request_id
        assert answer["error"]["code"] == PARSE_ERROR
    assert answers[3] == {"jsonrpc": "2.0", "id": 4, "result": {}}


async def test_the_rest_of_an_oversized_line_is_skipped_not_parsed() -> None:
    """An oversized request arriving in pieces gets one error for its id; its tail is not
    read as messages of its own, and the request after it is answered."""
    big = request_line(7, "ping", {"padding": "z" * 5 * SMALL_LIMIT})
    pieces = [big[i : i + SMALL_LIMIT // 3] for i in range(0, len(big), SMALL_LIMIT // 3)]
    server = [sys.executable, str(FRAMING_SERVER), "--max-bytes", str(SMALL_LIMIT)]
    async with await anyio.open_process(server) as process:
        assert process.stdin is not None
        for piece in pieces:
            await process.stdin.send(piece)
        await process.stdin.send(request_line(8, "ping"))
        buffer = bytearray()
        refused = await read_json_line(process, buffer)
        answered = await read_json_line(process, buffer)
        await process.stdin.aclose()
        with anyio.fail_after(PATIENCE_SECONDS):
            await process.wait()
    assert refused["id"] == 7
    assert refused["error"]["code"] == INVALID_REQUEST
    assert answered == {"jsonrpc": "2.0", "id": 8, "result": {}}


async def test_an_oversized_line_whose_start_names_no_id_is_a_parse_error() -> None:
    """When the id comes after the bulk, nothing can be failed by id: the peer gets a
    parse error (id null) saying why, and the connection carries on."""
    padding = json.dumps({"padding": "z" * 2 * SMALL_LIMIT})
    late_id = f'{{"params":{padding},"jsonrpc":"2.0","method":"ping","id":5}}\n'.encode()
    server = [sys.executable, str(FRAMING_SERVER), "--max-bytes", str(SMALL_LIMIT)]
    async with await anyio.open_process(server) as process:
        assert process.stdin is not None
        await process.stdin.send(late_id + request_line(6, "ping"))
        buffer = bytearray()
        refused = await read_json_line(process, buffer)
        answered = await read_json_line(process, buffer)
        await process.stdin.aclose()
        with anyio.fail_after(PATIENCE_SECONDS):
            await process.wait()
    assert refused["id"] is None
    assert refused["error"]["code"] == PARSE_ERROR
    assert f"limit of {SMALL_LIMIT} bytes" in refused["error"]["message"]
    assert answered == {"jsonrpc": "2.0", "id": 6, "result": {}}


# -- the line reader on its own ------------------------------------------------------------

SETTING = "mcp.run(max_message_bytes=...)"
"""Where the limit of the side under test is raised, as its errors say."""


def fed_in_chunks(
    reader: LineReader, stream: bytes, chunk_size: int
) -> tuple[list[Envelope | Exception], list[JSONObject]]:
    """What ``reader`` makes of ``stream`` fed ``chunk_size`` bytes at a time: the
    messages for our side and the replies for the peer."""
    incoming: list[Envelope | Exception] = []
    replies: list[JSONObject] = []
    for start in range(0, len(stream), chunk_size):
        got, answers = reader.feed(stream[start : start + chunk_size])
        incoming += got
        replies += answers
    return incoming, replies


@pytest.mark.parametrize("chunk_size", [1, 5, 64, 10_000])
def test_the_line_reader_reassembles_lines_from_any_chunking(chunk_size: int) -> None:
    """Lines come out whole however the bytes are cut; blank lines and CRLF are fine, and
    an oversized line in the middle costs only itself."""
    oversized = b'{"jsonrpc":"2.0","id":3,"method":"ping","params":{"p":"' + b"q" * 300 + b'"}}'
    stream = b"".join(
        [
            b'{"jsonrpc":"2.0","id":1,"method":"ping"}\r\n',
            b"\n",
            oversized + b"\n",
            b'{"jsonrpc":"2.0","id":2,"method":"ping"}\n',
        ]
    )
    incoming, replies = fed_in_chunks(LineReader(limit=200, setting=SETTING), stream, chunk_size)
    assert [item.message["id"] for item in incoming if isinstance(item, Envelope)] == [1, 2]
    assert len(incoming) == 2
    [reply] = replies
    assert reply["id"] == 3
    assert reply["error"]["code"] == INVALID_REQUEST


@pytest.mark.parametrize("chunk_size", [1, 7, 10_000])
@pytest.mark.parametrize("ending", [b"\n", b"\r\n"], ids=["lf", "crlf"])
def test_a_message_of_exactly_the_limit_is_read_however_its_line_ends(
    chunk_size: int, ending: bytes
) -> None:
    """The limit is the message's: a CRLF line's CR does not count (it made a message
    of exactly the limit too large when a Windows peer sent it); a byte more is too large
    either way."""
    start, end = b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"p":"', b'"}}'
    exact = start + b"q" * (200 - len(start) - len(end)) + end
    over = exact.replace(b'"id":1', b'"id":2').replace(b'"p":"', b'"p":"q')
    stream = exact + ending + over + ending
    incoming, replies = fed_in_chunks(LineReader(limit=200, setting=SETTING), stream, chunk_size)
    assert [item.message["id"] for item in incoming if isinstance(item, Envelope)] == [1]
    assert [reply["id"] for reply in replies] == [2]


@pytest.mark.parametrize("chunk_size", [1, 7, 10_000])
def test_the_line_reader_finishes_a_last_line_that_has_no_newline(chunk_size: int) -> None:
    """A stream that ends without a final newline still holds its last message; what is
    left of a line cut short is a parse error, and blank space or the tail of an
    oversized line is nothing."""
    cases: list[tuple[bytes, list[object]]] = [
        (
            b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n{"jsonrpc":"2.0","id":2,"method":"ping"}',
            [1, 2],
        ),
        (
            b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n{"jsonrpc":"2.0","id":2,"me',
            [1, "MalformedMessage"],
        ),
        (b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n  \r', [1]),
        (b'{"jsonrpc":"2.0","id":1,"method":"ping","params":{"p":"' + b"q" * 300, []),
    ]
    for stream, expected in cases:
        reader = LineReader(limit=200, setting=SETTING)
        incoming = fed_in_chunks(reader, stream, chunk_size)[0] + reader.finish()
        assert reader.finish() == []  # nothing is left to finish twice
        seen = [
            item.message["id"] if isinstance(item, Envelope) else type(item).__name__
            for item in incoming
        ]
        assert seen == expected, stream


def test_a_byte_order_mark_before_a_message_is_ignored() -> None:
    """A UTF-8 byte order mark (a file a Windows editor saved) does not cost the first
    message, as RFC 8259 allows; what follows the mark must still be JSON, and only one
    mark is skipped."""
    mark = codecs.BOM_UTF8
    reader = LineReader(setting=SETTING)
    incoming, _ = reader.feed(mark + b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
    incoming += reader.finish()
    assert [item.message for item in incoming if isinstance(item, Envelope)] == [
        {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    ]
    text = decode('\ufeff{"jsonrpc":"2.0","id":2,"method":"ping"}')
    assert isinstance(text, Envelope)
    assert text.message["id"] == 2
    for broken in (mark + b"{not json", mark, mark + mark + b"{}"):
        assert isinstance(decode(broken), MalformedMessage), broken


OVERSIZED_STARTS: list[tuple[bytes, str, object]] = [
    # (start of a message over the limit, who is answered, the id answered)
    (b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":', "peer", 4),
    (b'{"jsonrpc":"2.0","id":"a,{b","params":{"x":', "peer", "a,{b"),
    (b'{"id":4,"jsonrpc":"2.0","result":{"content":[', "self", 4),
    (b' {"jsonrpc":"2.0", "id" : 9 , "error" : {"code":', "self", 9),
    (b'{"jsonrpc":"2.0","id":"say \\"{hi\\"","result":{', "self", 'say "{hi"'),
    (b'{"jsonrpc":"2.0","result":{"content":[', "transport", None),
    (b'{"jsonrpc":"2.0","method":"notifications/message","params":{', "transport", None),
    (b'{"jsonrpc":"2.0","id":12345', "transport", None),  # the id may go on: 123456...
    (b'{"jsonrpc":"2.0","id":true,"method":"ping","params":{', "transport", None),
    (b'[{"jsonrpc":"2.0","id":1,"method":"ping"},', "transport", None),
    (b"\xff\xfe not json at all", "transport", None),
]


@pytest.mark.parametrize(("start", "answered", "request_id"), OVERSIZED_STARTS)
def test_an_oversized_message_is_answered_by_the_id_at_its_start(
    start: bytes, answered: str, request_id: object
) -> None:
    """A request over the limit gets an error response; an answer over the limit fails
    our request; anything whose start does not name its id is a transport error."""
    to_peer, to_self = oversized_replies(start, limit=100, setting=SETTING)
    if answered == "peer":
        assert to_self is None
        assert to_peer is not None
        assert to_peer["id"] == request_id
        assert to_peer["error"]["code"] == INVALID_REQUEST
        assert f"raise the limit with {SETTING}" in to_peer["error"]["message"]
    elif answered == "self":
        assert to_peer is None
        assert isinstance(to_self, dict)
        assert to_self["id"] == request_id
        assert to_self["error"]["code"] == INTERNAL_ERROR
        assert f"raise the limit with {SETTING}" in to_self["error"]["message"]
    else:
        assert to_peer is None
        assert isinstance(to_self, MalformedMessage)
        assert "limit of 100 bytes" in str(to_self)


# -- the server's pipes: files, threads and trio -------------------------------------------


@dataclass
class PipeInFileOut:
    """A server's stdin as a pipe the test writes to, its stdout a regular file."""

    stdin: BinaryIO
    write_fd: int
    stdout: BinaryIO
    out_path: Path


@pytest.fixture
def pipe_in_file_out(tmp_path: Path) -> Iterator[PipeInFileOut]:
    read_fd, write_fd = os.pipe()
    out_path = tmp_path / "out.jsonl"
    with open(read_fd, "rb", buffering=0) as stdin, out_path.open("wb") as stdout:
        yield PipeInFileOut(stdin, write_fd, stdout, out_path)
        os.close(write_fd)


async def test_a_server_writing_to_a_file_reads_its_pipe_and_writes_every_answer(
    pipe_in_file_out: PipeInFileOut,
) -> None:
    """Stdin a pipe, stdout a regular file (``server > log.jsonl``): each direction works
    on its own (the pipe was read by a stray transport once), and what is queued when the
    connection ends is still written."""
    files = pipe_in_file_out
    async with stdio_server_streams(files.stdin, files.stdout) as (incoming, outgoing):
        os.write(files.write_fd, request_line(1, "ping"))
        with anyio.fail_after(PATIENCE_SECONDS):
            received = await incoming.receive()
        assert isinstance(received, Envelope)
        assert received.message["id"] == 1
        await outgoing.send(Envelope({"jsonrpc": "2.0", "id": 1, "result": {}}))
    assert not files.stdin.closed  # the caller's files stay the caller's
    answer = json.loads(files.out_path.read_bytes())
    assert answer == {"jsonrpc": "2.0", "id": 1, "result": {}}


@dataclass
class PipesBothWays:
    """A server's stdin and stdout as pipes; the test reads ``stdout_read``."""

    stdin: BinaryIO
    stdout: BinaryIO
    stdout_read: int


@pytest.fixture
def pipes_both_ways() -> Iterator[PipesBothWays]:
    stdin_read, stdin_write = os.pipe()
    stdout_read, stdout_write = os.pipe()
    with (
        open(stdin_read, "rb", buffering=0) as stdin,
        open(stdout_write, "wb", buffering=0) as stdout,
        open(stdout_read, "rb", buffering=0),
        open(stdin_write, "wb", buffering=0),
    ):
        yield PipesBothWays(stdin, stdout, stdout_read)


async def test_answers_the_pipe_cannot_take_yet_still_go_out_when_the_block_ends(
    pipes_both_ways: PipesBothWays,
) -> None:
    """Answers are written into the stdout pipe as they are sent; what a full pipe does
    not take yet waits, in order, and leaving the block waits for it to go out (a
    client reading late still gets every answer)."""
    pipes = pipes_both_ways
    answers = [{"jsonrpc": "2.0", "id": n, "result": {"text": "z" * 100_000}} for n in range(10)]
    sent = anyio.Event()
    received = bytearray()

    def read_to_the_end() -> None:
        while chunk := os.read(pipes.stdout_read, 65536):
            received.extend(chunk)

    async def read_late() -> None:
        await sent.wait()  # the pipe holds far less than the answers by now
        await anyio.to_thread.run_sync(read_to_the_end, abandon_on_cancel=True)

    with anyio.fail_after(PATIENCE_SECONDS):
        async with anyio.create_task_group() as tg:
            tg.start_soon(read_late)
            async with stdio_server_streams(pipes.stdin, pipes.stdout) as (_, outgoing):
                for answer in answers:
                    outgoing.send_nowait(Envelope(answer))
                sent.set()
            pipes.stdout.close()  # the server's copy is closed too: the reader sees the end
    assert [json.loads(line) for line in received.splitlines()] == answers


async def test_a_server_running_on_trio_serves_stdio_and_leaves_at_end_of_input() -> None:
    """Under trio the server reads and writes its pipes in threads: messages of any size
    cross intact, limits and strict JSON hold, and closing stdin ends the process."""
    server = [str(FRAMING_SERVER), "--backend", "trio", "--max-bytes", str(SMALL_LIMIT)]
    async with await anyio.open_process([sys.executable, *server]) as process:
        assert process.stdin is not None
        text = "ü" * (SMALL_LIMIT // 8)  # 6 bytes each on the wire ("\u00fc"): 3 KB
        calls = [
            {"name": "event_loop"},
            {"name": "echo", "arguments": {"text": text}},
            {"name": "infinite_priority"},
            {"name": "echo", "arguments": {"text": "y" * SMALL_LIMIT}},
        ]
        initialize = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "raw-test", "version": "0"},
        }
        await process.stdin.send(request_line(0, "initialize", initialize))
        buffer = bytearray()
        assert "result" in await read_json_line(process, buffer)
        answers: list[Any] = []
        for request_id, params in enumerate(calls, start=1):
            await process.stdin.send(request_line(request_id, "tools/call", params))
            answers.append(await read_json_line(process, buffer))
        await process.stdin.aclose()
        with anyio.fail_after(PATIENCE_SECONDS):
            code = await process.wait()
    backend, echoed, infinite, oversized = answers
    assert backend["result"]["content"][0]["text"] == "other"
    assert echoed["result"]["content"][0]["text"] == text
    assert infinite["error"]["code"] == INTERNAL_ERROR
    assert "NaN or Infinity" in infinite["error"]["message"]
    assert oversized["error"]["code"] == INVALID_REQUEST
    assert code == 0


FED_SERVER = """
import sys

from pydantic import BaseModel

from answerback.server import Context, MCPServer
from answerback.types import ConnectionClosedError

mcp = MCPServer("fed")


class Name(BaseModel):
    name: str


@mcp.tool()
def echo(text: str) -> str:
    return text


@mcp.tool()
async def ask(ctx: Context) -> str:
    # Still running when the input ends, whatever the timing: it waits on the client
    # until then (or, asking after it, learns at once that nobody will answer).
    try:
        await ctx.elicit("Name?", Name)
    except ConnectionClosedError as exc:
        return f"no answer: {exc}"
    return "answered"


mcp.run(backend=sys.argv[1])
"""


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_server_fed_from_a_file_answers_every_request_then_exits(
    tmp_path: Path, backend: str
) -> None:
    """``python server.py < requests.jsonl``: the input ends before the server has
    answered, yet every request read gets its answer (the first one too, after a byte
    order mark, and the last one, with no newline after it), and the server exits
    (cleanly) once the last is out. A question put to the client learns at once that no
    answer will come."""
    initialize: dict[str, Any] = {
        "protocolVersion": "2025-11-25",
        "capabilities": {"elicitation": {"form": {}}},
        "clientInfo": {"name": "file", "version": "0"},
    }
    calls = [{"name": "echo", "arguments": {"text": f"line {n}"}} for n in range(1, 4)]
    requests = tmp_path / "requests.jsonl"
    requests.write_bytes(
        codecs.BOM_UTF8  # as a Windows editor saves it
        + request_line(0, "initialize", initialize)
        + b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n'
        + b"".join(request_line(n, "tools/call", call) for n, call in enumerate(calls, 1))
        + request_line(4, "tools/call", {"name": "ask"}).rstrip(b"\n")  # as printf leaves it
    )
    with requests.open("rb") as stdin:
        done = subprocess.run(
            [sys.executable, "-c", FED_SERVER, backend],
            stdin=stdin,
            capture_output=True,
            timeout=PATIENCE_SECONDS,
            check=False,
        )
    assert done.returncode == 0, done.stderr.decode()
    messages = [json.loads(line) for line in done.stdout.splitlines()]
    answers = {m["id"]: m for m in messages if "method" not in m}  # not a question
    assert sorted(answers) == [0, 1, 2, 3, 4]
    for n in range(1, 4):
        assert answers[n]["result"]["content"][0]["text"] == f"line {n}"
    asked = answers[4]["result"]["content"][0]["text"]
    assert asked.startswith("no answer:")
    assert "closed its end of the connection" in asked


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_server_writing_to_a_file_puts_every_answer_in_it(tmp_path: Path, backend: str) -> None:
    """``python server.py < requests.jsonl > answers.jsonl``: neither end is a pipe.
    uvloop (the loop ``mcp.run()`` picks) aborts the process when a pipe transport is
    given a regular file, so both files are read and written in worker threads."""
    requests = tmp_path / "requests.jsonl"
    requests.write_bytes(
        initialize_line("file")
        + request_line(1, "tools/call", {"name": "echo", "arguments": {"text": "echoed"}})
    )
    answers = tmp_path / "answers.jsonl"
    with requests.open("rb") as stdin, answers.open("wb") as stdout:
        done = subprocess.run(
            [sys.executable, "-c", FED_SERVER, backend],
            stdin=stdin,
            stdout=stdout,
            stderr=subprocess.PIPE,
            timeout=PATIENCE_SECONDS,
            check=False,
        )
    assert done.returncode == 0, done.stderr.decode()
    # Answered concurrently, in either order (trio picks the order of ready tasks at random).
    by_id = {m["id"]: m for m in map(json.loads, answers.read_bytes().splitlines())}
    assert sorted(by_id) == [0, 1]
    assert by_id[1]["result"]["content"][0]["text"] == "echoed"


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_server_reading_dev_null_exits_cleanly_at_once(backend: str) -> None:
    """``/dev/null`` is a device no event loop can watch (uvloop aborts on it): the
    server reads it in a thread, finds no input, and exits with nothing to say."""
    done = subprocess.run(
        [sys.executable, "-c", FED_SERVER, backend],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=PATIENCE_SECONDS,
        check=False,
    )
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")


GONE_CLIENT_SERVER = """
import sys

import anyio

from answerback.server import Context, MCPServer

mcp = MCPServer("busy")


@mcp.tool()
async def forever(ctx: Context) -> str:
    while True:  # logs now and then: on trio, only a write notices that stdout is gone
        await ctx.info("still working")
        await anyio.sleep(0.05)


mcp.run(backend=sys.argv[1])
"""


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_server_whose_client_has_gone_stops_without_waiting_for_its_tools(
    backend: str,
) -> None:
    """The client closes both pipes (it died, say) while a tool runs for ever: nobody can
    read an answer, so the server stops, cleanly, instead of lingering for the tool (a
    client that closes only stdin still gets its answers, as above). On asyncio the pipe
    says so at once; on trio the tool's next log message finds it broken."""
    with subprocess.Popen(
        [sys.executable, "-c", GONE_CLIENT_SERVER, backend],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as server:
        assert server.stdin is not None
        assert server.stdout is not None
        server.stdin.write(initialize_line("gone"))
        server.stdin.flush()
        assert json.loads(server.stdout.readline())["id"] == 0
        server.stdin.write(request_line(1, "tools/call", {"name": "forever"}))
        server.stdin.flush()
        assert json.loads(server.stdout.readline())["method"] == "notifications/message"
        server.stdout.close()
        server.stdin.close()
        assert server.wait(timeout=PATIENCE_SECONDS) == 0
        assert server.stderr is not None
        assert b"Traceback" not in server.stderr.read()


FLOOD_BOUND_BYTES = 32 * 1024 * 1024
"""Far more requests than a server stops reading after: it holds about 4 MiB of unread
answers and a thousand unread requests, and the pipes 64 KiB each."""
STALLED_SECONDS = 2.0
"""How long a full pipe stays full before the server counts as no longer reading (if a
busy machine only holds it up, the test writes less, and still checks every answer)."""


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_client_that_writes_and_never_reads_cannot_grow_the_server(backend: str) -> None:
    """A client writes pings as fast as it can and reads nothing. The server stops
    reading once its unread answers pass its bound (the requests wait in the pipe, and
    the client's writes block), where it held every answer in memory before; once the
    client reads, every request is answered, exactly once."""
    with subprocess.Popen(
        [sys.executable, "-c", GONE_CLIENT_SERVER, backend],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    ) as server:
        assert server.stdin is not None
        assert server.stdout is not None
        stdout = server.stdout
        stdin = server.stdin.fileno()
        os.set_blocking(stdin, False)
        sent, written, batch = 0, 0, b""
        stalled = False
        while written < FLOOD_BOUND_BYTES:
            if not batch:
                batch = b"".join(request_line(n, "ping") for n in range(sent, sent + 1000))
                sent += 1000
            try:
                taken = os.write(stdin, batch)
            except BlockingIOError:
                if not select.select([], [stdin], [], STALLED_SECONDS)[1]:
                    stalled = True
                    break
                continue
            batch = batch[taken:]
            written += taken
        answers: list[bytes] = []
        reader = threading.Thread(target=lambda: answers.extend(stdout.readlines()))
        reader.start()
        os.set_blocking(stdin, True)
        server.stdin.write(batch)  # the rest of the last batch: whole lines only
        server.stdin.close()
        reader.join(timeout=PATIENCE_SECONDS * 4)
        assert server.wait(timeout=PATIENCE_SECONDS) == 0
    assert stalled, f"the server read all {written} bytes of requests it was sent"
    ids = sorted(json.loads(line)["id"] for line in answers)
    assert ids == list(range(sent))


FLOODING_SERVER = """
import json, os, select, sys

report, bound, stalled_seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
request = json.loads(sys.stdin.readline())
result = {
    "protocolVersion": "2025-11-25",
    "capabilities": {"logging": {}},
    "serverInfo": {"name": "flood", "version": "1"},
}
out = sys.stdout.fileno()
answer = {"jsonrpc": "2.0", "id": request["id"], "result": result}
os.write(out, json.dumps(answer).encode() + b"\\n")
log = {"level": "info", "data": "x"}
note = {"jsonrpc": "2.0", "method": "notifications/message", "params": log}
batch = (json.dumps(note).encode() + b"\\n") * 100
os.set_blocking(out, False)
sent, written, rest, outcome = 0, 0, b"", "unbounded"
while written < bound:
    if not rest:
        rest, sent = batch, sent + 100
    try:
        taken = os.write(out, rest)
    except BlockingIOError:
        if not select.select([], [out], [], stalled_seconds)[1]:
            outcome = "stalled"
            break
        continue
    rest, written = rest[taken:], written + taken
with open(report + ".part", "w") as file:  # renamed once whole: the test reads it on sight
    file.write(f"{outcome} {sent}")
os.replace(report + ".part", report)
os.set_blocking(out, True)
os.write(out, rest)  # the last batch's whole lines, once the client reads again
sys.stdin.read()  # until the client leaves
"""


async def test_a_server_that_floods_the_client_is_read_no_faster_than_it_is_handled(
    tmp_path: Path,
) -> None:
    """A server writes log messages as fast as it can while the client's handler is
    held up: the client stops reading its stdout (the messages wait in the pipe, and the
    server's writes block) instead of holding them all in memory; once the handler goes
    on, every message is handled."""
    report = tmp_path / "report"
    released, all_handled = anyio.Event(), anyio.Event()
    handled, sent = 0, None

    async def on_log(params: LoggingMessageNotificationParams) -> None:
        nonlocal handled
        await released.wait()  # holds up the engine: nothing more is taken meanwhile
        handled += 1
        if handled == sent:
            all_handled.set()

    server = StdioServer(
        sys.executable,
        ["-c", FLOODING_SERVER, str(report), str(FLOOD_BOUND_BYTES), str(STALLED_SECONDS)],
    )
    async with Client(server, mode="legacy", logging_callback=on_log):
        with anyio.fail_after(PATIENCE_SECONDS * 2):
            while not report.exists():  # noqa: ASYNC110 (another process's file)
                await anyio.sleep(0.05)
            outcome, count = report.read_text().split()
            sent = int(count)
            released.set()
            await all_handled.wait()
    assert outcome == "stalled", f"the client read all {sent} messages the server wrote"
    assert handled == sent


def initialized_by_hand(capabilities: str, then: str) -> str:
    """A stdio server script that answers ``initialize`` itself, declaring
    ``capabilities`` (JSON text), then runs ``then``; ``send(message)`` writes a line."""
    return textwrap.dedent("""
            import json
            import sys
            import time

            def send(message):
                sys.stdout.write(json.dumps(message) + "\\n")
                sys.stdout.flush()

            initialize = json.loads(sys.stdin.readline())
            send({"jsonrpc": "2.0", "id": initialize["id"], "result": {
                "protocolVersion": "2025-11-25", "capabilities": CAPABILITIES,
                "serverInfo": {"name": "by-hand", "version": "0"}}})
        """).replace("CAPABILITIES", capabilities) + textwrap.dedent(then)


DEAF_ASKING_SERVER = initialized_by_hand(
    "{}",
    """
    for n in range(1, 50_001):  # then asks, and never reads again
        send({"jsonrpc": "2.0", "id": n, "method": "roots/list"})
    time.sleep(3600)
    """,
)


async def test_a_server_that_asks_and_never_reads_the_answers_cannot_hold_the_client(
    tmp_path: Path,
) -> None:
    """Answers counted as a handler's own messages and waited for a server that does
    not read: their tasks hung past 4 MiB unread, the client read on and grew, and
    leaving ``async with Client`` never returned (nor did ``answerback list``). Now an
    answer never waits; the client stops reading a server that does not read it, as a
    server does its client, and closes as usual."""
    many = [tmp_path / f"{'d' * 200}{n}" for n in range(20)]
    for directory in many:
        directory.mkdir()
    roots = Roots(many)
    answer_bytes = len(json.dumps([root.model_dump(mode="json") for root in roots.as_roots()]))
    answered = 0

    async def grant(context: ClientRequestContext) -> ListRootsResult | ErrorData:
        nonlocal answered
        answered += 1
        return await roots.list_roots(context)

    server = StdioServer(sys.executable, ["-c", DEAF_ASKING_SERVER])
    with anyio.fail_after(PATIENCE_SECONDS * 3):
        async with Client(server, mode="legacy", list_roots_callback=grant):
            seen = -1
            while answered != seen:
                seen = answered
                await anyio.sleep(STALLED_SECONDS)
    assert answered * answer_bytes > UNREAD_BYTES_HELD, answered  # it answered to the bound
    assert answered < 50_000  # and then stopped reading the server's requests


SILENT_ON_LOG_LEVEL_SERVER = initialized_by_hand(
    '{"logging": {}}',
    """
    for line in sys.stdin:  # reads logging/setLevel, and never answers it
        pass
    """,
)


async def test_a_server_that_never_answers_set_level_fails_the_connect_in_time() -> None:
    """Setting the log level is part of connecting: it waited with no bound, and
    ``answerback list`` (which always asks for info) hung for ever."""
    server = StdioServer(sys.executable, ["-c", SILENT_ON_LOG_LEVEL_SERVER])
    with anyio.fail_after(PATIENCE_SECONDS), pytest.raises(RequestTimeoutError) as caught:
        async with Client(server, mode="legacy", log_level="info", connect_timeout_seconds=1):
            pass
    assert "did not answer 'logging/setLevel' within 1 s" in str(caught.value)


MALFORMED_ANSWER_SERVER = initialized_by_hand(
    '{"tools": {}}',
    """
    for line in sys.stdin:
        request = json.loads(line)
        if "id" in request:
            template = sys.argv[1].encode("latin-1")
            sys.stdout.buffer.write(template.replace(b"ID", json.dumps(request["id"]).encode()))
            sys.stdout.buffer.write(b"\\n")
            sys.stdout.flush()
    """,
)


@pytest.mark.parametrize(
    ("template", "why"),
    [
        ('{"jsonrpc": "2.0", "id": ID, "result": {"text": "caf\xe9"}}', "not JSON"),
        ('{"jsonrpc": "2.0", "id": ID, "result": {"x": 1,}}', "not JSON"),
        ('{"jsonrpc": "2.0", "id": ID, "result": {"x": NaN}}', "not JSON"),
        ('{"id": ID, "result": {"content": []}}', 'no "jsonrpc" member'),
    ],
    ids=["latin-1", "trailing comma", "NaN", "no jsonrpc"],
)
async def test_an_answer_that_cannot_be_read_fails_its_call_at_once(
    template: str, why: str
) -> None:
    """Such an answer was skipped as a stray line, and its call waited for ever (or the
    connect reported a server that never answered)."""
    server = StdioServer(sys.executable, ["-c", MALFORMED_ANSWER_SERVER, template])
    async with Client(server, mode="legacy") as client:
        with anyio.fail_after(PATIENCE_SECONDS), pytest.raises(MCPError) as caught:
            await client.call_tool("anything", {})
    assert caught.value.code == INTERNAL_ERROR
    assert caught.value.message.startswith("The answer could not be read (")
    assert why in caught.value.message


CHATTY_SERVER = """
import sys
from pathlib import Path

from answerback.server import Context, MCPServer

mcp = MCPServer("chatty")
report = Path(sys.argv[2])


@mcp.tool()
async def chatter(ctx: Context, n: int) -> str:
    for i in range(n):
        await ctx.info(f"{i} {'x' * 8192}")
        if i % 64 == 0:
            report.write_text(str(i))  # how far it got
    return "done"


mcp.run(backend=sys.argv[1])
"""
CHATTER = 4000
"""Messages of 8 KiB: 32 MiB in all, far more than the 4 MiB a server holds unread."""


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_tool_writing_to_a_client_that_does_not_read_waits_for_it(
    backend: str, tmp_path: Path
) -> None:
    """A tool writes log messages while its client reads none: once 4 MiB wait unread,
    the tool's next write waits (it held all of them in memory before); once the client
    reads, every message comes, in order, then the answer."""
    report = tmp_path / "report"
    with subprocess.Popen(
        [sys.executable, "-c", CHATTY_SERVER, backend, str(report)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    ) as server:
        assert server.stdin is not None
        assert server.stdout is not None
        call = {"name": "chatter", "arguments": {"n": CHATTER}}
        server.stdin.write(initialize_line("reluctant"))
        server.stdin.write(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n')
        server.stdin.write(request_line(1, "tools/call", call))
        server.stdin.flush()
        progress, deadline = "", time.monotonic() + PATIENCE_SECONDS
        while time.monotonic() < deadline:  # until the tool stops getting further
            time.sleep(STALLED_SECONDS)
            now = report.read_text() if report.exists() else ""
            if now and (now == progress or int(now) >= CHATTER - 64):
                break
            progress = now
        reached = int(report.read_text())
        logs: list[str] = []
        answer: dict[str, Any] = {}
        for line in server.stdout:
            message = json.loads(line)
            if message.get("method") == "notifications/message":
                logs.append(message["params"]["data"].split()[0])
            elif message.get("id") == 1:
                answer = message
                break
        server.stdin.close()
        assert server.wait(timeout=PATIENCE_SECONDS) == 0
    assert reached < CHATTER - 64, "the tool wrote every message while the client read none"
    assert logs == [str(i) for i in range(CHATTER)]
    assert answer["result"]["content"] == [{"type": "text", "text": "done"}]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (Linux)")
@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_server_that_cannot_write_its_answers_says_why_and_fails(
    tmp_path: Path, backend: str
) -> None:
    """Stdout on a full disk: the answers are lost, so the server must not exit 0 in
    silence (nor with a traceback): one line on stderr says why, and the status is 1."""
    requests = tmp_path / "requests.jsonl"
    requests.write_bytes(request_line(1, "ping"))
    with requests.open("rb") as stdin, open("/dev/full", "wb") as full:
        done = subprocess.run(
            [sys.executable, "-c", GONE_CLIENT_SERVER, backend],
            stdin=stdin,
            stdout=full,
            stderr=subprocess.PIPE,
            timeout=PATIENCE_SECONDS,
            check=False,
        )
    assert done.returncode == 1
    assert done.stderr.decode().splitlines() == [
        "answerback: cannot write to stdout (No space left on device): the server "
        "stopped, its answers lost."
    ]


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_server_whose_stdin_cannot_be_read_says_why_and_fails(
    tmp_path: Path, backend: str
) -> None:
    """Stdin opened for writing only (``server 0>file``, a slip of the shell): every read
    fails. One line on stderr says why, with no traceback, and the status is 1."""
    done = subprocess.run(
        [
            "sh",
            "-c",
            f'exec "$0" -c "$1" {backend} 0>"$2"',
            sys.executable,
            GONE_CLIENT_SERVER,
            str(tmp_path / "written.txt"),
        ],
        capture_output=True,
        timeout=PATIENCE_SECONDS,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.decode().splitlines() == [
        "answerback: cannot read stdin (Bad file descriptor): the server stopped after "
        "answering what it read."
    ]


class _InputThatFails(io.RawIOBase):
    """Stdin that gives ``first``, then fails as a terminal that went away does (EIO)."""

    def __init__(self, first: bytes) -> None:
        self.first: bytes | None = first

    def readable(self) -> bool:
        return True

    def read1(self, size: int = -1) -> bytes:
        first, self.first = self.first, None
        if first is None:
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return first


async def test_a_failed_read_ends_input_and_is_raised_once_what_was_read_is_answered(
    tmp_path: Path,
) -> None:
    """A read of stdin that fails ends input as its end would: the request read before it
    is still delivered and its answer written, and then the block raises the failure."""
    out_path = tmp_path / "out.jsonl"
    stdin = cast(BinaryIO, _InputThatFails(request_line(1, "ping")))

    async def answer_to_the_end(stdout: BinaryIO) -> None:
        async with stdio_server_streams(stdin, stdout) as (incoming, outgoing):
            with anyio.fail_after(PATIENCE_SECONDS):
                received = await incoming.receive()
                assert isinstance(received, Envelope)
                with pytest.raises(anyio.EndOfStream):
                    await incoming.receive()
            await outgoing.send(Envelope({"jsonrpc": "2.0", "id": 1, "result": {}}))

    with out_path.open("wb") as stdout, pytest.raises(StdioFailedError) as raised:
        await answer_to_the_end(stdout)
    assert raised.value.errno == errno.EIO
    assert raised.value.strerror == (
        "cannot read stdin (Input/output error): the server stopped after answering what it read"
    )
    assert json.loads(out_path.read_bytes()) == {"jsonrpc": "2.0", "id": 1, "result": {}}


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # pipe transports are asyncio's
async def test_a_pipe_whose_read_fails_hands_over_what_came_and_then_its_error() -> None:
    """On asyncio, stdin's pipe transport reports a failed read by losing the connection
    with the error: what came before is still handed over, and the error is returned."""
    pipe = PipeInput(asyncio.get_running_loop())
    failure = OSError(errno.EIO, os.strerror(errno.EIO))
    pipe.data_received(b"early")
    pipe.connection_lost(failure)
    taken: list[bytes] = []
    assert await pipe.read_all(lambda chunk: taken.append(chunk) is None) is failure
    assert taken == [b"early"]


@pytest.mark.parametrize(("closing", "closed"), [("<&-", "stdin"), (">&-", "stdout")])
def test_a_server_started_without_stdin_or_stdout_says_so_in_one_line(
    closing: str, closed: str
) -> None:
    """Python leaves ``sys.stdin`` or ``sys.stdout`` as ``None`` when the process starts
    with it closed (``server <&-``): one line says what is wrong, with no traceback."""
    done = subprocess.run(
        ["sh", "-c", f'exec "$0" -c "$1" asyncio {closing}', sys.executable, GONE_CLIENT_SERVER],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=PATIENCE_SECONDS,
        check=False,
    )
    assert done.returncode == 1
    assert done.stderr.decode().splitlines() == [
        f"answerback: cannot serve stdio: this process was started with {closed} closed. "
        "Start the server from an MCP client, which connects both to it."
    ]


class _TerminalInput(io.StringIO):
    """Standard input as a person's terminal looks to ``isatty``."""

    def isatty(self) -> bool:
        return True


def test_the_terminal_greeting_goes_to_stderr_and_only_at_a_terminal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """At a terminal the greeting is one line on stderr; never on stdout, which carries
    the protocol, even with stderr closed; and nothing when stdin is no terminal, is a
    stand-in without ``isatty``, or is a closed file."""
    closed = io.StringIO()
    closed.close()
    for stdin, has_stderr, greeted in [
        (_TerminalInput(), True, True),
        (_TerminalInput(), False, False),
        (io.StringIO(), True, False),
        (object(), True, False),
        (closed, True, False),
    ]:
        stdout, stderr = io.StringIO(), io.StringIO()
        monkeypatch.setattr(sys, "stdin", stdin)
        monkeypatch.setattr(sys, "stdout", stdout)
        monkeypatch.setattr(sys, "stderr", stderr if has_stderr else None)
        greet_a_person_at_a_terminal("Library")
        assert stdout.getvalue() == ""
        said = stderr.getvalue().splitlines()
        if greeted:
            [line] = said
            assert line.startswith("answerback: Library speaks MCP on stdin and stdout")
            assert "answerback connect " in line
        else:
            assert said == []


async def test_a_trio_server_waiting_for_input_stops_when_interrupted() -> None:
    """Ctrl-C stops an idle trio server at once: its blocked read does not hold it up
    until the client writes again."""
    server = [sys.executable, str(FRAMING_SERVER), "--backend", "trio"]
    async with await anyio.open_process(server, stderr=subprocess.DEVNULL) as process:
        assert process.stdin is not None
        await process.stdin.send(request_line(1, "ping"))
        pong = await read_json_line(process, bytearray())
        assert pong == {"jsonrpc": "2.0", "id": 1, "result": {}}
        process.send_signal(signal.SIGINT)
        with anyio.fail_after(PATIENCE_SECONDS):
            code = await process.wait()
    assert code != 0  # interrupted, not a clean end of input


async def test_the_client_runs_a_trio_server_over_stdio() -> None:
    """The client's side of stdio and a trio server's side work together end to end."""
    async with Client(framing_server("--backend", "trio"), mode="legacy") as client:
        assert await text_of(client, "event_loop") == "other"
        assert await text_of(client, "echo", {"text": "hello"}) == "hello"


def test_what_cannot_be_written_is_replaced_failed_or_dropped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """An answer that cannot go becomes an error answer for its id; a request fails on
    our side at once; a notification is dropped, and the log says so."""
    send, receive = anyio.create_memory_object_stream[Envelope | Exception](10)
    with send, receive:
        answer = {"jsonrpc": "2.0", "id": 4, "result": {"value": float("inf")}}
        replaced = json.loads(line_for(Envelope(answer), 1000, send, SETTING))
        asked: dict[str, Any] = {"jsonrpc": "2.0", "id": 5, "method": "elicitation/create"}
        assert line_for(Envelope(asked), 10, send, SETTING) == b""
        failed = receive.receive_nowait()
        told = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"n": math.nan}}
        assert line_for(Envelope(told), 1000, send, SETTING) == b""
        with pytest.raises(anyio.WouldBlock):
            receive.receive_nowait()
    assert replaced["id"] == 4
    assert replaced["error"]["code"] == INTERNAL_ERROR
    assert isinstance(failed, Envelope)
    assert failed.message["id"] == 5
    assert "limit of 10 bytes" in failed.message["error"]["message"]
    assert "dropped a notification" in caplog.text
