"""Running a ``StreamableHTTPApp`` under uvicorn with a shutdown that does not hang.

uvicorn waits for every open response to finish before it runs the application's
lifespan shutdown, and an SSE stream waiting on a person's answer never finishes by
itself. So the server here first ends the MCP sessions (open requests get an error,
streams close), then lets uvicorn shut down as usual.
"""

from __future__ import annotations

import socket
from typing import Any

import anyio
import uvicorn

from answerback.transports.http._server import StreamableHTTPApp


class MCPUvicornServer(uvicorn.Server):
    """A ``uvicorn.Server`` that ends the app's MCP sessions before waiting on responses."""

    def __init__(self, config: uvicorn.Config, app: StreamableHTTPApp) -> None:
        super().__init__(config)
        self.mcp_app = app

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        await self.mcp_app.close_sessions()
        await super().shutdown(sockets)


def uvicorn_server(
    app: StreamableHTTPApp, *, host: str = "127.0.0.1", port: int = 8000, **config: Any
) -> MCPUvicornServer:
    """A server for ``app``; ``config`` goes to ``uvicorn.Config`` (log_level, ssl...)."""
    config.setdefault("log_level", "warning")
    return MCPUvicornServer(uvicorn.Config(app, host=host, port=port, lifespan="on", **config), app)


async def serve_uvicorn(
    app: StreamableHTTPApp, *, host: str = "127.0.0.1", port: int = 8000, **config: Any
) -> None:
    """Serve ``app`` in the running event loop until interrupted."""
    await uvicorn_server(app, host=host, port=port, **config).serve()


def run_uvicorn(
    app: StreamableHTTPApp, *, host: str = "127.0.0.1", port: int = 8000, **config: Any
) -> None:
    """Serve ``app`` until interrupted (Ctrl-C): the blocking entry point."""
    anyio.run(lambda: serve_uvicorn(app, host=host, port=port, **config))
