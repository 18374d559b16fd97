"""Review findings on stop 55's scale-out change: a resent legacy request keeps its
guard against a cancel that overtakes it; a request the server handled, or one only the
operator can cure, gets no ``Retry-After``; the stopping log counts no listen stream and
never reads an uncounted server as idle; refused clients come back spread out, and the
caller's error says how often a request was sent, or why it was not sent again.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest
import redis.asyncio as aioredis
from http_support import read_request_body, serve
from scale_out.cluster import Redis, missing_for_redis
from scale_out.fixtures import asyncio_only, heard

import answerback.server._connection as connection_module
import answerback.transports.http._client as client_module
from answerback import Client, MCPError
from answerback.jsonrpc import JSONObject
from answerback.server import MCPServer
from answerback.transports.http import RedisState, StreamableHTTPApp, StreamableHTTPTransport

pytestmark = pytest.mark.anyio

PATIENCE_SECONDS = 30.0
"""A safety net for an event that never comes on broken code, not a measured time."""

Send = Callable[[dict[str, Any]], Awaitable[None]]


async def reply(send: Send, status: int, headers: list[tuple[bytes, bytes]], body: bytes) -> None:
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class LegacyPeer:
    """A bare legacy HTTP server: ``initialize`` opens session ``s1``; each ``tools/call``
    is answered by ``on_call`` (given how many came before); it records the methods."""

    def __init__(self, on_call: Callable[[int, JSONObject, Any, Send], Awaitable[None]]) -> None:
        self.on_call = on_call
        self.methods: list[str] = []
        self.calls = 0
        self.cancel_arrived = anyio.Event()
        self.cancelled_twice = anyio.Event()

    async def __call__(self, scope: Any, receive: Any, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["method"] != "POST":
            await reply(send, 405, [(b"allow", b"POST")], b"")
            return
        message = json.loads(await read_request_body(receive))
        method = message.get("method")
        self.methods.append(method)
        if method == "initialize":
            result: JSONObject = {
                "protocolVersion": "2025-06-18",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "bare", "version": "1"},
            }
            body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result})
            headers = [(b"content-type", b"application/json"), (b"mcp-session-id", b"s1")]
            await reply(send, 200, headers, body.encode())
        elif method == "tools/call":
            self.calls += 1
            await self.on_call(self.calls, message, receive, send)
        else:
            if method == "notifications/cancelled":
                if self.cancel_arrived.is_set():
                    self.cancelled_twice.set()
                self.cancel_arrived.set()
            await reply(send, 202, [], b"")


def refusal(message: JSONObject, retry_after: str) -> tuple[list[tuple[bytes, bytes]], bytes]:
    error = {"code": -32000, "message": "Service Unavailable: busy."}
    body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error}).encode()
    return [(b"retry-after", retry_after.encode()), (b"content-type", b"application/json")], body


@asyncio_only
async def test_a_cancel_during_a_resent_request_is_sent_again_once_it_streams() -> None:
    """The first try gets 503 + Retry-After: 0; the caller gives up while the second
    is with the server, before its response begins, and the notification overtakes it.
    The response is a stream (the tool runs), so the notification must go again: the
    guard the first try's 503 used to switch off."""
    resent_is_with_server = anyio.Event()

    async def on_call(count: int, message: JSONObject, receive: Any, send: Send) -> None:
        if count == 1:
            await reply(send, 503, *refusal(message, "0"))
            return
        resent_is_with_server.set()
        await peer.cancel_arrived.wait()
        headers = [(b"content-type", b"text/event-stream")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": b": working\n\n", "more_body": True})
        while (await receive())["type"] != "http.disconnect":
            pass

    peer = LegacyPeer(on_call)
    async with serve(peer) as running, Client(running.url, mode="legacy") as client:
        async with anyio.create_task_group() as group:

            async def give_up_once_resent() -> None:
                await resent_is_with_server.wait()
                group.cancel_scope.cancel()

            group.start_soon(give_up_once_resent)
            await client.call_tool("slow")
        with anyio.fail_after(PATIENCE_SECONDS):
            await peer.cancelled_twice.wait()
    assert peer.calls == 2
    assert peer.methods.count("notifications/cancelled") == 2


@asyncio_only
async def test_a_cancel_while_waiting_to_resend_posts_nothing() -> None:
    """The server has not seen a request between a refusal and its next try: giving up
    then ends the wait, with no notification and no further try."""
    refused = anyio.Event()

    async def on_call(count: int, message: JSONObject, receive: Any, send: Send) -> None:
        await reply(send, 503, *refusal(message, "30"))
        refused.set()

    peer = LegacyPeer(on_call)
    async with (
        serve(peer) as running,
        Client(running.url, mode="legacy") as client,
        anyio.create_task_group() as group,
    ):

        async def give_up_once_refused() -> None:
            await refused.wait()
            group.cancel_scope.cancel()

        group.start_soon(give_up_once_refused)
        await client.call_tool("slow")
    # The client has closed: a notification the cancel sent has arrived by now.
    assert peer.calls == 1
    assert "notifications/cancelled" not in peer.methods


@asyncio_only
async def test_the_error_after_the_last_try_says_how_often_it_was_sent() -> None:
    async def on_call(count: int, message: JSONObject, receive: Any, send: Send) -> None:
        await reply(send, 503, *refusal(message, "0"))

    peer = LegacyPeer(on_call)
    async with serve(peer) as running, Client(running.url, mode="legacy") as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("slow")
    assert peer.calls == 4
    assert caught.value.message.startswith("Service Unavailable: busy. (it was sent 4 times over ")
    assert caught.value.message.endswith(" s, refused each time)")


@asyncio_only
async def test_a_wait_over_max_retry_seconds_is_named_in_the_error() -> None:
    async def on_call(count: int, message: JSONObject, receive: Any, send: Send) -> None:
        await reply(send, 429, *refusal(message, "86400"))

    peer = LegacyPeer(on_call)
    async with serve(peer) as running:
        transport = StreamableHTTPTransport(running.url, max_retry_seconds=5)
        async with Client(transport, mode="legacy") as client:
            with pytest.raises(MCPError) as caught:
                await client.call_tool("slow")
    assert peer.calls == 1
    assert caught.value.message == (
        "Service Unavailable: busy. (it was not sent again, as the server asked to wait "
        "86400 s, over the transport's max_retry_seconds of 5 s)"
    )


def test_clients_refused_together_come_back_spread_above_the_retry_after() -> None:
    """With ``Retry-After: 1`` every client used to wait exactly 1 s, whatever its
    jitter: they all came back at once."""
    backoff = client_module._backoff  # pyright: ignore[reportPrivateUsage]
    delays = {backoff(1, 1.0, 30, lambda step=step: step / 10) for step in range(10)}
    assert len(delays) == 10
    assert min(delays) == 1.0
    assert max(delays) <= 2.0
    assert backoff(1, 20.0, 30, lambda: 0.99) <= 30  # within the cap, still


@asyncio_only
@pytest.mark.skipif(missing_for_redis() is not None, reason=str(missing_for_redis()))
async def test_a_request_handled_but_not_recorded_is_not_sent_again(
    redis: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``logging/setLevel`` runs in the server, then Redis refuses to record it (an
    ACL): the 503 has no Retry-After, so the client does not run it again."""
    handled: list[object] = []
    original = connection_module._LEGACY["logging/setLevel"]  # pyright: ignore[reportPrivateUsage]

    async def counting(self: Any, client: Any, request: Any) -> JSONObject:
        handled.append(request.params)
        return await original(self, client, request)

    monkeypatch.setitem(connection_module._LEGACY, "logging/setLevel", counting)  # pyright: ignore[reportPrivateUsage]
    state = RedisState(redis.url, replica_id="a", heartbeat_seconds=0.5)
    admin = aioredis.from_url(redis.url)  # pyright: ignore[reportUnknownMemberType]
    try:
        app = StreamableHTTPApp(MCPServer("levels"), state=state)
        async with serve(app) as running, Client(running.url, mode="legacy") as client:
            await admin.execute_command("ACL", "SETUSER", "default", "-pttl")  # pyright: ignore[reportUnknownMemberType]
            with pytest.raises(MCPError) as caught:
                await client.set_logging_level("debug")
    finally:
        await admin.execute_command("ACL", "SETUSER", "default", "+pttl")  # pyright: ignore[reportUnknownMemberType]
        await admin.aclose()
    assert len(handled) == 1
    assert "after the request was carried out" in caught.value.message


async def test_a_listen_stream_is_not_a_call_in_progress() -> None:
    mcp = MCPServer("listening")
    async with Client(mcp, mode="2026-07-28") as client, client.listen(tools_list_changed=True):
        assert mcp.calls_in_progress() == (0, 0)


class OnlyServes:
    """A server the HTTP app can serve that is no ``MCPServer`` (a wrapper)."""

    def __init__(self, inner: MCPServer) -> None:
        self.inner = inner

    async def serve_connection(self, read_stream: Any, write_stream: Any, **options: Any) -> None:
        await self.inner.serve_connection(read_stream, write_stream, **options)

    def tool_input_schema(self, name: str) -> JSONObject | None:
        return self.inner.tool_input_schema(name)


async def test_a_server_that_cannot_count_is_not_logged_as_idle() -> None:
    app = StreamableHTTPApp(OnlyServes(MCPServer("wrapped")))
    with heard() as log:
        await app.close_sessions()
    assert log.containing("no call in progress") == []
    assert len(log.containing("does not count its calls")) == 1


@asyncio_only
@pytest.mark.parametrize("refused_with_retry_after", [1, 3])
async def test_a_last_refusal_without_retry_after_still_says_how_often_it_was_sent(
    refused_with_retry_after: int,
) -> None:
    """Tries refused with ``Retry-After`` are sent again; the last refusal has none (a
    balancer that adds it only sometimes): the error still counts every try."""

    async def on_call(count: int, message: JSONObject, receive: Any, send: Send) -> None:
        headers, body = refusal(message, "0")
        if count > refused_with_retry_after:
            headers = [header for header in headers if header[0] != b"retry-after"]
        await reply(send, 503, headers, body)

    peer = LegacyPeer(on_call)
    async with serve(peer) as running, Client(running.url, mode="legacy") as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("slow")
    tries = refused_with_retry_after + 1
    assert peer.calls == tries
    assert caught.value.message.startswith(
        f"Service Unavailable: busy. (it was sent {tries} times over "
    )
