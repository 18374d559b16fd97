"""A server whose lifespan calls ``sys.exit`` or raises ``KeyboardInterrupt``.

``python tests/servers/lifespan_exits_server.py (exit | ki) (entry | exit) WHERE``

WHERE is ``stdio`` or ``stdio-trio`` (``mcp.run()`` on that backend), or ``client`` or
``client-trio`` (a ``Client(mcp)`` block in ``anyio.run``, which prints what it raised).
"""

from __future__ import annotations

import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager

import anyio
import anyio.lowlevel

from answerback import Client
from answerback.server import MCPServer

KIND, WHEN, WHERE = sys.argv[1:4]
BACKEND = "trio" if WHERE.endswith("-trio") else "asyncio"


def fail() -> None:
    if KIND == "exit":
        sys.exit("DATABASE_URL is not set")
    raise KeyboardInterrupt


@asynccontextmanager
async def lifespan(server: MCPServer) -> AsyncGenerator[None, None]:
    await anyio.lowlevel.checkpoint()
    if WHEN == "entry":
        fail()
    yield
    await anyio.lowlevel.checkpoint()
    fail()


mcp = MCPServer("Exiting", lifespan=lifespan)


async def main() -> None:
    async with Client(mcp):
        print("opened", flush=True)


if __name__ == "__main__":
    if WHERE.startswith("stdio"):
        mcp.run(backend=BACKEND)
    else:
        try:
            anyio.run(main, backend=BACKEND)
        except BaseException as raised:
            print(f"raised {type(raised).__name__}: {raised}", flush=True)
