"""A test server whose tools work on files inside the client's roots, and nowhere else.

``ctx.roots()`` lists them (cached as the era allows) and ``ctx.resolve_path`` refuses
any path outside them; a refusal reaches the client as a tool error.

Run over stdio: ``python tests/servers/roots_server.py``.
"""

from __future__ import annotations

from answerback.server import Context, MCPServer

mcp = MCPServer("Roots guard")


@mcp.tool()
async def my_roots(ctx: Context) -> list[str]:
    """The client's roots, as URIs (asked twice: the second comes from the cache)."""
    await ctx.roots()
    return [str(root.uri) for root in await ctx.roots()]


@mcp.tool()
async def read(ctx: Context, path: str) -> str:
    """The text of a file inside the roots."""
    return (await ctx.resolve_path(path)).read_text(encoding="utf-8")


@mcp.tool()
async def where(ctx: Context, path: str) -> str:
    """Where a path inside the roots really is."""
    return str(await ctx.resolve_path(path))


if __name__ == "__main__":
    mcp.run()
