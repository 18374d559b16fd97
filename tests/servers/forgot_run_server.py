"""A server script with the classic mistake: it builds a server and never runs it.

It logs a line to stderr and exits at once with status 0.
"""

from __future__ import annotations

import sys

from answerback.server import MCPServer

mcp = MCPServer("Forgetful")


@mcp.tool()
def echo(text: str) -> str:
    """``text``, unchanged."""
    return text


print("forgetful server: tools registered", file=sys.stderr)
