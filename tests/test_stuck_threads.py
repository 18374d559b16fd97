"""A plain ``def`` tool stuck in its worker thread holds up neither its request's end
nor the server's: a cancelled call leaves the function to finish in its thread, which
keeps its slot of the thread limit until it does, and a server program that stops with
such a thread running says which function it is and exits without waiting for it (no
thread can be stopped, and Python would wait for it at exit for ever).
"""

from __future__ import annotations

import contextlib
import json
import re
import signal
import sys
import threading
from collections.abc import Generator

import anyio
import anyio.from_thread
import pytest
from anyio.abc import Process
from http_support import read_line
from support import PATIENCE_SECONDS, SERVERS

from answerback import Client, MCPError
from answerback.server import MCPServer
from answerback.server._functions import USER_THREADS, running_in_threads, user_threads

pytestmark = pytest.mark.anyio

STUCK_SERVER = SERVERS / "stuck_server.py"
STUCK = "wait_for_ever"
LEFT_RUNNING = (
    "The server stopped while __main__.wait_for_ever still ran in a worker thread (a "
    "thread cannot be stopped); exiting without waiting for it."
)


async def stop(process: Process, buffer: bytearray) -> tuple[int, str]:
    """SIGTERM; the exit status and everything else the process wrote to stderr."""
    assert process.stderr is not None
    process.send_signal(signal.SIGTERM)
    with anyio.move_on_after(PATIENCE_SECONDS):
        async for chunk in process.stderr:
            buffer += chunk
        return await process.wait(), buffer.decode()
    process.kill()
    pytest.fail(f"the server did not exit after SIGTERM; it wrote: {buffer.decode()!r}")


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("server_backend", ["asyncio", "trio"])
async def test_sigterm_stops_a_stdio_server_whose_sync_tool_is_stuck(
    server_backend: str,
) -> None:
    command = [sys.executable, str(STUCK_SERVER), "stdio"]
    if server_backend == "trio":
        command.append("--trio")
    async with await anyio.open_process(command) as process:
        assert process.stdin is not None
        initialize = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        }
        for message in (
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": STUCK},
            },
        ):
            await process.stdin.send(json.dumps(message).encode() + b"\n")
        buffer = bytearray()
        assert await read_line(process, buffer) == "stuck\n"
        code, rest = await stop(process, buffer)
    assert LEFT_RUNNING in rest
    assert code == 0


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
async def test_sigterm_stops_an_http_server_whose_sync_tool_is_stuck() -> None:
    command = [sys.executable, str(STUCK_SERVER), "http", "0"]
    async with await anyio.open_process(command) as process:
        buffer = bytearray()
        started = re.fullmatch(
            r"answerback: serving MCP at (\S+) .*\n", await read_line(process, buffer)
        )
        assert started is not None

        stopped: list[tuple[int, str]] = []

        async def stop_once_stuck() -> None:
            assert await read_line(process, buffer) == "stuck\n"
            stopped.append(await stop(process, buffer))

        async with anyio.create_task_group() as group, Client(started.group(1)) as client:
            group.start_soon(stop_once_stuck)
            with pytest.raises(MCPError):  # the server is shutting down
                await client.call_tool(STUCK)
    [(code, rest)] = stopped
    assert "answerback: stopped\n" in rest
    assert LEFT_RUNNING in rest
    assert code == 0


async def test_a_client_leaves_while_a_sync_tool_is_stuck_and_its_thread_keeps_its_slot() -> None:
    """Leaving the block cancels the call, which no longer waits for its function; the
    thread keeps its slot of the limit, and is named, until the function returns."""
    started = anyio.Event()
    release = threading.Event()
    mcp = MCPServer("Stuck")

    @mcp.tool()
    def stuck() -> str:
        anyio.from_thread.run_sync(started.set)
        release.wait(PATIENCE_SECONDS)  # a safety net: on failure, the test ends
        return "released"

    with limited_to(1) as limiter, anyio.fail_after(PATIENCE_SECONDS):
        async with Client(mcp) as client, anyio.create_task_group() as group:
            group.start_soon(client.call_tool, "stuck")
            await started.wait()
            group.cancel_scope.cancel()
        assert running_in_threads() == [f"{__name__}.{stuck.__qualname__}"]
        assert limiter.borrowed_tokens == 1
        release.set()
        async with limiter:  # the thread gives its slot back once its function returns
            assert running_in_threads() == []


async def test_cancelling_stuck_sync_calls_in_a_loop_never_runs_more_threads_than_the_limit() -> (
    None
):
    limit, calls = 3, 8
    started = [anyio.Event() for _ in range(calls)]
    gates = [threading.Event() for _ in range(calls)]
    lock = threading.Lock()
    running = [0]
    peak = [0]
    mcp = MCPServer("Stuck")

    @mcp.tool()
    def hold(index: int) -> str:
        with lock:
            running[0] += 1
            peak[0] = max(peak[0], running[0])
        anyio.from_thread.run_sync(started[index].set)
        gates[index].wait(PATIENCE_SECONDS)
        with lock:
            running[0] -= 1
        return "released"

    with limited_to(limit) as limiter, anyio.fail_after(PATIENCE_SECONDS):
        async with Client(mcp) as client, anyio.create_task_group() as group:
            for index in range(calls):
                scope = anyio.CancelScope()

                async def call(index: int = index, scope: anyio.CancelScope = scope) -> None:
                    with scope:
                        await client.call_tool("hold", {"index": index})

                group.start_soon(call)
                if index >= limit:
                    await anyio.wait_all_tasks_blocked()
                    # Every slot is held by a cancelled call's thread: this one waits.
                    assert not started[index].is_set()
                    assert limiter.statistics().tasks_waiting == 1
                    gates[index - limit].set()
                await started[index].wait()
                scope.cancel()
            for gate in gates:
                gate.set()
        await everything_back(limiter)
    assert peak[0] == limit


@contextlib.contextmanager
def limited_to(limit: int) -> Generator[anyio.CapacityLimiter, None, None]:
    """This event loop's limit of user threads, lowered for the block."""
    limiter = user_threads().limiter
    limiter.total_tokens = limit
    try:
        yield limiter
    finally:
        limiter.total_tokens = USER_THREADS


async def everything_back(limiter: anyio.CapacityLimiter) -> None:
    """Wait until every slot of ``limiter`` is free: each thread gives its own back
    once its function has returned."""
    slots = [object() for _ in range(int(limiter.total_tokens))]
    for slot in slots:
        await limiter.acquire_on_behalf_of(slot)
    for slot in slots:
        limiter.release_on_behalf_of(slot)


async def test_a_call_cancelled_while_it_waits_for_a_slot_takes_none() -> None:
    """Cancelled before its thread could start: no slot kept, no function named."""
    started = anyio.Event()
    release = threading.Event()
    mcp = MCPServer("Stuck")

    @mcp.tool()
    def stuck() -> str:
        anyio.from_thread.run_sync(started.set)
        release.wait(PATIENCE_SECONDS)  # a safety net: on failure, the test ends
        return "released"

    with limited_to(1) as limiter, anyio.fail_after(PATIENCE_SECONDS):
        async with Client(mcp) as client, anyio.create_task_group() as group:
            group.start_soon(client.call_tool, "stuck")
            await started.wait()
            waiting = anyio.CancelScope()

            async def second_call() -> None:
                with waiting:
                    await client.call_tool("stuck")

            group.start_soon(second_call)
            await anyio.wait_all_tasks_blocked()
            assert limiter.statistics().tasks_waiting == 1
            waiting.cancel()
            await anyio.wait_all_tasks_blocked()
            assert limiter.statistics().tasks_waiting == 0
            assert running_in_threads() == [f"{__name__}.{stuck.__qualname__}"]
            release.set()
        await everything_back(limiter)
        assert limiter.borrowed_tokens == 0
        assert running_in_threads() == []


async def test_a_function_that_raises_in_an_abandoned_thread_gives_its_slot_back() -> None:
    started = anyio.Event()
    release = threading.Event()
    mcp = MCPServer("Stuck")

    @mcp.tool()
    def fails_late() -> str:
        anyio.from_thread.run_sync(started.set)
        release.wait(PATIENCE_SECONDS)  # a safety net: on failure, the test ends
        raise OSError("the socket closed")

    with limited_to(1) as limiter, anyio.fail_after(PATIENCE_SECONDS):
        async with Client(mcp) as client, anyio.create_task_group() as group:
            group.start_soon(client.call_tool, "fails_late")
            await started.wait()
            group.cancel_scope.cancel()
        assert limiter.borrowed_tokens == 1
        release.set()
        await everything_back(limiter)
        assert limiter.borrowed_tokens == 0
        assert running_in_threads() == []
