"""A server that opens what its tools share once, with ``MCPServer(lifespan=...)``.

The lifespan opens a SQLite database (standing for a connection pool) when the server
starts and closes it when the server stops; every call reads it as
``ctx.lifespan_context``. Run it on its own over stdio (``python
examples/lifespan_server.py --serve``), or as here, where a client starts it as a
subprocess, calls its tool twice, and prints the answers.
"""

import sqlite3
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager

import anyio

from answerback import Client, StdioServer
from answerback.server import Context, MCPServer


@asynccontextmanager
async def lifespan(server: MCPServer) -> AsyncGenerator[sqlite3.Connection, None]:
    database = sqlite3.connect(":memory:")
    database.execute("create table books (title text, author text)")
    database.execute("insert into books values ('Emma', 'Jane Austen'), ('Dune', 'Frank Herbert')")
    try:
        yield database
    finally:
        database.close()


mcp = MCPServer("Catalogue", lifespan=lifespan)


@mcp.tool()
async def author(title: str, ctx: Context[sqlite3.Connection]) -> str:
    """Who wrote the book called ``title``."""
    row = ctx.lifespan_context.execute(
        "select author from books where title = ?", (title,)
    ).fetchone()
    return row[0] if row else "not in the catalogue"


async def main() -> None:
    server = StdioServer(sys.executable, [__file__, "--serve"])
    async with Client(server) as client:
        for title in ("Emma", "Dune"):
            result = await client.call_tool("author", {"title": title})
            print(f"{title}: {result.structured_content}")


if __name__ == "__main__":
    if "--serve" in sys.argv:
        mcp.run()
    else:
        anyio.run(main)
