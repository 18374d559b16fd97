"""An answerback stdio server whose ``exit`` tool ends the process at once, exit code 3,
answering nothing: a client listening for list changes learns the connection is gone.

Run over stdio: ``python tests/servers/listen_then_exit_server.py``.
"""

from __future__ import annotations

import os

from answerback.server import MCPServer

mcp = MCPServer("Leaving")


@mcp.tool()
def exit() -> str:
    """End the server process without answering."""
    os._exit(3)


if __name__ == "__main__":
    mcp.run()
