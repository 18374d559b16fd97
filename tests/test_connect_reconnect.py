"""``reconnect`` in ``answerback connect``, driven on the session's own parts (what a
person sees of it runs in tmux: ``test_cli_keyboard_fixes``)."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import anyio
import pytest
from http_support import serve
from support import PATIENCE_SECONDS

from answerback.cli._connect import Session
from answerback.cli._output import PlainConsole
from answerback.cli._targets import Target
from answerback.client import Client
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
        session.console = PlainConsole(record=True, width=200)
        (server,) = session.servers
        connect = session._connect  # pyright: ignore[reportPrivateUsage]
        reconnect = session._reconnect  # pyright: ignore[reportPrivateUsage]
        held: list[weakref.ref[Client]] = []
        with anyio.fail_after(PATIENCE_SECONDS):
            async with session.broker, anyio.create_task_group() as task_group:  # as run does
                session.task_group = task_group
                await connect([server])
                for _ in range(RECONNECTS):
                    assert server.client is not None
                    held.append(weakref.ref(server.client))
                    await reconnect(["tea"])
                assert server.client is not None
                assert (await server.client.call_tool("greet", {"name": "Ada"})).content
                gc.collect()
                alive = [client for ref in held if (client := ref()) is not None]
                assert not alive, f"{len(alive)} replaced clients held"
                task_group.cancel_scope.cancel()
    said = session.console.export_text()
    assert said.count("Connected to tea") == RECONNECTS + 1, said
