"""Streamable HTTP end to end: answerback's client against answerback's server over a
real uvicorn on loopback, including slow humans, many concurrent askers, resumption of
a dropped stream, leaks and shutdown.

Raw-request checks of every error status live in ``test_http_bad_input.py``.
"""

from __future__ import annotations

import contextvars
import json
import random
import runpy
import signal
import subprocess
from typing import Any

import anyio
import httpx2
import pytest
from http_support import (
    PATIENCE_SECONDS,
    POST_HEADERS,
    REPO,
    RawEvent,
    forget_session,
    free_port,
    initialize_params,
    python_server,
    raw_initialize,
    read_events,
    read_request_body,
    replaying,
    rpc,
    running_tasks,
    serve,
    serve_process,
    session_headers,
    settle,
)
from http_support.apps import http_app, library_server

from answerback import Client, MCPError
from answerback.client import ClientRequestContext
from answerback.transports.http import StreamableHTTPTransport
from answerback.types import (
    CONNECTION_CLOSED,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    ListRootsResult,
    TextContent,
)

pytestmark = pytest.mark.anyio

SERVE_SCRIPT = REPO / "tests" / "http_support" / "serve_script.py"


async def accept_ada(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"name": "Ada Lovelace"})


async def answer_42(
    context: ClientRequestContext, params: CreateMessageRequestParams
) -> CreateMessageResult:
    return CreateMessageResult(role="assistant", content=TextContent(text="42"), model="m")


async def no_roots(context: ClientRequestContext) -> ListRootsResult:
    return ListRootsResult(roots=[])


def derived(tag: str) -> str:
    """The answer a callback gives for ``tag``: checkable, and different from the tag."""
    return tag[::-1].upper()


async def answer_by_tag(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
    tag = params.message.removeprefix("tag=")
    return ElicitResult(action="accept", content={"value": derived(tag)})


# -- 1. the seed over HTTP --------------------------------------------------------------


async def test_seed_issue_card_over_http() -> None:
    """The seed, verbatim but for the URL's port: legacy mode, Ada's card."""
    async with (
        serve(http_app(library_server())) as running,
        Client(running.url, mode="legacy", elicitation_callback=accept_ada) as client,
    ):
        result = await client.call_tool("issue_card")
        assert client.protocol_version == "2025-11-25"
    assert repr(result.content) == "[TextContent(type='text', text='Card issued to Ada Lovelace.')]"
    assert result.is_error is False


@pytest.mark.parametrize(
    ("callbacks", "expected"),
    [
        ({"elicitation_callback": accept_ada}, ["elicitation"]),
        (
            {
                "elicitation_callback": accept_ada,
                "sampling_callback": answer_42,
                "list_roots_callback": no_roots,
            },
            ["elicitation", "sampling", "roots"],
        ),
        ({}, []),
    ],
    ids=["elicitation-only", "all-three", "none"],
)
async def test_client_features_over_http(callbacks: dict[str, Any], expected: list[str]) -> None:
    async with (
        serve(http_app(library_server())) as running,
        Client(running.url, mode="legacy", **callbacks) as client,
    ):
        result = await client.call_tool("client_features")
    assert result.structured_content == {"result": expected}


async def test_refusal_without_elicitation_callback_over_http() -> None:
    """No callback: the server's question fails the call with the fixed refusal, and the
    session keeps working."""
    async with (
        serve(http_app(library_server())) as running,
        Client(running.url, mode="legacy") as client,
    ):
        with pytest.raises(MCPError) as caught:
            await client.call_tool("issue_card")
        assert caught.value.message == "Elicitation not supported"
        again = await client.call_tool("client_features")
    assert again.structured_content == {"result": []}


async def test_user_supplied_http_client_and_headers_are_used() -> None:
    """Headers and the httpx2 client come from the user; the session still works."""
    seen: list[httpx2.Request] = []

    async def record(request: httpx2.Request) -> None:
        seen.append(request)

    async with (
        serve(http_app(library_server())) as running,
        httpx2.AsyncClient(event_hooks={"request": [record]}) as http,
    ):
        transport = StreamableHTTPTransport(
            running.url, http_client=http, headers={"x-test": "yes"}
        )
        async with Client(transport, mode="legacy", elicitation_callback=accept_ada) as client:
            result = await client.call_tool("issue_card")
        assert not http.is_closed  # a user's client is not closed for them
    assert result.content == [TextContent(text="Card issued to Ada Lovelace.")]
    assert seen
    assert all(request.headers.get("x-test") == "yes" for request in seen)
    assert seen[-1].method == "DELETE"  # closing ends the session


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_posts_run_in_the_transports_context_not_the_callers(mode: str) -> None:
    """A request handed straight from the caller's step to the transport still POSTs
    in the context the transport opened in, as one it reads from its queue does: what
    the caller sets later does not leak into the HTTP client's hooks."""
    caller_mark: contextvars.ContextVar[str] = contextvars.ContextVar("caller_mark")
    marks: list[str | None] = []

    async def record(request: httpx2.Request) -> None:
        if request.method == "POST":
            marks.append(caller_mark.get(None))

    async with (
        serve(http_app(library_server())) as running,
        httpx2.AsyncClient(event_hooks={"request": [record]}) as http,
    ):
        transport = StreamableHTTPTransport(running.url, http_client=http)
        async with Client(transport, mode=mode, elicitation_callback=accept_ada) as client:
            caller_mark.set("the caller's")
            marks.clear()
            for _ in range(3):
                result = await client.call_tool("issue_card")
                assert result.content == [TextContent(text="Card issued to Ada Lovelace.")]
    assert marks  # the calls, and in the legacy era the answers to their questions
    assert set(marks) == {None}


# -- 2. a slow human --------------------------------------------------------------------


async def test_a_slow_human_does_not_break_the_call() -> None:
    """The callback takes longer than both the request's read timeout and the HTTP
    timeout; the call still completes with the answer."""

    async def slow_ada(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        await anyio.sleep(1.5)
        return ElicitResult(action="accept", content={"name": "Ada Lovelace"})

    async with serve(http_app()) as running:
        transport = StreamableHTTPTransport(running.url, timeout=0.5)
        async with Client(
            transport, mode="legacy", elicitation_callback=slow_ada, read_timeout_seconds=0.5
        ) as client:
            result = await client.call_tool("issue_card")
            explicit = await client.call_tool("issue_card", read_timeout_seconds=0.5)
    assert result.content == [TextContent(text="Card issued to Ada Lovelace.")]
    assert explicit.content == [TextContent(text="Card issued to Ada Lovelace.")]


# -- 3. both directions, concurrently ---------------------------------------------------


async def test_many_clients_many_calls_answered_out_of_order() -> None:
    """10 clients x 3 calls in flight, each eliciting; answers come back in random order
    and every result belongs to its own request."""
    clients, calls_per_client = 10, 3
    rng = random.Random(1234)
    results: dict[str, str] = {}

    async def shuffled(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        await anyio.sleep(rng.uniform(0, 0.2))
        return await answer_by_tag(context, params)

    async def one_client(url: str, index: int) -> None:
        async with Client(url, mode="legacy", elicitation_callback=shuffled) as client:

            async def one_call(tag: str) -> None:
                result = await client.call_tool("echo_elicit", {"tag": tag})
                [content] = result.content
                assert isinstance(content, TextContent)
                results[tag] = content.text

            async with anyio.create_task_group() as tg:
                for call in range(calls_per_client):
                    tg.start_soon(one_call, f"c{index}-r{call}-{rng.randrange(10**6)}")

    app = http_app()
    async with serve(app) as running:
        with anyio.fail_after(PATIENCE_SECONDS):
            async with anyio.create_task_group() as tg:
                for index in range(clients):
                    tg.start_soon(one_client, running.url, index)
        assert await settle(lambda: not app.sessions)
    assert len(results) == clients * calls_per_client
    for tag, text in results.items():
        assert text == f"{tag}:{derived(tag)}"


# -- 5. resumption ----------------------------------------------------------------------


async def test_a_dropped_stream_resumes_with_last_event_id() -> None:
    """Drop a tools/call stream mid-elicitation, answer the elicitation by POST, then GET
    with Last-Event-ID: the tools/call result arrives on the resumed stream."""
    app = http_app(retry_ms=250)
    async with serve(app) as running, httpx2.AsyncClient(timeout=PATIENCE_SECONDS) as http:
        session_id, _ = await raw_initialize(http, running.url, elicitation={})
        headers = session_headers(session_id)
        seen: list[RawEvent] = []
        call = rpc("tools/call", {"name": "issue_card", "arguments": {}}, id=7)
        async with http.stream("POST", running.url, json=call, headers=headers) as response:
            assert response.status_code == 200
            assert response.headers["content-type"].startswith("text/event-stream")
            async for event in read_events(response):
                seen.append(event)
                if event.message is not None:
                    break  # the elicitation request: now drop the connection
        hint, elicit = seen
        assert hint.message is None
        assert hint.event_id is None  # the question came at once: its own id is the first
        assert hint.retry_ms == 250
        assert elicit.event_id
        assert elicit.message is not None
        assert elicit.message["method"] == "elicitation/create"
        assert elicit.message["params"]["message"] == "What name should go on the card?"

        answer = {
            "jsonrpc": "2.0",
            "id": elicit.message["id"],
            "result": {"action": "accept", "content": {"name": "Ada Lovelace"}},
        }
        posted = await http.post(running.url, json=answer, headers=headers)
        assert posted.status_code == 202

        resume = {**headers, "accept": "text/event-stream", "last-event-id": elicit.event_id}
        replayed: list[RawEvent] = []
        with anyio.fail_after(PATIENCE_SECONDS):
            async with http.stream("GET", running.url, headers=resume) as response:
                assert response.status_code == 200
                async for event in read_events(response):
                    replayed.append(event)
        [final] = replayed
        assert final.event_id
        assert final.event_id != elicit.event_id
        assert final.message is not None
        assert final.message["id"] == 7
        assert final.message["result"]["content"] == [
            {"type": "text", "text": "Card issued to Ada Lovelace."}
        ]


async def test_the_client_resumes_a_dropped_stream_itself() -> None:
    """answerback's client resumes a broken response stream with Last-Event-ID, honouring
    the server's retry hint, and the call completes."""
    app = http_app(retry_ms=100)
    dropped = anyio.Event()
    resumed_from: list[str] = []

    async def record(request: httpx2.Request) -> None:
        if request.method == "GET" and "last-event-id" in request.headers:
            resumed_from.append(request.headers["last-event-id"])

    async def drop_then_answer(
        context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult:
        # Cut every open response stream of the session from the server's side.
        for session in app.sessions.values():
            for stream in session.streams.values():
                if stream.listener is not None:
                    stream.listener.close()
        dropped.set()
        return ElicitResult(action="accept", content={"name": "Ada Lovelace"})

    async with (
        serve(app) as running,
        httpx2.AsyncClient(event_hooks={"request": [record]}) as http,
    ):
        transport = StreamableHTTPTransport(running.url, http_client=http)
        async with Client(transport, mode="legacy", elicitation_callback=drop_then_answer) as c:
            with anyio.fail_after(PATIENCE_SECONDS):
                result = await c.call_tool("issue_card")
    assert dropped.is_set()
    assert len(resumed_from) == 1
    assert result.content == [TextContent(text="Card issued to Ada Lovelace.")]


async def test_keepalive_comments_on_a_quiet_stream() -> None:
    """A stream with nothing to say sends SSE comments so proxies keep it open."""
    app = http_app(keepalive_seconds=0.1)
    async with serve(app) as running, httpx2.AsyncClient(timeout=PATIENCE_SECONDS) as http:
        session_id, _ = await raw_initialize(http, running.url)
        headers = {**session_headers(session_id), "accept": "text/event-stream"}
        comments = 0
        with anyio.fail_after(PATIENCE_SECONDS):
            async with http.stream("GET", running.url, headers=headers) as response:
                assert response.status_code == 200
                async for line in response.aiter_lines():
                    if line.startswith(":"):
                        comments += 1
                        if comments == 2:
                            break


ASKING_SERVER = REPO / "tests" / "servers" / "asking_server.py"


@pytest.mark.parametrize(
    ("tool", "arguments", "method", "answer"),
    [
        (
            "wait_for_name",
            {"tag": "raw"},
            "elicitation/create",
            {"action": "accept", "content": {"name": "Ada"}},
        ),
        (
            "ask_model",
            {},
            "sampling/createMessage",
            {"role": "assistant", "content": {"type": "text", "text": "42"}, "model": "m"},
        ),
        ("list_my_roots", {}, "roots/list", {"roots": [{"uri": "file:///a", "name": "a"}]}),
    ],
    ids=["elicitation", "sampling", "roots"],
)
async def test_server_requests_ride_the_calls_own_stream(
    tool: str, arguments: dict[str, Any], method: str, answer: dict[str, Any]
) -> None:
    """The server's question arrives on the POST stream of the call that asked it; the
    answer is POSTed (202) and the call's result follows on the same stream."""
    server = runpy.run_path(str(ASKING_SERVER), run_name="asking_server_raw")["mcp"]
    app = http_app(server)
    async with serve(app) as running, httpx2.AsyncClient(timeout=PATIENCE_SECONDS) as http:
        session_id, _ = await raw_initialize(
            http, running.url, elicitation={}, sampling={}, roots={}
        )
        headers = session_headers(session_id)
        call = rpc("tools/call", {"name": tool, "arguments": arguments}, id=11)
        messages: list[dict[str, Any]] = []
        with anyio.fail_after(PATIENCE_SECONDS):
            async with http.stream("POST", running.url, json=call, headers=headers) as response:
                async for event in read_events(response):
                    if event.message is None:
                        continue
                    messages.append(event.message)
                    if event.message.get("method") == method:
                        reply = {"jsonrpc": "2.0", "id": event.message["id"], "result": answer}
                        posted = await http.post(running.url, json=reply, headers=headers)
                        assert posted.status_code == 202
        question, result = messages
        assert question["method"] == method
        assert result["id"] == 11
        assert "result" in result, result


# -- session expiry ---------------------------------------------------------------------


async def test_the_client_sets_up_a_new_session_after_404() -> None:
    """The server forgets the session; the client's next call initializes again and
    goes through."""
    app = http_app()
    async with serve(app) as running:
        transport = StreamableHTTPTransport(running.url)
        async with Client(transport, mode="legacy", elicitation_callback=accept_ada) as client:
            first_session = transport.session_id
            assert first_session in app.sessions
            await forget_session(running.url, first_session)
            result = await client.call_tool("issue_card")
            assert result.content == [TextContent(text="Card issued to Ada Lovelace.")]
            assert transport.session_id is not None
            assert transport.session_id != first_session
            assert transport.session_id in app.sessions
        assert await settle(lambda: not app.sessions)


class EndsSessionsOfCalls:
    """Wraps an app: its first ``times`` tool calls are answered 404, as by a server
    that has lost the session (a replica without the others' state, say)."""

    def __init__(self, app: Any, times: int) -> None:
        self.app, self.times = app, times

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = await read_request_body(receive)
        if self.times and json.loads(body).get("method") == "tools/call":
            self.times -= 1
            await send({"type": "http.response.start", "status": 404, "headers": []})
            await send({"type": "http.response.body", "body": b""})
            return
        await self.app(scope, replaying(body, receive), send)


async def test_a_session_ended_again_at_once_is_set_up_again_at_the_next_call() -> None:
    """The session ends, and the one set up in its place ends before the call is sent
    again: that call fails, saying so. The next call sets a session up once more and
    goes through, instead of being sent without one, and refused, for ever."""
    app = http_app()
    async with serve(EndsSessionsOfCalls(app, times=2)) as running:
        transport = StreamableHTTPTransport(running.url)
        async with Client(transport, mode="legacy", elicitation_callback=accept_ada) as client:
            first_session = transport.session_id
            with anyio.fail_after(PATIENCE_SECONDS):
                with pytest.raises(MCPError) as caught:
                    await client.call_tool("issue_card")
                result = await client.call_tool("issue_card")
            assert transport.session_id not in (None, first_session)
        await running.call(app.close_sessions)
    assert caught.value.data["reason"] == "session_expired"
    assert "the server ended the session (HTTP 404)" in caught.value.message
    assert result.content == [TextContent(text="Card issued to Ada Lovelace.")]


async def test_a_404_on_a_notification_does_not_end_the_connection() -> None:
    """A notification meeting the 404 is dropped; the next request sets the session up
    again and succeeds."""
    app = http_app()
    async with serve(app) as running:
        transport = StreamableHTTPTransport(running.url)
        async with Client(transport, mode="legacy", elicitation_callback=accept_ada) as client:
            await client.ping()
            first_session = transport.session_id
            assert first_session is not None
            await forget_session(running.url, first_session)
            await client.send_roots_list_changed()
            await anyio.sleep(0.2)  # let the notification meet its 404
            result = await client.call_tool("issue_card")
            assert result.content == [TextContent(text="Card issued to Ada Lovelace.")]
            assert transport.session_id not in (None, first_session)


async def test_a_404_is_reported_as_session_expired() -> None:
    """Underneath, the transport turns the 404 into a connection error whose data says
    the session expired (what the client's re-initialization keys on)."""
    app = http_app()
    async with serve(app) as running, Client(running.url, mode="legacy") as client:
        client.session.on_session_expired = None
        [session_id] = app.sessions
        await forget_session(running.url, session_id)
        with pytest.raises(MCPError) as caught:
            await client.call_tool("client_features")
    assert caught.value.code == CONNECTION_CLOSED
    assert caught.value.data["reason"] == "session_expired"


# -- 6. leaks ---------------------------------------------------------------------------


async def test_no_sessions_or_tasks_leak() -> None:
    """A bounded loop of clients: some finish normally, some are cancelled while their
    callback waits (the client still DELETEs), some vanish mid-elicitation without a
    word (the idle reaper ends those). Afterwards no session, stored stream or task is
    left over, and the server still serves."""
    app = http_app(session_idle_seconds=0.5)
    async with serve(app) as running, httpx2.AsyncClient(timeout=PATIENCE_SECONDS) as http:
        # Warm up (uvicorn and httpx2 create some long-lived things on first use).
        async with Client(running.url, mode="legacy", elicitation_callback=answer_by_tag) as c:
            await c.call_tool("echo_elicit", {"tag": "warm"})
        assert await settle(lambda: not app.sessions)
        await anyio.sleep(0.3)
        baseline = running_tasks()

        for iteration in range(30):
            kind = iteration % 3
            if kind == 0:
                tag = f"n{iteration}"
                async with Client(
                    running.url, mode="legacy", elicitation_callback=answer_by_tag
                ) as c:
                    result = await c.call_tool("echo_elicit", {"tag": tag})
                assert result.content == [TextContent(text=f"{tag}:{derived(tag)}")]
            elif kind == 1:
                await cancel_mid_elicitation(running.url)
            else:
                await vanish_mid_elicitation(http, running.url)

        assert await settle(lambda: not app.sessions), list(app.sessions)
        assert len(app.event_store) == 0  # type: ignore[arg-type]
        assert await settle(lambda: running_tasks() <= baseline + 2), (running_tasks(), baseline)
        # And the server still serves.
        async with Client(running.url, mode="legacy", elicitation_callback=answer_by_tag) as c:
            result = await c.call_tool("echo_elicit", {"tag": "after"})
        assert result.content == [TextContent(text=f"after:{derived('after')}")]
    assert not app.sessions


async def cancel_mid_elicitation(url: str) -> None:
    """A client whose task is cancelled while its elicitation callback waits."""
    waiting = anyio.Event()

    async def stuck(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        waiting.set()
        await anyio.sleep_forever()
        raise AssertionError("unreachable")

    async def call() -> None:
        async with Client(url, mode="legacy", elicitation_callback=stuck) as client:
            await client.call_tool("echo_elicit", {"tag": "cancelled"})

    with anyio.fail_after(PATIENCE_SECONDS):
        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            await waiting.wait()
            tg.cancel_scope.cancel()


async def vanish_mid_elicitation(http: httpx2.AsyncClient, url: str) -> None:
    """A raw client that hangs up after the elicitation arrives: no answer, no DELETE."""
    session_id, _ = await raw_initialize(http, url, elicitation={})
    call = rpc("tools/call", {"name": "echo_elicit", "arguments": {"tag": "gone"}}, id=1)
    with anyio.fail_after(PATIENCE_SECONDS):
        async with http.stream(
            "POST", url, json=call, headers=session_headers(session_id)
        ) as response:
            async for event in read_events(response):
                if event.message is not None:
                    assert event.message["method"] == "elicitation/create"
                    break


async def test_idle_sessions_are_reaped() -> None:
    """A session nobody uses any more (no DELETE, no open stream) goes away."""
    app = http_app(session_idle_seconds=0.3)
    async with serve(app) as running, httpx2.AsyncClient(timeout=PATIENCE_SECONDS) as http:
        session_id, _ = await raw_initialize(http, running.url)
        assert session_id in app.sessions
        assert await settle(lambda: session_id not in app.sessions)
        ping = await http.post(running.url, json=rpc("ping"), headers=session_headers(session_id))
        assert ping.status_code == 404
        assert ping.json()["error"]["code"] == -32600
        assert len(app.event_store) == 0  # type: ignore[arg-type]


# -- 7. shutdown ------------------------------------------------------------------------


async def blocked_forever(
    context: ClientRequestContext, params: ElicitRequestParams
) -> ElicitResult:
    await anyio.sleep_forever()
    raise AssertionError("unreachable")


@pytest.mark.timeout(60)
async def test_shutdown_fails_in_flight_calls() -> None:
    """The server stops while calls wait on the client's callback: each call fails with
    an MCPError saying so, instead of hanging (uvicorn is given no graceful-shutdown
    timeout here, so nothing but the app itself can end those streams)."""
    app = http_app()
    failures: list[MCPError] = []
    asked = 0
    all_asked = anyio.Event()

    async def blocked(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        nonlocal asked
        asked += 1
        if asked == 3:
            all_asked.set()
        return await blocked_forever(context, params)

    async def call(url: str, tag: str) -> None:
        async with Client(url, mode="legacy", elicitation_callback=blocked) as client:
            try:
                await client.call_tool("echo_elicit", {"tag": tag})
            except MCPError as exc:
                failures.append(exc)

    with anyio.fail_after(PATIENCE_SECONDS):
        # The task group outlives the server: leaving ``serve`` waits for uvicorn to stop.
        async with (
            anyio.create_task_group() as tg,
            serve(app, graceful_seconds=None) as running,
        ):
            for tag in ("a", "b", "c"):
                tg.start_soon(call, running.url, tag)
            await all_asked.wait()
    assert len(failures) == 3
    for error in failures:
        assert error.code == CONNECTION_CLOSED
        assert "shutting down" in error.message
    assert not app.sessions


async def test_requests_during_shutdown_are_refused() -> None:
    """Once sessions are being closed for shutdown, new requests get 503, not a session."""
    app = http_app()
    async with serve(app) as running, httpx2.AsyncClient(timeout=PATIENCE_SECONDS) as http:
        await running.call(app.close_sessions)
        response = await http.post(
            running.url, json=rpc("initialize", initialize_params(), id=0), headers=POST_HEADERS
        )
        assert response.status_code == 503
        assert response.json()["error"]["code"] == CONNECTION_CLOSED
        assert "shutting down" in response.json()["error"]["message"]
        assert not app.sessions


@pytest.mark.timeout(90)
def test_run_stops_on_ctrl_c_with_calls_in_flight() -> None:
    """``mcp.run(transport="streamable-http")`` in a process of its own: Ctrl-C while a
    call waits on the client ends the process, and the call fails with an MCPError."""
    port = free_port()
    argv = python_server(SERVE_SCRIPT, "tagged", str(port))
    outcome: list[BaseException | str] = []

    async def scenario(process: subprocess.Popen[bytes]) -> None:
        waiting = anyio.Event()

        async def blocked(
            context: ClientRequestContext, params: ElicitRequestParams
        ) -> ElicitResult:
            waiting.set()
            return await blocked_forever(context, params)

        finished = anyio.Event()

        async def call() -> None:
            url = f"http://127.0.0.1:{port}/mcp"
            try:
                async with Client(url, mode="legacy", elicitation_callback=blocked) as client:
                    try:
                        await client.call_tool("echo_elicit", {"tag": "x"})
                        outcome.append("returned")
                    except MCPError as exc:
                        outcome.append(exc)
            finally:
                finished.set()

        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            with anyio.fail_after(PATIENCE_SECONDS):
                await waiting.wait()
            process.send_signal(signal.SIGINT)
            # Both, whichever comes first: the process may exit a moment before the
            # client has read the closed connection, or after its error reached it.
            with anyio.move_on_after(PATIENCE_SECONDS):
                await finished.wait()
                while process.poll() is None:  # noqa: ASYNC110 (another process)
                    await anyio.sleep(0.05)
            tg.cancel_scope.cancel()
        if not outcome:
            outcome.append("hung")

    with serve_process(argv, port) as process:
        anyio.run(scenario, process)
        exit_code = process.poll()
    [result] = outcome
    assert exit_code is not None, "the server did not stop"
    assert isinstance(result, MCPError), result
