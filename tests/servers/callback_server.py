"""A test server whose tools ask the client and wait, to see callbacks end with their call.

``ask`` asks for a name (in both eras) and waits for the answer. ``ask_until_stopped``
asks the same way but gives up on its question when ``stop`` is called with its tag: the
server itself cancels the request it sent (legacy). ``pid`` says which process to kill.

Run over stdio: ``python tests/servers/callback_server.py``; over streamable HTTP:
``python tests/servers/callback_server.py --http PORT``.
"""

from __future__ import annotations

import os
import sys

import anyio
from pydantic import BaseModel

from answerback.server import Context, MCPServer

mcp = MCPServer("Callbacks")

# The ``stop`` signal of each ``ask_until_stopped`` call, by the tag both are given.
_stops: dict[str, anyio.Event] = {}


class Name(BaseModel):
    name: str


@mcp.tool()
async def ask(ctx: Context) -> str:
    """Ask for a name; returns the action once someone answers."""
    return (await ctx.elicit("Who is there?", Name)).action


@mcp.tool()
async def ask_until_stopped(ctx: Context, tag: str) -> str:
    """Ask for a name, and withdraw the question when ``stop(tag)`` is called."""
    stop = _stops.setdefault(tag, anyio.Event())
    async with anyio.create_task_group() as tg:

        async def withdraw() -> None:
            await stop.wait()
            tg.cancel_scope.cancel()

        tg.start_soon(withdraw)
        answer = await ctx.elicit("Who is there?", Name)
        tg.cancel_scope.cancel()
        return answer.action
    return "withdrawn"


@mcp.tool()
async def stop(tag: str) -> str:
    """Make ``ask_until_stopped(tag)`` withdraw its question."""
    _stops.setdefault(tag, anyio.Event()).set()
    return "stopped"


@mcp.tool()
def pid() -> int:
    """This process's id."""
    return os.getpid()


if __name__ == "__main__":
    if "--http" in sys.argv:
        port = int(sys.argv[sys.argv.index("--http") + 1])
        mcp.run(transport="streamable-http", host="127.0.0.1", port=port)
    else:
        mcp.run()
