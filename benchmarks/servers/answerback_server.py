"""The benchmark server built with answerback: an echo tool and a tool that elicits once.

``ask`` uses ``ctx.elicit``, which answerback turns into a real ``elicitation/create``
request on a legacy connection and into an ``InputRequiredResult`` on 2026-07-28.

Usage: ``python answerback_server.py`` (stdio) or ``python answerback_server.py --http PORT``.
"""

from __future__ import annotations

import argparse

from pydantic import BaseModel

from answerback.server import Context, MCPServer


class Person(BaseModel):
    name: str


def build_server() -> MCPServer:
    """A fresh server with the two benchmark tools."""
    mcp = MCPServer("bench-answerback")

    @mcp.tool()
    async def echo(text: str) -> str:
        """Return ``text`` unchanged (``async def``: run inline, see the README's fairness
        notes)."""
        return text

    @mcp.tool()
    async def ask(ctx: Context) -> str:
        """Ask the client for a name once, then greet it."""
        answer = await ctx.elicit("What is your name?", schema=Person)
        if answer.action == "accept":
            return f"Hello, {answer.data.name}."
        return "No name."

    return mcp


def main() -> None:
    parser = argparse.ArgumentParser(description="answerback benchmark server")
    parser.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP")
    args = parser.parse_args()
    mcp = build_server()
    if args.http is None:
        mcp.run()
    else:
        mcp.run(transport="streamable-http", host="127.0.0.1", port=args.http, path="/mcp")


if __name__ == "__main__":
    main()
