"""The HTTP client against servers that misbehave on purpose or by misconfiguration:
each case is bounded (no loop for ever, no call that waits for ever) and its error or
warning says what happened and what to check."""

from __future__ import annotations

import json
import logging
import threading
from collections import Counter
from typing import Any

import anyio
import anyio.lowlevel
import anyio.to_thread
import pytest
from http_support import PATIENCE_SECONDS, posted_message, read_request_body, replaying, serve
from http_support.apps import tagged_server

from answerback import Client
from answerback.client import IncomingMessage
from answerback.jsonrpc import MalformedMessage
from answerback.transports.http import StreamableHTTPApp, StreamableHTTPTransport
from answerback.transports.http import _client as client_module
from answerback.types import ConnectionClosedError, ElicitResult, TextContent

pytestmark = pytest.mark.anyio


async def respond(send: Any, status: int, body: bytes, content_type: str) -> None:
    headers = [(b"content-type", content_type.encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class LosesEachSession:
    """Wraps an app: each session's first GET gets a stream that ends at once, and its
    reconnection 404, as behind a balancer without sticky sessions whose other replica
    does not know the session, until ``losing`` is unset. Requests go through. Counts
    the GETs per session."""

    def __init__(self, app: StreamableHTTPApp) -> None:
        self.app = app
        self.gets: Counter[str] = Counter()
        self.losing = True

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "GET" and self.losing:
            session = dict(scope["headers"]).get(b"mcp-session-id", b"").decode()
            self.gets[session] += 1
            if self.gets[session] == 1:
                await respond(send, 200, b": hello\n\n", "text/event-stream")
            else:
                await respond(send, 404, b"no such session", "text/plain")
            return
        await self.app(scope, receive, send)


async def listen_for_ever(client: Client) -> None:
    async with client.listen(tools_list_changed=True) as stream:
        async for _ in stream:
            pass


async def test_sessions_the_server_ends_at_once_are_set_up_with_backoff_then_given_up(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The server ended each session's GET stream with a 404 right after opening it,
    and the client set up a new session every second, for ever. Now it waits longer
    before each new one, and after five in a row stops, saying why and what to check in
    one warning, and an open legacy listen() ends."""
    wrapper = LosesEachSession(StreamableHTTPApp(tagged_server()))
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)
        await anyio.lowlevel.checkpoint()

    caplog.set_level(logging.WARNING, "answerback.http")
    async with serve(wrapper) as server:
        transport = StreamableHTTPTransport(server.url, max_retry_seconds=0)
        transport._clock = lambda: 0.0  # pyright: ignore[reportPrivateUsage]
        transport._sleep = sleep  # pyright: ignore[reportPrivateUsage]
        async with Client(transport, mode="legacy") as client:
            with anyio.fail_after(PATIENCE_SECONDS), pytest.raises(ConnectionClosedError) as ended:
                await listen_for_ever(client)
            sessions_when_given_up = len(wrapper.gets)
            logged = [r.getMessage() for r in caplog.records if r.name == "answerback.http"]
            assert transport.session_ended
            wrapper.losing = False  # the balancer is fixed
            await client.ping()  # the next request still sets a session up
            assert not transport.session_ended
    assert sessions_when_given_up == 5
    assert waits == [0.5, 1.0, 2.0]
    assert "ended 5 sessions in a row within 10 s of opening them" in ended.value.message
    assert "sticky sessions" in ended.value.message
    gone = [m for m in logged if "taken for gone" in m]
    assert len(gone) == 1, logged
    assert "sticky sessions" in gone[0]
    assert gone[0].endswith("the next request sets up a new session"), gone[0]


STAYS_OPEN = (
    "The connection stays open: the next request reaches the server afresh (or says why it cannot)."
)


class RefusesCalls:
    """Wraps an app: every ``tools/call`` POST gets a 404 with an empty body, as from a
    gateway that does not route it, or a replica that does not know the session."""

    def __init__(self, app: StreamableHTTPApp) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            body = await read_request_body(receive)
            if json.loads(body).get("method") == "tools/call":
                await respond(send, 404, b"", "text/plain")
                return
            receive = replaying(body, receive)
        await self.app(scope, receive, send)


async def test_a_404_to_one_call_says_what_to_check_not_that_the_connection_failed() -> None:
    """A 2026-07-28 call met 404 after other requests to the same URL were answered: it
    said "Connection failed: no MCP endpoint at URL; check the path", though the path
    was right and the connection went on. Now it says the request failed, what to
    check, and that the connection stays open."""
    async with (
        serve(RefusesCalls(StreamableHTTPApp(tagged_server()))) as server,
        Client(server.url, mode="2026-07-28") as client,
    ):
        with anyio.fail_after(PATIENCE_SECONDS):
            with pytest.raises(ConnectionClosedError) as caught:
                await client.call_tool("issue_card")
            await client.list_tools()
    assert caught.value.error.message == (
        f"Request failed: the server at {server.url} answered HTTP 404 Not Found, though "
        "it answered earlier requests there: a gateway or proxy in front of it does not "
        "route this request to it (check its routes, which may go by method or tool name), "
        f"or the server was replaced by one that serves MCP at another path. {STAYS_OPEN}"
    )


async def test_a_session_unknown_right_after_it_opened_says_what_to_check() -> None:
    """Every call met 404 (the session ended), and so did the call sent again in a new
    session: it failed with only "Connection failed: the server ended the session (HTTP
    404)". Now it says a new session met the 404 too, and what to check."""
    async with serve(RefusesCalls(StreamableHTTPApp(tagged_server()))) as server:
        transport = StreamableHTTPTransport(server.url)
        async with Client(transport, mode="legacy") as client:
            with anyio.fail_after(PATIENCE_SECONDS):
                await client.ping()
                with pytest.raises(ConnectionClosedError) as caught:
                    await client.call_tool("issue_card")
                await client.ping()  # a new session again, which answers
    assert caught.value.data["reason"] == "session_expired"
    assert caught.value.error.message == (
        "Request failed: the server ended the session (HTTP 404) before answering any "
        "request in it: a new session was set up for this request, and the server did not "
        "know that one either. Behind a balancer, each session's requests must reach the "
        "replica that holds it (sticky sessions) or the replicas must share a session "
        f"store; otherwise check that the server keeps its sessions. {STAYS_OPEN}"
    )


class AsksInABurst:
    """A handshake-era server whose one tool's stream carries ``count`` pings at once
    (each padded to about 1 KB, so a read of the stream brings some 60 of them), then
    the result once every ping is answered; it takes each answer at once (202)."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.answered: set[Any] = set()
        self.all_answered: anyio.Event | None = None  # made in the server's own loop

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        if scope["method"] != "POST":
            await respond(send, 405, b"", "text/plain")
            return
        message = json.loads(await read_request_body(receive))
        method = message.get("method")
        if method == "initialize":
            result: dict[str, Any] = {
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "Burst", "version": "1"},
            }
            body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result})
            await respond(send, 200, body.encode(), "application/json")
        elif method == "tools/call":
            self.all_answered = anyio.Event()
            head = [(b"content-type", b"text/event-stream")]
            await send({"type": "http.response.start", "status": 200, "headers": head})
            pad = {"_meta": {"pad": "x" * 1000}}
            pings = "".join(
                f"data: {json.dumps({'jsonrpc': '2.0', 'id': n, 'method': 'ping', 'params': pad})}"
                "\n\n"
                for n in range(self.count)
            )
            await send({"type": "http.response.body", "body": pings.encode(), "more_body": True})
            await self.all_answered.wait()
            result = {"content": [{"type": "text", "text": f"{len(self.answered)} answered"}]}
            answer = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result})
            await send({"type": "http.response.body", "body": f"data: {answer}\n\n".encode()})
        else:
            if method is None:
                self.answered.add(message["id"])
                if len(self.answered) == self.count and self.all_answered is not None:
                    self.all_answered.set()
            await respond(send, 202, b"", "text/plain")


async def test_a_burst_of_server_requests_is_answered_not_dropped(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A call's stream carried a burst of the server's requests, and the server took
    each answer at once: the client read the whole burst before its first answer went
    out, so answers past the line's bound were dropped and the call failed, blaming the
    server for taking answers too slowly. Now the stream is read only as fast as the
    answers go out, and the call succeeds. (The bounds are made small, 8 POSTed at once
    and 256 waiting, so 1,500 requests are a burst.)"""
    monkeypatch.setattr(client_module, "_POSTED_AT_ONCE", 8)
    monkeypatch.setattr(client_module, "_WAITING_TO_POST", 256)
    monkeypatch.setattr(client_module, "_UNSENT_HELD", 64)
    server_app = AsksInABurst(1500)
    caplog.set_level(logging.WARNING, "answerback.http")
    async with serve(server_app) as server, Client(server.url, mode="legacy") as client:
        with anyio.fail_after(PATIENCE_SECONDS):
            result = await client.call_tool("burst")
    assert result.content == [TextContent(text="1500 answered")]
    assert not [r for r in caplog.records if "are dropped" in r.getMessage()]


async def garbling_server(scope: Any, receive: Any, send: Any) -> None:
    """A handshake-era server whose one tool's stream carries 100 events that are not
    JSON before the answer."""
    if scope["type"] != "http":
        return
    if scope["method"] != "POST":
        await respond(send, 405, b"", "text/plain")
        return
    message = json.loads(await read_request_body(receive))
    if message.get("method") == "initialize":
        result: dict[str, Any] = {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "Garbled", "version": "1"},
        }
        body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result})
        await respond(send, 200, body.encode(), "application/json")
    elif message.get("method") == "tools/call":
        done = {"content": [{"type": "text", "text": "done"}]}
        answer = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": done})
        garbage = "".join(f"data: not json {n}\n\n" for n in range(100))
        await respond(send, 200, f"{garbage}data: {answer}\n\n".encode(), "text/event-stream")
    else:
        await respond(send, 202, b"", "text/plain")


async def test_a_flood_of_unreadable_messages_is_reported_in_full_ten_times_then_counted() -> None:
    """Each message that is not JSON was reported (by default, a warning logged), so a
    server could fill the log. Now the first ten are reported in full (the tenth saying
    what follows), then one count per minute. The clock moves a second each time it is
    read: the 70th message brings a count of 60, and the last 30 wait for the next."""
    reports: list[MalformedMessage] = []

    async def message_handler(message: IncomingMessage) -> None:
        if isinstance(message, MalformedMessage):
            reports.append(message)

    seconds = iter(range(10_000))
    async with serve(garbling_server) as server:
        transport = StreamableHTTPTransport(server.url)
        transport._clock = lambda: float(next(seconds))  # pyright: ignore[reportPrivateUsage]
        async with Client(transport, mode="legacy", message_handler=message_handler) as client:
            with anyio.fail_after(PATIENCE_SECONDS):
                result = await client.call_tool("garbled")
    assert result.content == [TextContent(text="done")]
    assert len(reports) == 11, [str(r) for r in reports]
    assert all("such message" not in str(r) for r in reports[:9])
    assert "(the 10th such message: from now on they are counted" in str(reports[9])
    assert str(reports[10]).startswith("the server sent 60 more messages that could not be read")


# -- review: questions waiting for a person never stop the reading ------------------------

QUESTIONS_OPEN = 20


def asking_app(over: threading.Event) -> Any:
    """A legacy server: ``ask`` puts ``QUESTIONS_OPEN`` elicitations on its stream and
    waits until ``over``; any other tool answers on an event stream whose answer comes in
    a chunk of its own, after the priming event. (``over`` is a thread's event: the
    server may run in a loop of its own.)"""

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await _asking(over, scope, receive, send)

    return app


async def _asking(over: threading.Event, scope: Any, receive: Any, send: Any) -> None:
    message = await posted_message(scope, receive, send)
    if message is None:
        return
    stream = [(b"content-type", b"text/event-stream")]
    if message.get("method") == "initialize":
        result: dict[str, Any] = {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "Asking", "version": "1"},
        }
        body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"application/json")],
            }
        )
        await send({"type": "http.response.body", "body": body})
    elif message.get("method") == "tools/call" and message["params"]["name"] == "ask":
        schema: dict[str, Any] = {"type": "object", "properties": {}}
        form = {"mode": "form", "message": "?", "requestedSchema": schema}
        events = "".join(
            "data: "
            + json.dumps(
                {"jsonrpc": "2.0", "id": f"q{n}", "method": "elicitation/create", "params": form}
            )
            + "\n\n"
            for n in range(QUESTIONS_OPEN)
        )
        await send({"type": "http.response.start", "status": 200, "headers": stream})
        await send({"type": "http.response.body", "body": events.encode(), "more_body": True})
        await anyio.to_thread.run_sync(over.wait)
        await send({"type": "http.response.body", "body": b""})
    elif message.get("method") == "tools/call":
        done = {"content": [{"type": "text", "text": "quick done"}]}
        answer = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": done})
        await send({"type": "http.response.start", "status": 200, "headers": stream})
        await send({"type": "http.response.body", "body": b"id: 1\ndata:\n\n", "more_body": True})
        # Only so that the answer comes in a read of its own (no test waits on this).
        await anyio.sleep(0.05)
        await send({"type": "http.response.body", "body": f"data: {answer}\n\n".encode()})
    else:
        await send({"type": "http.response.start", "status": 202, "headers": []})
        await send({"type": "http.response.body", "body": b""})


async def test_questions_waiting_for_a_person_do_not_stop_other_calls_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The streams' reading pauses while too many server requests wait for answers that
    only need sending; a question for a person may wait long, and counted, 1,024 of them
    (32 calls asking 32 each) stopped every stream: other calls' answers went unread."""
    monkeypatch.setattr(client_module, "_UNSENT_HELD", QUESTIONS_OPEN // 2)
    person = anyio.Event()
    over = threading.Event()
    asked = 0
    all_asked = anyio.Event()

    async def elicit(context: Any, params: Any) -> ElicitResult:
        nonlocal asked
        asked += 1
        if asked == QUESTIONS_OPEN:
            all_asked.set()
        await person.wait()  # the person has not answered yet
        return ElicitResult(action="decline")

    options: dict[str, Any] = {"elicitation_callback": elicit, "max_input_requests": 64}
    async with serve(asking_app(over)) as server:
        async with (
            Client(server.url, mode="legacy", **options) as client,
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(client.call_tool, "ask")
            with anyio.fail_after(PATIENCE_SECONDS):
                await all_asked.wait()
                quick = await client.call_tool("quick")
            assert quick.content == [TextContent(text="quick done")]
            tg.cancel_scope.cancel()
        over.set()  # the server's stream of questions ends
