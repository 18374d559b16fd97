"""A test server that will not leave politely: it ignores SIGTERM and lingers after its
stdin closes, so only the client's last resort (SIGKILL) can end it.

Run over stdio: ``python tests/servers/stubborn_server.py``.
"""

from __future__ import annotations

import os
import signal
import time

from answerback.server import MCPServer

mcp = MCPServer("Stubborn")


@mcp.tool()
def pid() -> int:
    """This process's id."""
    return os.getpid()


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    mcp.run()
    while True:  # the client has gone; stay anyway
        time.sleep(3600)
