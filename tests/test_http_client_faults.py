"""The HTTP client under faults and limits: one failed POST fails only what it carried,
redirects leave the origin only by refusal, oversized messages fail their own call, a
hostile ``retry`` is capped, a value JSON cannot carry fails its request at once, and
connecting to a silent server gives up.
"""

from __future__ import annotations

import functools
import gzip
import itertools
import json
import logging
import socket
import sys
import threading
import time
from collections.abc import Awaitable, Callable, Generator
from contextlib import contextmanager
from typing import Any, cast

import anyio
import anyio.abc
import anyio.to_thread
import httpx2
import pytest
from http_support import PATIENCE_SECONDS, read_request_body, replaying, serve
from http_support.apps import http_app

from answerback import Client, MCPError
from answerback.client import ClientRequestContext
from answerback.server import Context, MCPServer
from answerback.transports.http import (
    InMemoryEventStore,
    StreamableHTTPApp,
    StreamableHTTPTransport,
)
from answerback.transports.http import _client as client_module
from answerback.types import (
    ConnectionClosedError,
    ElicitRequestParams,
    ElicitResult,
    TextContent,
)

pytestmark = pytest.mark.anyio

STAYS_OPEN = (
    "The connection stays open: the next request reaches the server afresh (or says why it cannot)."
)

ASGIApp = Callable[[Any, Any, Any], Awaitable[None]]
Pick = Callable[[dict[str, Any]], bool]


async def answer_upper(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"value": params.message.upper()})


async def respond(send: Any, status: int, body: bytes = b"", **headers: str) -> None:
    raw = [(name.replace("_", "-").encode(), value.encode()) for name, value in headers.items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


class FailOne:
    """Wraps an app: the first POST whose JSON body ``pick`` chooses gets ``fault``
    instead (``html-500``: an HTML page of that status, as a proxy sends; ``cut``: a
    connection cut in the middle of the response; ``cut-always``: every such POST cut)."""

    def __init__(self, app: ASGIApp, pick: Pick, fault: str) -> None:
        self.app, self.pick, self.fault = app, pick, fault
        self.done = False

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = await read_request_body(receive)
        if (not self.done or self.fault == "cut-always") and self.pick(json.loads(body)):
            self.done = True
            if self.fault.startswith("html-"):
                status = int(self.fault.removeprefix("html-"))
                page = b"<html><h1>Oops</h1></html>"
                await respond(send, status, page, content_type="text/html", retry_after="2")
            else:  # promise a body, send half of it, and hang up
                head = [(b"content-type", b"application/json"), (b"content-length", b"100")]
                await send({"type": "http.response.start", "status": 200, "headers": head})
                await send({"type": "http.response.body", "body": b'{"jsonrpc"', "more_body": True})
                raise RuntimeError("the connection is cut here on purpose")
            return
        await self.app(scope, replaying(body, receive), send)


@contextmanager
def log_watch(text: str) -> Generator[anyio.Event, None, None]:
    """An event set when the HTTP client logs a warning containing ``text``."""
    seen = anyio.Event()

    class Watch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.levelno >= logging.WARNING and text in record.getMessage():
                seen.set()

    handler = Watch()
    logger = logging.getLogger("answerback.http")
    logger.addHandler(handler)
    try:
        yield seen
    finally:
        logger.removeHandler(handler)


def is_answer_with(value: str) -> Pick:
    return lambda m: "method" not in m and str(m.get("result", {})).find(value) >= 0


def is_call_of(tag: str) -> Pick:
    return lambda m: m.get("method") == "tools/call" and m["params"]["arguments"] == {"tag": tag}


# -- item 4: one failed POST fails only what it carried ------------------------------------


@pytest.mark.parametrize("fault", ["html-500", "cut"])
async def test_a_failed_request_post_fails_that_call_only(fault: str) -> None:
    app = http_app()
    wrapper = FailOne(app, is_call_of("doomed"), fault)
    async with (
        serve(wrapper) as running,
        Client(running.url, mode="legacy", elicitation_callback=answer_upper) as client,
    ):
        with anyio.fail_after(PATIENCE_SECONDS):
            with pytest.raises(MCPError, match=r"HTTP 500|RemoteProtocolError") as caught:
                await client.call_tool("echo_elicit", {"tag": "doomed"})
            result = await client.call_tool("echo_elicit", {"tag": "fine"})
        await running.call(app.close_sessions)
    assert caught.value.message.startswith("Request failed: ")
    assert caught.value.message.endswith(STAYS_OPEN)
    assert result.content == [TextContent(text="fine:TAG=FINE")]


@pytest.mark.parametrize(
    ("status", "known"),
    [
        (
            502,
            "HTTP 502 Bad Gateway with a body that is not a JSON-RPC answer (text/html): a "
            "proxy in front of the server got no answer from it (the server stopped or "
            "failed before it began to answer). Whether the request did its work is "
            "unknown; send it again if repeating it is safe.",
        ),
        (
            503,
            "HTTP 503 Service Unavailable with a body that is not a JSON-RPC answer "
            "(text/html): the server, or a proxy in front of it, is not taking requests now "
            "(shutting down, overloaded, or down), so the request was not handled; it is "
            "safe to send it again after 2 s (Retry-After); it was not sent again, as the "
            "server asked to wait 2 s, over the transport's max_retry_seconds of 1 s.",
        ),
        (
            504,
            "HTTP 504 Gateway Timeout with a body that is not a JSON-RPC answer (text/html): "
            "a proxy in front of the server stopped waiting for its answer; the request may "
            "still be running there. Whether the request did its work is unknown; send it "
            "again if repeating it is safe.",
        ),
    ],
)
async def test_a_proxys_error_page_says_whether_sending_again_is_safe(
    status: int, known: str
) -> None:
    """A replica behind a balancer dies before its response starts: the caller learns
    what that means for the request, not only "HTTP 502 ... not a JSON-RPC answer". (The
    503's Retry-After, 2 s, is longer than this client waits by itself: it is the
    caller's to act on.)"""
    app = http_app()
    wrapper = FailOne(app, is_call_of("doomed"), f"html-{status}")
    async with (
        serve(wrapper) as running,
        Client(
            StreamableHTTPTransport(running.url, max_retry_seconds=1),
            mode="legacy",
            elicitation_callback=answer_upper,
        ) as client,
    ):
        with anyio.fail_after(PATIENCE_SECONDS):
            with pytest.raises(ConnectionClosedError) as caught:
                await client.call_tool("echo_elicit", {"tag": "doomed"})
        await running.call(app.close_sessions)
    assert caught.value.error.message == f"Request failed: {known} {STAYS_OPEN}"


async def test_a_server_that_hangs_up_before_answering_is_said_so_in_plain_words() -> None:
    """The server (or a proxy) takes the whole request and closes the connection
    without a response, as a replica killed mid-call does: the error says so, and what
    is known of the request, instead of httpx's "Server disconnected without sending a
    response"."""

    async def hang_up(stream: anyio.abc.SocketStream) -> None:
        async with stream:
            received = b""
            while b"\r\n\r\n" not in received:
                received += await stream.receive()
            head, _, body = received.partition(b"\r\n\r\n")
            length = next(
                int(line.split(b":")[1])
                for line in head.lower().split(b"\r\n")
                if line.startswith(b"content-length:")
            )
            while len(body) < length:
                body += await stream.receive()

    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = listener.extra(anyio.abc.SocketAttribute.local_port)
    async with listener, anyio.create_task_group() as tg:
        tg.start_soon(listener.serve, hang_up)
        with anyio.fail_after(PATIENCE_SECONDS), pytest.raises(ConnectionClosedError) as caught:
            async with Client(f"http://127.0.0.1:{port}/mcp", mode="2026-07-28") as client:
                await client.call_tool("anything")
        tg.cancel_scope.cancel()
        assert caught.value.error.message == (
            "Connection failed: the server closed the connection before it began to answer "
            "(Server disconnected without sending a response.): it, or a proxy in front of "
            "it, stopped or failed while the request was with it. Whether the request did "
            "its work is unknown; send it again if repeating it is safe."
        )


class DefectiveOnce(StreamableHTTPTransport):
    """A transport with a defect: POSTing the call tagged ``doomed`` raises."""

    async def _post(self, lanes: Any, message: Any, *args: Any) -> bool:  # pyright: ignore[reportIncompatibleMethodOverride]
        if is_call_of("doomed")(message):
            raise RuntimeError("a defect in the transport")
        return await super()._post(lanes, message, *args)


async def test_a_defect_sending_one_request_fails_that_call_only(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Nothing awaits a request's task: its failure becomes the call's error (and a
    logged traceback), never a silent hang, and the connection carries on."""
    async with serve(http_app()) as running:
        transport = DefectiveOnce(running.url)
        async with Client(transport, mode="legacy", elicitation_callback=answer_upper) as client:
            with anyio.fail_after(PATIENCE_SECONDS):
                with pytest.raises(MCPError, match="RuntimeError: a defect in the transport"):
                    await client.call_tool("echo_elicit", {"tag": "doomed"})
                result = await client.call_tool("echo_elicit", {"tag": "fine"})
    assert result.content == [TextContent(text="fine:TAG=FINE")]
    logged = [r for r in caplog.records if "failed unexpectedly" in r.getMessage()]
    assert len(logged) == 1
    assert logged[0].exc_info is not None


class DefectiveDelivery(StreamableHTTPTransport):
    """A transport with a defect: delivering its first roots notification raises."""

    failed = False

    async def _deliver(self, lanes: Any, message: Any, *args: Any) -> None:  # pyright: ignore[reportIncompatibleMethodOverride]
        if not self.failed and message.get("method") == "notifications/roots/list_changed":
            self.failed = True
            raise RuntimeError("a defect in the transport")
        await super()._deliver(lanes, message, *args)


async def test_a_defect_sending_a_notification_is_logged_and_the_client_carries_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with serve(http_app()) as running:
        transport = DefectiveDelivery(running.url)
        async with Client(transport, mode="legacy", elicitation_callback=answer_upper) as client:
            with anyio.fail_after(PATIENCE_SECONDS):
                await client.send_roots_list_changed()
                while not transport.failed:  # noqa: ASYNC110 (sent from its own task)
                    await anyio.sleep(0.01)
                result = await client.call_tool("echo_elicit", {"tag": "fine"})
    assert result.content == [TextContent(text="fine:TAG=FINE")]  # the answer POST went out
    logged = [r for r in caplog.records if "failed unexpectedly" in r.getMessage()]
    assert len(logged) == 1
    assert logged[0].exc_info is not None


class RefusesAnswer:
    """Wraps an app: the first answer POST ``pick`` chooses is refused with ``status``
    and a JSON-RPC error of id null (as a replica refuses an answer it cannot deliver);
    ``cancelled`` is set when a ``notifications/cancelled`` arrives, and holds its
    ``requestId``."""

    def __init__(self, app: ASGIApp, pick: Pick, status: int) -> None:
        self.app, self.pick, self.status = app, pick, status
        self.done = False
        self.cancelled = threading.Event()  # set in the server's loop, maybe another thread
        self.cancelled_id: Any = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = await read_request_body(receive)
        message = json.loads(body)
        if message.get("method") == "notifications/cancelled":
            self.cancelled_id = message["params"]["requestId"]
            self.cancelled.set()
        if not self.done and self.pick(message):
            self.done = True
            said = "Conflict: the response to request 'q1' was refused: the asker has stopped"
            error = {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": said}}
            payload = json.dumps(error).encode()
            await respond(send, self.status, payload, content_type="application/json")
            return
        await self.app(scope, replaying(body, receive), send)


class CallIds(StreamableHTTPTransport):
    """A transport that notes the id of each ``tools/call`` it sends."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.call_ids: list[Any] = []

    async def _post(self, lanes: Any, message: Any, *args: Any) -> bool:  # pyright: ignore[reportIncompatibleMethodOverride]
        if message.get("method") == "tools/call":
            self.call_ids.append(message["id"])
        return await super()._post(lanes, message, *args)


@pytest.mark.parametrize("status", [400, 409])
async def test_a_refused_answer_fails_its_call_with_the_servers_reason(
    status: int, caplog: pytest.LogCaptureFixture
) -> None:
    """A replica refuses the answer to an elicitation (the one that asked has stopped,
    say): the call could never complete, and waited for ever. It fails at once with the
    server's own words (the log said only "a body that is not a JSON-RPC answer"), the
    server is told the call is cancelled, and the connection carries on."""
    app = http_app()
    wrapper = RefusesAnswer(app, is_answer_with("TAG=LOST"), status)
    async with serve(wrapper) as running:
        transport = CallIds(running.url)
        async with Client(transport, mode="legacy", elicitation_callback=answer_upper) as client:
            with anyio.fail_after(PATIENCE_SECONDS):
                with pytest.raises(ConnectionClosedError) as caught:
                    await client.call_tool("echo_elicit", {"tag": "lost"})
                failure = caught.value.error.message
                await anyio.to_thread.run_sync(wrapper.cancelled.wait, PATIENCE_SECONDS)
                result = await client.call_tool("echo_elicit", {"tag": "fine"})
        await running.call(app.close_sessions)
    assert result.content == [TextContent(text="fine:TAG=FINE")]
    said = "Conflict: the response to request 'q1' was refused: the asker has stopped"
    assert said in failure
    assert "the server refused the answer to its request" in failure
    assert wrapper.cancelled_id == transport.call_ids[0]
    logged = [r.getMessage() for r in caplog.records if "refused the answer" in r.getMessage()]
    assert len(logged) == 1
    assert said in logged[0]
    assert "not a JSON-RPC answer" not in logged[0]


async def test_an_answer_refused_with_an_html_error_fails_its_call_and_nothing_else() -> None:
    """The server answers one answer POST with an HTML 500: the call that waited on it
    fails (the server never took the answer), a warning says so, and the other calls
    and the connection carry on."""
    app = http_app()
    wrapper = FailOne(app, is_answer_with("TAG=LOST"), "html-500")
    with log_watch("refused the answer") as refused:
        async with (
            serve(wrapper) as running,
            Client(running.url, mode="legacy", elicitation_callback=answer_upper) as client,
        ):
            with anyio.fail_after(PATIENCE_SECONDS):
                with pytest.raises(ConnectionClosedError, match="HTTP 500 Internal Server"):
                    await client.call_tool("echo_elicit", {"tag": "lost"})
                assert refused.is_set()
                result = await client.call_tool("echo_elicit", {"tag": "fine"})
            await running.call(app.close_sessions)
    assert result.content == [TextContent(text="fine:TAG=FINE")]


async def test_an_answer_whose_connection_is_cut_is_sent_again() -> None:
    app = http_app()
    wrapper = FailOne(app, is_answer_with("TAG=RESENT"), "cut")
    async with (
        serve(wrapper) as running,
        Client(running.url, mode="legacy", elicitation_callback=answer_upper) as client,
    ):
        with anyio.fail_after(PATIENCE_SECONDS):
            result = await client.call_tool("echo_elicit", {"tag": "resent"})
        await running.call(app.close_sessions)
    assert wrapper.done
    assert result.content == [TextContent(text="resent:TAG=RESENT")]


async def test_an_answer_that_cannot_be_sent_fails_its_call_and_nothing_else() -> None:
    """Every POST of the answer is cut: after its last attempt the call that waited on
    it failed nothing and waited for ever. It fails, saying so, and is cancelled on the
    server; the connection carries on."""
    app = http_app()
    wrapper = FailOne(app, is_answer_with("TAG=LOST"), "cut-always")
    async with (
        serve(wrapper) as running,
        Client(running.url, mode="legacy", elicitation_callback=answer_upper) as client,
    ):
        with anyio.fail_after(PATIENCE_SECONDS):
            with pytest.raises(ConnectionClosedError) as caught:
                await client.call_tool("echo_elicit", {"tag": "lost"})
            result = await client.call_tool("echo_elicit", {"tag": "fine"})
        await running.call(app.close_sessions)
    assert "could not be sent" in caught.value.error.message
    assert "this call was waiting on it, so it cannot complete" in caught.value.error.message
    assert result.content == [TextContent(text="fine:TAG=FINE")]


async def test_a_refused_notification_is_logged_and_the_client_carries_on() -> None:
    app = http_app()

    def is_list_changed(message: dict[str, Any]) -> bool:
        return message.get("method") == "notifications/roots/list_changed"

    wrapper = FailOne(app, is_list_changed, "html-500")
    with log_watch("refused the notifications/roots/list_changed notification") as refused:
        async with (
            serve(wrapper) as running,
            Client(running.url, mode="legacy", elicitation_callback=answer_upper) as client,
        ):
            with anyio.fail_after(PATIENCE_SECONDS):
                await client.send_roots_list_changed()
                await refused.wait()
                result = await client.call_tool("echo_elicit", {"tag": "after"})
            await running.call(app.close_sessions)
    assert result.content == [TextContent(text="after:TAG=AFTER")]


# -- header values the server gives -------------------------------------------------------


class Doctor:
    """Wraps an app: every response's ``Mcp-Session-Id`` is replaced with ``session``
    (raw bytes), and a JSON answer to ``tools/call`` gets ``protocolVersion`` set to
    ``version`` in its result; the version header of each POST is recorded."""

    def __init__(self, app: ASGIApp, *, session: bytes | None, version: str | None) -> None:
        self.app, self.session, self.version = app, session, version
        self.versions: list[str | None] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        version = headers.get(b"mcp-protocol-version")
        self.versions.append(version.decode() if version is not None else None)
        body = await read_request_body(receive)
        is_call = json.loads(body).get("method") == "tools/call"
        start: dict[str, Any] = {}
        chunks: list[bytes] = []

        async def doctored(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body"):
                return
            content = b"".join(chunks)
            kept = [(k, v) for k, v in start["headers"] if k not in (b"content-length",)]
            if self.session is not None:
                kept = [(k, v) for k, v in kept if k != b"mcp-session-id"]
                kept.append((b"mcp-session-id", self.session))
            if is_call and self.version is not None and content.startswith(b"{"):
                answer = json.loads(content)
                answer["result"]["protocolVersion"] = self.version
                content = json.dumps(answer).encode()
            kept.append((b"content-length", str(len(content)).encode()))
            await send({**start, "headers": kept})
            await send({"type": "http.response.body", "body": content})

        await self.app(scope, replaying(body, receive), doctored)


async def test_a_session_id_that_is_not_visible_ascii_is_refused_saying_so() -> None:
    """It could not be sent back (a header is ASCII): the connection failed with a raw
    ``UnicodeEncodeError`` at the next request."""
    doctor = Doctor(http_app(json_response=True), session=b"\xff\xfe-bad", version=None)
    async with serve(doctor) as running:
        with anyio.fail_after(PATIENCE_SECONDS), pytest.raises(MCPError) as caught:
            async with Client(running.url, mode="legacy"):
                pass
    assert "the session id '\xff\xfe-bad', which is not visible ASCII" in caught.value.message


async def test_only_the_answer_to_initialize_sets_the_version() -> None:
    """A ``protocolVersion`` in a tool's result is not the session's (this one is not
    even ASCII, which broke every later request)."""
    doctor = Doctor(http_app(json_response=True), session=None, version="2025-11-25-\u00e9")
    async with serve(doctor) as running, Client(running.url, mode="legacy") as client:
        with anyio.fail_after(PATIENCE_SECONDS):
            for _ in range(2):
                result = await client.call_tool("pause", {"seconds": 0})
                assert result.content == [TextContent(text="done")]
    assert doctor.versions[-2:] == ["2025-11-25", "2025-11-25"]


# -- redirects ---------------------------------------------------------------------------


class Redirect:
    """Wraps an app: requests to ``/old`` are redirected (``status``) to ``/mcp`` on
    ``host`` (``None``: the same host), and every request's Host header is recorded."""

    def __init__(self, app: ASGIApp, status: int, host: str | None) -> None:
        self.app, self.status, self.host = app, status, host
        self.hosts: list[str] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        self.hosts.append(headers[b"host"].decode())
        if scope["path"] != "/old":
            await self.app(scope, receive, send)
            return
        port = scope["server"][1]
        location = "/mcp" if self.host is None else f"http://{self.host}:{port}/mcp"
        await respond(send, self.status, location=location)


async def test_a_same_origin_307_is_followed() -> None:
    app = http_app()
    async with serve(Redirect(app, 307, None), path="/old") as running:
        async with Client(running.url, mode="legacy", elicitation_callback=answer_upper) as client:
            result = await client.call_tool("echo_elicit", {"tag": "moved"})
        await running.call(app.close_sessions)
    assert result.content == [TextContent(text="moved:TAG=MOVED")]


@pytest.mark.parametrize(
    ("status", "host", "expected"),
    [
        (307, "localhost", "another origin"),
        (308, "localhost", "another origin"),
        (302, None, "only 307/308 redirects"),
        (307, "[::1", "not a valid URL"),
    ],
    ids=["307-elsewhere", "308-elsewhere", "302", "307-to-no-url"],
)
async def test_other_redirects_are_refused_with_a_reason(
    status: int, host: str | None, expected: str
) -> None:
    """Nothing (no body, no session, no custom header) goes to another origin; a
    redirect that would turn the POST into a GET is not followed either."""
    app = http_app()
    redirect = Redirect(app, status, host)
    async with serve(redirect, path="/old") as running:
        transport = StreamableHTTPTransport(running.url, headers={"x-api-key": "secret"})
        with anyio.fail_after(PATIENCE_SECONDS), pytest.raises(MCPError, match=expected):
            async with Client(transport, mode="legacy"):
                pass
    assert all(host.startswith("127.0.0.1:") for host in redirect.hosts)


# -- limits ------------------------------------------------------------------------------


def big_server() -> MCPServer:
    mcp = MCPServer("Big")

    @mcp.tool()
    def text(size: int) -> str:
        return "x" * size

    return mcp


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"], ids=["sse", "json"])
async def test_an_oversized_message_fails_its_own_call(mode: str) -> None:
    app = http_app(big_server())
    async with serve(app) as running:
        transport = StreamableHTTPTransport(running.url, max_message_bytes=8000)
        async with Client(transport, mode=mode) as client:
            with anyio.fail_after(PATIENCE_SECONDS):
                with pytest.raises(MCPError, match="larger than 8000 bytes"):
                    await client.call_tool("text", {"size": 20_000})
                small = await client.call_tool("text", {"size": 10})
        await running.call(app.close_sessions)
    assert small.content == [TextContent(text="x" * 10)]


class Chunked:
    """Wraps an app: its JSON answers go out chunked, a few bytes at a time, with no
    ``content-length``, so the client cannot know a body's size before reading it."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        async def send_chunked(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                headers = [(k, v) for k, v in message["headers"] if k != b"content-length"]
                await send({**message, "headers": headers})
            elif message["type"] == "http.response.body" and not message.get("more_body"):
                body: bytes = message.get("body", b"")
                for start in range(0, len(body), 1024):
                    chunk = body[start : start + 1024]
                    await send({"type": "http.response.body", "body": chunk, "more_body": True})
                await send({"type": "http.response.body", "body": b""})
            else:
                await send(message)

        await self.app(scope, receive, send_chunked if scope["type"] == "http" else send)


class Rewritten:
    """Wraps an app: each JSON answer's body and headers pass through ``rewrite`` (which
    returns the new body and any headers to set), its length declared anew."""

    def __init__(
        self, app: ASGIApp, rewrite: Callable[[bytes], tuple[bytes, dict[bytes, bytes]]]
    ) -> None:
        self.app, self.rewrite = app, rewrite

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        start: dict[str, Any] = {}

        async def send_rewritten(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                start.update(message)
                return
            body, headers = self.rewrite(message.get("body", b""))
            kept = [(k, v) for k, v in start["headers"] if k != b"content-length"]
            kept += [*headers.items(), (b"content-length", str(len(body)).encode())]
            await send({**start, "headers": kept})
            await send({"type": "http.response.body", "body": body})

        json_post = scope["type"] == "http" and scope["method"] == "POST"
        await self.app(scope, receive, send_rewritten if json_post else send)


def gzipped(body: bytes) -> tuple[bytes, dict[bytes, bytes]]:
    return gzip.compress(body), {b"content-encoding": b"gzip"}


@pytest.mark.parametrize(
    "wrapped",
    [Chunked, functools.partial(Rewritten, rewrite=gzipped)],
    ids=["chunked", "gzip"],
)
async def test_an_oversized_answer_of_no_trusted_length_fails_its_own_call(
    wrapped: Callable[[ASGIApp], ASGIApp],
) -> None:
    """A JSON answer with no declared length (chunked), or whose declared length is the
    compressed one (gzip: 200 KB of answer in a few hundred bytes), is counted as it
    arrives, decompressed (a decompression bomb would otherwise fill memory): over the
    limit it fails its own call; under it, it is read whole."""
    app = http_app(big_server())
    async with serve(wrapped(app)) as running:
        transport = StreamableHTTPTransport(running.url, max_message_bytes=8000)
        async with Client(transport, mode="2026-07-28") as client:
            with anyio.fail_after(PATIENCE_SECONDS):
                with pytest.raises(MCPError, match="larger than 8000 bytes"):
                    await client.call_tool("text", {"size": 200_000})
                fits = await client.call_tool("text", {"size": 2000})
    assert fits.content == [TextContent(text="x" * 2000)]


class MislabelledStreams:
    """Wraps an app: its event streams claim a gzip encoding they do not have, so every
    one breaks off as the client decodes its first bytes."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        async def send_mislabelled(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                headers = dict(message["headers"])
                if headers.get(b"content-type", b"").startswith(b"text/event-stream"):
                    encoding = [(b"content-encoding", b"gzip")]
                    message = {**message, "headers": [*message["headers"], *encoding]}
            await send(message)

        await self.app(scope, receive, send_mislabelled if scope["type"] == "http" else send)


async def test_a_stream_that_cannot_be_decoded_fails_saying_why() -> None:
    """The error names what broke the stream (here the answer to ``initialize``), not
    only that it broke."""
    async with serve(MislabelledStreams(http_app())) as running:
        transport = StreamableHTTPTransport(running.url, max_retry_seconds=0.01)
        with anyio.fail_after(PATIENCE_SECONDS), pytest.raises(MCPError) as caught:
            async with Client(transport, mode="legacy"):
                pass
    assert caught.value.error.message == (
        "Connection failed: the response stream broke (DecodingError: Error -3 while "
        "decompressing data: incorrect header check) and could not be resumed."
    )


class ShoutedMediaTypes:
    """Wraps an app: its content types in capitals (``Text/Event-Stream``), which HTTP
    allows, since media types are case-insensitive (RFC 9110, 8.3.1)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        async def send_shouted(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                headers = [
                    (k, v.title() if k == b"content-type" else v) for k, v in message["headers"]
                ]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_shouted if scope["type"] == "http" else send)


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"], ids=["sse", "json"])
async def test_content_types_in_any_case_are_understood(mode: str) -> None:
    app = http_app()
    async with (
        serve(ShoutedMediaTypes(app)) as running,
        Client(running.url, mode=mode, elicitation_callback=answer_upper) as client,
    ):
        with anyio.fail_after(PATIENCE_SECONDS):
            result = await client.call_tool("echo_elicit", {"tag": "loud"})
        await running.call(app.close_sessions)
    assert result.content == [TextContent(text="loud:TAG=LOUD")]


def float_ids(body: bytes) -> tuple[bytes, dict[bytes, bytes]]:
    message = json.loads(body)
    if isinstance(message.get("id"), int) and "content" in message.get("result", {}):
        message["id"] = float(message["id"])
    return json.dumps(message).encode(), {}


async def test_an_answer_whose_id_is_a_float_fails_its_call_and_does_not_hang() -> None:
    """``2.0 == 2`` in Python, but 2.0 is no request id of ours, as the engine reads
    ids: the call fails at once, saying the server did not answer it."""
    app = http_app(big_server())
    async with (  # only the answers to calls are rewritten, not the handshake's
        serve(Rewritten(app, float_ids)) as running,
        Client(running.url, mode="2026-07-28") as client,
    ):
        with anyio.fail_after(PATIENCE_SECONDS), pytest.raises(MCPError) as caught:
            await client.call_tool("text", {"size": 5})
    assert "not a JSON-RPC answer" in caught.value.message


async def test_a_huge_retry_hint_is_capped() -> None:
    """The server asks for an hour between reconnections and closes the stream of a
    call in progress; the client comes back after its own cap and the call completes."""
    mcp = MCPServer("Polling")

    @mcp.tool()
    async def report(ctx: Context) -> str:
        ctx.close_sse_stream()
        await ctx.info("written while the client was away")
        return "ready"

    app = StreamableHTTPApp(mcp, retry_ms=3_600_000)
    async with serve(app) as running:
        transport = StreamableHTTPTransport(running.url, max_retry_seconds=0.05)
        async with Client(transport, mode="legacy") as client:
            with anyio.fail_after(PATIENCE_SECONDS):
                result = await client.call_tool("report")
    assert result.content == [TextContent(text="ready")]


class EmptyResumes:
    """A legacy server whose call stream ends at once, as does each resumed stream, each
    with nothing but ``retry: 0`` (and a fresh event id if ``fresh_ids``), until the
    ``answer_at``-th resumption carries the answer. The time each resumption arrived is
    recorded."""

    def __init__(self, answer_at: int, *, fresh_ids: bool = True) -> None:
        self.answer_at, self.fresh_ids = answer_at, fresh_ids
        self.resumed_at: list[float] = []
        self.call_id: Any = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        headers = dict(scope["headers"])
        if scope["method"] == "GET":
            last = headers.get(b"last-event-id")
            if last is None:  # no standalone stream here
                await respond(send, 405)
                return
            self.resumed_at.append(time.monotonic())
            block = (
                f"id: {int(last) + 1}\nretry: 0\ndata:\n\n" if self.fresh_ids else "retry: 0\n\n"
            )
            event = block.encode()
            if len(self.resumed_at) == self.answer_at:
                result = {"content": [{"type": "text", "text": "at last"}]}
                answer = json.dumps({"jsonrpc": "2.0", "id": self.call_id, "result": result})
                event += f"id: {int(last) + 2}\ndata: {answer}\n\n".encode()
            await respond(send, 200, event, content_type="text/event-stream")
            return
        message = json.loads(await read_request_body(receive))
        if message.get("method") == "initialize":
            result: dict[str, Any] = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "Empty resumes", "version": "1"},
            }
            body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result})
            await respond(send, 200, body.encode(), content_type="application/json")
        elif message.get("method") == "tools/call":
            self.call_id = message["id"]
            priming = b"id: 1\nretry: 0\ndata:\n\n"
            await respond(send, 200, priming, content_type="text/event-stream")
        else:
            await respond(send, 202)


@pytest.mark.parametrize("fresh_ids", [True, False], ids=["priming-events", "retry-hints"])
async def test_reconnections_that_bring_no_message_back_off(fresh_ids: bool) -> None:
    """Each empty resumption doubles the wait from 0.1 s (the server's ``retry: 0``
    had the client reconnecting hundreds of times a second); the answer, when it comes
    on a resumed stream, still completes the call. A resumed stream that brings a
    priming event, or only a ``retry`` hint, is the server polling, not a finished
    stream (SEP-1699)."""
    server = EmptyResumes(answer_at=5, fresh_ids=fresh_ids)
    async with serve(server) as running, Client(running.url, mode="legacy") as client:
        with anyio.fail_after(PATIENCE_SECONDS):
            result = await client.call_tool("anything")
    assert result.content == [TextContent(text="at last")]
    gaps = [later - earlier for earlier, later in itertools.pairwise(server.resumed_at)]
    for gap, least in zip(gaps, [0.2, 0.4, 0.8, 1.6], strict=True):
        assert gap >= least * 0.99, (gaps, least)  # a sleep never ends early


async def test_a_resume_that_brings_no_event_fails_at_once_saying_the_answer_is_lost() -> None:
    """answerback's server ends at once, with no event, a resumed stream that has
    finished and whose events are gone: the client fails the call after that one
    resumption, saying so, instead of reconnecting for seconds to no purpose."""
    mcp = MCPServer("Forgetful")

    @mcp.tool()
    async def report(ctx: Context) -> str:
        ctx.close_sse_stream()
        await ctx.info("this event pushes the priming event out of the store")
        return "ready"

    # One event per stream: resuming from the priming event finds it gone.
    app = StreamableHTTPApp(mcp, event_store=InMemoryEventStore(max_events_per_stream=1))
    resumed_from: list[str] = []

    async def resumed_once_finished(scope: Any, receive: Any, send: Any) -> None:
        headers = dict(scope.get("headers", []))
        last = headers.get(b"last-event-id")
        if scope["type"] == "http" and last is not None:
            resumed_from.append(last.decode())
            session = app.sessions[headers[b"mcp-session-id"].decode()]
            stream = session.streams.get(session.stream_named(last.decode()) or "")
            while stream is not None and not stream.done:  # noqa: ASYNC110 (the answer)
                await anyio.sleep(0.01)
        await app(scope, receive, send)

    async with serve(resumed_once_finished) as running:
        transport = StreamableHTTPTransport(running.url, max_retry_seconds=0.01)
        async with Client(transport, mode="legacy") as client:
            with anyio.fail_after(PATIENCE_SECONDS), pytest.raises(ConnectionClosedError) as caught:
                await client.call_tool("report")
            await client.ping()  # the session goes on
    assert len(resumed_from) == 1
    assert caught.value.error.message == (
        "Request failed: the server ended the stream without the answer (resumed with "
        "Last-Event-ID, it sent no event at all: the stream has finished and the answer is "
        "no longer kept). Whether the request did its work is unknown; send it again if "
        f"repeating it is safe. {STAYS_OPEN}"
    )


class PingFlood:
    """A legacy server that sends ``count`` pings at once on the GET stream and holds
    each answer's POST for ``hold_seconds`` (or until ``done``); it counts the answers
    it got."""

    def __init__(self, count: int, hold_seconds: float) -> None:
        self.count, self.hold_seconds = count, hold_seconds
        self.answered: set[Any] = set()
        self.done = threading.Event()  # set from the test's loop, read in the server's

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        if scope["method"] == "GET":
            head = [(b"content-type", b"text/event-stream")]
            await send({"type": "http.response.start", "status": 200, "headers": head})
            pings = "".join(
                f"data: {json.dumps({'jsonrpc': '2.0', 'id': n, 'method': 'ping'})}\n\n"
                for n in range(self.count)
            )
            await send({"type": "http.response.body", "body": pings.encode(), "more_body": True})
            with anyio.move_on_after(PATIENCE_SECONDS):
                while len(self.answered) < self.count and not self.done.is_set():  # noqa: ASYNC110
                    await anyio.sleep(0.01)
            await send({"type": "http.response.body", "body": b""})
            return
        message = json.loads(await read_request_body(receive))
        if message.get("method") == "initialize":
            result: dict[str, Any] = {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "serverInfo": {"name": "Ping flood", "version": "1"},
            }
            body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result})
            await respond(send, 200, body.encode(), content_type="application/json")
            return
        if "method" not in message:
            with anyio.move_on_after(self.hold_seconds):
                while not self.done.is_set():  # noqa: ASYNC110 (another thread's event)
                    await anyio.sleep(0.01)
            self.answered.add(message["id"])
        await respond(send, 202)


async def test_closing_does_not_wait_for_an_answer_the_server_holds() -> None:
    """The answer's POST is cut short when the client closes: the server may hold it
    for as long as the client's timeout, and thousands may wait behind it."""
    flood = PingFlood(count=1, hold_seconds=10 * PATIENCE_SECONDS)
    async with serve(flood) as running:
        # Waiting out the POST's timeout would outlast the test's own time limit.
        transport = StreamableHTTPTransport(running.url, timeout=10 * PATIENCE_SECONDS)
        try:
            with anyio.fail_after(PATIENCE_SECONDS):
                async with Client(transport, mode="legacy"):
                    while not transport._posting:  # pyright: ignore[reportPrivateUsage]  # noqa: ASYNC110
                        await anyio.sleep(0.01)
        finally:
            flood.done.set()


async def test_answers_waiting_on_a_slow_server_wait_as_data_not_tasks() -> None:
    """150 pings at once, each answer's POST held until the test lets them go: at most
    64 answers are being POSTed (a task each), the rest wait in line, and every one
    arrives. (Held by an event, not a time: a busy machine got fewer than 64 POSTs going
    within a fixed hold.)"""
    flood = PingFlood(count=150, hold_seconds=PATIENCE_SECONDS)
    async with serve(flood) as running:
        transport = StreamableHTTPTransport(running.url)
        async with Client(transport, mode="legacy"):
            posting, waiting = 0, 0

            def look() -> None:
                nonlocal posting, waiting
                now_posting = transport._posting  # pyright: ignore[reportPrivateUsage]
                now_waiting = transport._unsent.waiting  # pyright: ignore[reportPrivateUsage]
                posting, waiting = max(posting, now_posting), max(waiting, len(now_waiting))

            try:
                with anyio.fail_after(PATIENCE_SECONDS):
                    while posting < 64 or not waiting:
                        look()
                        await anyio.sleep(0.005)
                    flood.done.set()
                    while len(flood.answered) < flood.count:
                        look()
                        await anyio.sleep(0.005)
            finally:
                flood.done.set()
    assert flood.answered == set(range(150))
    assert posting == 64
    assert waiting > 0


async def test_a_server_that_never_takes_answers_is_no_longer_read(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A server sends 5,000 pings and holds every answer's POST: once more than 1,024
    of its requests wait for their answers or for those answers' POSTs, the stream is no
    longer read (the server's writes wait instead), so none is dropped. The client read
    the whole flood, 4,096 answers waited, and the rest were dropped."""
    paused = anyio.Event()
    when_drained = client_module._Unsent.when_drained  # pyright: ignore[reportPrivateUsage]

    def reading_waits(self: Any, callback: Callable[[], None]) -> None:
        paused.set()
        when_drained(self, callback)

    monkeypatch.setattr(client_module._Unsent, "when_drained", reading_waits)  # pyright: ignore[reportPrivateUsage]
    flood = PingFlood(count=5000, hold_seconds=PATIENCE_SECONDS)
    async with serve(flood) as running:
        transport = StreamableHTTPTransport(running.url)
        async with Client(transport, mode="legacy"):
            with anyio.fail_after(PATIENCE_SECONDS):
                await paused.wait()
            unsent = transport._unsent  # pyright: ignore[reportPrivateUsage]
            held = len(unsent.asked) + len(unsent.waiting)  # reading has stopped
            flood.done.set()
    assert 1024 < held < 4096
    assert not [r for r in caplog.records if "are dropped" in r.getMessage()]


def test_dropping_answers_is_said_once_each_time_it_starts(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Once fewer answers wait, the next time the line is full is said again (the
    warning is not given for every answer dropped, nor only once ever)."""
    transport = StreamableHTTPTransport("http://127.0.0.1:9/mcp")
    transport._posting = client_module._POSTED_AT_ONCE  # pyright: ignore[reportPrivateUsage]
    answer: tuple[dict[str, Any], bytes, dict[str, str]] = ({"id": 1, "result": {}}, b"{}", {})
    nowhere = cast(Any, None)  # nothing is sent: every POST slot is taken

    def post() -> None:
        transport._post_soon(nowhere, nowhere, *answer)  # pyright: ignore[reportPrivateUsage]

    def warnings() -> int:
        return sum(
            "newer answers and notifications are dropped" in r.getMessage() for r in caplog.records
        )

    for _ in range(client_module._WAITING_TO_POST + 3):  # pyright: ignore[reportPrivateUsage]
        post()
    waiting = transport._unsent.waiting  # pyright: ignore[reportPrivateUsage]
    assert (len(waiting), warnings()) == (client_module._WAITING_TO_POST, 1)  # pyright: ignore[reportPrivateUsage]
    waiting.popleft()  # one was sent: there is room again
    post()
    assert warnings() == 1
    post()
    post()
    assert (len(waiting), warnings()) == (client_module._WAITING_TO_POST, 2)  # pyright: ignore[reportPrivateUsage]


async def test_a_request_json_cannot_carry_fails_at_once() -> None:
    """NaN has no JSON form: the call fails with a clear error before anything is sent,
    and the connection is unharmed."""
    async with (
        serve(http_app()) as running,
        Client(running.url, mode="legacy", elicitation_callback=answer_upper) as client,
    ):
        with anyio.fail_after(PATIENCE_SECONDS):
            with pytest.raises(MCPError, match=r"Could not send the request: .*NaN"):
                await client.call_tool("pause", {"seconds": float("nan")})
            result = await client.call_tool("echo_elicit", {"tag": "after"})
    assert result.content == [TextContent(text="after:TAG=AFTER")]


@pytest.mark.skipif(sys.platform != "linux", reason="fills a listen backlog the Linux way")
@pytest.mark.parametrize(
    ("target", "problem"),
    [
        ("http://[::1/mcp", "it is not a valid URL"),
        ("http://127.0.0.1:99999/mcp", "port 99999 is not 1 to 65535"),
        ("http://127.0.0.1:0/mcp", "port 0 is not 1 to 65535"),
        ("http:///mcp", "it names no host"),  # httpx said "missing a protocol"
        ("http://:8000/mcp", "it names no host"),
        ("localhost:8000/mcp", "a string target must be an http(s) URL"),
    ],
)
async def test_a_target_that_is_no_url_is_refused_with_what_to_give(
    target: str, problem: str
) -> None:
    with pytest.raises(ValueError, match="Cannot connect to") as caught:
        async with Client(target):
            pass
    assert problem in str(caught.value)


@pytest.mark.parametrize(
    ("headers", "problem"),
    [
        ({"X-Name": "caf\u00e9"}, "holds a character HTTP headers cannot carry"),
        ({"X-Name": "a\r\nX-Injected: 1"}, "holds a character HTTP headers cannot carry"),
        ({"X Name": "a"}, "is not one HTTP allows"),
        ({"": "a"}, "is not one HTTP allows"),
    ],
)
def test_headers_http_cannot_carry_are_refused_when_given(
    headers: dict[str, str], problem: str
) -> None:
    """They failed every request with an encoding error, far from where they were given
    (a CR LF would have started a header of its own, had the encoder let it through)."""
    with pytest.raises(ValueError, match=problem):
        StreamableHTTPTransport("http://127.0.0.1:9/mcp", headers=headers)
    assert StreamableHTTPTransport("http://x/mcp", headers={"X-Key": "a b\tc"}).headers


async def test_connecting_to_a_server_that_never_accepts_times_out() -> None:
    """A port whose listen backlog is full never completes a connection: the connect
    timeout ends the wait with a clear error."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(0)
        port = listener.getsockname()[1]
        fillers = [socket.socket() for _ in range(3)]
        try:
            for filler in fillers:
                filler.setblocking(False)
                filler.connect_ex(("127.0.0.1", port))
            transport = StreamableHTTPTransport(f"http://127.0.0.1:{port}/mcp", timeout=0.5)
            with anyio.fail_after(PATIENCE_SECONDS), pytest.raises(MCPError) as caught:
                async with Client(transport, mode="legacy"):
                    pass
        finally:
            for filler in fillers:
                filler.close()
    assert f"could not connect to http://127.0.0.1:{port}/mcp within 0.5 s" in str(caught.value)


async def test_a_connect_error_that_says_nothing_is_told_by_its_cause() -> None:
    """An ``httpx2.ConnectError`` with no words of its own (as some failures come) is
    told by the first cause that has some, not as empty brackets."""

    def unreachable(request: httpx2.Request) -> httpx2.Response:
        try:
            raise OSError(101, "Network is unreachable")
        except OSError as exc:
            raise httpx2.ConnectError("", request=request) from exc

    async with httpx2.AsyncClient(transport=httpx2.MockTransport(unreachable)) as http:
        transport = StreamableHTTPTransport("http://127.0.0.1:9/mcp", http_client=http)
        with anyio.fail_after(PATIENCE_SECONDS), pytest.raises(MCPError) as caught:
            async with Client(transport, mode="legacy"):
                pass
    assert "could not connect to http://127.0.0.1:9/mcp ([Errno 101] Network is unreachable)" in (
        str(caught.value)
    )
