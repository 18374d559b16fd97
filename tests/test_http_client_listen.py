"""The HTTP client's standalone GET stream outlives failures that may pass: behind a
balancer, the replica holding it dies or shuts down, and the reconnection meets a 502,
503, 429 or no connection. The client tries again, backing off and obeying
``Retry-After``, and stops only when the server has no GET stream (405), the session
ended (404), or the client closes.
"""

from __future__ import annotations

import email.utils
import itertools
import logging
import random
import time
from collections.abc import Callable
from typing import Any

import anyio
import httpx2
import pytest
from http_support import (
    PATIENCE_SECONDS,
    Listening,
    forget_session,
    read_request_body,
    replaying,
    serve,
)
from http_support.apps import tagged_server

from answerback import Client
from answerback.server import MCPServer
from answerback.transports.http import StreamableHTTPApp, StreamableHTTPTransport
from answerback.transports.http import _client as client_module
from answerback.types import ConnectionClosedError, ToolListChangedNotification

pytestmark = pytest.mark.anyio


async def respond(send: Any, status: int, body: bytes = b"", **headers: str) -> None:
    raw = [(name.replace("_", "-").encode(), value.encode()) for name, value in headers.items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


class RefusesGets:
    """Wraps an app: its first GETs get the refusals given, in turn (status, headers),
    as a balancer answers while no replica holds the stream; later GETs go through.
    The time each GET arrived is recorded."""

    def __init__(self, app: StreamableHTTPApp, refusals: list[tuple[int, dict[str, str]]]) -> None:
        self.app, self.refusals = app, list(refusals)
        self.gets: list[float] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "GET":
            self.gets.append(time.monotonic())
            if self.refusals:
                status, headers = self.refusals.pop(0)
                page = f"<html><h1>{status}</h1></html>".encode()
                await respond(send, status, page, content_type="text/html", **headers)
                return
        await self.app(scope, receive, send)


async def listen_for_tools_changed(
    mcp: MCPServer, app: Any, jitter: Callable[[], float] = random.random, **transport_options: Any
) -> list[ToolListChangedNotification]:
    """Connect to ``app`` and return the two list-changed notifications heard: one
    sent at once (while the GET stream may be refused: the server keeps it for the
    stream), one sent after the first arrived (so after the stream is back).
    ``jitter``: the retry delays' random source."""
    arrived, notices = anyio.create_memory_object_stream[object](10)

    async def message_handler(message: object) -> None:
        await arrived.send(message)

    heard: list[ToolListChangedNotification] = []
    async with arrived, notices, serve(app) as server:
        transport = StreamableHTTPTransport(server.url, **transport_options)
        transport._jitter = jitter  # pyright: ignore[reportPrivateUsage]
        async with Client(transport, mode="legacy", message_handler=message_handler):
            with anyio.fail_after(PATIENCE_SECONDS):
                for _ in range(2):
                    await server.call(mcp.notify_tools_changed)
                    notice = await notices.receive()
                    assert isinstance(notice, ToolListChangedNotification)
                    heard.append(notice)
    return heard


async def test_the_get_stream_is_tried_again_until_the_balancer_has_a_replica(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The client gave up its GET stream for good after one 502/503, and the session
    silently heard no list change or resource update again. Now it tries again, backing
    off, says once that it fails and once that it is back, and hears what follows."""
    mcp = tagged_server()
    refusals: list[tuple[int, dict[str, str]]] = [
        (503, {}),
        (502, {}),
        (429, {"retry_after": "0"}),
        (500, {}),
    ]
    wrapper = RefusesGets(StreamableHTTPApp(mcp), refusals)
    caplog.set_level(logging.WARNING, "answerback.http")
    heard = await listen_for_tools_changed(mcp, wrapper, jitter=lambda: 0.5)
    assert len(heard) == 2
    assert len(wrapper.gets) >= 5
    gaps = [later - earlier for earlier, later in itertools.pairwise(wrapper.gets[:5])]
    # Halfway up a range that doubles: 0.1 s plus half of 0.1, 0.3, 0.7, 1.5 s.
    for gap, least in zip(gaps, [0.15, 0.25, 0.45, 0.85], strict=True):
        assert gap >= least * 0.99, (gaps, least)  # a sleep never ends early
    logged = [r.getMessage() for r in caplog.records if r.name == "answerback.http"]
    failing = [m for m in logged if "standalone SSE stream failed" in m]
    back = [m for m in logged if "standalone SSE stream is back" in m]
    assert len(failing) == 1, logged
    assert "HTTP 503 Service Unavailable" in failing[0]
    assert len(back) == 1, logged
    assert back[0].startswith("the standalone SSE stream is back after 4 failed attempts in ")


async def test_retry_after_is_obeyed_up_to_max_retry_seconds() -> None:
    mcp = tagged_server()
    wrapper = RefusesGets(StreamableHTTPApp(mcp), [(503, {"retry_after": "1"})])
    await listen_for_tools_changed(mcp, wrapper, max_retry_seconds=5)
    assert wrapper.gets[1] - wrapper.gets[0] >= 0.99


class Watched(StreamableHTTPTransport):
    """A transport whose ``stopped`` is set when it stops listening on the GET stream."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.stopped = anyio.Event()

    async def _listen_standalone(self, *args: Any) -> None:  # pyright: ignore[reportIncompatibleMethodOverride]
        try:
            await super()._listen_standalone(*args)
        finally:
            self.stopped.set()


@pytest.mark.parametrize("status", [404, 405])
async def test_listening_stops_for_no_get_stream_or_a_404_to_the_first_get(status: int) -> None:
    """405: the server has no GET stream; 404 before the session ever had one: a server
    that answers GET so is not believed to have ended the session (setting it up again
    would meet the same 404, for ever). Waiting mends neither: one GET, then no more."""
    mcp = tagged_server()
    wrapper = RefusesGets(StreamableHTTPApp(mcp), [(status, {})] * 5)
    async with serve(wrapper) as server:
        transport = Watched(server.url)
        async with Client(transport, mode="legacy") as client:
            with anyio.fail_after(PATIENCE_SECONDS):
                await transport.stopped.wait()
            await client.ping()
    assert len(wrapper.gets) == 1


def test_backoff_doubles_obeys_retry_after_and_is_bounded() -> None:
    """At the top of its random range (jitter() near 1) the delay doubles from 0.2 s;
    at the bottom it is 0.1 s. Retry-After is a floor the jitter never goes below."""
    backoff = client_module._backoff  # pyright: ignore[reportPrivateUsage]

    def top() -> float:
        return 1.0

    def bottom() -> float:
        return 0.0

    doubling = [backoff(n, None, 30, top) for n in range(1, 6)]
    assert doubling == pytest.approx([0.2, 0.4, 0.8, 1.6, 3.2])  # pyright: ignore[reportUnknownMemberType]
    assert [backoff(n, None, 30, bottom) for n in range(1, 6)] == [0.1] * 5
    assert backoff(40, None, 30, top) == 30  # capped by max_retry_seconds
    assert backoff(1, 5, 30, bottom) == 5  # Retry-After, when longer: never less
    assert backoff(6, 1, 30, top) == pytest.approx(6.4)  # pyright: ignore[reportUnknownMemberType]
    assert backoff(1, 3600, 30, top) == 30  # an hour's Retry-After is capped too
    assert backoff(3, None, 0, top) == 0.1  # "retry at once" still leaves 0.1 s between tries


def test_clients_that_failed_together_do_not_retry_together() -> None:
    """A hundred clients behind a balancer whose replica died retried in lockstep:
    every one waited exactly 0.1, 0.2, 0.4 s... Now each waits a random time in the
    backoff's range, so their retries spread over it."""
    backoff = client_module._backoff  # pyright: ignore[reportPrivateUsage]
    source = random.Random(48)
    for failures, ceiling in [(1, 0.2), (3, 0.8), (5, 3.2)]:
        delays = [backoff(failures, None, 30, source.random) for _ in range(100)]
        assert all(0.1 <= delay <= ceiling for delay in delays)
        assert len(set(delays)) == 100
        spread = max(delays) - min(delays)
        assert spread > (ceiling - 0.1) * 0.8, (failures, spread)


@pytest.mark.parametrize(
    ("header", "seconds"),
    [
        ("7", 7.0),
        (" 0 ", 0.0),
        ("soon", None),
        ("-3", None),
        ("\u0663", None),  # a digit, but not an ASCII one
        ("Wed, 21 Oct 2015 07:28:00 GMT", 0.0),  # a date already past
    ],
)
def test_retry_after_reads_seconds_or_a_date(header: str, seconds: float | None) -> None:
    response = httpx2.Response(503, headers={b"retry-after": header.encode()})
    assert client_module._retry_after(response) == seconds  # pyright: ignore[reportPrivateUsage]


def test_retry_after_as_a_future_date_is_the_seconds_until_then() -> None:
    when = email.utils.formatdate(time.time() + 120, usegmt=True)
    waited = client_module._retry_after(httpx2.Response(503, headers={"retry-after": when}))  # pyright: ignore[reportPrivateUsage]
    assert waited is not None
    assert 115 <= waited <= 120


async def test_a_session_the_server_ends_while_the_client_listens_is_set_up_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The server ends the session (idle expiry, making room) while the host only
    listens. The GET stream met a 404 and stopped, silently: the host never heard a
    list change again. Now a warning says what is lost, a new session is set up as the
    next request would, and its GET stream hears what the server sends next."""
    mcp = tagged_server()
    app = StreamableHTTPApp(mcp, retry_ms=100)
    arrived, notices = anyio.create_memory_object_stream[object](10)

    async def message_handler(message: object) -> None:
        await arrived.send(message)

    caplog.set_level(logging.WARNING, "answerback.http")
    async with arrived, notices, serve(app) as server:
        transport = Listening(server.url)
        async with (
            transport.starts,
            transport.started,
            Client(transport, mode="legacy", message_handler=message_handler),
        ):
            with anyio.fail_after(PATIENCE_SECONDS):
                first = await transport.started.receive()
                assert first is not None
                await server.call(mcp.notify_tools_changed)  # heard: the stream is open
                assert isinstance(await notices.receive(), ToolListChangedNotification)
                await forget_session(server.url, first)
                second = await transport.started.receive()
                await server.call(mcp.notify_tools_changed)
                heard = await notices.receive()
    assert second is not None
    assert second != first
    assert isinstance(heard, ToolListChangedNotification)
    warned = [r.getMessage() for r in caplog.records if "ended the session" in r.getMessage()]
    assert len(warned) == 1, warned
    assert "HTTP 404 on the standalone SSE stream" in warned[0]
    assert "subscribes it again to the old one's resources" in warned[0]
    assert "setting up a new session now" in warned[0]


class EndingLate(Listening):
    """Holds the GET stream's handling of a 404 until ``release`` is set, as a busy
    loop might while the response closes."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.held, self.release = anyio.Event(), anyio.Event()

    async def _session_ended_while_listening(self, session: str | None, lived: float) -> None:  # pyright: ignore[reportIncompatibleMethodOverride]
        self.held.set()
        await self.release.wait()
        await super()._session_ended_while_listening(session, lived)


async def test_a_session_a_request_set_up_meanwhile_is_not_set_up_again() -> None:
    """A request met the 404 too, and set the session up again, while the GET stream's
    404 was still being handled: that new session stays; no second one is made (the
    server would keep it, orphaned) and the client's id is not wiped out."""
    initializes: list[bytes] = []
    app = StreamableHTTPApp(tagged_server(), retry_ms=100)

    async def counting(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            body = await read_request_body(receive)
            if b'"method":"initialize"' in body:
                initializes.append(body)
            receive = replaying(body, receive)
        await app(scope, receive, send)

    async with serve(counting) as server:
        transport = EndingLate(server.url)
        async with transport.starts, transport.started, Client(transport, mode="legacy") as client:
            with anyio.fail_after(PATIENCE_SECONDS):
                first = await transport.started.receive()
                assert first is not None
                await forget_session(server.url, first)
                await transport.held.wait()
                await client.list_tools()  # meets the 404 and sets a session up again
                renewed = transport.session_id
                transport.release.set()
                second = await transport.started.receive()
                await client.list_tools()
                kept = transport.session_id
                assert not transport.session_ended
    assert renewed is not None
    assert renewed != first
    assert second == renewed
    assert kept == renewed
    assert len(initializes) == 2


async def test_a_listen_ends_when_a_session_the_server_ended_cannot_be_set_up_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The server ends the session while the host listens, and refuses a new one (503
    to ``initialize``): the GET stream stopped, and the legacy listen waited for ever
    for notifications that could not come. Now the block raises, saying why."""
    mcp = tagged_server()
    app = StreamableHTTPApp(mcp, retry_ms=100)
    refusing: list[bool] = []

    async def refusing_new_sessions(scope: Any, receive: Any, send: Any) -> None:
        if refusing and scope["type"] == "http" and scope["method"] == "POST":
            body = await read_request_body(receive)
            if b'"method":"initialize"' in body:
                await respond(send, 503, b"", content_type="text/plain")
                return
            receive = replaying(body, receive)
        await app(scope, receive, send)

    caplog.set_level(logging.WARNING, "answerback.http")
    async with serve(refusing_new_sessions) as server:
        transport = Listening(server.url)
        async with transport.starts, transport.started, Client(transport, mode="legacy") as client:
            with anyio.fail_after(PATIENCE_SECONDS):
                first = await transport.started.receive()
                assert first is not None

                async def listen_as_the_session_ends() -> None:
                    async with client.listen(tools_list_changed=True) as stream:
                        await server.call(mcp.notify_tools_changed)
                        assert isinstance(await stream.receive(), ToolListChangedNotification)
                        refusing.append(True)
                        await forget_session(server.url, first)
                        async for _ in stream:
                            pass

                with pytest.raises(ConnectionClosedError) as ended:
                    await listen_as_the_session_ends()
    message = ended.value.message
    assert message.startswith("listen() ended: the server 'HTTP test server' "), message
    assert "is gone (it ended the session and a new one could not be set up: " in message
    assert "HTTP 503" in message
    assert ended.value.data == {"reason": "server_gone"}


class Outages(StreamableHTTPTransport):
    """A transport that reports each time it finds the server gone (why) or back (None).
    Its clock leaps 1000 s at each reading, so the second failure in a row outlasts any
    connect timeout."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.reports, self.reported = anyio.create_memory_object_stream[str | None](10)
        leaps = itertools.count(step=1000.0)
        self._clock = lambda: next(leaps)

    def _server_gone(self, why: str | None) -> None:
        was = self._gone
        super()._server_gone(why)
        if self._gone != was:
            self.reports.send_nowait(why)


async def test_a_legacy_listen_ends_while_no_replica_answers_and_hears_once_one_does() -> None:
    """Behind a balancer with no replica left, every GET gets a 502: the legacy listen
    ends, saying the server is gone, while the GET stream goes on trying; once a replica
    answers, a new listen hears again, as the error says it would."""
    mcp = tagged_server()
    app = StreamableHTTPApp(mcp)
    replica_back = anyio.Event()

    async def balancer(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "GET" and not replica_back.is_set():
            await respond(send, 502, b"<h1>502</h1>", content_type="text/html")
            return
        await app(scope, receive, send)

    async def listen_for_ever(client: Client) -> None:
        async with client.listen(tools_list_changed=True) as stream:
            async for _ in stream:
                pass

    async with serve(balancer) as server:
        transport = Outages(server.url)
        async with (
            transport.reports,
            transport.reported,
            Client(transport, mode="legacy") as client,
        ):
            with anyio.fail_after(PATIENCE_SECONDS):
                with pytest.raises(ConnectionClosedError) as ended:
                    await listen_for_ever(client)
                gone = await transport.reported.receive()
                replica_back.set()
                assert await transport.reported.receive() is None  # the GET stream is back
                async with client.listen(tools_list_changed=True) as stream:
                    await server.call(mcp.notify_tools_changed)
                    heard = await stream.receive()
    assert gone is not None
    assert "HTTP 502 Bad Gateway" in gone
    assert f"is gone ({gone})" in ended.value.message
    assert isinstance(heard, ToolListChangedNotification)
