"""Streamable HTTP server, legacy era: a client that leaves its stream unread holds the
server's memory to a bound in bytes as well as in messages. A call writing large log
messages waits once ``UNSENT_BYTES_HELD`` wait for its client, and loses nothing when
the client reads; a GET stream left unread past the bound is ended, its events kept for
resuming."""

from __future__ import annotations

import contextlib
import json
import socket
from collections.abc import AsyncGenerator

import anyio
import httpx2
import pytest
from http_support import (
    PATIENCE_SECONDS,
    Flag,
    raw_initialize,
    read_events,
    rpc,
    serve,
    session_headers,
)

from answerback.jsonrpc._channel import open_channel
from answerback.server import Context, MCPServer
from answerback.transports.http import InMemoryEventStore
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
