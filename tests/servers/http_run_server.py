"""A server script run the way users run one: ``mcp.run(transport="streamable-http")``.

``python tests/servers/http_run_server.py PORT`` (0 picks a free port; the start-up line
on stderr says which).
"""

from __future__ import annotations

import asyncio
import sys

from answerback.server import Context, MCPServer

mcp = MCPServer("Running")


@mcp.tool()
def echo(text: str) -> str:
    """``text``, unchanged."""
    return text


@mcp.tool()
async def event_loop() -> str:
    """The module of the event loop this process serves on (``uvloop`` or ``asyncio.*``)."""
    return type(asyncio.get_running_loop()).__module__


@mcp.tool()
async def chatter(ctx: Context, count: int) -> str:
    """``count`` log messages of 1 MB each."""
    for _ in range(count):
        await ctx.info("x" * 1_000_000)
    return "done"


if __name__ == "__main__":
    mcp.run(transport="streamable-http", port=int(sys.argv[1]))
