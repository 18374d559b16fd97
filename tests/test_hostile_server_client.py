"""The client facing a server that breaks the rules in ways a probe found: a session id
on 2026-07-28 answers, a listen it never lets start, a flood of questions for the
person, an answer behind a slow notification callback, a result that is not an object,
and answers to requests never sent.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.to_thread
import pytest
from http_support import PATIENCE_SECONDS, posted_message, read_request_body, replaying, serve
from pydantic import FileUrl
from support import SERVERS, HandDrivenServer, RawPeer

from answerback import Client, StdioServer
from answerback.client import ClientRequestContext, InvalidServerResultError
from answerback.jsonrpc import JSONObject
from answerback.jsonrpc import _endpoint as endpoint_module
from answerback.server import MCPServer
from answerback.transports.http import StreamableHTTPTransport
from answerback.types import (
    ConnectionClosedError,
    ElicitRequestParams,
    ElicitResult,
    ListRootsResult,
    LoggingMessageNotificationParams,
    RequestTimeoutError,
    Root,
)

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
SUBSCRIBABLE: JSONObject = {"resources": {"subscribe": True, "listChanged": True}}
SERVER_INFO: JSONObject = {"name": "hand-driven", "version": "0"}


@asynccontextmanager
async def hand_driven(mode: str, **options: Any) -> AsyncGenerator[tuple[Client, RawPeer], None]:
    """A connected client whose server (declaring subscribable resources) the test
    plays by hand, in either era."""
    transport = HandDrivenServer()
    peer = transport.peer
    set_up_done = anyio.Event()

    async def set_up() -> None:
        try:
            await play_set_up()
        finally:
            set_up_done.set()

    async def play_set_up() -> None:
        if mode == "legacy":
            await peer.answer_initialize(SUBSCRIBABLE)
            return
        request = await peer.receive()
        assert request["method"] == "server/discover", request
        result: JSONObject = {
            "supportedVersions": [MODERN],
            "capabilities": SUBSCRIBABLE,
            "_meta": {"io.modelcontextprotocol/serverInfo": SERVER_INFO},
        }
        await peer.send({"jsonrpc": "2.0", "id": request["id"], "result": result})

    async with anyio.create_task_group() as tg:
        tg.start_soon(set_up)
        async with Client(transport, mode=mode, **options) as client:
            await set_up_done.wait()  # else a test's first read may take `initialized`
            yield client, peer


# -- a session id on 2026-07-28 answers ------------------------------------------------


class SessionOnModernAnswers:
    """A 2026-07-28 server that puts ``Mcp-Session-Id`` on its answers (as a gateway
    serving both eras may), then answers ``tools/call`` with 404, as if it ended it."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.methods: list[str] = []

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = await read_request_body(receive)
        method = json.loads(body).get("method")
        self.methods.append(method)
        if method == "tools/call":
            await send({"type": "http.response.start", "status": 404, "headers": []})
            await send({"type": "http.response.body", "body": b"gone"})
            return

        async def with_session(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message["headers"], (b"mcp-session-id", b"s1")]}
            await send(message)

        await self.app(scope, replaying(body, receive), with_session)


async def test_a_2026_connection_never_sets_up_a_session_again() -> None:
    """It sent ``initialize``, resent the call and went on in the handshake era,
    without a word; then, refusing that, it took the session id as ended and failed
    every later request at once."""
    mcp = MCPServer("Mixed")

    @mcp.tool()
    def echo(text: str) -> str:
        """Echo the text."""
        return text

    mixed = SessionOnModernAnswers(mcp.http_app())
    async with serve(mixed) as running, Client(running.url, mode="auto") as client:
        assert client.protocol_version == MODERN
        with anyio.fail_after(PATIENCE_SECONDS), pytest.raises(ConnectionClosedError) as caught:
            await client.call_tool("echo", {"text": "hi"})
        assert client.protocol_version == MODERN
        with anyio.fail_after(PATIENCE_SECONDS):
            listed = await client.list_tools()
        assert [tool.name for tool in listed.tools] == ["echo"]
    assert "initialize" not in mixed.methods
    assert mixed.methods.count("tools/call") == 1
    message = caught.value.message
    assert "answered HTTP 404" in message
    assert "does not route this request to it" in message


# -- a listen the server never lets start ----------------------------------------------


async def test_a_legacy_subscribe_never_answered_fails_listen_in_time() -> None:
    """``listen()`` waited for the ``resources/subscribe`` answer for ever."""
    async with hand_driven("legacy", connect_timeout_seconds=0.2) as (client, peer):
        with anyio.fail_after(PATIENCE_SECONDS), pytest.raises(RequestTimeoutError) as caught:
            async with client.listen(resource_subscriptions=["books://1"]):
                pytest.fail("the block ran without a subscription")
        subscribe = await peer.receive()
    assert subscribe["method"] == "resources/subscribe"
    message = caught.value.message
    assert message.startswith(
        "listen() did not start: the server 'hand-driven' 0 did not answer "
        "'resources/subscribe' within 0.2 s (Client(connect_timeout_seconds=...))"
    )
    assert "raise the timeout if it is only slow" in message


async def test_a_2026_listen_never_acknowledged_fails_in_time() -> None:
    async with hand_driven(MODERN, connect_timeout_seconds=0.2) as (client, peer):
        with anyio.fail_after(PATIENCE_SECONDS), pytest.raises(RequestTimeoutError) as caught:
            async with client.listen(resources_list_changed=True):
                pytest.fail("the block ran without an acknowledgement")
        listen = await peer.receive()
        cancelled = await peer.receive()
    assert listen["method"] == "subscriptions/listen"
    assert cancelled["method"] == "notifications/cancelled"
    assert cancelled["params"]["requestId"] == listen["id"]
    assert "did not acknowledge 'subscriptions/listen' within 0.2 s" in caught.value.message


# -- a flood of questions for the person -----------------------------------------------


async def test_a_legacy_server_has_at_most_max_input_requests_questions_answered_at_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A server could start 4,096 elicitation callbacks at once: a form each, for one
    person. Past the limit (per call in progress, here one) questions are refused as
    busy; pings and roots are answered."""
    caplog.set_level(logging.WARNING, "answerback.client")
    limit, flood = 4, 50
    running = peak = 0
    person_answers = anyio.Event()

    async def person(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        try:
            if running <= limit:  # past the limit (the old code) answer at once
                await person_answers.wait()
            return ElicitResult(action="decline")
        finally:
            running -= 1

    async def roots(context: ClientRequestContext) -> ListRootsResult:
        return ListRootsResult(roots=[Root(uri=FileUrl("file:///tmp"))])

    server = StdioServer(sys.executable, [str(SERVERS / "question_flood_server.py"), "50", "4"])
    async with Client(
        server,
        mode="legacy",
        elicitation_callback=person,
        list_roots_callback=roots,
        max_input_requests=limit,
    ) as client:
        with anyio.fail_after(PATIENCE_SECONDS):
            result = await client.call_tool("ask")
        person_answers.set()
    seen = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert peak == limit
    assert seen["busy"] == flood - limit
    assert seen["pings"] == seen["roots"] == flood
    assert seen["refusal"] == (
        f"Busy: this client already has {limit} of your questions (elicitation, sampling) "
        f"waiting for answers, its limit: Client(max_input_requests={limit}) for each of "
        "its requests in progress (1). Wait for their answers, then ask again."
    )
    warnings = [r.getMessage() for r in caplog.records if "questions" in r.getMessage()]
    assert len(warnings) == 1, warnings
    assert "server 'Flood' 1.0 asked more than 4 questions" in warnings[0]
    assert "with 1 request(s) of this client in progress" in warnings[0]


# -- a slow notification callback ------------------------------------------------------


class SteppedClock:
    """The engine's ``time``: it stands still until a test moves it on, and, while
    ``watching``, tells (``looked``) when the engine reads it: a timer checked again."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.watching = False
        self.looked = anyio.Event()

    def monotonic(self) -> float:
        if self.watching:
            self.looked.set()
        return self.now


async def test_an_answer_behind_a_slow_log_callback_does_not_time_out(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The reader reads nothing while a notification callback runs, so an answer the
    server already sent waited unread and its request timed out ("did not answer
    'logging/setLevel' within 30 s" while connecting, though the server answered)."""
    clock = SteppedClock()
    monkeypatch.setattr(endpoint_module, "time", clock)

    async def slow_log(params: LoggingMessageNotificationParams) -> None:
        clock.now += 100.0  # far past the timeout
        clock.watching = True
        await clock.looked.wait()  # the ping's timer was checked while this ran
        clock.watching = False

    async def answer_ping(peer: RawPeer) -> None:
        request = await peer.receive()
        log = {"level": "info", "data": "slow to write"}
        await peer.send({"jsonrpc": "2.0", "method": "notifications/message", "params": log})
        await peer.send({"jsonrpc": "2.0", "id": request["id"], "result": {}})

    options: dict[str, Any] = {"logging_callback": slow_log, "read_timeout_seconds": 0.05}
    async with hand_driven("legacy", **options) as (client, peer), anyio.create_task_group() as tg:
        tg.start_soon(answer_ping, peer)
        with anyio.fail_after(PATIENCE_SECONDS):
            await client.ping()
    assert clock.looked.is_set()


# -- a result that is not an object ----------------------------------------------------


@pytest.mark.parametrize("mode", ["legacy", MODERN])
async def test_a_result_that_is_not_an_object_is_an_invalid_result(mode: str) -> None:
    """It was a bare -32600 ("Invalid Request"), which reads as the client's mistake."""

    async def answer(peer: RawPeer) -> None:
        request = await peer.receive()
        await peer.send({"jsonrpc": "2.0", "id": request["id"], "result": "not an object"})

    failure: InvalidServerResultError | None = None
    async with hand_driven(mode) as (client, peer), anyio.create_task_group() as tg:
        tg.start_soon(answer, peer)
        with anyio.fail_after(PATIENCE_SECONDS):
            try:
                await client.list_tools()
            except InvalidServerResultError as exc:
                failure = exc
    assert failure is not None
    assert failure.data["method"] == "tools/list"
    message = failure.message
    assert "'hand-driven' 0 answered 'tools/list' with a result that is not an object" in message
    assert "report it to the server's authors" in message.lower()


# -- answers to requests never sent ----------------------------------------------------


async def test_the_late_answer_to_a_call_given_up_is_no_stray_answer(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A server may answer a request just as the client cancels it (the specification
    allows the race): that answer is expected, and logging it as one to a request never
    sent misled under cancellation load."""
    caplog.set_level(logging.WARNING, "answerback.jsonrpc")
    async with hand_driven("legacy") as (client, peer):
        with anyio.fail_after(PATIENCE_SECONDS):
            request: JSONObject = {}
            async with anyio.create_task_group() as tg:
                tg.start_soon(client.ping)
                request = await peer.receive()
                tg.cancel_scope.cancel()
            cancelled = await peer.receive()
            assert cancelled["method"] == "notifications/cancelled"
            await peer.send({"jsonrpc": "2.0", "id": request["id"], "result": {}})
            await peer.send({"jsonrpc": "2.0", "id": "never-sent", "result": {}})
            async with anyio.create_task_group() as tg:

                async def answer_ping() -> None:
                    ping = await peer.receive()
                    await peer.send({"jsonrpc": "2.0", "id": ping["id"], "result": {}})

                tg.start_soon(answer_ping)
                await client.ping()  # read after both answers
    unknown = [r.getMessage() for r in caplog.records if "unknown request id" in r.getMessage()]
    assert len(unknown) == 1, unknown
    assert "'never-sent'" in unknown[0]


async def test_answers_to_nothing_are_logged_first_then_counted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Each one logged a warning: a server could fill the log without limit."""
    caplog.set_level(logging.WARNING, "answerback.jsonrpc")
    async with hand_driven("legacy") as (client, peer):
        for n in range(2000):
            await peer.send({"jsonrpc": "2.0", "id": f"never-{n}", "result": {}})
        async with anyio.create_task_group() as tg:

            async def answer_ping() -> None:
                request = await peer.receive()
                await peer.send({"jsonrpc": "2.0", "id": request["id"], "result": {}})

            tg.start_soon(answer_ping)
            with anyio.fail_after(PATIENCE_SECONDS):
                await client.ping()  # read after every stray answer
    unknown = [r.getMessage() for r in caplog.records if "unknown request id" in r.getMessage()]
    assert len(unknown) == 4, unknown
    assert unknown[0].startswith("dropped a response to unknown request id 'never-0'")
    assert "counted, not each logged" in unknown[0]
    assert unknown[1].startswith("dropped 10 responses to unknown request ids")
    assert "dropped 1000 responses" in unknown[3]
    assert "(the latest: 'never-999')" in unknown[3]


async def forgets_its_session(scope: Any, receive: Any, send: Any) -> None:
    """A legacy server that opens a session on ``initialize`` and answers 404 to every
    other request in it, as one that does not keep sessions."""
    message = await posted_message(scope, receive, send)
    if message is None:
        return
    status, headers, body = 404, [(b"content-type", b"text/plain")], b""
    if message.get("method") == "initialize":
        result: JSONObject = {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "serverInfo": SERVER_INFO,
        }
        answer = {"jsonrpc": "2.0", "id": message["id"], "result": result}
        status, body = 200, json.dumps(answer).encode()
        headers = [(b"content-type", b"application/json"), (b"mcp-session-id", b"s1")]
    elif "id" not in message:
        status = 202
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def test_a_404_in_the_first_session_does_not_say_a_new_one_was_set_up() -> None:
    """A request meeting 404 in a session that replaced none (here the first, with no
    client to set one up again) said "a new session was set up for this request, and
    the server did not know that one either": nothing had been set up again."""
    async with serve(forgets_its_session) as server:
        transport = StreamableHTTPTransport(server.url)
        async with transport.connect() as (read, write):
            peer = RawPeer(read, write)
            await peer.send(
                {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "initialize",
                    "params": {
                        "protocolVersion": "2025-11-25",
                        "capabilities": {},
                        "clientInfo": {"name": "raw", "version": "0"},
                    },
                }
            )
            assert "result" in await peer.receive()
            await peer.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            await peer.send({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
            answer = await peer.receive()
    assert answer["id"] == 2
    message = answer["error"]["message"]
    assert "before answering any request in it. Behind a balancer" in message, message
    assert "a new session was set up" not in message, message


async def fails_calls_with_502(scope: Any, receive: Any, send: Any) -> None:
    """A legacy server whose tool calls meet a proxy's 502 (it answers the rest)."""
    message = await posted_message(scope, receive, send)
    if message is None:
        return
    method = message.get("method")
    answer: JSONObject = {"jsonrpc": "2.0", "id": message.get("id")}
    if method == "initialize":
        answer["result"] = {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": SERVER_INFO,
        }
    elif method == "tools/list":
        answer["result"] = {"tools": [{"name": "order", "inputSchema": {"type": "object"}}]}
    else:
        answer["error"] = {"code": -32601, "message": f"Method not found: {method}"}
    status, body = 200, json.dumps(answer).encode()
    if "id" not in message:
        status, body = 202, b""
    elif method == "tools/call":
        status, body = 502, b"Bad Gateway"
    headers = [(b"content-type", b"application/json" if status == 200 else b"text/plain")]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


async def test_a_one_shot_call_meeting_a_502_prints_the_reason_alone() -> None:
    """The one-shot command printed the library's "Request failed: ... The connection
    stays open: the next request reaches the server afresh", though it exits at once;
    it now prints the reason the error keeps apart in its data."""
    async with serve(fails_calls_with_502) as server:
        done = await anyio.to_thread.run_sync(
            lambda: subprocess.run(
                [sys.executable, "-m", "answerback", "call", server.url, "order"],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=PATIENCE_SECONDS,
                check=False,
            )
        )
    assert done.returncode == 3, done.stderr
    assert "): HTTP 502 Bad Gateway with a body that is not a JSON-RPC answer" in done.stderr, (
        done.stderr
    )
    assert "Request failed" not in done.stderr, done.stderr
    assert "stays open" not in done.stderr, done.stderr
