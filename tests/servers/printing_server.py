"""An answerback stdio server whose tools write to stdout the ways real code does: a
``print``, and a child process that inherits stdout. Neither may reach the client.

Run over stdio: ``python tests/servers/printing_server.py [--backend trio]``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

import anyio

from answerback.server import MCPServer

mcp = MCPServer("Printing")


@mcp.tool()
def shout(text: str) -> str:
    """``print(text)``, then a child process prints ``text`` too; returns ``"done"``."""
    print(text)
    subprocess.run([sys.executable, "-c", f"print({f'{text} (from a child process)'!r})"])
    return "done"


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", default="asyncio")
    anyio.run(mcp.run_stdio_async, backend=parser.parse_args().backend)
