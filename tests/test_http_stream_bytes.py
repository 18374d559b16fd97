"""Streamable HTTP server: a client that leaves its stream unread holds the server's
memory to a bound in bytes as well as in messages. A call writing large log messages
waits once ``UNSENT_BYTES_HELD`` wait for its client, and loses nothing when the client
reads; a GET stream left unread past the bound is ended, its events kept for resuming;
a 2026-07-28 listen stream left unread past it ends with an error answer saying so."""

from __future__ import annotations

import contextlib
import json
import re
import socket
from collections.abc import AsyncGenerator
from typing import Any

import anyio
import httpx2
import pytest
from http_support import (
    PATIENCE_SECONDS,
    POST_HEADERS,
    Flag,
    raw_initialize,
    read_events,
    rpc,
    serve,
    session_headers,
)

from answerback.jsonrpc._channel import open_channel
from answerback.server import Context, MCPServer
from answerback.transports.http import InMemoryEventStore, StreamableHTTPApp
from answerback.transports.http import _serving as serving_module
from answerback.transports.http._legacy_session import Event, LegacySession
from answerback.transports.http._serving import UNSENT_BYTES_HELD, event_bytes

pytestmark = pytest.mark.anyio

BYTES_HELD = 512 * 1024
"""``UNSENT_BYTES_HELD`` for the call test: what the kernel's socket buffers absorb
first (some MiB) is the same whatever the bound, so a small one keeps it quick."""
LINE_BYTES = 64 * 1024
CHATTER = 200
"""200 messages of 64 KiB: far fewer than the bound in messages (1,024), and far more
bytes than the socket buffers hold, so that bytes pile up for the stream."""


@contextlib.asynccontextmanager
async def reluctant_reader() -> AsyncGenerator[httpx2.AsyncClient, None]:
    """A client whose sockets take in a quarter of a MiB at most until it reads."""
    small_buffer = [(socket.SOL_SOCKET, socket.SO_RCVBUF, 256 * 1024)]
    transport = httpx2.AsyncHTTPTransport(socket_options=small_buffer)
    async with httpx2.AsyncClient(transport=transport, timeout=PATIENCE_SECONDS) as client:
        yield client


async def test_a_call_of_large_messages_left_unread_holds_at_most_the_byte_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The count bound alone let 1,024 messages of any size wait for a client that does
    not read. The call's tool is held once more than ``UNSENT_BYTES_HELD`` wait (the
    stream holds at most one message more); when the client reads, every message comes,
    in order, then the answer."""
    monkeypatch.setattr(serving_module, "UNSENT_BYTES_HELD", BYTES_HELD)
    reached_the_bound = Flag()
    peak = [0]
    mcp = MCPServer("chatty")
    app = mcp.http_app()

    @mcp.tool()
    async def chatter(ctx: Context, session_id: str, n: int) -> str:
        for i in range(n):
            await ctx.info(f"{i} {'x' * LINE_BYTES}")
            listener = app.sessions[session_id].request_streams[5].listener
            held = listener.buffered_bytes() if listener is not None else 0
            peak[0] = max(peak[0], held)
            if held > BYTES_HELD:
                reached_the_bound.set()
        return "done"

    async with serve(app) as server, reluctant_reader() as http:
        session_id, _ = await raw_initialize(http, server.url)
        arguments = {"name": "chatter", "arguments": {"session_id": session_id, "n": CHATTER}}
        with anyio.fail_after(PATIENCE_SECONDS):
            call = rpc("tools/call", arguments, id=5)
            headers = session_headers(session_id)
            async with http.stream("POST", server.url, json=call, headers=headers) as response:
                await reached_the_bound.wait()
                messages = [e.message async for e in read_events(response) if e.message]
    logs = [m["params"]["data"].split()[0] for m in messages if "method" in m]
    assert logs == [str(i) for i in range(CHATTER)]
    assert messages[-1]["result"]["content"] == [{"type": "text", "text": "done"}]
    one_message = len(json.dumps(messages[0]))
    assert peak[0] <= BYTES_HELD + one_message, f"{peak[0]} bytes waited for the client"


async def test_a_get_stream_left_unread_is_ended_past_the_byte_bound() -> None:
    """Broadcasts must not wait for one client, nor pile up for it: a GET stream holding
    more than ``UNSENT_BYTES_HELD`` unread is ended (what it holds is still read out);
    what comes next waits in the backlog for the client to resume."""
    session = LegacySession("s", InMemoryEventStore(), max_backlog=100)
    stream = session.standalone()
    stream.listener, received = open_channel[Event](weigh=event_bytes)
    listener = stream.listener
    update = {
        "jsonrpc": "2.0",
        "method": "notifications/resources/updated",
        "params": {"uri": "note://" + "n" * (256 * 1024)},
    }
    for _ in range(2 * UNSENT_BYTES_HELD // (256 * 1024)):
        await session.deliver_broadcast(update)
        if session.standalone().listener is None:
            break
    else:
        pytest.fail("the GET stream was never ended")
    assert UNSENT_BYTES_HELD < listener.buffered_bytes() <= UNSENT_BYTES_HELD + 300 * 1024
    assert [event async for event in received] != []  # read out, then the stream ends
    assert listener.buffered_bytes() == 0
    await session.deliver_broadcast(update)
    assert len(session.backlog) == 1


UPDATE_URI = "note://" + "n" * 4000
"""A subscribed URI about as long as a server keeps (``SUBSCRIBED_URI_CHARS``): each
update is 4 KB on the wire."""
UPDATES = 3000
"""3000 updates of 4 KB: more than the socket buffers (some MiB) and the byte bound hold
together, so that the stream is ended; with the bound in messages alone (1,024), some
4 MB waited for the client first."""
MODERN_META: dict[str, Any] = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
}


async def test_a_listen_stream_left_unread_is_ended_past_the_byte_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A 2026-07-28 listen stream lives long, and its client may leave it unread: with
    the count bound alone 1,024 large updates piled up for it. Past ``UNSENT_BYTES_HELD``
    it is ended (the stream holds at most one message more), with an error answer that
    says how much was left unread and what to do. (Its bound is lowered here, so that
    the count bound, hit past about 4 MB of such updates, cannot end it first.)"""
    monkeypatch.setattr(serving_module, "UNSENT_BYTES_HELD", BYTES_HELD)
    peak = [0]  # the most updates waiting on the server for the client
    mcp = MCPServer("notes")

    @mcp.resource("note://{name}")
    def note(name: str) -> str:
        return name

    app = mcp.http_app()

    async def broadcast_updates() -> None:
        routes = app.stateless._routes  # pyright: ignore[reportPrivateUsage]
        for _ in range(UPDATES):
            await mcp.notify_resource_updated(UPDATE_URI)
            held = [route.send.buffered() for route in routes.values() if route.broadcasts]
            peak[0] = max([peak[0], *held])

    params = {"notifications": {"resourceSubscriptions": [UPDATE_URI]}, "_meta": MODERN_META}
    listen = rpc("subscriptions/listen", params, id=9)
    headers = {
        **POST_HEADERS,
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "subscriptions/listen",
    }
    async with serve(app) as server, reluctant_reader() as http:
        with anyio.fail_after(PATIENCE_SECONDS):
            async with http.stream("POST", server.url, json=listen, headers=headers) as response:
                events = read_events(response)
                acknowledged = await anext(events)
                assert acknowledged.message is not None
                assert acknowledged.message["method"] == "notifications/subscriptions/acknowledged"
                await server.call(broadcast_updates)
                messages: list[dict[str, Any]] = []
                async for event in events:
                    if event.message is not None:
                        messages.append(event.message)
                        if len(messages) == UPDATES:  # all came: the stream was not ended
                            break
    *updates, ended = messages
    assert all(update["params"]["uri"] == UPDATE_URI for update in updates)
    assert "error" in ended, f"the unread listen stream was not ended ({len(updates)} updates)"
    assert ended["id"] == 9
    one_message = len(json.dumps(updates[0]))  # every update weighs the same
    assert peak[0] * one_message <= BYTES_HELD + one_message, f"{peak[0]} updates waited"
    assert re.fullmatch(
        r"Ended: the client left \d+ notifications \(\d+ bytes\) of this stream unread, "
        r"more than the 1024 notifications or 4194304 bytes a stream holds\. "
        r"Read a listen stream as it comes, then listen again\.",
        ended["error"]["message"],
    )


async def test_a_sessions_messages_waiting_for_a_get_stream_weigh_the_byte_bound_at_most() -> None:
    """With no GET stream open, a session keeps what is meant for one (up to
    ``max_backlog`` messages): in JSON-response mode, a call's log messages too, of any
    size. They weigh ``UNSENT_BYTES_HELD`` at most as well (the oldest go first); the
    GET stream opened then gets the newest, in order."""
    mcp = MCPServer("chatty")
    app = StreamableHTTPApp(mcp, json_response=True)
    peak = [0]

    @mcp.tool()
    async def chatter(ctx: Context, session_id: str, n: int) -> str:
        backlog = app.sessions[session_id].backlog
        for i in range(n):
            await ctx.info(f"{i} {'x' * LINE_BYTES}")
            peak[0] = max(peak[0], sum(len(data) for _, data, _ in backlog))
        return "done"

    chatter_count = 2 * UNSENT_BYTES_HELD // LINE_BYTES
    async with serve(app) as server, httpx2.AsyncClient(timeout=PATIENCE_SECONDS) as http:
        session_id, _ = await raw_initialize(http, server.url)
        arguments = {"name": "chatter", "arguments": {"session_id": session_id, "n": chatter_count}}
        headers = session_headers(session_id)
        with anyio.fail_after(PATIENCE_SECONDS):
            answer = await http.post(
                server.url, json=rpc("tools/call", arguments, id=5), headers=headers
            )
            assert answer.json()["result"]["content"] == [{"type": "text", "text": "done"}]
            one_message = LINE_BYTES + 200
            assert UNSENT_BYTES_HELD - one_message < peak[0] <= UNSENT_BYTES_HELD + one_message
            session = app.sessions[session_id]
            kept = len(session.backlog)
            assert session.backlog_bytes == sum(len(data) for _, data, _ in session.backlog)
            get_headers = {**headers, "accept": "text/event-stream"}
            async with http.stream("GET", server.url, headers=get_headers) as response:
                logs: list[int] = []
                async for event in read_events(response):
                    if event.message is not None:
                        logs.append(int(event.message["params"]["data"].split()[0]))
                        if len(logs) == kept:
                            break
    assert logs == list(range(chatter_count - kept, chatter_count))
    assert session.backlog_bytes == 0
