"""In-process clients sharing a server's lifespan close in any order, each at once: the
lifespan runs in a task none of them owns, is entered once and left after the last,
whose close waits for its exit and raises its error."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager

import anyio
import pytest
from support import PATIENCE_SECONDS

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
