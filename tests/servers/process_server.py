"""A test server that tells the client about its own process, and can die on request.

Run over stdio: ``python tests/servers/process_server.py [--trio] [--max-message-bytes N]``
(``mcp.run()``'s backend and message limit).
"""

from __future__ import annotations

import asyncio
import os
import sys

import anyio

from answerback.server import Context, MCPServer
from answerback.types import InputRequiredResult

mcp = MCPServer("Process")


@mcp.tool()
def environment_names() -> list[str]:
    """The names of the environment variables this process was started with."""
    return sorted(os.environ)


@mcp.tool()
def environment_value(name: str) -> str:
    """One environment variable's value ("<unset>" when it is not set)."""
    return os.environ.get(name, "<unset>")


@mcp.tool()
def working_directory() -> str:
    """Where this process runs (symlinks resolved)."""
    return os.path.realpath(os.getcwd())


@mcp.tool()
def pid() -> int:
    """This process's id."""
    return os.getpid()


@mcp.tool()
async def event_loop() -> str:
    """The module of the event loop this process serves on (``uvloop`` or ``asyncio.*``)."""
    return type(asyncio.get_running_loop()).__module__


@mcp.tool()
def exit_now(code: int) -> str:
    """End the process at once with ``code``, without answering (a crash, as seen outside)."""
    os._exit(code)


@mcp.tool()
def echo(text: str) -> str:
    """``text``, unchanged (big or small, any characters)."""
    return text


@mcp.tool()
def tell_stderr(text: str) -> str:
    """Write ``text`` to this process's stderr (where a server's own logs go)."""
    print(text, file=sys.stderr, flush=True)
    return "told"


@mcp.tool()
def print_to_stdout(text: str) -> str:
    """A classic server bug: ``print`` on stdout, where only protocol messages belong."""
    print(text, flush=True)
    return "printed"


@mcp.tool()
async def wait_forever() -> str:
    """Never finish (until cancelled or the process ends)."""
    await anyio.sleep_forever()
    return "unreachable"


@mcp.tool()
async def hold_until_cancelled() -> str:
    """Say "holding" on stderr and wait; when cancelled, say "cleaned up" (a tool's own
    cleanup, which must run however the server is stopped)."""
    print("holding", file=sys.stderr, flush=True)
    try:
        await anyio.sleep_forever()
    finally:
        print("cleaned up", file=sys.stderr, flush=True)
    return "unreachable"


@mcp.tool()
async def hang_in_cleanup() -> str:
    """Say "holding" on stderr and wait; when cancelled, say "cleaning up" and never
    finish (a cleanup that hangs, which only a second signal gets past)."""
    print("holding", file=sys.stderr, flush=True)
    try:
        await anyio.sleep_forever()
    finally:
        print("cleaning up", file=sys.stderr, flush=True)
        with anyio.CancelScope(shield=True):
            await anyio.sleep_forever()
    return "unreachable"


@mcp.tool()
async def hoard(ctx: Context, size: int) -> InputRequiredResult | str:
    """Keep ``size`` characters in a sealed ``requestState`` and ask for a retry (one
    2026-07-28 round); the retry gets "done"."""
    if ctx.open_state() is not None:
        return "done"
    return InputRequiredResult(request_state=ctx.seal_state({"blob": "y" * size}))


if __name__ == "__main__":
    options = sys.argv[1:]
    limit = "--max-message-bytes"
    mcp.run(
        backend="trio" if "--trio" in options else "asyncio",
        max_message_bytes=int(options[options.index(limit) + 1]) if limit in options else None,
    )
