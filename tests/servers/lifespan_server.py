"""A server with a lifespan, run the way users run one (``mcp.run()``).

``python tests/servers/lifespan_server.py LOG (ok | fail-entry | fail-exit) WHERE``

The lifespan writes ``entered`` and ``left`` lines to the file LOG (and says on stderr
when it has entered), and fails on entry or on exit when told to; the tool ``visits``
counts the calls made while it runs. WHERE is ``stdio`` (on asyncio), ``stdio-trio``, or
a PORT to serve streamable HTTP on (0 picks one; the start-up line says which).
"""

from __future__ import annotations

import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio

from answerback.server import Context, MCPServer

LOG, BEHAVIOUR, WHERE = Path(sys.argv[1]), sys.argv[2], sys.argv[3]


@dataclass
class Visits:
    count: int = 0


@asynccontextmanager
async def lifespan(server: MCPServer) -> AsyncGenerator[Visits, None]:
    if BEHAVIOUR == "fail-entry":
        raise ConnectionRefusedError("no database at db.example:5432")
    await anyio.Path(LOG).write_text(f"entered for {server.name}\n")
    print("lifespan entered", file=sys.stderr, flush=True)  # a test waits for it
    yield Visits()
    async with await anyio.open_file(LOG, "a") as log:
        await log.write("left\n")
    if BEHAVIOUR == "fail-exit":
        raise OSError("the pool would not close")


mcp = MCPServer("Counting", lifespan=lifespan)


@mcp.tool()
def visits(ctx: Context[Visits]) -> int:
    """How many calls, this one included, the lifespan has seen."""
    ctx.lifespan_context.count += 1
    return ctx.lifespan_context.count


if __name__ == "__main__":
    if WHERE.startswith("stdio"):
        mcp.run(backend="trio" if WHERE == "stdio-trio" else "asyncio")
    else:
        mcp.run(transport="streamable-http", port=int(WHERE))
