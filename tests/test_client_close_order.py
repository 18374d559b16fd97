"""Clients left out of the order they were entered in: anyio's cancel scopes close only
in the task that opened them, in reverse order, so ``Client`` refuses such a close with
what to do, and the task's other clients carry on (``docs/broker.md``, "Servers that
come and go", shows the pattern that closes any one)."""

from __future__ import annotations

from contextlib import AsyncExitStack

import anyio
import pytest
from support import PATIENCE_SECONDS

from answerback import Client
from answerback.server import MCPServer
from answerback.types import ConnectionClosedError

pytestmark = pytest.mark.anyio


def tearoom() -> MCPServer:
    mcp = MCPServer("Tearoom")

    @mcp.tool()
    def greet(name: str) -> str:
        return f"Hello, {name}!"

    return mcp


async def test_a_client_closed_before_a_later_one_is_refused_and_the_others_carry_on() -> None:
    """anyio's "Attempted to exit a cancel scope that isn't the current task's current
    cancel scope" came out of the close, and cancelled the still-open client and the
    task's next one."""
    server = tearoom()
    first_stack, second_stack = AsyncExitStack(), AsyncExitStack()
    with anyio.fail_after(PATIENCE_SECONDS):
        first = await first_stack.enter_async_context(Client(server))
        second = await second_stack.enter_async_context(Client(server))
        with pytest.raises(RuntimeError, match=r"connected after it in the same task, is still"):
            await first_stack.aclose()
        assert (await second.call_tool("greet", {"name": "Ada"})).text == "Hello, Ada!"
        assert (await first.call_tool("greet", {"name": "Bo"})).text == "Hello, Bo!"  # left open
        async with Client(server) as third:
            assert (await third.call_tool("greet", {"name": "Cy"})).text == "Hello, Cy!"
        await second_stack.aclose()
        await first.__aexit__(None, None, None)  # in order now
        with pytest.raises(ConnectionClosedError):
            await first.call_tool("greet", {"name": "Di"})


async def test_a_client_closed_in_another_task_is_refused_saying_whose_it_is() -> None:
    server = tearoom()
    stack = AsyncExitStack()
    refused: list[str] = []

    async def close_elsewhere() -> None:
        try:
            await stack.aclose()
        except RuntimeError as exc:
            refused.append(str(exc))

    with anyio.fail_after(PATIENCE_SECONDS):
        client = await stack.enter_async_context(Client(server))
        async with anyio.create_task_group() as tg:
            tg.start_soon(close_elsewhere)
        (said,) = refused
        assert "closed in a task other than the one that connected it" in said
        assert "give each client a task of its own" in said
        assert (await client.call_tool("greet", {"name": "Ada"})).text == "Hello, Ada!"
        await client.__aexit__(None, None, None)
