"""A server whose plain ``def`` tool never returns: its worker thread waits for ever.

``python tests/servers/stuck_server.py stdio [--trio]`` serves stdin/stdout with
``mcp.run()``; ``python tests/servers/stuck_server.py http PORT`` serves streamable HTTP
(0 picks a free port; the start-up line on stderr says which). ``wait_for_ever`` says
"stuck" on stderr once its thread is blocked, so a test knows when to stop the server.
After ``mcp.run()`` the program says "run returned" and, in its ``finally`` block,
"finally ran" on stderr, and exits with status 5: the stuck thread must change none of it.

``python tests/servers/stuck_server.py client [--trio]`` is a host other than
``mcp.run()``: a ``Client(mcp)`` block that calls ``wait_for_ever``, leaves once it is
stuck, and says "main returned" on stdout as ``anyio.run`` returns; the process must
then exit (status 0), the thread still stuck.
"""

from __future__ import annotations

import sys
import threading

import anyio
import anyio.to_thread

from answerback import Client
from answerback.server import MCPServer

mcp = MCPServer("Stuck")

_never = threading.Event()
_stuck = threading.Event()


@mcp.tool()
def wait_for_ever() -> str:
    """Say "stuck" on stderr, then block this worker thread for ever (a lock never
    released, a socket without a timeout)."""
    print("stuck", file=sys.stderr, flush=True)
    _stuck.set()
    _never.wait()
    return "unreachable"


async def leave_a_stuck_call() -> None:
    async with Client(mcp) as client, anyio.create_task_group() as group:
        group.start_soon(client.call_tool, "wait_for_ever")
        await anyio.to_thread.run_sync(_stuck.wait)
        group.cancel_scope.cancel()


if __name__ == "__main__":
    backend = "trio" if "--trio" in sys.argv[2:] else "asyncio"
    if sys.argv[1] == "client":
        anyio.run(leave_a_stuck_call, backend=backend)
        print("main returned", flush=True)
        sys.exit(0)
    try:
        if sys.argv[1] == "http":
            mcp.run(transport="streamable-http", port=int(sys.argv[2]))
        else:
            mcp.run(backend=backend)
        print("run returned", file=sys.stderr, flush=True)
    finally:
        print("finally ran", file=sys.stderr, flush=True)
    sys.exit(5)
