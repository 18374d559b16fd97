"""A test server for arguments a client misspells: a tool and a prompt with an optional
argument each, whose misspelt name must be refused rather than leave it at its default.

Run over stdio: ``python tests/servers/misspelt_server.py``.
"""

from __future__ import annotations

from typing import Literal

from answerback.server import MCPServer

mcp = MCPServer("Misspelt")


@mcp.tool()
def search(query: str, limit: int = 10) -> str:
    """Echo what it was given, so a caller can see which limit applied."""
    return f"{query} limit={limit}"


@mcp.prompt()
def review(topic: str, tone: Literal["brief", "detailed"] = "brief") -> str:
    return f"Review {topic}, {tone}."


if __name__ == "__main__":
    mcp.run()
