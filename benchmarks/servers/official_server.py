"""The benchmark server built with the official SDK (``mcp`` on PyPI).

``ask`` uses the SDK's request-time ``ctx.elicit`` (legacy connections only: the SDK
refuses it on 2026-07-28). ``ask_resolved`` asks the same question through the SDK's
resolver API, the one it supports on 2026-07-28 (as an ``InputRequiredResult``).

Usage: ``python official_server.py`` (stdio) or ``python official_server.py --http PORT``.
"""

from __future__ import annotations

import argparse
from typing import Annotated

from mcp.server import MCPServer
from mcp.server.mcpserver import Context, Elicit, ElicitationResult, Resolve
from pydantic import BaseModel


class Person(BaseModel):
    name: str


def _want_name() -> Elicit[Person]:
    return Elicit("What is your name?", Person)


def build_server() -> MCPServer:
    """A fresh server with the benchmark tools."""
    # WARNING, not the default INFO: no log line per request (answerback logs none either).
    mcp = MCPServer("bench-official", log_level="WARNING")

    @mcp.tool()
    async def echo(text: str) -> str:
        """Return ``text`` unchanged (``async def``: run inline, see the README's fairness
        notes)."""
        return text

    @mcp.tool()
    async def ask(ctx: Context) -> str:
        """Ask the client for a name once (legacy connections), then greet it."""
        answer = await ctx.elicit("What is your name?", schema=Person)
        if answer.action == "accept":
            return f"Hello, {answer.data.name}."
        return "No name."

    @mcp.tool()
    async def ask_resolved(
        answer: Annotated[ElicitationResult[Person], Resolve(_want_name)],
    ) -> str:
        """``ask`` through a resolver: works on both eras."""
        if answer.action == "accept":
            return f"Hello, {answer.data.name}."
        return "No name."

    return mcp


def main() -> None:
    parser = argparse.ArgumentParser(description="official-SDK benchmark server")
    parser.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP")
    args = parser.parse_args()
    mcp = build_server()
    if args.http is None:
        mcp.run()
    else:
        mcp.run(
            transport="streamable-http",
            host="127.0.0.1",
            port=args.http,
            streamable_http_path="/mcp",
        )


if __name__ == "__main__":
    main()
