"""The stdio transport for real: servers run as subprocesses of the test.

The child gets a minimal environment, its stderr stays visible, it is always reaped
(also when the client is cancelled, and when it will not leave politely), a child that
dies mid-request fails the call with its exit code, and a server survives garbage on
its stdin.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from anyio.abc import Process
from support import LIBRARY_SERVER, PATIENCE_SECONDS, SERVERS

from answerback import Client, StdioServer
from answerback.client import IncomingMessage
from answerback.jsonrpc import MalformedMessage
from answerback.types import (
    PARSE_ERROR,
    ConnectionClosedError,
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


async def test_a_stray_print_on_the_childs_stdout_is_reported_not_fatal() -> None:
    """Non-protocol output from the server reaches ``message_handler`` as an error; the
    connection carries on."""
    seen: list[IncomingMessage] = []

    async def message_handler(message: IncomingMessage) -> None:
        seen.append(message)

    async with Client(process_server(), mode="legacy", message_handler=message_handler) as client:
        printed = await text_of(client, "print_to_stdout", {"text": "debugging, oops"})
        again = await text_of(client, "echo", {"text": "still here"})
    assert printed == "printed"
    assert again == "still here"
    [error] = seen
    assert isinstance(error, MalformedMessage)


async def test_a_missing_command_is_a_clear_connection_error() -> None:
    """A command that does not exist fails at connect, naming the command."""
    missing = "/nonexistent/answerback-test-server"
    with pytest.raises(ConnectionClosedError) as caught:
        async with Client(StdioServer(missing), mode="legacy"):
            pass
    assert missing in caught.value.message
    assert "Could not start" in caught.value.message


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
