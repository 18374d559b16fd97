"""Follow-ups of stop 53: small defects a user meets.

- A server's name and version are its own words: every repr, error and log line that
  names the server writes out their control characters and cuts them short, so a
  hostile server forges no log line and restyles no terminal; a version other than a
  plain token is quoted, so its words ("verified by answerback") never read as ours.
- ``ctx.elicit(..., response_type=Model)``, FastMCP's spelling, says to pass
  ``schema=Model`` (the caller's own model, or a model of one field for a scalar); every
  other wrong keyword keeps Python's own error, and type checkers still see the
  signature as written.
- The long double solidus (U+20EB) and reverse solidus (U+20E5) overlays in a host read
  as a path separator, as the short and long solidus ones do: high risk.
- An approved loopback address written in IPv6 form (``[::ffff:127.0.0.1]:8080``) is
  kept with its port, as every other spelling of this computer is: the approval matches
  its own verdict again, and survives ``list()`` and ``ApprovedDomains(...)``.
- What the docs say of a handshake-era HTTP client killed mid-call: its call and open
  question live until the session idles out, then the tool is cancelled.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import pytest
from http_support import raw_initialize, read_events, rpc, serve, session_headers
from http_support.apps import http_app
from pydantic import BaseModel
from support import PATIENCE_SECONDS, HandDrivenServer, RawPeer

from answerback import Client
from answerback.client import InvalidServerResultError
from answerback.client._session import describe_server
from answerback.jsonrpc import JSONObject
from answerback.server import Context, MCPServer
from answerback.types import Implementation
from answerback.urls import ApprovedDomains, ReasonCode, RiskLevel, judge_url

pytestmark = pytest.mark.anyio

HOSTILE_VERSION = "1.0\n\x1b[2JINFO all checks passed\u202e"
"""A version that would start a forged log line, clear the screen and reverse the text."""

LONG_NAME = "Library" + "!" * 5000


@asynccontextmanager
async def introduced_as(server_info: JSONObject) -> AsyncGenerator[tuple[Client, RawPeer], None]:
    """A legacy ``Client`` whose hand-driven server introduces itself as ``server_info``."""
    transport = HandDrivenServer()
    peer = transport.peer

    async def handshake() -> None:
        request = await peer.receive()
        result: JSONObject = {
            "protocolVersion": request["params"]["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": server_info,
        }
        await peer.send({"jsonrpc": "2.0", "id": request["id"], "result": result})
        assert await peer.receive() == {"jsonrpc": "2.0", "method": "notifications/initialized"}

    with anyio.fail_after(PATIENCE_SECONDS):
        async with anyio.create_task_group() as tg:
            tg.start_soon(handshake)
            async with Client(transport, mode="legacy") as client:
                yield client, peer


def assert_told_safely(printed: str) -> None:
    """``printed`` names the hostile server with its words written out and cut."""
    assert not {"\n", "\x1b", "\u202e"} & set(printed)
    assert "1.0\\n\\x1b[2JINFO all checks passed\\u202e" in printed
    assert "Library!!!" in printed
    assert "!" * 100 not in printed


async def test_a_servers_version_and_name_are_printed_written_out_and_cut() -> None:
    async with introduced_as({"name": LONG_NAME, "version": HOSTILE_VERSION}) as (client, peer):
        assert_told_safely(repr(client.session))

        async def answer_badly() -> None:
            request = await peer.receive()
            await peer.send({"jsonrpc": "2.0", "id": request["id"], "result": {"tools": 5}})

        async with anyio.create_task_group() as tg:
            tg.start_soon(answer_badly)
            with pytest.raises(InvalidServerResultError) as caught:
                await client.list_tools()
            assert_told_safely(str(caught.value))
            assert str(caught.value).startswith("The server 'Library!!!")


async def test_the_clients_repr_writes_out_and_cuts_a_hostile_servers_name() -> None:
    hostile_name = "Library\n\x1b[2JINFO all checks passed\u202e" + "!" * 5000
    async with introduced_as({"name": hostile_name, "version": "1.0"}) as (client, _):
        shown = repr(client)
    assert not {"\n", "\x1b", "\u202e"} & set(shown)
    assert "server='Library\\n\\x1b[2JINFO all checks passed\\u202e!!!" in shown
    assert "!" * 100 not in shown


@pytest.mark.parametrize(
    ("version", "named"),
    [
        ("1.0 (verified by answerback)", "The server 'Bank' '1.0 (verified by answerback)'"),
        ("1.0.2-rc.1+build_7", "The server 'Bank' 1.0.2-rc.1+build_7"),
        ("1.0\\n", "The server 'Bank' '1.0\\\\n'"),  # a backslash and n, not a newline
        ("1.0\nx", "The server 'Bank' '1.0\\nx'"),
        (" 2.1 ", "The server 'Bank' 2.1"),
        ("", "The server 'Bank'"),
        ("9" * 100, "The server 'Bank' " + "9" * 63 + "…"),
    ],
)
def test_a_version_is_quoted_unless_it_is_a_plain_token(version: str, named: str) -> None:
    """A version that is not a plain token is the server's words, and reads as such."""
    assert describe_server(Implementation(name="Bank", version=version)) == named


class Confirm(BaseModel):
    ok: bool


def fastmcp_port() -> MCPServer:
    """A server ported from FastMCP, its ``ctx.elicit`` calls still half in the old
    spelling (the keywords are passed through a dict, as no type checker would let
    them be written)."""
    mcp = MCPServer("Port")
    old_spelling: dict[str, Any] = {"response_type": Confirm}
    old_scalar: dict[str, Any] = {"response_type": bool}
    misspelt: dict[str, Any] = {"schma": Confirm}

    @mcp.tool()
    async def old(ctx: Context) -> str:
        await ctx.elicit("Proceed?", **old_spelling)
        return "asked"

    @mcp.tool()
    async def scalar(ctx: Context) -> str:
        await ctx.elicit("Proceed?", **old_scalar)
        return "asked"

    @mcp.tool()
    async def typo(ctx: Context) -> str:
        await ctx.elicit("Proceed?", **misspelt)
        return "asked"

    return mcp


async def test_elicit_with_fastmcps_response_type_says_to_pass_schema() -> None:
    async with Client(fastmcp_port(), mode="legacy") as client:
        result = await client.call_tool("old", {})
    assert result.is_error
    assert "ctx.elicit() takes the model as schema=, not response_type=" in result.text
    assert result.text.endswith("ctx.elicit(message, schema=Confirm).")


async def test_elicit_with_a_scalar_response_type_says_to_ask_with_a_model_of_one_field() -> None:
    async with Client(fastmcp_port(), mode="legacy") as client:
        result = await client.call_tool("scalar", {})
    assert result.is_error
    assert "class Answer(BaseModel): value: bool" in result.text
    assert "ctx.elicit(message, schema=Answer)" in result.text


async def test_elicit_with_another_wrong_keyword_keeps_pythons_error() -> None:
    async with Client(fastmcp_port(), mode="legacy") as client:
        result = await client.call_tool("typo", {})
    assert result.is_error
    assert "unexpected keyword argument 'schma'" in result.text


def test_elicit_keeps_its_signature_for_tools_that_read_it() -> None:
    assert list(inspect.signature(Context.elicit).parameters) == ["self", "message", "schema"]


@pytest.mark.parametrize(
    ("url", "ace"),
    [
        ("https://example.com\u20ebevil.net/", "xn--comevil-9g8c.net"),  # long double solidus
        ("https://example.com\u20e5evil.net/", "xn--comevil-wf8c.net"),  # reverse solidus
    ],
)
def test_every_slash_overlay_in_a_host_is_high_risk_and_shown_in_ace(url: str, ace: str) -> None:
    verdict = judge_url(url)
    assert verdict.level is RiskLevel.HIGH_RISK, verdict.explain()
    assert ReasonCode.PUNCTUATION_LOOKALIKE in verdict.codes
    assert verdict.display.host.endswith(ace)


def test_an_approved_loopback_address_in_ipv6_form_matches_itself_and_round_trips() -> None:
    url = "http://[::ffff:127.0.0.1]:8080/callback"
    approved = ApprovedDomains()
    site = approved.approve(judge_url(url))
    assert site == "[::ffff:7f00:1]:8080"
    assert site in approved
    assert judge_url(url, approved_domains=approved).approved
    saved = ApprovedDomains(list(approved))
    assert list(saved) == [site]
    assert judge_url(url, approved_domains=saved).approved
    assert not judge_url("http://[::ffff:127.0.0.1]:2375/", approved_domains=saved).approved


def server_holding_a_lock_while_it_asks(outcome: list[str], released: threading.Event) -> MCPServer:
    """A tool that asks, noting how its wait ended (a thread's event: under trio the
    server runs on an asyncio loop of its own, in another thread)."""
    mcp = MCPServer("Booking desk")

    @mcp.tool()
    async def book(ctx: Context) -> str:
        try:
            await ctx.elicit("Book it?", schema=Confirm)
        except anyio.get_cancelled_exc_class():
            outcome.append("cancelled")
            raise
        finally:
            released.set()
        return "booked"

    return mcp


async def test_a_vanished_clients_call_ends_with_its_idle_session() -> None:
    """What docs/transports.md says of a handshake-era client killed mid-call: hanging
    up cancels nothing, and the call (with the question it waits on) is cancelled only
    when the session idles out, so the tool's ``finally`` runs then."""
    outcome: list[str] = []
    released = threading.Event()
    app = http_app(server_holding_a_lock_while_it_asks(outcome, released), session_idle_seconds=0.3)
    async with serve(app) as running, httpx2.AsyncClient(timeout=PATIENCE_SECONDS) as http:
        session_id, _ = await raw_initialize(http, running.url, elicitation={})
        call = rpc("tools/call", {"name": "book", "arguments": {}}, id=1)
        with anyio.fail_after(PATIENCE_SECONDS):
            async with http.stream(
                "POST", running.url, json=call, headers=session_headers(session_id)
            ) as response:
                async for event in read_events(response):
                    if event.message is not None:
                        assert event.message["method"] == "elicitation/create"
                        break
            await anyio.to_thread.run_sync(released.wait, PATIENCE_SECONDS)
    assert released.is_set()
    assert outcome == ["cancelled"]
    assert session_id not in app.sessions
