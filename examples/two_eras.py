"""One set of callbacks, both protocol generations: the README's Library, unchanged.

The Library server (``library_server.py``) and the Library client's elicitation
callback (``library_client.py``) are used exactly as they are written. The same
callback answers the same tool over a handshake-era connection (``mode="legacy"``: the
server sends ``elicitation/create`` during the call) and over a 2026-07-28 connection
(the call comes back with an ``InputRequiredResult``; the client answers it through the
callback and sends the call again). Both in-process and over stdio::

    python examples/two_eras.py
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
from library_client import handle_elicitation
from library_server import mcp

from answerback import Client, StdioServer

SERVER = Path(__file__).with_name("library_server.py")
MODES = ("legacy", "2026-07-28")


async def issue_card(label: str, target: Any, mode: str) -> None:
    async with Client(target, mode=mode, elicitation_callback=handle_elicitation) as client:
        result = await client.call_tool("issue_card")
        print(f"{label:<10} mode={mode!r:<12} protocol {client.protocol_version}: {result.content}")


async def main() -> None:
    for mode in MODES:
        await issue_card("in-process", mcp, mode)
    for mode in MODES:
        await issue_card("stdio", StdioServer(sys.executable, [str(SERVER)]), mode)


if __name__ == "__main__":
    anyio.run(main)
