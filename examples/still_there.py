"""A long task that checks its client is still there, with ``ctx.session.ping()``,
before each batch of work: a client that has gone (or hangs) stops the task early
instead of leaving it to run for nobody.

The server is in this process; a client calls the task in each protocol generation.
Run: ``python examples/still_there.py``. It prints::

    legacy: 3 batches, the client answered 3 pings
    2026-07-28: 3 batches, unchecked: Ping not supported

On 2026-07-28 a server asks a client nothing outside the questions of a round, so
``ping()`` raises ``MCPError`` there, and the task goes on without checking.
"""

from __future__ import annotations

import anyio
import anyio.lowlevel

from answerback import Client, MCPError
from answerback.server import Context, MCPServer
from answerback.types import TextContent

mcp = MCPServer("Indexer")


@mcp.tool()
async def reindex(ctx: Context, batches: int = 3) -> str:
    """Rebuild the index in batches, checking before each that the client answers."""
    answered = 0
    unchecked = ""
    for done in range(batches):
        if not unchecked:
            try:
                with anyio.fail_after(5):  # a client that never answers must not hang us
                    await ctx.session.ping()
            except TimeoutError:
                return f"stopped after {done} batches: the client no longer answers"
            except MCPError as exc:
                unchecked = exc.message
            else:
                answered += 1
        await anyio.lowlevel.checkpoint()  # stands in for one batch of work
    if unchecked:
        return f"{batches} batches, unchecked: {unchecked}"
    return f"{batches} batches, the client answered {answered} pings"


async def main() -> None:
    for mode in ("legacy", "2026-07-28"):
        async with Client(mcp, mode=mode) as client:
            result = await client.call_tool("reindex")
        [content] = result.content
        assert isinstance(content, TextContent)
        print(f"{mode}: {content.text}")


if __name__ == "__main__":
    anyio.run(main)
