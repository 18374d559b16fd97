"""The client's JSON-RPC engine names the server as it introduced itself (its
``serverInfo``), in errors and log lines alike: in a host with several connections,
"the server" said nothing of which one."""

from __future__ import annotations

import anyio
import pytest

from answerback import Client
from answerback.server import MCPServer
from answerback.types import RequestTimeoutError

pytestmark = pytest.mark.anyio

ERAS = ["legacy", "2026-07-28"]


@pytest.mark.parametrize("mode", ERAS)
async def test_a_timeout_names_the_server_that_did_not_answer(mode: str) -> None:
    mcp = MCPServer("Slowpoke", version="2.5")

    @mcp.tool()
    async def nap() -> str:
        await anyio.sleep_forever()
        return "never"

    async with Client(mcp, mode=mode, read_timeout_seconds=0.05) as client:
        with pytest.raises(RequestTimeoutError) as caught:
            await client.call_tool("nap")
    assert caught.value.message.startswith(
        "No answer to 'tools/call' from the server 'Slowpoke' 2.5 within 0.05 s"
    )
