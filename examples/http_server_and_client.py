"""The README's Library over streamable HTTP: its server and client, both generations.

This script serves the Library server (``library_server.py``) over streamable HTTP on a
free port of 127.0.0.1, in its own event loop, then connects the Library client to it:
first ``library_client.main`` itself, unchanged (``mode="legacy"``), then the client's
elicitation callback over a 2026-07-28 connection and with ``mode="auto"``, which
discovers that the server speaks 2026-07-28::

    python examples/http_server_and_client.py

To run the two ends as separate programs instead, on the fixed address
http://127.0.0.1:8000/mcp::

    python examples/library_server.py --http
    python examples/library_client.py --http http://127.0.0.1:8000/mcp
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager

import anyio
import library_client
from library_server import mcp

from answerback import Client
from answerback.transports.http import StreamableHTTPApp, uvicorn_server


@asynccontextmanager
async def serving(app: StreamableHTTPApp) -> AsyncGenerator[str, None]:
    """Serve ``app`` on a port the OS picks until the block ends; yields the URL."""
    server = uvicorn_server(app, host="127.0.0.1", port=0)
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve)
        while not server.started:  # noqa: ASYNC110 (uvicorn offers no event to await)
            await anyio.sleep(0.01)
        port = server.servers[0].sockets[0].getsockname()[1]
        try:
            yield f"http://127.0.0.1:{port}{app.path}"
        finally:
            server.should_exit = True  # ends open sessions first, then stops


async def main() -> None:
    async with serving(mcp.http_app()) as url:
        print("== library_client.main, unchanged (mode='legacy') ==")
        await library_client.main(url)
        for mode in ("2026-07-28", "auto"):
            print(f"== library_client's callback, mode={mode!r} ==")
            async with Client(
                url, mode=mode, elicitation_callback=library_client.handle_elicitation
            ) as client:
                result = await client.call_tool("issue_card")
                print(f"protocol {client.protocol_version}: {result.content}")


if __name__ == "__main__":
    anyio.run(main)
