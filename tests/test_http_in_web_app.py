"""answerback's HTTP server inside a web application, as its developer meets it: the
application's own 401 keeps its words in the client's error, and a browser opening the
MCP address is told what it is.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from anyio.streams.text import TextReceiveStream
from http_support import (
    PATIENCE_SECONDS,
    free_port,
    raw_initialize,
    read_events,
    serve,
    session_headers,
)
from http_support.apps import http_app

from answerback import Client, MCPError
from answerback.transports.http import StreamableHTTPTransport

pytestmark = pytest.mark.anyio

BROWSER_ACCEPT = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


class KeyRequired:
    """A web application's own check in front of the MCP app: without the right
    ``X-Api-Key`` it answers ``status`` with ``body`` of type ``kind``."""

    def __init__(self, app: Any, status: int, kind: str, body: bytes) -> None:
        self.app, self.status, self.kind, self.body = app, status, kind, body

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or (b"x-api-key", b"secret") in scope["headers"]:
            await self.app(scope, receive, send)
            return
        headers = [(b"content-type", self.kind.encode())]
        await send({"type": "http.response.start", "status": self.status, "headers": headers})
        await send({"type": "http.response.body", "body": self.body})


@pytest.mark.parametrize(
    ("status", "kind", "body", "said"),
    [
        (
            401,
            "application/json",
            json.dumps({"detail": "missing or wrong X-Api-Key"}).encode(),
            "HTTP 401 Unauthorized: the server said 'missing or wrong X-Api-Key'",
        ),
        (
            403,
            "application/json",
            json.dumps({"error": {"message": "key revoked\n\x1b[2J on Monday"}}).encode(),
            "HTTP 403 Forbidden: the server said 'key revoked \\x1b[2J on Monday'",
        ),
        (
            401,
            "text/plain; charset=utf-8",
            b"Unauthorized: send your key",
            "HTTP 401 Unauthorized: the server said 'Unauthorized: send your key'",
        ),
        (
            401,
            "text/html",
            b"<h1>401</h1>",
            "HTTP 401 Unauthorized with a body that is not a JSON-RPC answer (text/html)",
        ),
    ],
    ids=["detail", "nested-error", "text", "html"],
)
async def test_the_applications_own_refusal_keeps_its_words_and_says_how_to_send_a_key(
    status: int, kind: str, body: bytes, said: str
) -> None:
    """A refusal without OAuth metadata, in a web framework's error shape: its words
    (folded to one line, control characters written out) and the way to send a
    credential are in the error; with the key sent so, the call goes through."""
    app = http_app()
    async with serve(KeyRequired(app, status, kind, body)) as running:
        with pytest.raises(MCPError) as caught:
            async with Client(running.url, mode="legacy"):
                pass
        transport = StreamableHTTPTransport(running.url, headers={"X-Api-Key": "secret"})
        async with Client(transport, mode="legacy") as client:
            tools = await client.list_tools()
        await running.call(app.close_sessions)
    message = caught.value.message
    assert said in message
    assert "send it with every request: StreamableHTTPTransport(url, headers={...})" in message
    assert tools.tools


async def test_a_browser_opening_the_mcp_address_is_told_what_it_is() -> None:
    """A person's browser gets a page saying this is an MCP endpoint for MCP clients; an
    MCP client's GET without a session still gets the JSON-RPC error it can read."""
    app = http_app()
    async with serve(app) as running, httpx2.AsyncClient() as http:
        browser = await http.get(running.url, headers={"accept": BROWSER_ACCEPT})
        client = await http.get(running.url, headers={"accept": "text/event-stream"})
    assert browser.status_code == 400
    assert browser.headers["content-type"].startswith("text/html")
    assert "serves the Model Context Protocol" in browser.text
    assert "Connect to it with an MCP client" in browser.text
    assert client.status_code == 400
    assert client.json()["error"]["message"] == "Bad Request: Mcp-Session-Id header required."


MOUNTED_APP = """
from starlette.applications import Starlette
from starlette.routing import Mount

from answerback.server import MCPServer

mcp = MCPServer("Mounted")


@mcp.tool()
def echo(text: str) -> str:
    return text


mcp_app = mcp.http_app(path="/mcp")
app = Starlette(
    routes=[Mount("/api", app=mcp_app)], lifespan=mcp_app.app.router.lifespan_context
)
"""


async def test_uvicorns_command_line_stops_a_mounted_app_with_a_stream_open(
    tmp_path: Path,
) -> None:
    """``uvicorn app:app`` serving an MCP app mounted in a Starlette app, a handshake-era
    session's GET stream open: on Ctrl-C uvicorn waits for the stream, then, past
    ``--timeout-graceful-shutdown``, cancels it. The stream ends as a finished response
    and the server stops with no traceback in its log (it wrote uvicorn's "Exception in
    ASGI application" with 60 lines of answerback's SSE code)."""
    (tmp_path / "mounted.py").write_text(MOUNTED_APP)
    port = free_port()
    argv = [
        sys.executable, "-m", "uvicorn", "mounted:app", "--app-dir", str(tmp_path),
        "--host", "127.0.0.1", "--port", str(port), "--timeout-graceful-shutdown", "1",
    ]  # fmt: skip
    url = f"http://127.0.0.1:{port}/api/mcp"
    server = await anyio.open_process(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    try:
        assert server.stderr is not None
        log = TextReceiveStream(server.stderr)
        said = ""
        with anyio.fail_after(PATIENCE_SECONDS):
            async for text in log:  # uvicorn logs to stderr
                said += text
                if "Uvicorn running on" in said:
                    break
            async with httpx2.AsyncClient(timeout=PATIENCE_SECONDS) as http:
                session_id, _ = await raw_initialize(http, url)
                headers = {**session_headers(session_id), "accept": "text/event-stream"}
                async with http.stream("GET", url, headers=headers) as stream:
                    events = read_events(stream)
                    await anext(events)  # the priming event: the stream is open
                    server.send_signal(signal.SIGINT)
                    rest = [event async for event in events]  # until the stream ends
            said += "".join([text async for text in log])  # until uvicorn exits
            code = await server.wait()
    finally:
        if server.returncode is None:
            server.kill()
        await server.aclose()
    assert code == 0, said
    assert rest == []
    assert "Application shutdown complete." in said
    assert "Traceback" not in said, said
    assert "Exception in ASGI application" not in said, said
