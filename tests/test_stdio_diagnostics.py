"""What a developer sees when a stdio server misbehaves, and where its stderr goes.

A line on the server's stdout that is not JSON-RPC is shown (cut to a readable length)
with what to do about it, and skipped; answerback's own stdio server sends prints to
stderr instead. A server that exits before answering raises ``ServerExitedError`` with
its exit code and the last lines of its stderr. ``StdioServer(stderr=...)`` sends that
stderr to the terminal, nowhere, a logger, a file or a path, and keeps the tail whatever
the choice.
"""

from __future__ import annotations

import io
import logging
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from support import PATIENCE_SECONDS, SERVERS

from answerback import Client
from answerback.client import IncomingMessage
from answerback.transports import (
    ServerExitedError,
    StderrTarget,
    StdioServer,
    StrayOutputError,
)
from answerback.types import ConnectionClosedError, TextContent

pytestmark = pytest.mark.anyio

STRAY_OUTPUT_SERVER = SERVERS / "stray_output_server.py"
FORGOT_RUN_SERVER = SERVERS / "forgot_run_server.py"
PRINTING_SERVER = SERVERS / "printing_server.py"
PROCESS_SERVER = SERVERS / "process_server.py"


def python(*args: str, **options: Any) -> StdioServer:
    return StdioServer(sys.executable, list(args), **options)


async def text_of(client: Client, tool: str, arguments: dict[str, Any]) -> str:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    [content] = result.content
    assert isinstance(content, TextContent)
    return content.text


async def connect_and_fail(server: StdioServer, mode: str = "legacy") -> ServerExitedError:
    with anyio.fail_after(PATIENCE_SECONDS), pytest.raises(ServerExitedError) as caught:
        async with Client(server, mode=mode):
            pass
    return caught.value


# -- stray output on the server's stdout ----------------------------------------------------


async def test_a_stray_line_is_shown_and_skipped_and_the_connection_carries_on() -> None:
    seen: list[IncomingMessage] = []

    async def message_handler(message: IncomingMessage) -> None:
        seen.append(message)

    server = python(str(STRAY_OUTPUT_SERVER))
    async with Client(server, mode="legacy", message_handler=message_handler) as client:
        first = await text_of(client, "echo", {"text": "one"})
        second = await text_of(client, "echo", {"text": "two"})
    assert (first, second) == ("one", "two")
    assert all(isinstance(item, StrayOutputError) for item in seen)
    errors = [item for item in seen if isinstance(item, StrayOutputError)]
    banner, long_line, json_value = errors[:3]
    assert len(errors) == 5  # the banner, then two lines per call
    assert banner.line == "Starting the stray output server..."
    assert str(banner) == (
        f"The server `{server.command_line}` wrote a line that is not JSON-RPC to stdout: "
        "'Starting the stray output server...'. It was skipped. A stdio server must write "
        "only protocol messages to stdout; log to stderr instead (print(..., "
        "file=sys.stderr), or logging)."
    )
    assert len(long_line.line) == 510
    assert "'progress: " in str(long_line)
    assert "… (390 more characters)" in str(long_line)
    assert json_value.line == '{"debug": "not a message"}'


async def test_without_a_message_handler_a_stray_line_is_logged_as_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with Client(python(str(STRAY_OUTPUT_SERVER)), mode="legacy") as client:
        assert await text_of(client, "echo", {"text": "one"}) == "one"
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any("'Starting the stray output server...'" in text for text in warnings)
    assert all("log to stderr" in text for text in warnings)


@pytest.mark.parametrize("server_backend", ["asyncio", "trio"])
async def test_the_stdio_server_sends_prints_and_child_output_to_stderr(
    server_backend: str, capfd: pytest.CaptureFixture[str]
) -> None:
    """A ``print`` in a tool, and a child process writing to the stdout it inherited,
    end up on the server's stderr; the client sees only protocol messages."""
    seen: list[IncomingMessage] = []

    async def message_handler(message: IncomingMessage) -> None:
        seen.append(message)

    server = python(str(PRINTING_SERVER), "--backend", server_backend)
    async with Client(server, mode="legacy", message_handler=message_handler) as client:
        assert await text_of(client, "shout", {"text": "hello"}) == "done"
        assert await text_of(client, "shout", {"text": "again"}) == "done"
    assert seen == []
    err = capfd.readouterr().err
    for text in ("hello", "hello (from a child process)", "again (from a child process)"):
        assert f"{text}\n" in err


# -- a server that exits before answering ---------------------------------------------------


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_script_that_never_runs_its_server_says_so(
    mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    server = python(str(FORGOT_RUN_SERVER), stderr="discard")
    error = await connect_and_fail(server, mode)
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == []
    assert isinstance(error, ConnectionClosedError)  # what callers caught before
    assert error.exit_code == 0
    assert error.stderr_tail == ["forgetful server: tools registered"]
    assert str(error) == (
        f"The server program exited before answering: `{server.command_line}` exited with "
        "code 0.\nA server script must keep running to serve: does it end with `mcp.run()` "
        "(or `if __name__ == '__main__': mcp.run()`, run as a script)?\nThe last lines it "
        "wrote to stderr:\n    forgetful server: tools registered"
    )
    assert "Open a new connection" not in str(error)


async def test_a_crash_on_import_shows_the_traceback() -> None:
    error = await connect_and_fail(python("-c", "import answerback_no_such_module"))
    assert error.exit_code == 1
    assert error.stderr_tail[0] == "Traceback (most recent call last):"
    assert error.stderr_tail[-1] == (
        "ModuleNotFoundError: No module named 'answerback_no_such_module'"
    )
    assert "exited with code 1.\nThe last lines it wrote to stderr:\n    Traceback" in str(error)
    assert "mcp.run()" not in str(error)


async def test_only_the_last_twenty_lines_are_kept() -> None:
    script = "import sys\nfor n in range(50): print(f'line {n}', file=sys.stderr)\nsys.exit(4)"
    error = await connect_and_fail(python("-c", script, stderr="discard"))
    assert error.exit_code == 4
    assert error.stderr_tail == [f"line {n}" for n in range(30, 50)]


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
async def test_a_server_killed_by_a_signal_names_it() -> None:
    script = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    error = await connect_and_fail(python("-c", script))
    assert error.exit_code == -9
    assert "was killed by signal 9 (SIGKILL)" in str(error)
    assert "It wrote nothing to stderr; run the command yourself" in str(error)


async def test_a_server_that_dies_after_answering_is_not_a_start_up_failure() -> None:
    async with Client(python(str(PROCESS_SERVER)), mode="legacy") as client:
        with pytest.raises(ConnectionClosedError) as caught:
            await client.call_tool("exit_now", {"code": 3})
    assert not isinstance(caught.value, ServerExitedError)


# -- where the server's stderr goes ------------------------------------------------------------


async def tell_stderr(target: StderrTarget, text: str = "server says hi") -> StdioServer:
    server = python(str(PROCESS_SERVER), stderr=target)
    async with Client(server, mode="legacy") as client:
        assert await text_of(client, "tell_stderr", {"text": text}) == "told"
    return server


async def test_discard_keeps_the_terminal_clean(capfd: pytest.CaptureFixture[str]) -> None:
    await tell_stderr("discard")
    assert "server says hi" not in capfd.readouterr().err


async def test_a_logger_gets_each_line_at_info_with_the_command(
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    logger = logging.getLogger("tests.stdio.server")
    with caplog.at_level(logging.INFO, logger=logger.name):
        server = await tell_stderr(logger, "first line\nsecond line")
    records = [r for r in caplog.records if r.name == logger.name]
    assert [(r.levelno, r.getMessage()) for r in records] == [
        (logging.INFO, f"{server.command_line}: first line"),
        (logging.INFO, f"{server.command_line}: second line"),
    ]
    assert "first line" not in capfd.readouterr().err


async def test_text_and_binary_files_get_the_bytes_as_written() -> None:
    text, binary = io.StringIO(), io.BytesIO()
    await tell_stderr(text, "caf\u00e9")
    await tell_stderr(binary, "caf\u00e9")
    assert text.getvalue() == "caf\u00e9\n"
    assert binary.getvalue() == "caf\u00e9\n".encode()


async def test_a_path_is_appended_to(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    log.write_text("earlier\n")
    await tell_stderr(log)
    assert log.read_text() == "earlier\nserver says hi\n"


def test_a_plain_string_is_refused_with_a_pointer_to_path() -> None:
    with pytest.raises(ValueError, match="is not one of") as caught:
        python(str(PROCESS_SERVER), stderr="server.log")  # pyright: ignore[reportArgumentType]
    assert "stderr='server.log' is not one of 'inherit' or 'discard'" in str(caught.value)
    assert "stderr=pathlib.Path('server.log')" in str(caught.value)
    with pytest.raises(TypeError, match=r"pass 'inherit', 'discard', a logging\.Logger"):
        python(str(PROCESS_SERVER), stderr=42)  # pyright: ignore[reportArgumentType]


@pytest.mark.parametrize("kind", ["discard", "logger", "file", "path"])
async def test_the_tail_is_kept_whatever_the_target(kind: str, tmp_path: Path) -> None:
    targets: dict[str, StderrTarget] = {
        "discard": "discard",
        "logger": logging.getLogger("tests.stdio.tail"),
        "file": io.StringIO(),
        "path": tmp_path / "server.log",
    }
    script = "import sys; print('about to fail', file=sys.stderr); sys.exit(2)"
    error = await connect_and_fail(python("-c", script, stderr=targets[kind]))
    assert error.stderr_tail == ["about to fail"]


async def test_a_file_that_fails_does_not_end_the_connection(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Writing the server's stderr to a file that was closed loses that output, with a
    warning, and nothing else: the calls go on."""
    closed = io.StringIO()
    closed.close()
    server = await tell_stderr(closed, "lost")
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [
        f"could not pass on the stderr of {server.command_line} (I/O operation on closed "
        "file); the rest of it is dropped"
    ]
