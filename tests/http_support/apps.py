"""Servers for the HTTP tests: the seed's Library server plus tools that make every
answer traceable to its own request (for the concurrency and fault tests)."""

from __future__ import annotations

import importlib.util
import sys
from typing import Any

import anyio
from pydantic import BaseModel

from answerback.server import Context, MCPServer
from answerback.transports.http import StreamableHTTPApp

from . import LIBRARY_SERVER


def library_server() -> MCPServer:
    """The ``mcp`` object of examples/library_server.py (imported once)."""
    name = "_answerback_http_library_server"
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, LIBRARY_SERVER)
        assert spec is not None
        assert spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    server = module.mcp
    assert isinstance(server, MCPServer)
    return server


class Answer(BaseModel):
    value: str


class CardHolder(BaseModel):
    name: str


def tagged_server() -> MCPServer:
    """The Library's ``issue_card`` plus ``echo_elicit``: a tool whose elicitation message
    names the call's tag, so a result can be checked against the request that made it."""
    mcp = MCPServer("HTTP test server")

    @mcp.tool()
    async def issue_card(ctx: Context) -> str:
        """Issue a new library card."""
        answer = await ctx.elicit("What name should go on the card?", schema=CardHolder)
        if answer.action == "accept":
            return f"Card issued to {answer.data.name}."
        return "No card issued."

    @mcp.tool()
    async def echo_elicit(ctx: Context, tag: str) -> str:
        """Ask the client about ``tag``; report the tag and the answer."""
        answer = await ctx.elicit(f"tag={tag}", schema=Answer)
        if answer.action != "accept":
            return f"{tag}:{answer.action}"
        return f"{tag}:{answer.data.value}"

    @mcp.tool()
    async def pause(seconds: float) -> str:
        """Sleep, then answer (a call that is in flight for a while)."""
        await anyio.sleep(seconds)
        return "done"

    return mcp


def http_app(server: MCPServer | None = None, **options: Any) -> StreamableHTTPApp:
    """A fresh app for ``server`` (default: ``tagged_server()``); ``options`` go to
    ``StreamableHTTPApp`` (so also ``retry_ms`` and ``keepalive_seconds``)."""
    return StreamableHTTPApp(server or tagged_server(), **options)
