"""A server for the load and leak tests: one tool that asks a question per call.

``double(n)`` asks the client for ``2 * n`` and returns ``"n:answer"``, so a test can
check that every answer reached the call that asked for it (nothing misrouted), and
``slow_ask`` asks and then waits until it is cancelled (for the leak tests). It also
counts, per call, how many questions it asked and how many calls are running.

Run over stdio: ``python tests/servers/load_server.py``.
"""

from __future__ import annotations

import anyio
from pydantic import BaseModel

from answerback.server import AcceptedElicitation, Context, MCPServer

mcp = MCPServer("Load")

running_calls = 0
"""Calls inside a tool right now (in-process tests read it to see nothing is left)."""


class Doubled(BaseModel):
    value: int


@mcp.tool()
async def double(ctx: Context, n: int) -> str:
    """Ask the client to double ``n``; report ``n`` and its answer."""
    global running_calls
    running_calls += 1
    try:
        answer = await ctx.elicit(f"n={n}", schema=Doubled)
        if not isinstance(answer, AcceptedElicitation):
            return f"{n}:{type(answer).__name__}"
        return f"{n}:{answer.data.value}"
    finally:
        running_calls -= 1


@mcp.tool()
async def running() -> int:
    """How many calls are inside a tool right now (for tests over stdio)."""
    return running_calls


@mcp.tool()
async def slow_ask(ctx: Context, n: int) -> str:
    """Ask, then work for ever: only a cancellation ends this call."""
    global running_calls
    running_calls += 1
    try:
        await ctx.elicit(f"n={n}", schema=Doubled)
        await anyio.sleep_forever()
        raise AssertionError("unreachable")
    finally:
        running_calls -= 1


if __name__ == "__main__":
    mcp.run()
