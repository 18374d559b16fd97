"""A test server that withdraws the question on screen while its next question waits.

Its one tool, ``ask_twice``, asks two questions at once. The first goes on screen, the
second waits behind it. The server withdraws the first (cancels its request) when it
gets SIGUSR1, so a test withdraws it once it sees it shown; the tool writes the
server's process id to ``pid_file`` for that.

Run over stdio: ``python tests/servers/withdrawing_server.py``.
"""

from __future__ import annotations

import os
import signal

import anyio
from pydantic import BaseModel

from answerback.server import AcceptedElicitation, Context, MCPServer

mcp = MCPServer("Withdrawing")


class Name(BaseModel):
    name: str


@mcp.tool()
async def ask_twice(ctx: Context, pid_file: str) -> str:
    """Ask two questions; withdraw the first on SIGUSR1."""
    said: list[str] = []
    withdraw = anyio.CancelScope()

    async def first() -> None:
        with withdraw:
            await ctx.elicit("First question, to be withdrawn", Name)

    async def second() -> None:
        answer = await ctx.elicit("Second question: your name?", Name)
        said.append(answer.data.name if isinstance(answer, AcceptedElicitation) else "nobody")

    with anyio.open_signal_receiver(signal.SIGUSR1) as signals:
        await anyio.Path(pid_file).write_text(str(os.getpid()))
        async with anyio.create_task_group() as group:
            group.start_soon(first)
            group.start_soon(second)
            async for _ in signals:
                withdraw.cancel()
                break
    return f"The second answer came from {said[0]}."


if __name__ == "__main__":
    mcp.run()
