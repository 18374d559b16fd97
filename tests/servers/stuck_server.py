"""A server whose plain ``def`` tool never returns: its worker thread waits for ever.

``python tests/servers/stuck_server.py stdio [--trio]`` serves stdin/stdout with
``mcp.run()``; ``python tests/servers/stuck_server.py http PORT`` serves streamable HTTP
(0 picks a free port; the start-up line on stderr says which). ``wait_for_ever`` says
"stuck" on stderr once its thread is blocked, so a test knows when to stop the server.
"""

from __future__ import annotations

import sys
import threading

from answerback.server import MCPServer

mcp = MCPServer("Stuck")

_never = threading.Event()


@mcp.tool()
def wait_for_ever() -> str:
    """Say "stuck" on stderr, then block this worker thread for ever (a lock never
    released, a socket without a timeout)."""
    print("stuck", file=sys.stderr, flush=True)
    _never.wait()
    return "unreachable"


if __name__ == "__main__":
    if sys.argv[1] == "http":
        mcp.run(transport="streamable-http", port=int(sys.argv[2]))
    else:
        mcp.run(backend="trio" if "--trio" in sys.argv[2:] else "asyncio")
