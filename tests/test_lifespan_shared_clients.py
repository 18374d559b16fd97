"""In-process clients sharing a server's lifespan close in any order, each at once: the
lifespan runs in a task none of them owns, is entered once and left after the last,
whose close waits for its exit and raises its error."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager

import anyio
import pytest
from support import PATIENCE_SECONDS, SERVERS

from answerback import Client
from answerback.server import Context, MCPServer

pytestmark = pytest.mark.anyio


async def test_the_first_client_closes_while_a_later_one_still_uses_the_lifespan() -> None:
    """The second client waits, open, until the first has closed: the first used to wait
    for the second instead (the lifespan ran in a task of its own), so neither ended."""
    log: list[str] = []
    background_ran = anyio.Event()

    async def background() -> None:
        background_ran.set()
        await anyio.sleep_forever()

    @asynccontextmanager
    async def lifespan(server: MCPServer) -> AsyncGenerator[list[str], None]:
        async with anyio.create_task_group() as tg:  # only the task that entered it can leave
            tg.start_soon(background)
            log.append("entered")
            yield log
            tg.cancel_scope.cancel()
        log.append("left")

    mcp = MCPServer("Shared", lifespan=lifespan)

    @mcp.tool()
    async def entries(ctx: Context[list[str]]) -> int:
        return ctx.lifespan_context.count("entered")

    first_open, first_closed = anyio.Event(), anyio.Event()

    async def first() -> None:
        async with Client(mcp) as client:
            assert (await client.call_tool("entries")).structured_content == {"result": 1}
            first_open.set()
        log.append("first client closed")
        first_closed.set()

    with anyio.fail_after(PATIENCE_SECONDS):
        async with anyio.create_task_group() as tg:
            tg.start_soon(first)
            await first_open.wait()
            async with Client(mcp) as second:
                await first_closed.wait()
                assert (await second.call_tool("entries")).structured_content == {"result": 1}
                assert mcp.lifespan_context is log
    assert background_ran.is_set()
    assert log == ["entered", "first client closed", "left"]
    assert mcp.lifespan_context is None


async def test_the_last_client_to_close_raises_the_lifespans_error_on_exit() -> None:
    @asynccontextmanager
    async def lifespan(server: MCPServer) -> AsyncGenerator[int, None]:
        yield 1
        raise OSError("the pool would not close")

    mcp = MCPServer("Stuck", lifespan=lifespan)
    first_open, first_closed = anyio.Event(), anyio.Event()

    async def first() -> None:
        async with Client(mcp):  # not the last to close: closes without a word
            first_open.set()
        first_closed.set()

    with anyio.fail_after(PATIENCE_SECONDS):
        async with anyio.create_task_group() as tg:
            tg.start_soon(first)
            await first_open.wait()
            with pytest.raises(OSError, match="the pool would not close"):
                async with Client(mcp):
                    await first_closed.wait()


# -- a lifespan raising SystemExit or KeyboardInterrupt ----------------------------------

EXITS_SERVER = SERVERS / "lifespan_exits_server.py"
RAISED = {
    "exit": "raised SystemExit: DATABASE_URL is not set",
    "ki": "raised KeyboardInterrupt: ",
}


def run_exits_server(kind: str, when: str, where: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(EXITS_SERVER), kind, when, where],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=PATIENCE_SECONDS,
        check=False,
    )


@pytest.mark.parametrize("where", ["client", "client-trio"])
@pytest.mark.parametrize("when", ["entry", "exit"])
@pytest.mark.parametrize("kind", ["exit", "ki"])
def test_a_lifespans_system_exit_or_ctrl_c_reaches_the_client_block_as_raised(
    kind: str, when: str, where: str
) -> None:
    """Not a TrioInternalError (the lifespan's task is trio's system task), nor a client
    opened with no lifespan value; raised once, with nothing logged: on asyncio it used
    to stop the loop from the server's task, and was raised again as the loop closed,
    logged as "Task exception was never retrieved"."""
    completed = run_exits_server(kind, when, where)
    opened = ["opened"] if when == "exit" else []
    assert completed.stdout.splitlines() == [*opened, RAISED[kind]], completed.stderr
    assert completed.stderr == ""


@pytest.mark.parametrize("where", ["stdio", "stdio-trio"])
@pytest.mark.parametrize("when", ["entry", "exit"])
def test_a_server_program_whose_lifespan_calls_sys_exit_exits_with_one_line(
    when: str, where: str
) -> None:
    completed = run_exits_server("exit", when, where)
    assert completed.returncode == 1, completed.stderr
    assert completed.stderr.splitlines()[-1] == (
        "answerback: the server's lifespan failed: SystemExit: DATABASE_URL is not set"
    )


@pytest.mark.parametrize("where", ["stdio", "stdio-trio"])
def test_a_server_program_whose_lifespan_raises_keyboard_interrupt_exits_with_130(
    where: str,
) -> None:
    completed = run_exits_server("ki", "entry", where)
    assert completed.returncode == 130, completed.stderr
    assert "TrioInternalError" not in completed.stderr


# -- rounds that overlap -----------------------------------------------------------------


async def test_an_old_rounds_failed_exit_leaves_the_running_rounds_value() -> None:
    """The last client of round 1 closes; a new client enters round 2 meanwhile; round
    1's cleanup then fails: round 2's value stays."""
    cleanup = anyio.Event()
    entries = 0

    @asynccontextmanager
    async def lifespan(server: MCPServer) -> AsyncGenerator[str, None]:
        nonlocal entries
        entries += 1
        mine = f"round {entries}"
        yield mine
        if mine == "round 1":
            await cleanup.wait()
            raise RuntimeError("cleanup failed")

    mcp = MCPServer("Overlapping", lifespan=lifespan)

    @mcp.tool()
    async def value(ctx: Context[str]) -> str:
        return ctx.lifespan_context

    first_failed = anyio.Event()

    async def first() -> None:
        with pytest.raises(RuntimeError, match="cleanup failed"):
            async with Client(mcp) as client:
                assert (await client.call_tool("value")).structured_content == {"result": "round 1"}
        first_failed.set()

    with anyio.fail_after(PATIENCE_SECONDS):
        async with anyio.create_task_group() as tg:
            tg.start_soon(first)
            await anyio.wait_all_tasks_blocked()  # the first client waits for round 1's exit
            async with Client(mcp) as second:
                assert (await second.call_tool("value")).structured_content == {"result": "round 2"}
                cleanup.set()
                await first_failed.wait()
                assert mcp.lifespan_context == "round 2"
                assert (await second.call_tool("value")).structured_content == {"result": "round 2"}


async def test_a_client_cancelled_while_the_lifespan_is_entered_leaves_it_to_the_others() -> None:
    """The entry runs in no client's task: it goes on for the client still waiting,
    rather than being cancelled half-way and started again."""
    log: list[str] = []
    go_on, entering = anyio.Event(), anyio.Event()

    @asynccontextmanager
    async def lifespan(server: MCPServer) -> AsyncGenerator[None, None]:
        log.append("entry started")
        entering.set()
        try:
            await go_on.wait()  # connecting to a database, say
        except anyio.get_cancelled_exc_class():
            log.append("entry cancelled half-way")
            raise
        log.append("entered")
        yield

    mcp = MCPServer("Entered once", lifespan=lifespan)
    first = anyio.CancelScope()
    second_open = anyio.Event()

    async def open_first() -> None:
        with first:
            async with Client(mcp):
                await anyio.sleep_forever()

    async def open_second() -> None:
        async with Client(mcp):
            second_open.set()

    with anyio.fail_after(PATIENCE_SECONDS):
        async with anyio.create_task_group() as tg:
            tg.start_soon(open_first)
            await entering.wait()
            tg.start_soon(open_second)
            await anyio.wait_all_tasks_blocked()
            first.cancel()
            await anyio.wait_all_tasks_blocked()
            go_on.set()
            await second_open.wait()
    assert log == ["entry started", "entered"]
