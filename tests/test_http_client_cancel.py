"""A call the client gives up on (cancelled, or timed out) closes its response stream.

Legacy servers send no response to a cancelled request, so a stream left open is held
for ever: after as many cancellations as the pool has connections the client was dead.
On 2026-07-28 closing the stream is the cancellation itself (there is no
``notifications/cancelled`` over HTTP), and the server stops the tool's work.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import anyio
import anyio.from_thread
import anyio.lowlevel
import httpx2
import pytest
from http_support import PATIENCE_SECONDS, read_request_body, replaying, serve
from http_support.apps import http_app

from answerback import Client, MCPError
from answerback.server import Context, MCPServer
from answerback.transports.http import StreamableHTTPTransport
from answerback.types import TextContent

pytestmark = pytest.mark.anyio

BATCH = 50
BATCHES = 4
POOL = BATCH + 10
"""Room for one batch only: without closing the streams the second batch cannot start."""


class Tally:
    """Tools running on the server: started, and still running (events, no polling).

    The server may run in a thread of its own (on trio it runs on an asyncio loop
    beside the test's), so a change made there is handed to the test's loop.
    """

    def __init__(self) -> None:
        self.started = 0
        self.running = 0
        self._changed = anyio.Event()
        self._thread = threading.get_ident()
        self._token = anyio.lowlevel.current_token()

    def change(self, started: int, running: int) -> None:
        def apply() -> None:
            self.started += started
            self.running += running
            self._changed.set()
            self._changed = anyio.Event()

        if threading.get_ident() == self._thread:
            apply()
        else:
            anyio.from_thread.run_sync(apply, token=self._token)

    async def wait_until(self, *, started: int | None = None, running: int | None = None) -> None:
        while (started is not None and self.started < started) or (
            running is not None and self.running != running
        ):
            await self._changed.wait()


def hanging_server(tally: Tally) -> MCPServer:
    mcp = MCPServer("Hang")

    @mcp.tool()
    async def hang(ctx: Context) -> str:
        """Tell the client it started, then wait until cancelled."""
        tally.change(started=1, running=1)
        try:
            await ctx.info("started")  # on 2026-07-28 this makes the answer an SSE stream
            await anyio.sleep_forever()
        finally:
            tally.change(started=0, running=-1)
        return "never"

    @mcp.tool()
    def ping_tool() -> str:
        return "pong"

    return mcp


class StreamsForEver:
    """A legacy server (raw ASGI) that opens an SSE stream for every ``tools/call`` and
    never answers it or closes it, as a server that drops cancelled requests does: only
    the client hanging up ends such a stream. It counts what it sees."""

    def __init__(self) -> None:
        self.streams = Tally()
        self.calls: set[object] = set()
        self.cancelled: list[object] = []
        """The ``requestId`` of every ``notifications/cancelled``, as they came."""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        body = await read_request_body(receive)
        message: dict[str, Any] = json.loads(body) if body else {}
        method = message.get("method")
        if method == "notifications/cancelled":
            self.cancelled.append(message["params"]["requestId"])
        if method == "tools/call":
            self.calls.add(message["id"])
        if scope["method"] != "POST" or "id" not in message:
            status = 202 if scope["method"] == "POST" else 405
            await send({"type": "http.response.start", "status": status, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        if method != "tools/call":
            result = {"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": SERVER}
            answer = {"jsonrpc": "2.0", "id": message["id"], "result": result}
            headers = [(b"content-type", b"application/json"), (b"mcp-session-id", b"s1")]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": json.dumps(answer).encode()})
            return
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b": open\n\n", "more_body": True})
        self.streams.change(started=1, running=1)
        while (await receive())["type"] != "http.disconnect":
            pass
        self.streams.change(started=0, running=-1)


SERVER = {"name": "streams-for-ever", "version": "0"}


async def test_hundreds_of_cancelled_and_timed_out_calls_free_their_connections() -> None:
    """200 calls given up on (half cancelled by the caller, half timed out), in batches
    that each fill most of a small pool, against a server that never ends their
    streams: the client hangs up on every one (and, on legacy, says so with
    ``notifications/cancelled``), and still works afterwards."""
    server = StreamsForEver()
    limits = httpx2.Limits(max_connections=POOL)
    async with serve(server) as running, httpx2.AsyncClient(limits=limits) as http:
        transport = StreamableHTTPTransport(running.url, http_client=http, timeout=5)
        async with Client(transport, mode="legacy") as client:

            async def timed_out_call() -> None:
                with pytest.raises(MCPError, match="within 1 s"):
                    await client.call_tool("hang", read_timeout_seconds=1)

            with anyio.fail_after(PATIENCE_SECONDS):
                for batch in range(BATCHES):
                    async with anyio.create_task_group() as tg:
                        for _ in range(BATCH):
                            if batch % 2:
                                tg.start_soon(timed_out_call)
                            else:
                                tg.start_soon(client.call_tool, "hang")
                        await server.streams.wait_until(started=(batch + 1) * BATCH)
                        if not batch % 2:
                            tg.cancel_scope.cancel()
                    await server.streams.wait_until(running=0)
                await client.ping()  # raises if the connection no longer works
    assert server.streams.started == BATCHES * BATCH
    # Every call is told of; one cancelled before its response began is told twice (the
    # first notification may have overtaken the request).
    assert set(server.cancelled) == server.calls
    assert len(server.calls) == BATCHES * BATCH
    assert max(server.cancelled.count(call) for call in server.calls) <= 2


async def test_cancelling_a_2026_call_closes_its_stream_and_stops_the_tool() -> None:
    """The cancellation is the closed stream: no ``notifications/cancelled`` POST
    (which a 2026-07-28 server refuses with 400), and the tool's work stops."""
    tally = Tally()
    posted: list[str] = []

    async def record(request: httpx2.Request) -> None:
        posted.append(request.headers.get("mcp-method", "?"))

    async with (
        serve(http_app(hanging_server(tally))) as running,
        httpx2.AsyncClient(event_hooks={"request": [record]}) as http,
    ):
        transport = StreamableHTTPTransport(running.url, http_client=http)
        async with Client(transport, mode="2026-07-28", log_level="info") as client:
            with anyio.fail_after(PATIENCE_SECONDS):
                async with anyio.create_task_group() as tg:
                    tg.start_soon(client.call_tool, "hang")
                    await tally.wait_until(started=1)
                    tg.cancel_scope.cancel()
                await tally.wait_until(running=0)
                result = await client.call_tool("ping_tool")
    assert result.content == [TextContent(text="pong")]
    assert "notifications/cancelled" not in posted
    assert posted.count("tools/call") == 2


class HoldsTheFirstCall:
    """Passes everything to ``app`` but holds the first ``tools/call`` until a
    ``notifications/cancelled`` has gone through: the order a busy machine produces when
    the notification's connection is quicker than the request's."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.held = Tally()
        self.cancel_notifications = 0
        self._cancel_passed: anyio.Event | None = None  # made on the server's loop

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        if self._cancel_passed is None:
            self._cancel_passed = anyio.Event()
        body = await read_request_body(receive)
        method = json.loads(body).get("method")
        first_call = method == "tools/call" and self.held.started == 0
        if first_call:
            self.held.change(started=1, running=1)
            await self._cancel_passed.wait()
        await self.app(scope, replaying(body, receive), send)
        if method == "notifications/cancelled":
            self.cancel_notifications += 1
            self._cancel_passed.set()


async def test_a_legacy_cancellation_that_overtakes_its_request_is_sent_again() -> None:
    """The request reaches the server after our ``notifications/cancelled`` (which the
    server ignores, not knowing the id yet): the client keeps the request open until its
    response begins and then says it again, so the tool stops instead of running for
    ever."""
    tally = Tally()
    app = HoldsTheFirstCall(http_app(hanging_server(tally)))
    async with serve(app) as running, Client(running.url, mode="legacy") as client:
        with anyio.fail_after(PATIENCE_SECONDS):
            async with anyio.create_task_group() as tg:
                tg.start_soon(client.call_tool, "hang")
                await app.held.wait_until(started=1)
                tg.cancel_scope.cancel()
            await tally.wait_until(started=1)
            await tally.wait_until(running=0)
            result = await client.call_tool("ping_tool")
    assert result.content == [TextContent(text="pong")]
    assert app.cancel_notifications == 2
