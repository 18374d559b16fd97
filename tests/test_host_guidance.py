"""What a host is told when a server cannot ask, prints on stdout, or a callback breaks.

- a 2026-07-28 official-SDK server whose tool asks with a request (``ctx.elicit``) fails
  the call with -32600; the error says to connect with ``mode="legacy"``;
- the ``message_handler`` that client-callbacks.md recommends keeps a stdio connection
  through a server's stray stdout lines, and ends it when the server is gone;
- a callback that raises is logged naming the request it was answering.
"""

from __future__ import annotations

import logging
import re
import sys
from typing import Any

import anyio
import pytest
from pydantic import BaseModel
from support import PATIENCE_SECONDS, REPO, SERVERS, TESTS

from answerback import Client, MCPError, StdioServer
from answerback.client import ClientRequestContext
from answerback.server import Context, MCPServer
from answerback.types import (
    ConnectionClosedError,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    InvalidRequestError,
    ListRootsResult,
    TextContent,
)

pytestmark = pytest.mark.anyio

OFFICIAL_SERVER = TESTS / "interop" / "official_server.py"
CLIENT_CALLBACKS = REPO / "docs" / "client-callbacks.md"


async def elicit(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"name": "Ada"})


async def sample(
    context: ClientRequestContext, params: CreateMessageRequestParams
) -> CreateMessageResult:
    return CreateMessageResult(role="assistant", content=TextContent(text="42"), model="m")


async def roots(context: ClientRequestContext) -> ListRootsResult:
    return ListRootsResult(roots=[])


@pytest.mark.interop
@pytest.mark.parametrize(
    ("tool", "method"),
    [
        ("ask_name", "elicitation/create"),
        ("ask_model", "sampling/createMessage"),
        ("list_my_roots", "roots/list"),
    ],
)
async def test_an_official_2026_server_whose_tool_asks_by_request_says_to_connect_legacy(
    tool: str, method: str
) -> None:
    """``auto`` picks 2026-07-28 for the SDK server; its ordinary ``ctx.elicit`` tools
    then fail there, and the error says what to do; ``legacy`` lets the tool ask."""
    server = StdioServer(sys.executable, [str(OFFICIAL_SERVER)], cwd=REPO)
    callbacks: dict[str, Any] = {
        "elicitation_callback": elicit,
        "sampling_callback": sample,
        "list_roots_callback": roots,
    }
    with anyio.fail_after(PATIENCE_SECONDS * 2):
        async with Client(server, **callbacks) as client:
            assert client.protocol_version == "2026-07-28"
            with pytest.raises(InvalidRequestError) as caught:
                await client.call_tool(tool)
        async with Client(server, mode="legacy", **callbacks) as client:
            answered = await client.call_tool(tool)
    message = caught.value.message
    assert message.startswith(f"Cannot send {method!r}: this transport context has no")
    assert 'connect to this server with Client(..., mode="legacy")' in message
    assert isinstance(caught.value.__cause__, InvalidRequestError)
    assert not answered.is_error


def documented_message_handler() -> Any:
    """The ``on_message`` of client-callbacks.md's message handler example, as written."""
    text = CLIENT_CALLBACKS.read_text(encoding="utf-8")
    blocks = re.findall(r"^```python\n(.*?)^```$", text, flags=re.DOTALL | re.MULTILINE)
    [block] = [block for block in blocks if "async def on_message" in block]
    namespace: dict[str, Any] = {}
    exec(block.replace("anyio.run(main)\n", ""), namespace)
    return namespace["on_message"]


async def test_the_documented_message_handler_keeps_a_connection_through_stray_output(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A server that prints a banner and stray lines: both calls come back, each line is
    logged by the handler, and nothing tears the connection down."""
    on_message = documented_message_handler()
    server = StdioServer(sys.executable, [str(SERVERS / "stray_output_server.py")])
    caplog.set_level(logging.WARNING, logger="host")
    with anyio.fail_after(PATIENCE_SECONDS):
        async with Client(server, mode="legacy", message_handler=on_message) as client:
            first = await client.call_tool("echo", {"text": "one"})
            second = await client.call_tool("echo", {"text": "two"})
    assert (first.text, second.text) == ("one", "two")
    logged = [record.getMessage() for record in caplog.records if record.name == "host"]
    assert logged
    assert all("It was skipped" in line for line in logged)


async def test_the_documented_message_handler_ends_the_block_when_the_server_is_gone() -> None:
    """A server that exits while the host waits elsewhere: the handler raises the
    ``ConnectionClosedError``, which stops the block at once."""
    on_message = documented_message_handler()
    server = StdioServer(sys.executable, [str(SERVERS / "dying_server.py"), "at-once"])
    with anyio.fail_after(PATIENCE_SECONDS), pytest.raises(ConnectionClosedError) as caught:
        async with Client(server, mode="legacy", message_handler=on_message):
            await anyio.sleep_forever()
    assert "exited with code 9" in caught.value.message


class CardHolder(BaseModel):
    name: str


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_callback_that_raises_is_logged_naming_the_request(
    caplog: pytest.LogCaptureFixture, mode: str
) -> None:
    """In a host with several connections the log line must say which request failed,
    and from which server, in either era (2026-07-28 asks in a result, answered outside
    any request handler; a legacy request's line said only "the server")."""
    mcp = MCPServer("Library")

    @mcp.tool()
    async def issue_card(ctx: Context) -> str:
        return (await ctx.elicit("Name?", schema=CardHolder)).action

    async def broken(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        raise RuntimeError("the form renderer crashed")

    # Legacy: on the client's logger, with the reference the server was sent instead.
    logged_on = "answerback.client" if mode == "legacy" else "answerback.jsonrpc"
    caplog.set_level(logging.ERROR, logger=logged_on)
    async with Client(mcp, mode=mode, elicitation_callback=broken) as client:
        with pytest.raises(MCPError):
            await client.call_tool("issue_card")
    [failed] = [record for record in caplog.records if record.name == logged_on]
    asked = (
        r"\(id \d+\)" if mode == "legacy" else r"\(input request 'elicit-[^']+'\)"
    ) + r" from the server 'Library' [\d.]+"
    referenced = (
        r" \(reference [0-9a-f]{8}\); the server was sent only the reference"
        if mode == "legacy"
        else ""
    )
    assert re.fullmatch(
        rf"request handler for 'elicitation/create' {asked} failed{referenced}",
        failed.getMessage(),
    ), failed.getMessage()
