"""The listing a 2026-07-28 call makes to learn its ``Mcp-Param-*`` headers, against a
server whose ``tools/list`` never ends or is broken: the listing stops at its bounds,
the call is sent anyway without headers after one warning, and a server that then
refuses the call for a missing header gets an error that says why it was missing.

The server is a real one (uvicorn on loopback) whose ``tools/list`` a wrapper answers.
"""

from __future__ import annotations

import json
import logging
from typing import Annotated, Any

import anyio
import pytest
from http_support import PATIENCE_SECONDS, read_request_body, serve
from pydantic import Field

import answerback.client._pages as pages
from answerback import Client
from answerback.server import MCPServer
from answerback.types import HeaderMismatchError, TextContent

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"


def regions() -> MCPServer:
    mcp = MCPServer("Regions")

    @mcp.tool()
    def echo(text: str) -> str:
        """Echo the text."""
        return text

    @mcp.tool()
    def where(region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})]) -> str:
        """Mirrors the region."""
        return region

    return mcp


class HostileListing:
    """Answers every 2026-07-28 ``tools/list`` with ``page(n)`` (n counting from 0), or
    HTTP 502 where that is ``None``; everything else reaches the real server."""

    def __init__(self, app: Any, page: Any) -> None:
        self.app, self.page = app, page
        self.listings = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or (b"mcp-method", b"tools/list") not in scope["headers"]:
            await self.app(scope, receive, send)
            return
        request = json.loads(await read_request_body(receive))
        result = self.page(self.listings)
        self.listings += 1
        if result is None:  # a proxy's failure
            await send({"type": "http.response.start", "status": 502, "headers": []})
            await send({"type": "http.response.body", "body": b"Bad Gateway"})
            return
        body = json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": body})


def endless(n: int) -> dict[str, Any]:
    """A page of 100 fresh tools, and a cursor to yet another page."""
    tools = [{"name": f"t{n}-{i}", "inputSchema": {"type": "object"}} for i in range(100)]
    return {"tools": tools, "nextCursor": f"page {n + 1}"}


def broken(n: int) -> dict[str, Any]:
    return {"tools": "nope"}


def unlearned(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        record.getMessage()
        for record in caplog.records
        if "could not learn which tool arguments" in record.getMessage()
    ]


async def test_an_endless_tool_list_stops_at_its_bound_and_the_call_is_sent(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A server whose pages never end made one call list a thousand pages (2 GB)."""
    monkeypatch.setattr(pages, "MAX_ITEMS", 250)
    hostile = HostileListing(regions().http_app(), endless)
    async with serve(hostile) as running, Client(running.url, mode=MODERN) as client:
        with anyio.fail_after(PATIENCE_SECONDS):
            first = await client.call_tool("echo", {"text": "hi"})
            second = await client.call_tool("echo", {"text": "again"})
    assert first.content == [TextContent(text="hi")]
    assert second.content == [TextContent(text="again")]
    assert hostile.listings == 3
    [warning] = unlearned(caplog)
    assert "ran past 250 tools" in warning
    assert "(300 tools" in warning
    assert "sent without those headers until the tool list changes" in warning


async def test_a_tool_list_past_its_bytes_stops(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(pages, "MAX_BYTES", 10_000)
    hostile = HostileListing(regions().http_app(), endless)
    async with serve(hostile) as running, Client(running.url, mode=MODERN) as client:
        with anyio.fail_after(PATIENCE_SECONDS):
            result = await client.call_tool("echo", {"text": "hi"})
    assert result.content == [TextContent(text="hi")]
    assert hostile.listings == 3
    [warning] = unlearned(caplog)
    assert "10000 bytes" in warning


async def test_a_broken_tool_list_does_not_fail_a_call_that_needs_no_headers(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The call worked in the handshake era; it failed on 2026-07-28 with an error
    about a ``tools/list`` the host never made."""
    hostile = HostileListing(regions().http_app(), broken)
    async with serve(hostile) as running, Client(running.url, mode=MODERN) as client:
        with anyio.fail_after(PATIENCE_SECONDS):
            result = await client.call_tool("echo", {"text": "hi"})
    assert result.content == [TextContent(text="hi")]
    [warning] = unlearned(caplog)
    assert "listing failed" in warning
    assert "'tools/list'" in warning


@pytest.mark.parametrize("by_round", [False, True])
async def test_a_call_refused_for_headers_it_could_not_learn_says_why(by_round: bool) -> None:
    hostile = HostileListing(regions().http_app(), broken)
    async with serve(hostile) as running, Client(running.url, mode=MODERN) as client:
        call = client.call_tool_round if by_round else client.call_tool
        with anyio.fail_after(PATIENCE_SECONDS), pytest.raises(HeaderMismatchError) as caught:
            await call("where", {"region": "eu"})
    message = caught.value.message
    assert "refused the call of tool 'where' for its headers" in message
    assert "Mcp-Param-Region" in message
    assert "could not learn them: listing failed" in message
    assert "list_tools() the page that holds the tool" in message


async def test_a_tool_listed_by_hand_gets_its_headers_though_the_hidden_listing_failed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    good = {"tools": [{"name": "where", "inputSchema": regions_schema()}]}
    pages = iter([{"tools": "nope"}, good])

    def page(n: int) -> dict[str, Any]:
        return next(pages)

    hostile = HostileListing(regions().http_app(), page)
    async with serve(hostile) as running, Client(running.url, mode=MODERN) as client:
        with anyio.fail_after(PATIENCE_SECONDS):
            assert (await client.call_tool("echo", {"text": "x"})).content
            await client.list_tools()
            result = await client.call_tool("where", {"region": "eu"})
    assert result.content == [TextContent(text="eu")]


def regions_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {"region": {"type": "string", "x-mcp-header": "Region"}},
        "required": ["region"],
    }


async def test_a_listing_that_failed_on_its_way_is_tried_again_by_the_next_call(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A proxy's 502 is not the server's list: the call goes without headers this once."""
    pages = iter([None, {"tools": [{"name": "where", "inputSchema": regions_schema()}]}])

    def page(n: int) -> dict[str, Any] | None:
        return next(pages)

    hostile = HostileListing(regions().http_app(), page)
    async with serve(hostile) as running, Client(running.url, mode=MODERN) as client:
        with anyio.fail_after(PATIENCE_SECONDS):
            first = await client.call_tool("echo", {"text": "x"})
            second = await client.call_tool("where", {"region": "eu"})
    assert first.content == [TextContent(text="x")]
    assert second.content == [TextContent(text="eu")]
    assert hostile.listings == 2
    [warning] = unlearned(caplog)
    assert "HTTP 502" in warning
    assert "this call is sent without those headers, and the next one lists again" in warning
