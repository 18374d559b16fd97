"""A 5xx is the server (or a proxy) failing, not a statement about protocol eras: the
client says what the server said, in every mode; ``auto`` tries the handshake once after
it (a server of the handshake era may 500 on a method it does not know), and says what
both answers were if that fails too. A pinned 2026-07-28 client used to report a mounted
app whose lifespan never ran, or a stopping server's 503, as a server that "speaks only
the handshake era"."""

from __future__ import annotations

import json
from typing import Any

import pytest
from http_support import serve
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route

from answerback import Client
from answerback.server import MCPServer
from answerback.types import ConnectionClosedError

pytestmark = pytest.mark.anyio

MODES = ["2026-07-28", "auto", "legacy"]


def mounted_without_lifespan() -> Any:
    """The mistake p1 met: the parent app is not given the MCP app's lifespan."""
    mcp_app = MCPServer("forgotten").http_app()
    return Starlette(routes=[Mount("/api", app=mcp_app)])


@pytest.mark.parametrize("mode", MODES)
async def test_a_mounted_app_without_its_lifespan_is_reported_as_its_500(mode: str) -> None:
    async with serve(mounted_without_lifespan()) as running:
        url = running.url.replace("/mcp", "/api/mcp")
        with pytest.raises(ConnectionClosedError) as caught:
            async with Client(url, mode=mode):
                pass
    message = caught.value.message
    if mode == "auto":  # the handshake tried next fails alike
        assert message.startswith("The server failed on 'server/discover' (2026-07-28): ")
        message = message.split(". The handshake tried next ('initialize') failed too: ")[1]
    assert message.startswith("Connection failed: HTTP 500 Internal Server Error: ")
    assert "lifespan is not running" in message
    assert "lifespan=mcp_app.app.router.lifespan_context" in message
    assert "handshake era" not in message
    assert caught.value.data["httpStatus"] == 500


class StoppingPeer:
    """Answers every POST with the 503 of a server stopping, its error without an id
    and no ``Retry-After`` (so the client does not send it again); records the methods."""

    def __init__(self) -> None:
        self.methods: list[str] = []

    def app(self) -> Starlette:
        async def mcp(request: Request) -> Response:
            self.methods.append(json.loads(await request.body())["method"])
            error = {"code": -32000, "message": "Service Unavailable: the server is stopping."}
            return JSONResponse({"jsonrpc": "2.0", "id": None, "error": error}, status_code=503)

        return Starlette(routes=[Route("/mcp", mcp, methods=["POST"])])


@pytest.mark.parametrize("mode", MODES)
async def test_a_503_to_the_first_request_says_the_server_is_not_taking_requests(
    mode: str,
) -> None:
    peer = StoppingPeer()
    async with serve(peer.app()) as running:
        with pytest.raises(ConnectionClosedError) as caught:
            async with Client(running.url, mode=mode):
                pass
    message = caught.value.message
    failed = (
        "Connection failed: HTTP 503 Service Unavailable: Service Unavailable: the server "
        "is stopping: the server, or a proxy in front of it, is not taking requests now"
    )
    assert "handshake era" not in message
    if mode == "auto":  # the handshake tried once (a legacy server may 5xx on discover)
        assert message.startswith("The server failed on 'server/discover' (2026-07-28): ")
        assert message.count(failed) == 2
        assert ". The handshake tried next ('initialize') failed too: " in message
        assert peer.methods == ["server/discover", "initialize"]
    else:
        assert message.startswith(failed)
        assert peer.methods == ["initialize" if mode == "legacy" else "server/discover"]


async def test_a_5xx_error_without_an_id_mid_session_fails_that_request_only() -> None:
    """Once connected, the same 500 fails the request and leaves the connection open."""
    failing = {"on": False}

    mcp_app = MCPServer("flaky").http_app()

    async def maybe_fail(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and failing["on"]:
            error = {"code": -32603, "message": "Internal error: the database is down."}
            body = json.dumps({"jsonrpc": "2.0", "id": None, "error": error}).encode()
            headers = [(b"content-type", b"application/json")]
            await send({"type": "http.response.start", "status": 500, "headers": headers})
            await send({"type": "http.response.body", "body": body})
            return
        await mcp_app(scope, receive, send)

    parent = Starlette(
        routes=[Mount("/", app=maybe_fail)], lifespan=mcp_app.app.router.lifespan_context
    )
    async with serve(parent) as running, Client(running.url, mode="2026-07-28") as client:
        failing["on"] = True
        with pytest.raises(ConnectionClosedError) as caught:
            await client.list_tools()
        failing["on"] = False
        tools = await client.list_tools()
    assert caught.value.message.startswith(
        "Request failed: HTTP 500 Internal Server Error: Internal error: the database is "
        "down: the server failed while handling the request."
    )
    assert tools.tools == []
