"""What a server says when a tool asks for something the client did not declare.

Any client can be on the other end (the TypeScript SDK's, say), and the tool's author
reads the same words as an exception: the missing capability is named as the
specification writes it, and answerback's own fix only as a marked hint.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from support import PATIENCE_SECONDS, RawPeer, peer_pair

from answerback import Client
from answerback.client import ClientRequestContext, Responder
from answerback.client._callbacks import CAPABILITY_FIXES
from answerback.server import Context, MCPServer
from answerback.server._session import _ANSWERBACK_FIX  # pyright: ignore[reportPrivateUsage]
from answerback.types import (
    ClientCapabilities,
    ElicitationCapability,
    ElicitRequestParams,
    ElicitResult,
    ErrorData,
    MCPError,
)

MODERN = "2026-07-28"

pytestmark = pytest.mark.anyio


def asking_server() -> MCPServer:
    mcp = MCPServer("Asker")

    @mcp.tool()
    async def name(ctx: Context) -> str:
        """Lets the refusal through to the client."""
        await ctx.session.elicit_form("Your name?", {"type": "object", "properties": {}})
        return "asked"

    @mcp.tool()
    async def told(ctx: Context) -> str:
        """What the tool's author sees when asking is refused."""
        try:
            await ctx.session.elicit_form("Your name?", {"type": "object", "properties": {}})
        except MCPError as refused:
            return f"{refused.code}: {refused.message} | {refused.data}"
        return "asked"

    return mcp


@asynccontextmanager
async def other_client(capabilities: dict[str, Any]) -> AsyncGenerator[RawPeer, None]:
    """A legacy client that is not answerback's, driven by hand."""
    with peer_pair() as (server_side, peer):
        async with anyio.create_task_group() as tg:
            tg.start_soon(asking_server().serve_connection, *server_side)
            params: dict[str, Any] = {
                "protocolVersion": "2025-11-25",
                "capabilities": capabilities,
                "clientInfo": {"name": "mcp-sdk-typescript-client", "version": "1"},
            }
            await peer.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
            await peer.receive()
            await peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            yield peer
            peer.write_stream.close()


async def call(peer: RawPeer, tool: str) -> dict[str, Any]:
    params: dict[str, Any] = {"name": tool, "arguments": {}}
    await peer.send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params})
    return await peer.receive()


HINT = f"With answerback's Client: {CAPABILITY_FIXES['elicitation']}."
FORM_HINT = f"With answerback's Client: {CAPABILITY_FIXES['elicitation.form']}."


async def test_a_client_without_the_capability_is_told_it_in_the_specifications_terms() -> None:
    """The official SDK's bare message stays (programs match on it); the reason names
    the capability as JSON, and the answerback advice says whom it is for."""
    with anyio.fail_after(PATIENCE_SECONDS):
        async with other_client({}) as peer:
            response = await call(peer, "name")
    assert response["error"] == {
        "code": -32601,
        "message": "Elicitation not supported",
        "data": {
            "reason": 'the client did not declare the capability {"elicitation": {}} in '
            f"initialize. {HINT}"
        },
    }


async def test_a_client_without_a_part_of_a_capability_is_told_which_part() -> None:
    with anyio.fail_after(PATIENCE_SECONDS):
        async with other_client({"elicitation": {"url": {}}}) as peer:
            response = await call(peer, "name")
    reason = 'the client did not declare the capability {"elicitation": {"form": {}}} in initialize'
    assert response["error"] == {
        "code": -32601,
        "message": f"Form elicitation not supported: {reason}. {FORM_HINT}",
        "data": {"reason": reason},
    }


async def test_the_tools_author_reads_the_same_words() -> None:
    with anyio.fail_after(PATIENCE_SECONDS):
        async with other_client({"elicitation": {"url": {}}}) as peer:
            response = await call(peer, "told")
    [block] = response["result"]["content"]
    assert block["text"].startswith(
        "-32601: Form elicitation not supported: the client did not declare the capability "
        '{"elicitation": {"form": {}}} in initialize. With answerback\'s Client: '
    )


class UrlOnly(Responder):
    """Declares URL mode only; never asked here (the server refuses the form first)."""

    def capabilities(self) -> ClientCapabilities:
        return ClientCapabilities(elicitation=ElicitationCapability(url={}))

    async def elicit(
        self, context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult | ErrorData:
        return ElicitResult(action="decline")


async def test_a_2026_request_is_told_which_client_capability_it_lacks() -> None:
    async with Client(asking_server(), mode=MODERN, responder=UrlOnly()) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("name")
    assert caught.value.code == -32021
    assert caught.value.message == (
        "Form elicitation not supported: the request did not declare the client capability "
        f'{{"elicitation": {{"form": {{}}}}}}. {FORM_HINT}'
    )
    assert caught.value.data == {"requiredCapabilities": {"elicitation": {"form": {}}}}


def test_the_servers_hint_is_the_clients_own_advice() -> None:
    """A server does not load client code, so it keeps a copy of the advice: the same
    words either end gives."""
    assert _ANSWERBACK_FIX == CAPABILITY_FIXES
