"""A server program (``mcp.run(transport="streamable-http")``) with a call that runs until
the server stops: ``python tests/servers/holding_http_server.py PORT`` (0 picks a free
port; the start-up line on stderr says which). ``hold`` writes "holding" on stdout once
it runs, so a test knows the call is in flight before it stops the server."""

from __future__ import annotations

import sys

import anyio

from answerback.server import MCPServer

mcp = MCPServer("Holding")


@mcp.tool()
async def hold() -> str:
    """Run until cancelled."""
    print("holding", flush=True)
    await anyio.sleep_forever()
    return "unreachable"


if __name__ == "__main__":
    mcp.run(transport="streamable-http", port=int(sys.argv[1]))
