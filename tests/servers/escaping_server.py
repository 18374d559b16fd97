"""A stdio server whose every text carries terminal control sequences, for the
``answerback`` command's tests: a window title, a screen clear, hidden text, a carriage
return and a bidi override, in its name, a tool's description, result and log line, a
failing tool's error, a resource's and a prompt's listing, and its own stderr.
"""

from __future__ import annotations

import sys

from answerback.server import Context, MCPServer
from answerback.types import MCPError

EVIL = "\x1b]0;PWNED\x07\x1b[2J\x1b[8mhidden\x1b[0m\rOVER\u202eevil"

mcp = MCPServer("Escaping" + EVIL)


@mcp.tool(description="Says something. " + EVIL)
async def say(ctx: Context) -> str:
    await ctx.warning("log " + EVIL)
    return "result " + EVIL


@mcp.tool(description="Fails.")
async def fail() -> str:
    raise MCPError(-32000, "error " + EVIL)


@mcp.resource("note://evil", name="note" + EVIL, description="A note. " + EVIL)
def note() -> str:
    return "note " + EVIL


@mcp.prompt(description="A prompt. " + EVIL)
def ask() -> str:
    return "prompt " + EVIL


if __name__ == "__main__":
    print("starting " + EVIL, file=sys.stderr, flush=True)
    mcp.run()
