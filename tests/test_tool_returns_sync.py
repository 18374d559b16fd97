"""Plain ``def`` functions run in a worker thread; generator functions are refused.

A sync tool once ran on the event loop: three calls of a tool sleeping 0.3 s took 0.9 s,
and every other session of the server stalled meanwhile. An async-generator tool was
accepted and answered with the generator's repr.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator, Iterator
from contextvars import ContextVar
from typing import Any

import anyio
import anyio.from_thread
import pytest
from http_support import serve
from support import PATIENCE_SECONDS

from answerback import Client
from answerback.server import Context, MCPServer
from answerback.transports.http import StreamableHTTPApp
from answerback.transports.http._legacy_session import ResponseStream
from answerback.types import CallToolResult, TextContent

pytestmark = pytest.mark.anyio

TENANT: ContextVar[str] = ContextVar("TENANT", default="nobody")


def _text(result: CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, TextContent)
    return block.text


async def test_two_calls_of_a_sync_tool_run_at_once() -> None:
    """Each call waits at a barrier for the other: on the event loop the first would hold
    the loop, the second never start, and the barrier break at its time limit."""
    barrier = threading.Barrier(2, timeout=PATIENCE_SECONDS)
    mcp = MCPServer("Threads")

    @mcp.tool()
    def meet() -> str:
        barrier.wait()
        return "met"

    results: list[CallToolResult] = []

    async def call(client: Client) -> None:
        results.append(await client.call_tool("meet"))

    async with Client(mcp) as client:
        with anyio.fail_after(PATIENCE_SECONDS * 2):
            async with anyio.create_task_group() as group:
                group.start_soon(call, client)
                group.start_soon(call, client)
    assert [(result.is_error, _text(result)) for result in results] == [(False, "met")] * 2


async def test_sync_functions_run_off_the_loops_thread_and_async_ones_on_it() -> None:
    """Tools, resources and prompts alike; a context variable of the request is seen."""
    threads: dict[str, int] = {}
    mcp = MCPServer("Threads")

    @mcp.tool()
    async def on_loop() -> str:
        threads["loop"] = threading.get_ident()
        return TENANT.get()

    @mcp.tool()
    def tool() -> str:
        threads["tool"] = threading.get_ident()
        return TENANT.get()

    @mcp.resource("threads://resource")
    def resource() -> str:
        threads["resource"] = threading.get_ident()
        return "read"

    @mcp.prompt()
    def prompt() -> str:
        threads["prompt"] = threading.get_ident()
        return "prompted"

    TENANT.set("acme")
    async with Client(mcp) as client:
        assert _text(await client.call_tool("on_loop")) == "acme"
        assert _text(await client.call_tool("tool")) == "acme"
        await client.read_resource("threads://resource")
        await client.get_prompt("prompt")
    loop = threads.pop("loop")
    assert threads.keys() == {"tool", "resource", "prompt"}
    assert loop not in threads.values()


async def test_a_sync_tool_that_raises_or_takes_the_context_works_as_before() -> None:
    mcp = MCPServer("Threads")

    @mcp.tool()
    def broken() -> str:
        raise ValueError("the gears are stuck")

    @mcp.tool()
    def whoami(ctx: Context) -> str:
        return f"request {ctx.request_id} from {ctx.session.client_info.name}"

    async with Client(mcp) as client:
        broken_result = await client.call_tool("broken")
        who = await client.call_tool("whoami")
    assert broken_result.is_error
    assert _text(broken_result) == "Error executing tool: the gears are stuck"
    assert not who.is_error
    assert _text(who).startswith("request ")


async def test_a_cancelled_sync_call_lets_its_function_finish_in_its_thread() -> None:
    """No thread can be stopped: the cancelled call ends, the function runs on to its
    end in its thread, and the server goes on answering."""
    started, finished = anyio.Event(), anyio.Event()
    release = threading.Event()
    released: list[bool] = []
    mcp = MCPServer("Threads")

    @mcp.tool()
    def slow() -> str:
        anyio.from_thread.run_sync(started.set)
        released.append(release.wait(PATIENCE_SECONDS))
        anyio.from_thread.run_sync(finished.set)
        return "done"

    @mcp.tool()
    def quick() -> str:
        return "quick"

    async with Client(mcp) as client:
        with anyio.fail_after(PATIENCE_SECONDS * 2):
            async with anyio.create_task_group() as group:
                group.start_soon(client.call_tool, "slow")
                await started.wait()
                group.cancel_scope.cancel()
            release.set()
            await finished.wait()
            assert _text(await client.call_tool("quick")) == "quick"
    assert released == [True]


def _refusal(register: Any, function: Any) -> str:
    with pytest.raises(TypeError) as raised:
        register(function)
    return str(raised.value)


def test_generator_functions_are_refused_when_registered() -> None:
    """Either kind, as a tool, a resource or a prompt: a result is sent once, whole."""
    mcp = MCPServer("Streams")

    async def stream_async() -> AsyncIterator[str]:
        yield "a"

    def stream_sync() -> Iterator[str]:
        yield "a"

    registrations = [mcp.tool(), mcp.resource("streams://one"), mcp.prompt()]
    for register in registrations:
        for function in (stream_async, stream_sync):
            message = _refusal(register, function)
            assert message == (
                f"{function.__qualname__!r} is a generator function, but an MCP result is "
                "sent once, whole: nothing it yields would stream. Return a list instead "
                "(`return [...]`); a tool that shows progress while it works calls "
                "`await ctx.report_progress(...)`."
            )
    assert mcp._registry.tools == {}  # pyright: ignore[reportPrivateUsage]


async def test_a_sync_tool_ends_its_sse_stream_from_the_event_loops_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ending a request's stream wakes the event loop's waiters, which only the loop's
    thread may do: from a plain ``def`` tool, in a worker thread, it is handed over."""
    ended_on: list[int] = []
    end_stream = ResponseStream.close_stream

    def spy(handle: ResponseStream) -> None:
        ended_on.append(threading.get_ident())
        end_stream(handle)

    monkeypatch.setattr(ResponseStream, "close_stream", spy)
    mcp = MCPServer("Polling")

    @mcp.tool()
    def poll(ctx: Context) -> str:
        return f"ended: {ctx.close_sse_stream()}, tool on the loop: {on_the_loop()}"

    @mcp.tool()
    async def loop_thread() -> int:
        """The server's event loop's thread (under trio the tests serve HTTP from one
        of its own)."""
        return threading.get_ident()

    app = StreamableHTTPApp(mcp, retry_ms=0)
    async with serve(app) as server, Client(server.url, mode="legacy") as client:
        with anyio.fail_after(PATIENCE_SECONDS):
            result = await client.call_tool("poll")
            loop = await client.call_tool("loop_thread")
    assert _text(result) == "ended: True, tool on the loop: False"
    assert ended_on == [int(_text(loop))]


def on_the_loop() -> bool:
    """Whether this runs on an event loop's thread (not in a worker thread)."""
    try:
        anyio.from_thread.check_cancelled()
    except RuntimeError:
        return True
    return False


async def test_sync_tools_holding_every_thread_leave_answerbacks_own_threads_free() -> None:
    """Plain ``def`` tools used anyio's default thread limiter, which answerback's own
    blocking work (stdio that is not a pipe, path resolution, token files) takes its
    threads from too: forty tools waiting on something stalled what would bring it."""
    anyio.to_thread.current_default_thread_limiter().total_tokens = 2
    release = threading.Event()
    blocked = threading.Semaphore(0)
    mcp = MCPServer("Threads")

    @mcp.tool()
    def wait_for_release() -> str:
        blocked.release()
        release.wait(PATIENCE_SECONDS)
        return "released"

    @mcp.tool()
    async def own_blocking_work() -> str:
        return await anyio.to_thread.run_sync(lambda: "done in a thread")

    async with Client(mcp) as client, anyio.create_task_group() as group:
        for _ in range(2):
            group.start_soon(client.call_tool, "wait_for_release")
        waiting = anyio.CapacityLimiter(1)  # the test's own thread, outside both limiters
        for _ in range(2):
            await anyio.to_thread.run_sync(blocked.acquire, True, PATIENCE_SECONDS, limiter=waiting)
        with anyio.fail_after(PATIENCE_SECONDS):
            assert _text(await client.call_tool("own_blocking_work")) == "done in a thread"
        release.set()
