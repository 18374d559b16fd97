"""Streamable HTTP: requests to the MCP endpoint's path go straight to the endpoint,
while the lifespan, other paths and a mounted application still go through Starlette."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx2
import pytest
from http_support import serve
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount
from starlette.types import ASGIApp, Receive, Scope, Send

from answerback import Client
from answerback.server import AuthInfo, MCPServer
from answerback.types import TextContent

pytestmark = pytest.mark.anyio


def echo_server() -> MCPServer:
    mcp = MCPServer("Echo")

    @mcp.tool()
    def echo(text: str) -> str:
        """Return ``text``."""
        return text

    return mcp


class Counting:
    """An ASGI app that counts the HTTP requests it passes on to ``app``."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.paths: list[str] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            self.paths.append(scope["path"])
        await self.app(scope, receive, send)


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_endpoint_requests_skip_starlettes_router_and_other_paths_do_not(
    mode: str,
) -> None:
    mcp_app = echo_server().http_app()
    router = Counting(mcp_app.app.router)
    mcp_app.app.router = router  # type: ignore[assignment]  # to see what reaches it
    async with serve(mcp_app) as running, httpx2.AsyncClient() as http:
        async with Client(running.url, mode=mode) as client:
            result = await client.call_tool("echo", {"text": "straight"})
        elsewhere = await http.get(running.url.replace("/mcp", "/elsewhere"))
    assert result.content == [TextContent(text="straight")]
    assert elsewhere.status_code == 404
    assert router.paths == ["/elsewhere"]


async def test_middleware_added_to_the_starlette_app_sees_endpoint_requests() -> None:
    mcp_app = echo_server().http_app()
    seen: list[Counting] = []

    def counting(app: ASGIApp) -> Counting:
        seen.append(Counting(app))
        return seen[-1]

    mcp_app.app.add_middleware(counting)
    async with serve(mcp_app) as running, Client(running.url, mode="2026-07-28") as client:
        result = await client.call_tool("echo", {"text": "watched"})
    assert result.content == [TextContent(text="watched")]
    assert "/mcp" in seen[0].paths


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_mounted_app_is_served_through_its_parents_routes(mode: str) -> None:
    mcp_app = echo_server().http_app()
    parent: Any = Starlette(
        routes=[Mount("/api", app=mcp_app)], lifespan=mcp_app.app.router.lifespan_context
    )
    async with serve(parent) as running:
        url = running.url.replace("/mcp", "/api/mcp")
        async with Client(url, mode=mode) as client:
            result = await client.call_tool("echo", {"text": "mounted"})
    assert result.content == [TextContent(text="mounted")]


class HeaderReader:
    """An authenticator that refuses every request, saying what it read of its headers
    the ways Starlette's ``Headers`` offers."""

    routes: tuple[BaseRoute, ...] = ()

    async def authenticate(self, request: Request) -> AuthInfo | Response:
        headers = request.headers
        seen = {
            "get": headers.get("X-Tag"),
            "item": headers["x-TAG"],
            "in": "X-Tag" in headers,
            "missing": headers.get("x-absent", "default"),
            "list": headers.getlist("x-tag"),
        }
        return JSONResponse(seen, status_code=403)

    async def authorize(self, info: AuthInfo, message: Mapping[str, Any]) -> Response | None:
        return None


async def test_the_endpoints_request_headers_read_as_starlettes_do() -> None:
    """The endpoint indexes a request's headers once; a lookup still ignores case, the
    first of repeated headers wins and every value stays listed."""
    mcp_app = echo_server().http_app(auth=HeaderReader())
    async with serve(mcp_app) as running, httpx2.AsyncClient() as http:
        headers = [("x-tag", "first"), ("X-Tag", "second"), ("accept", "application/json")]
        reply = await http.post(running.url, content=b"{}", headers=headers)
    assert reply.status_code == 403
    assert reply.json() == {
        "get": "first",
        "item": "first",
        "in": True,
        "missing": "default",
        "list": ["first", "second"],
    }
