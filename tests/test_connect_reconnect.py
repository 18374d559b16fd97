"""``reconnect`` in ``answerback connect``, driven on the session's own parts (what a
person sees of it runs in tmux: ``test_cli_keyboard_fixes``)."""

from __future__ import annotations

import gc
import weakref
from contextlib import AsyncExitStack
from pathlib import Path

import anyio
import pytest
from http_support import serve
from rich.console import Console
from support import PATIENCE_SECONDS

from answerback.cli._connect import Session
from answerback.cli._targets import Target
from answerback.interact import Roots
from answerback.server import MCPServer

pytestmark = pytest.mark.anyio

RECONNECTS = 20


async def test_many_reconnects_hold_only_the_connection_in_use(tmp_path: Path) -> None:
    """Each connection's exit stack was entered into the session's, and a reconnect
    only closed it: the session kept every replaced one until it ended."""
    mcp = MCPServer("tea")

    @mcp.tool()
    def greet(name: str) -> str:
        return f"Hello, {name}!"

    async with serve(mcp.http_app()) as running:
        session = Session(
            [Target(name="tea", url=running.url)],
            Roots([tmp_path]),
            history=tmp_path / "history",
            timeout=None,
            log_level="info",
        )
        session.console = Console(record=True, width=200)
        (server,) = session.servers
        connect = session._connect  # pyright: ignore[reportPrivateUsage]
        reconnect = session._reconnect  # pyright: ignore[reportPrivateUsage]
        held: list[weakref.ref[AsyncExitStack]] = []
        with anyio.fail_after(PATIENCE_SECONDS):
            async with AsyncExitStack() as stack:  # as Session.run sets it up
                session._stack = stack  # pyright: ignore[reportPrivateUsage]
                await stack.enter_async_context(session.broker)
                session.task_group = await stack.enter_async_context(anyio.create_task_group())
                await connect(stack, server)
                for _ in range(RECONNECTS):
                    assert server.connection is not None
                    assert server.client is not None
                    held.append(weakref.ref(server.connection))
                    await reconnect(["tea"])
                assert server.client is not None
                assert (await server.client.call_tool("greet", {"name": "Ada"})).content
                gc.collect()
                alive = {id(stack) for ref in held if (stack := ref()) is not None}
                assert len(alive) <= 1, f"{len(alive)} exit stacks held"
                session.task_group.cancel_scope.cancel()
    said = session.console.export_text()
    assert said.count("Connected to tea") == RECONNECTS + 1, said
