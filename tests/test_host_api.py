"""What a host developer meets around the answering layer: the callbacks' context is
documented field by field, and a ``Client`` says what it is (never its credentials).
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import anyio
import pytest
from support import PATIENCE_SECONDS, HandDrivenServer

from answerback import Client, StdioServer
from answerback.client import ClientRequestContext
from answerback.server import MCPServer

DOCS = Path(__file__).parents[1] / "docs"


# -- the context, documented -------------------------------------------------------------------


def test_every_field_of_the_callbacks_context_is_documented() -> None:
    page = (DOCS / "client-callbacks.md").read_text(encoding="utf-8")
    section = page.split("## What a callback knows: `ClientRequestContext`", 1)[1]
    section = section.split("\n## ", 1)[0]
    listed = re.findall(r"^- `(\w+)`:", section, flags=re.MULTILINE)
    fields = [field.name for field in dataclasses.fields(ClientRequestContext)]
    assert listed == fields


# -- a Client's repr ---------------------------------------------------------------------------


def test_a_clients_repr_shows_where_it_connects_and_no_credential() -> None:
    url = "https://alice:s3cret@mcp.example.com:8443/mcp?api_key=TOKEN#frag"
    shown = repr(Client(url))
    assert (
        shown == "Client('https://mcp.example.com:8443/mcp?…', mode='auto', state='not connected')"
    )
    child = StdioServer("python", ["server.py", "--token", "TOKEN"], env={"API_KEY": "TOKEN"})
    assert repr(Client(child, mode="legacy")) == (
        "Client(StdioServer('python', args=[…]), mode='legacy', state='not connected')"
    )
    assert "TOKEN" not in shown + repr(Client(child))


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_clients_repr_follows_its_connection(mode: str) -> None:
    client = Client(MCPServer("Library"), mode=mode)
    start = f"Client(MCPServer('Library'), mode={mode!r}"
    assert repr(client) == f"{start}, state='not connected')"
    async with client:
        facts = f"protocol={client.protocol_version!r}, server='Library'"
        assert repr(client) == f"{start}, state='connected', {facts})"
    assert repr(client) == f"{start}, state='closed', {facts})"


@pytest.mark.anyio
async def test_a_clients_repr_says_when_the_server_went_away() -> None:
    transport = HandDrivenServer()
    async with anyio.create_task_group() as tg:
        tg.start_soon(transport.peer.answer_initialize)
        async with Client(transport, mode="legacy") as client:
            transport.peer.write_stream.close()
            with anyio.fail_after(PATIENCE_SECONDS):
                await client.session.endpoint.closed.wait()
            assert repr(client).startswith(
                "Client(HandDrivenServer, mode='legacy', state='server disconnected', protocol="
            )
