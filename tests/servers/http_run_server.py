"""A server script run the way users run one: ``mcp.run(transport="streamable-http")``.

``python tests/servers/http_run_server.py PORT`` (0 picks a free port; the start-up line
on stderr says which).
"""

from __future__ import annotations

import sys

from answerback.server import MCPServer

mcp = MCPServer("Running")


@mcp.tool()
def echo(text: str) -> str:
    """``text``, unchanged."""
    return text


if __name__ == "__main__":
    mcp.run(transport="streamable-http", port=int(sys.argv[1]))
