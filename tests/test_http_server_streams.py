"""Streamable HTTP server, raw requests: what a stream holds and when it lets go.

A cancelled legacy request ends its stream and leaves nothing stored; a 2026-07-28
client that hangs up stops the server's work; what cannot be sent as JSON becomes an
error response; the event store and the GET backlog stay bounded while a session lives;
a session routes what the server sends in the server's own step unless its event store
must be awaited; a client that does not read holds up only the call writing to it, or
has its broadcast stream ended; a resume the store cannot replay never gets the 404
that would end the session. Every test ends with a valid call that succeeds (the
routing tests drive a session directly).
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import socket
from collections.abc import AsyncGenerator, Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import httpx2
import pytest
from http_support import (
    PATIENCE_SECONDS,
    POST_HEADERS,
    Flag,
    RawEvent,
    first_result,
    initialize_params,
    raw_initialize,
    read_events,
    rpc,
    serve,
    session_headers,
)
from http_support.apps import CardHolder, tagged_server
from scale_out.cluster import missing_for_redis, redis_server
from support import ReportingEventLoop

from answerback import Client, MCPError
from answerback.jsonrpc import Envelope
from answerback.jsonrpc._channel import open_channel
from answerback.server import Context, MCPServer
from answerback.transports import _pipes as pipes_module
from answerback.transports.http import (
    InMemoryEventStore,
    RedisState,
    StreamableHTTPApp,
    StreamableHTTPTransport,
)
from answerback.transports.http import _legacy_session as legacy_session_module
from answerback.transports.http import _serving as serving_module
from answerback.transports.http._legacy_session import LegacySession
from answerback.transports.http._server import REPLAY_WRITE_BYTES
from answerback.types import (
    Annotations,
    CallToolResult,
    LoggingMessageNotificationParams,
    TextContent,
    ToolListChangedNotification,
)

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
RESULT_BYTES = 256 * 1024


@pytest.fixture
async def http() -> AsyncGenerator[httpx2.AsyncClient, None]:
    async with httpx2.AsyncClient(timeout=PATIENCE_SECONDS) as client:
        yield client


async def call_pause(http: httpx2.AsyncClient, url: str, session_id: str | None = None) -> None:
    """A valid call succeeds: in the session if one is given, else in the 2026 shape."""
    params: dict[str, Any] = {"name": "pause", "arguments": {"seconds": 0}}
    if session_id is None:
        params["_meta"] = modern_meta()
        headers = modern_headers("tools/call", "pause")
    else:
        headers = session_headers(session_id)
    with anyio.fail_after(PATIENCE_SECONDS):
        async with http.stream(
            "POST", url, json=rpc("tools/call", params, id=99), headers=headers
        ) as r:
            assert r.status_code == 200, await r.aread()
            answer = await first_result(r)
    assert answer["result"]["content"] == [{"type": "text", "text": "done"}], answer


def modern_meta() -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
    }


def modern_headers(
    method: str, name: str | None = None, accept: str | None = None
) -> dict[str, str]:
    headers = {**POST_HEADERS, "mcp-protocol-version": MODERN, "mcp-method": method}
    if name is not None:
        headers["mcp-name"] = name
    if accept is not None:
        headers["accept"] = accept
    return headers


def _refuse(constant: str) -> Any:
    raise ValueError(f"not JSON: {constant}")


def strict_messages(sse_body: str) -> list[dict[str, Any]]:
    """Every message of a raw SSE body, each parsed as strict JSON (no NaN, Infinity)."""
    messages: list[dict[str, Any]] = []
    for block in sse_body.replace("\r\n", "\n").split("\n\n"):
        lines = block.split("\n")
        text = "\n".join(line[5:].removeprefix(" ") for line in lines if line.startswith("data:"))
        if text:
            messages.append(json.loads(text, parse_constant=_refuse))
    return messages


# -- 3: a cancelled legacy request ends its stream and leaves nothing behind -------------


async def test_a_cancelled_request_ends_its_stream_and_is_forgotten(
    http: httpx2.AsyncClient,
) -> None:
    app = tagged_server().http_app()
    async with serve(app) as server:
        session_id, _ = await raw_initialize(http, server.url, elicitation={})
        headers = session_headers(session_id)
        session = app.sessions[session_id]
        call = rpc("tools/call", {"name": "echo_elicit", "arguments": {"tag": "c"}}, id=1)
        with anyio.fail_after(PATIENCE_SECONDS):
            async with http.stream("POST", server.url, json=call, headers=headers) as response:
                events = read_events(response)
                async for event in events:
                    if event.message is not None:
                        assert event.message["method"] == "elicitation/create"
                        break
                [stream_id] = [s.id for s in session.request_streams.values()]
                assert stream_id in session.stored
                cancel = rpc("notifications/cancelled", {"requestId": 1, "reason": "no"}, id=None)
                assert (
                    await http.post(server.url, json=cancel, headers=headers)
                ).status_code == 202
                rest = [event.message async for event in events]  # the stream ends
        assert [m for m in rest if m is not None and "method" not in m] == []
        assert not session.request_streams
        assert stream_id not in session.stored
        await call_pause(http, server.url, session_id)


async def test_a_cancelled_request_waiting_for_a_json_answer_is_released(
    http: httpx2.AsyncClient,
) -> None:
    """The same for a POST that takes only JSON: it ends with 204 (no answer follows)."""
    app = tagged_server().http_app()
    async with serve(app) as server:
        session_id, _ = await raw_initialize(http, server.url, elicitation={})
        headers = session_headers(session_id)
        get_headers = {**headers, "accept": "text/event-stream"}
        call = rpc("tools/call", {"name": "echo_elicit", "arguments": {"tag": "j"}}, id=2)
        outcome: list[httpx2.Response] = []

        async def post() -> None:
            json_only = {**headers, "accept": "application/json"}
            outcome.append(await http.post(server.url, json=call, headers=json_only))

        with anyio.fail_after(PATIENCE_SECONDS):
            async with (
                anyio.create_task_group() as tg,
                http.stream("GET", server.url, headers=get_headers) as stream,
            ):
                tg.start_soon(post)
                async for event in read_events(stream):  # the question comes on the GET stream
                    if event.message is not None:
                        assert event.message["method"] == "elicitation/create"
                        break
                cancel = rpc("notifications/cancelled", {"requestId": 2}, id=None)
                assert (
                    await http.post(server.url, json=cancel, headers=headers)
                ).status_code == 202
        [response] = outcome
        assert response.status_code == 204
        assert not app.sessions[session_id].json_waiters
        await call_pause(http, server.url, session_id)


# -- 6: what cannot be sent as JSON becomes an error response ---------------------------


_UNCHECKED_INFINITY = Annotations.model_construct(priority=float("inf"))
"""A value no model check stops (built without validation), for the transport's own net."""


def unencodable_server() -> MCPServer:
    mcp = MCPServer("Unencodable")

    @mcp.tool()
    def infinite() -> TextContent:
        """A result JSON cannot carry: a content block, sent as built past the tool
        layer's own check (which refuses a returned ``float("inf")``). ``Annotations``
        refuses Infinity when validated, so this one is built unvalidated."""
        return TextContent(text="unsendable", annotations=_UNCHECKED_INFINITY)

    @mcp.tool()
    async def infinite_after_a_log(ctx: Context) -> TextContent:
        """The same after a log message, so that the answer comes on an SSE stream."""
        await ctx.info("about to answer")
        return TextContent(text="unsendable", annotations=_UNCHECKED_INFINITY)

    @mcp.tool()
    def listed_name() -> str:
        """A file name that is not UTF-8, as ``os.listdir`` gives it (a lone surrogate)."""
        return b"caf\xe9.txt".decode("utf-8", "surrogateescape")

    @mcp.tool()
    async def pause(seconds: float) -> str:
        await anyio.sleep(seconds)
        return "done"

    return mcp


async def test_a_quick_answer_comes_as_plain_json_and_leaves_nothing_stored(
    http: httpx2.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A legacy call answered at once, with nothing before its answer, gets it as
    ``application/json`` (the client accepts both) and nothing is kept for resuming; a
    call that sends something first answers on an SSE stream."""
    # "At once" is a short wait; a long one here, so a busy machine cannot make it SSE.
    wait = "answerback.transports.http._server._FIRST_EVENT_WAIT_SECONDS"
    monkeypatch.setattr(wait, PATIENCE_SECONDS)
    app = unencodable_server().http_app()
    async with serve(app) as server:
        session_id, _ = await raw_initialize(http, server.url)
        headers = session_headers(session_id)
        call = rpc("tools/call", {"name": "pause", "arguments": {"seconds": 0}}, id=7)
        stored = len(app.event_store)  # type: ignore[arg-type]
        quick = await http.post(server.url, json=call, headers=headers)
        assert quick.status_code == 200
        assert quick.headers["content-type"] == "application/json"
        assert quick.headers["mcp-session-id"] == session_id
        assert quick.json()["result"]["content"] == [{"type": "text", "text": "done"}]
        assert len(app.event_store) == stored  # type: ignore[arg-type]
        streamed = rpc("tools/call", {"name": "infinite_after_a_log", "arguments": {}}, id=8)
        sse = await http.post(server.url, json=streamed, headers=headers)
        assert sse.headers["content-type"].startswith("text/event-stream")
        methods = [message.get("method") for message in strict_messages(sse.text)]
        assert methods == ["notifications/message", None]
        await call_pause(http, server.url, session_id)


async def test_an_initialize_answered_on_a_stream_can_be_resumed_from_its_first_event(
    http: httpx2.AsyncClient,
) -> None:
    """The answer to ``initialize`` on an event stream came after a priming event that
    was stored later, so with a later id: a client resuming from that first event (the
    official SDK's client does) got nothing, and never its answer. The stored answer now
    goes first, with its own id, and resuming after it replays nothing that was lost."""
    app = unencodable_server().http_app()
    initialize = rpc("initialize", initialize_params(), id=0)
    async with serve(app) as server:
        async with http.stream("POST", server.url, json=initialize, headers=POST_HEADERS) as r:
            assert r.headers["content-type"].startswith("text/event-stream")
            events = [event async for event in read_events(r)]
            session_id = r.headers["mcp-session-id"]
        identified = [event for event in events if event.event_id is not None]
        assert identified, "the stream carried no event id to resume from"
        first = identified[0]
        assert first.message is not None, "the answer comes first, not a priming event"
        assert first.message["id"] == 0
        assert "result" in first.message
        resume = {"accept": "text/event-stream", "last-event-id": str(first.event_id)}
        resumed = await http.get(server.url, headers={**session_headers(session_id), **resume})
        assert resumed.status_code == 200
        assert strict_messages(resumed.text) == [], "nothing after the answer to replay"


async def test_a_result_holding_infinity_is_an_error_response_in_every_shape(
    http: httpx2.AsyncClient,
) -> None:
    async with serve(unencodable_server().http_app()) as server:
        session_id, _ = await raw_initialize(http, server.url)
        call = rpc("tools/call", {"name": "infinite", "arguments": {}}, id=3)
        streamed = rpc("tools/call", {"name": "infinite_after_a_log", "arguments": {}}, id=3)
        sse = await http.post(server.url, json=streamed, headers=session_headers(session_id))
        assert sse.headers["content-type"].startswith("text/event-stream")
        quick = await http.post(server.url, json=call, headers=session_headers(session_id))
        json_only = {**session_headers(session_id), "accept": "application/json"}
        plain = await http.post(server.url, json=call, headers=json_only)
        modern_call = rpc(
            "tools/call", {"name": "infinite", "arguments": {}, "_meta": modern_meta()}, id=3
        )
        modern = await http.post(
            server.url, json=modern_call, headers=modern_headers("tools/call", "infinite")
        )
        answers = [message for message in strict_messages(sse.text) if "id" in message]
        for response in (quick, plain, modern):
            assert response.status_code == 200
            assert response.headers["content-type"] == "application/json"
            answers.append(json.loads(response.text, parse_constant=_refuse))
        for answer in answers:
            assert answer["id"] == 3
            assert answer["error"]["code"] == -32603
            assert "NaN or Infinity" in answer["error"]["message"]
        await call_pause(http, server.url, session_id)
        await call_pause(http, server.url)


async def test_a_result_utf8_cannot_write_is_an_error_response_and_logged(
    http: httpx2.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    """A file name that is not UTF-8 (a lone surrogate once decoded) in a result: the
    answer was lost without a word and the call waited for ever, in both eras."""
    async with serve(unencodable_server().http_app()) as server:
        session_id, _ = await raw_initialize(http, server.url)
        call = rpc("tools/call", {"name": "listed_name", "arguments": {}}, id=5)
        legacy = await http.post(server.url, json=call, headers=session_headers(session_id))
        modern_call = rpc(
            "tools/call", {"name": "listed_name", "arguments": {}, "_meta": modern_meta()}, id=5
        )
        modern = await http.post(
            server.url, json=modern_call, headers=modern_headers("tools/call", "listed_name")
        )
        for response in (legacy, modern):
            assert response.status_code == 200
            answer = await first_result(response)
            assert answer["id"] == 5
            assert answer["error"]["code"] == -32603
            assert "lone surrogate" in answer["error"]["message"]
        await call_pause(http, server.url, session_id)
    logged = [r.getMessage() for r in caplog.records if r.name.startswith("answerback")]
    assert sum("could not send" in line and "lone surrogate" in line for line in logged) == 2


async def test_a_notification_holding_nan_is_dropped_and_the_next_one_is_sent(
    http: httpx2.AsyncClient,
) -> None:
    app = unencodable_server().http_app()
    async with serve(app) as server:
        session_id, _ = await raw_initialize(http, server.url)
        get_headers = {**session_headers(session_id), "accept": "text/event-stream"}
        session = app.sessions[session_id]
        bad = {"jsonrpc": "2.0", "method": "notifications/message", "params": {"x": math.nan}}
        good = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
        with anyio.fail_after(PATIENCE_SECONDS):
            async with http.stream("GET", server.url, headers=get_headers) as stream:

                async def send_both() -> None:  # unbounded: never blocks
                    session.outgoing.send_nowait(Envelope(bad))
                    session.outgoing.send_nowait(Envelope(good))

                await server.call(send_both)
                chunks = stream.aiter_text()
                text = ""
                while "list_changed" not in text:
                    text += await anext(chunks)
        assert strict_messages(text) == [good]
        await call_pause(http, server.url, session_id)


# -- 7: the event store forgets what nobody will ask for, and is bounded ----------------


def big_server() -> MCPServer:
    mcp = MCPServer("Big results")

    @mcp.tool()
    def big(n: int) -> str:
        """A result of RESULT_BYTES."""
        return str(n).ljust(RESULT_BYTES, "x")

    @mcp.tool()
    async def big_after_a_log(ctx: Context, n: int) -> str:
        """The same, answered on an event stream (something goes before the answer)."""
        await ctx.info("working")
        return str(n).ljust(RESULT_BYTES, "x")

    @mcp.tool()
    def big_unheard(ctx: Context, n: int) -> str:
        """The same, after ending the stream, so the answer waits in the store for a
        resumption that never comes."""
        ctx.close_sse_stream()
        return str(n).ljust(RESULT_BYTES, "x")

    @mcp.tool()
    async def pause(seconds: float) -> str:
        await anyio.sleep(seconds)
        return "done"

    return mcp


async def test_answered_calls_stay_stored_within_the_stores_byte_bound() -> None:
    """Calls with 256 KB results answered on event streams in one live session: each
    answer stays stored a while for a client that did not get it after all (its
    connection may have broken unnoticed), and the store never holds more than its
    bound."""
    limit = 1024 * 1024
    store = InMemoryEventStore(max_bytes=limit)
    app = StreamableHTTPApp(big_server(), event_store=store)
    async with serve(app) as server, Client(server.url, mode="legacy") as client:
        most = 0
        for n in range(12):
            result = await client.call_tool("big_after_a_log", {"n": n})
            assert result.structured_content == {"result": str(n).ljust(RESULT_BYTES, "x")}
            most = max(most, store.stored_bytes)
        assert RESULT_BYTES < most <= limit, most


async def test_answered_calls_are_forgotten_once_their_time_to_resume_is_over(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With no time to resume (``ANSWERED_KEPT_SECONDS`` 0 here, 60 by default), each
    answered call's events go as the next answer goes out: the store holds the latest
    call's at most, not every answer of the last minutes (in Redis, for every session)."""
    monkeypatch.setattr(legacy_session_module, "ANSWERED_KEPT_SECONDS", 0.0)
    store = InMemoryEventStore()
    app = StreamableHTTPApp(big_server(), event_store=store)
    async with serve(app) as server, Client(server.url, mode="legacy") as client:
        most = 0
        for n in range(12):
            result = await client.call_tool("big_after_a_log", {"n": n})
            assert result.structured_content == {"result": str(n).ljust(RESULT_BYTES, "x")}
            most = max(most, store.stored_bytes)
        assert most <= 2 * (RESULT_BYTES + 1024), most
        assert store.event_count <= 6


async def test_events_of_broken_streams_stay_within_the_byte_bound(
    http: httpx2.AsyncClient,
) -> None:
    """Answers no connection received stay stored for resumption, but cannot make the
    store grow past its byte bound."""
    limit = 1024 * 1024
    store = InMemoryEventStore(max_bytes=limit)
    app = StreamableHTTPApp(big_server(), event_store=store)
    async with serve(app) as server:
        session_id, _ = await raw_initialize(http, server.url)
        headers = session_headers(session_id)
        for n in range(12):
            call = rpc("tools/call", {"name": "big_unheard", "arguments": {"n": n}}, id=n)
            async with http.stream("POST", server.url, json=call, headers=headers) as response:
                assert [e.message async for e in read_events(response)] == [None]  # priming
        await call_pause(http, server.url, session_id)
        assert 0 < store.stored_bytes <= limit


async def test_a_stream_replays_its_answer_while_stored_and_is_forgotten_with_its_session(
    http: httpx2.AsyncClient,
) -> None:
    store = InMemoryEventStore()
    app = StreamableHTTPApp(tagged_server(), event_store=store)
    async with serve(app) as server:
        session_id, _ = await raw_initialize(http, server.url, elicitation={})
        headers = session_headers(session_id)
        session = app.sessions[session_id]
        call = rpc("tools/call", {"name": "echo_elicit", "arguments": {"tag": "r"}}, id=5)
        seen: list[RawEvent] = []
        with anyio.fail_after(PATIENCE_SECONDS):
            async with http.stream("POST", server.url, json=call, headers=headers) as response:
                async for event in read_events(response):
                    seen.append(event)
                    if event.message is not None:
                        break
        question, last_id = seen[-1].message, seen[-1].event_id
        assert question is not None
        [stream] = session.request_streams.values()
        answer: dict[str, Any] = {
            "jsonrpc": "2.0",
            "id": question["id"],
            "result": {"action": "decline"},
        }
        assert (await http.post(server.url, json=answer, headers=headers)).status_code == 202
        resume = {**headers, "accept": "text/event-stream", "last-event-id": str(last_id)}
        for _ in range(2):  # the first resume's connection may have broken unnoticed
            with anyio.fail_after(PATIENCE_SECONDS):
                async with http.stream("GET", server.url, headers=resume) as response:
                    replayed = [e.message async for e in read_events(response) if e.message]
            assert [m["id"] for m in replayed] == [5]
        assert stream.id in session.stored
        assert (await http.delete(server.url, headers=headers)).status_code == 200
        assert len(store) == 0


async def test_an_answer_written_as_its_client_hung_up_is_replayed_on_resume(
    http: httpx2.AsyncClient,
) -> None:
    """The server may write the answer before it has read the client's hang-up: the
    write succeeds into nothing, and the answer was forgotten (a 404 on resume)."""
    release = Flag()
    mcp = tagged_server()

    @mcp.tool()
    async def slow(ctx: Context) -> str:
        await ctx.info("working")
        await release.wait()
        return "finished"

    app = mcp.http_app()
    async with serve(app) as server:
        session_id, _ = await raw_initialize(http, server.url)
        headers = session_headers(session_id)
        call = rpc("tools/call", {"name": "slow", "arguments": {}}, id=4)
        last_id: str | None = None
        with anyio.fail_after(PATIENCE_SECONDS):
            async with http.stream("POST", server.url, json=call, headers=headers) as response:
                async for event in read_events(response):
                    if event.message is not None:
                        last_id = event.event_id
                        break
        [stream] = app.sessions[session_id].request_streams.values()
        release.set()
        with anyio.fail_after(PATIENCE_SECONDS):
            while not stream.done:  # noqa: ASYNC110 (the answer is written, or stored)
                await anyio.sleep(0.01)
        resume = {**headers, "accept": "text/event-stream", "last-event-id": str(last_id)}
        with anyio.fail_after(PATIENCE_SECONDS):
            async with http.stream("GET", server.url, headers=resume) as response:
                assert response.status_code == 200
                replayed = [e.message async for e in read_events(response) if e.message]
        assert [m["id"] for m in replayed] == [4]
        assert replayed[0]["result"]["content"] == [{"type": "text", "text": "finished"}]


# -- the GET backlog is bounded --------------------------------------------------------


async def test_the_get_backlog_is_bounded_and_a_dropped_question_fails_its_call(
    http: httpx2.AsyncClient,
) -> None:
    """In JSON-response mode with no GET stream open, a question waits in the backlog;
    pushed out by later messages, it fails the tool's ``elicit`` at once."""
    mcp = tagged_server()

    @mcp.tool()
    async def ask_while_chatty(ctx: Context) -> str:
        outcome: list[str] = []

        async def ask() -> None:
            try:
                await ctx.elicit("Name?", schema=CardHolder)
                outcome.append("answered")
            except MCPError as exc:
                outcome.append(exc.error.message)

        async with anyio.create_task_group() as tg:
            tg.start_soon(ask)
            for n in range(100):
                if outcome:
                    break
                await ctx.info(f"chatter {n}")
        return outcome[0] if outcome else "the question was never dropped"

    app = StreamableHTTPApp(mcp, json_response=True, max_backlog=2)
    async with serve(app) as server:
        session_id, _ = await raw_initialize(http, server.url, elicitation={})
        call = rpc("tools/call", {"name": "ask_while_chatty", "arguments": {}}, id=6)
        with anyio.fail_after(PATIENCE_SECONDS):
            response = await http.post(server.url, json=call, headers=session_headers(session_id))
        text = response.json()["result"]["content"][0]["text"]
        assert "no GET stream" in text, text
        assert len(app.sessions[session_id].backlog) <= 2
        await call_pause(http, server.url, session_id)


# -- 8: a 2026-07-28 client that hangs up stops the server's work -----------------------


@pytest.mark.parametrize(
    ("accept", "progress"),
    [
        pytest.param("application/json", False, id="json-only"),
        pytest.param("application/json, text/event-stream", False, id="json-preferred"),
        pytest.param("text/event-stream, application/json", True, id="sse"),
    ],
)
async def test_a_modern_client_hanging_up_cancels_the_tool(
    http: httpx2.AsyncClient, accept: str, progress: bool
) -> None:
    started, stopped = Flag(), Flag()
    mcp = tagged_server()

    @mcp.tool()
    async def block(ctx: Context) -> str:
        await ctx.report_progress(0.0)
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            stopped.set()
        return "unreachable"

    meta = {**modern_meta(), **({"progressToken": "p"} if progress else {})}
    call = rpc("tools/call", {"name": "block", "arguments": {}, "_meta": meta}, id=8)
    async with serve(mcp.http_app()) as server:
        with anyio.fail_after(PATIENCE_SECONDS):
            async with anyio.create_task_group() as tg:

                async def post() -> None:
                    headers = modern_headers("tools/call", "block", accept)
                    await http.post(server.url, json=call, headers=headers)

                tg.start_soon(post)
                await started.wait()
                tg.cancel_scope.cancel()  # the client hangs up
            await stopped.wait()
        await call_pause(http, server.url)


async def test_a_session_remembers_only_its_newest_streams(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Streams abandoned by a client that hung up stay resumable while the store keeps
    their events, but the session remembers only the newest ones to forget at its end:
    otherwise their ids would pile up for the session's life."""
    monkeypatch.setattr(legacy_session_module, "STREAMS_REMEMBERED", 2)
    store = InMemoryEventStore()
    session = LegacySession("s", store, max_backlog=10)
    for stream_id in ("a", "b", "c"):
        await session.store_event(stream_id, b'{"jsonrpc":"2.0","method":"x"}')
    assert list(session.stored) == ["b", "c"]
    await session.store_event("b", b'{"jsonrpc":"2.0","method":"y"}')  # written again: newest
    await session.store_event("d", b'{"jsonrpc":"2.0","method":"z"}')
    assert list(session.stored) == ["b", "d"]
    assert store.event_count == 5  # remembering less forgets nothing early
    await session.close("the test ended")
    assert session.stored == {}
    assert store.event_count == 2  # "a" and "c" are left to the store's own bounds


class AwaitedEventStore:
    """An event store that, like a remote one, is only reached by awaiting it."""

    def __init__(self) -> None:
        self.kept = InMemoryEventStore()

    async def store_event(self, stream_id: str, data: bytes) -> str:
        await anyio.lowlevel.checkpoint()
        return await self.kept.store_event(stream_id, data)

    async def replay_events_after(self, last_event_id: str, send: Any) -> str | None:
        return await self.kept.replay_events_after(last_event_id, send)

    async def forget_stream(self, stream_id: str) -> None:
        await self.kept.forget_stream(stream_id)


async def route_a_call(
    session: LegacySession,
) -> tuple[list[tuple[str, bytes]], list[tuple[str, bytes]], str]:
    """Run ``session`` with a server that, once the session is idle, sends a log message
    about request 7 and then its answer. Returns the messages its stream had received
    right after each send (no checkpoint between), those it received later, and the
    stream's key in the event store."""
    stream = session.open_stream(7)
    stream.listener, received = open_channel[tuple[str, bytes]]()
    at_once: list[tuple[str, bytes]] = []

    def take_waiting() -> None:
        with contextlib.suppress(anyio.WouldBlock, anyio.EndOfStream):
            while True:
                at_once.append(received.receive_nowait())

    async def serve(read: Any, write: Any) -> None:
        await anyio.wait_all_tasks_blocked()  # the session's router waits for messages
        log = {"level": "info", "data": "working"}
        write.send_nowait(Envelope(rpc_notification("notifications/message", log), 7))
        take_waiting()
        write.send_nowait(Envelope({"jsonrpc": "2.0", "id": 7, "result": {}}))
        take_waiting()
        await anyio.sleep_forever()

    later: list[tuple[str, bytes]] = []
    async with anyio.create_task_group() as tg:
        tg.start_soon(session.run, serve)
        with anyio.fail_after(PATIENCE_SECONDS):
            later.extend([event async for event in received])  # the answer ends the stream
        tg.cancel_scope.cancel()
    return at_once, later, session.key(stream.id)


def rpc_notification(method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": method, "params": params}


CALL_MESSAGES: list[dict[str, Any]] = [
    rpc_notification("notifications/message", {"level": "info", "data": "working"}),
    {"jsonrpc": "2.0", "id": 7, "result": {}},
]


async def test_a_session_routes_the_servers_messages_in_the_servers_own_step() -> None:
    """With events kept in memory and no replicas, what the server sends reaches its
    stream, stored first, in the server's own step: no task is woken to route it, a
    loop turn fewer per message."""
    session = LegacySession("s", InMemoryEventStore(), max_backlog=10)
    at_once, later, key = await route_a_call(session)
    assert [json.loads(data) for _, data in at_once] == CALL_MESSAGES
    assert [event_id for event_id, _ in at_once] == [f"{key}_0", f"{key}_1"]  # stored ids
    assert later == []
    assert 7 not in session.request_streams  # the answer finished the stream


async def test_a_session_whose_store_must_be_awaited_routes_in_order_in_its_task() -> None:
    """An event store reached by awaiting it (Redis, say) leaves routing to the session's
    own task: nothing arrives in the server's step, and everything arrives in order."""
    session = LegacySession("s", AwaitedEventStore(), max_backlog=10)
    at_once, later, key = await route_a_call(session)
    assert at_once == []
    assert [json.loads(data) for _, data in later] == CALL_MESSAGES
    assert [event_id for event_id, _ in later] == [f"{key}_0", f"{key}_1"]
    assert 7 not in session.request_streams


class RecordingHooks:
    """Replicas to tell (``CallHooks``): notes each answered call."""

    def __init__(self) -> None:
        self.answered: list[object] = []

    async def server_request(self, session: LegacySession, message: Any) -> Any:
        return message

    async def call_answered(self, session: LegacySession, request_id: object) -> None:
        self.answered.append(request_id)


async def test_a_session_with_replicas_to_tell_routes_in_its_task_and_tells_them() -> None:
    """Replicas are told of each answered call, which takes awaiting: routing stays in
    the session's own task even with events kept in memory."""
    hooks = RecordingHooks()
    session = LegacySession("s", InMemoryEventStore(), max_backlog=10, hooks=hooks)
    at_once, later, _ = await route_a_call(session)
    assert at_once == []
    assert [json.loads(data) for _, data in later] == CALL_MESSAGES
    assert hooks.answered == [7]


# -- a client that does not read costs a bounded buffer ----------------------------------

HELD = 64
"""``UNSENT_EVENTS_HELD`` for these tests: what the kernel's socket buffers absorb
first (some MiB) is the same whatever the bound, so a small one keeps them quick."""
CHATTER = 2000
LINE_BYTES = 8 * 1024
"""2000 messages of 8 KiB: far more than the socket buffers hold (the server's send
buffer grows to 4 MiB at most), so that messages pile up for the stream."""
NOTE_URI = "note://" + "n" * 4000
"""A subscribed URI as long as a server keeps: each update is 4 KB on the wire."""


@pytest.fixture
def small_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(serving_module, "UNSENT_EVENTS_HELD", HELD)


@contextlib.asynccontextmanager
async def reluctant_reader() -> AsyncGenerator[httpx2.AsyncClient, None]:
    """A client whose sockets take in half a MiB at most until it reads (the kernel's
    receive buffer otherwise grows to hold tens of MiB of a stream nobody reads). Not
    less: a window smaller than two of loopback's 64 KiB segments makes TCP wait for
    its persist timer (seconds) whenever the reader catches up."""
    small_buffer = [(socket.SOL_SOCKET, socket.SO_RCVBUF, 256 * 1024)]
    transport = httpx2.AsyncHTTPTransport(socket_options=small_buffer)
    async with httpx2.AsyncClient(transport=transport, timeout=PATIENCE_SECONDS) as client:
        yield client


def unread_of_call(app: StreamableHTTPApp, era: str, session_id: str | None) -> int:
    """How many of call 5's messages wait unread for its client on the server."""
    if session_id is not None:
        listener = app.sessions[session_id].request_streams[5].listener
        return listener.buffered() if listener is not None else 0
    routes = app.stateless._routes  # pyright: ignore[reportPrivateUsage]
    return next(route.send.buffered() for route in routes.values() if route.client_id == 5)


@pytest.mark.usefixtures("small_bound")
@pytest.mark.parametrize("era", ["2025-11-25", MODERN])
async def test_a_call_whose_client_stops_reading_waits_for_it_and_loses_nothing(
    era: str,
) -> None:
    """A tool writing log messages to a client that reads none of them is held once
    ``UNSENT_EVENTS_HELD`` wait for it, as a program writing to a full pipe is; when
    the client reads, every message comes, in order, then the answer."""
    reached_the_bound = Flag()
    peak = [0]
    session: dict[str, str] = {}
    mcp = tagged_server()
    app = mcp.http_app()

    @mcp.tool()
    async def chatter(ctx: Context, n: int) -> str:
        for i in range(n):
            await ctx.info(f"{i} {'x' * LINE_BYTES}")
            unread = unread_of_call(app, era, session.get("id"))
            peak[0] = max(peak[0], unread)
            if unread >= HELD:
                reached_the_bound.set()
        return "done"

    arguments: dict[str, Any] = {"name": "chatter", "arguments": {"n": CHATTER}}
    async with serve(app) as server, reluctant_reader() as http:
        if era == MODERN:
            arguments["_meta"] = {**modern_meta(), "io.modelcontextprotocol/logLevel": "info"}
            headers = modern_headers("tools/call", "chatter", "text/event-stream, application/json")
        else:
            session["id"], _ = await raw_initialize(http, server.url)
            headers = session_headers(session["id"])
        with anyio.fail_after(PATIENCE_SECONDS):
            call = rpc("tools/call", arguments, id=5)
            async with http.stream("POST", server.url, json=call, headers=headers) as response:
                await reached_the_bound.wait()
                messages = [e.message async for e in read_events(response) if e.message]
        logs = [m["params"]["data"].split()[0] for m in messages if "method" in m]
        assert logs == [str(i) for i in range(CHATTER)]
        assert messages[-1]["result"]["content"] == [{"type": "text", "text": "done"}]
        assert peak[0] <= HELD + 1, f"{peak[0]} messages waited for the client"
        await call_pause(http, server.url, session.get("id"))


def noted_server() -> MCPServer:
    """A server with a resource whose updates can be subscribed to (at any URI)."""
    mcp = tagged_server()

    @mcp.resource("note://{name}")
    def note(name: str) -> str:
        return name

    return mcp


async def broadcast_updates(mcp: MCPServer) -> None:
    for _ in range(CHATTER):
        await mcp.notify_resource_updated(NOTE_URI)


def sequence_numbers(events: list[RawEvent]) -> list[int]:
    """The store's sequence numbers of the events' ids (``{stream}_{sequence}``)."""
    return [int(str(event.event_id).rpartition("_")[2]) for event in events]


@pytest.mark.usefixtures("small_bound")
async def test_a_get_stream_left_unread_is_ended_and_resumes_with_nothing_lost() -> None:
    """Broadcasts must not wait for one client: a GET stream its client leaves unread
    is ended past the bound; resumed with ``Last-Event-ID``, it carries every update
    after the last one read, each once, in order."""
    mcp = noted_server()
    store = InMemoryEventStore(max_events=10 * CHATTER, max_events_per_stream=10 * CHATTER)
    app = StreamableHTTPApp(mcp, event_store=store, max_backlog=CHATTER)
    async with serve(app) as server, reluctant_reader() as http:
        session_id, _ = await raw_initialize(http, server.url)
        headers = session_headers(session_id)
        subscribe = rpc("resources/subscribe", {"uri": NOTE_URI}, id=2)
        assert (await http.post(server.url, json=subscribe, headers=headers)).status_code == 200
        get_headers = {**headers, "accept": "text/event-stream"}
        with anyio.fail_after(PATIENCE_SECONDS):
            async with http.stream("GET", server.url, headers=get_headers) as response:
                await server.call(lambda: broadcast_updates(mcp))
                first = [event async for event in read_events(response) if event.message]
            assert 0 < len(first) < CHATTER, "the unread GET stream was not ended"
            resume = {**get_headers, "last-event-id": str(first[-1].event_id)}
            rest: list[RawEvent] = []
            async with http.stream("GET", server.url, headers=resume) as response:
                async for event in read_events(response):
                    rest.append(event)
                    if len(first) + len(rest) == CHATTER:
                        break
        updates = first + rest
        assert all(e.message and e.message["params"]["uri"] == NOTE_URI for e in updates)
        numbers = sequence_numbers(updates)
        assert numbers == sorted(set(numbers))
        assert len(numbers) == CHATTER
        await call_pause(http, server.url, session_id)


@pytest.mark.usefixtures("small_bound")
async def test_a_listen_stream_left_unread_is_ended_with_an_error_saying_so() -> None:
    """A 2026-07-28 listen stream has no resuming: left unread past the bound, it ends
    with an error answer that says why and what to do, and stops listening."""
    mcp = noted_server()
    params = {"notifications": {"resourceSubscriptions": [NOTE_URI]}, "_meta": modern_meta()}
    listen = rpc("subscriptions/listen", params, id=9)
    headers = modern_headers("subscriptions/listen", None, "text/event-stream, application/json")
    async with serve(mcp.http_app()) as server, reluctant_reader() as http:
        with anyio.fail_after(PATIENCE_SECONDS):
            async with http.stream("POST", server.url, json=listen, headers=headers) as response:
                events = read_events(response)
                acknowledged = await anext(events)
                assert acknowledged.message is not None
                assert acknowledged.message["method"] == "notifications/subscriptions/acknowledged"
                await server.call(lambda: broadcast_updates(mcp))
                messages = [event.message async for event in events if event.message]
        *updates, ended = messages
        assert 0 < len(updates) < CHATTER
        assert ended["id"] == 9
        assert re.fullmatch(  # the bounds named are the server's, not this test's smaller one
            r"Ended: the client left \d+ notifications \(\d+ bytes\) of this stream unread, "
            r"more than the \d+ notifications or \d+ bytes a stream holds\. "
            r"Read a listen stream as it comes, then listen again\.",
            ended["error"]["message"],
        )
        await call_pause(http, server.url)


async def test_the_client_resumes_a_get_stream_the_server_ended() -> None:
    """The server may end the GET stream at any time (as it does to a client that reads
    it too slowly): answerback's client resumes it, so later broadcasts still arrive."""
    mcp = tagged_server()
    app = StreamableHTTPApp(mcp, retry_ms=10)
    arrived, notices = anyio.create_memory_object_stream[object](10)

    async def message_handler(message: object) -> None:
        await arrived.send(message)

    async with (
        arrived,
        notices,
        serve(app) as server,
        Client(server.url, mode="legacy", message_handler=message_handler),
    ):
        with anyio.fail_after(PATIENCE_SECONDS):
            await server.call(mcp.notify_tools_changed)
            assert isinstance(await notices.receive(), ToolListChangedNotification)
            [session] = app.sessions.values()

            async def end_the_get_stream() -> None:
                stream = session.standalone()
                assert stream.listener is not None
                stream.listener.close()
                stream.listener = None

            await server.call(end_the_get_stream)
            await server.call(mcp.notify_tools_changed)
            assert isinstance(await notices.receive(), ToolListChangedNotification)


@pytest.mark.usefixtures("small_bound")
async def test_a_client_whose_callbacks_are_slower_reads_no_faster_and_loses_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """While more than ``UNTAKEN_MESSAGES_HELD`` of the server's messages wait for the
    client's callbacks, the client stops reading, so the server's call is held in turn
    (instead of the client buffering all it writes); when the callback goes on, every
    message is handled, in order."""
    monkeypatch.setattr(pipes_module, "UNTAKEN_MESSAGES_HELD", HELD)
    reached_the_bound = Flag()
    mcp = tagged_server()
    app = mcp.http_app()

    @mcp.tool()
    async def chatter(ctx: Context, n: int) -> str:
        [session] = app.sessions.values()
        for i in range(n):
            await ctx.info(f"{i} {'x' * LINE_BYTES}")
            [stream] = session.request_streams.values()  # this call's
            if stream.listener is not None and stream.listener.buffered() >= HELD:
                reached_the_bound.set()
        return "done"

    released = anyio.Event()
    handled: list[str] = []

    async def on_log(params: LoggingMessageNotificationParams) -> None:
        await released.wait()
        handled.append(str(params.data).split()[0])

    async with serve(app) as server, reluctant_reader() as http:
        transport = StreamableHTTPTransport(server.url, http_client=http)
        async with Client(transport, mode="legacy", logging_callback=on_log) as client:
            results: list[CallToolResult] = []
            with anyio.fail_after(PATIENCE_SECONDS):
                async with anyio.create_task_group() as tg:

                    async def call() -> None:
                        results.append(await client.call_tool("chatter", {"n": CHATTER}))

                    tg.start_soon(call)
                    await reached_the_bound.wait()
                    released.set()
    assert handled == [str(i) for i in range(CHATTER)]
    assert results[0].content == [TextContent(text="done")]


async def test_event_ids_on_a_stream_only_increase_so_any_one_resumes_it(
    http: httpx2.AsyncClient,
) -> None:
    """A message sent at once goes out with the stream's first bytes: no priming event,
    stored after it, may carry a later id ahead of it (a client resuming from that id
    would miss the message); the retry hint still comes first."""
    release = Flag()
    mcp = tagged_server()

    @mcp.tool()
    async def started_then_wait(ctx: Context) -> str:
        await ctx.info("started")
        await release.wait()
        return "done"

    async with serve(mcp.http_app()) as server:
        session_id, _ = await raw_initialize(http, server.url)
        call = rpc("tools/call", {"name": "started_then_wait", "arguments": {}}, id=7)
        seen: list[RawEvent] = []
        with anyio.fail_after(PATIENCE_SECONDS):
            headers = session_headers(session_id)
            async with http.stream("POST", server.url, json=call, headers=headers) as response:
                async for event in read_events(response):
                    seen.append(event)
                    if event.message is not None and "id" in event.message:
                        break
                    if event.message is not None:
                        release.set()
        numbers = sequence_numbers([event for event in seen if event.event_id])
        assert numbers == sorted(numbers)
        assert seen[0].retry_ms is not None
        assert [e.message and e.message.get("id") for e in seen if e.message] == [None, 7]


async def broadcasts_outlive_a_get_stream_whose_events_are_gone(
    mcp: MCPServer, app: StreamableHTTPApp
) -> None:
    """A legacy client gets a broadcast, its GET stream then ends and the event it read
    is forgotten (the store keeps one event a stream), so it resumes from an id the store
    cannot replay after; a later broadcast must still arrive."""
    arrived, notices = anyio.create_memory_object_stream[object](10)

    async def message_handler(message: object) -> None:
        await arrived.send(message)

    async with (
        arrived,
        notices,
        serve(app) as server,
        Client(server.url, mode="legacy", message_handler=message_handler),
    ):
        with anyio.fail_after(PATIENCE_SECONDS):
            await server.call(mcp.notify_tools_changed)
            assert isinstance(await notices.receive(), ToolListChangedNotification)
            [session] = app.sessions.values()

            async def end_the_get_stream_and_forget_its_events() -> None:
                stream = session.standalone()
                assert stream.listener is not None
                stream.listener.close()
                stream.listener = None
                for _ in range(3):  # the store keeps one event a stream: the read one goes
                    await session.store_event(stream.id, b"{}")

            await server.call(end_the_get_stream_and_forget_its_events)
            await server.call(mcp.notify_tools_changed)
            assert isinstance(await notices.receive(), ToolListChangedNotification)


async def test_a_get_stream_resumed_once_its_events_are_gone_goes_on_from_now(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Resuming a GET stream whose events the store no longer holds gets the stream,
    going on from now (never a 404, which would end the session): the server says
    messages may be lost, and later broadcasts still arrive."""
    mcp = tagged_server()
    store = InMemoryEventStore(max_events_per_stream=1)
    await broadcasts_outlive_a_get_stream_whose_events_are_gone(
        mcp, StreamableHTTPApp(mcp, event_store=store, retry_ms=10)
    )
    logged = [record.getMessage() for record in caplog.records]
    assert any("after an event no longer stored" in message for message in logged)
    assert not any("no longer holds" in message for message in logged)  # the client's, on 404


class IdsOfItsOwn:
    """Someone's event store minting ids of its own form (``evt-N``), which name no
    stream: once an event is gone, the server cannot place its id, and answers 400."""

    def __init__(self) -> None:
        self.inner = InMemoryEventStore(max_events_per_stream=1)
        self.ours: dict[str, str] = {}
        self.theirs: dict[str, str] = {}

    async def store_event(self, stream_id: str, data: bytes) -> str:
        inner_id = await self.inner.store_event(stream_id, data)
        own_id = self.theirs[inner_id] = f"evt-{len(self.ours)}"
        self.ours[own_id] = inner_id
        return own_id

    async def replay_events_after(
        self, last_event_id: str, send: Callable[[str, bytes], Awaitable[None]]
    ) -> str | None:
        inner_id = self.ours.get(last_event_id)
        if inner_id is None:
            return None

        async def forward(event_id: str, data: bytes) -> None:
            await send(self.theirs[event_id], data)

        return await self.inner.replay_events_after(inner_id, forward)

    async def forget_stream(self, stream_id: str) -> None:
        await self.inner.forget_stream(stream_id)


async def test_a_get_stream_refused_its_resume_listens_afresh(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A server that cannot place the event id a GET resumes from answers 400 (another
    server may say 404 or 410): the client listens afresh, saying messages may be lost,
    where it once stopped listening, and later broadcasts arrive."""
    mcp = tagged_server()
    await broadcasts_outlive_a_get_stream_whose_events_are_gone(
        mcp, StreamableHTTPApp(mcp, event_store=IdsOfItsOwn(), retry_ms=10)
    )
    logged = [record.getMessage() for record in caplog.records]
    assert any("(HTTP 400): messages sent meanwhile are lost" in text for text in logged)


async def test_a_large_stream_is_replayed_in_writes_that_each_wait_for_the_client(
    http: httpx2.AsyncClient,
) -> None:
    """Every resume of a stream holding a megabyte answer gets it in pieces, each written
    as the client takes the last (uvicorn's flow control): one whole write held a copy
    of the answer per resume, 34 MiB each against clients that did not read."""
    release = Flag()
    mcp = tagged_server()
    answer_text = "r" * (1024 * 1024)

    @mcp.tool()
    async def report(ctx: Context) -> str:
        await ctx.info("working")
        await release.wait()
        return answer_text

    app = mcp.http_app()
    resume_writes: list[int] = []

    async def recording(scope: Any, receive: Any, send: Any) -> None:
        async def recorded(message: Any) -> None:
            if message["type"] == "http.response.body" and message.get("body"):
                resume_writes.append(len(message["body"]))
            await send(message)

        resumed = scope["type"] == "http" and scope["method"] == "GET"
        await app(scope, receive, recorded if resumed else send)

    async with serve(recording) as server:
        session_id, _ = await raw_initialize(http, server.url)
        headers = session_headers(session_id)
        call = rpc("tools/call", {"name": "report", "arguments": {}}, id=3)
        last_id: str | None = None
        with anyio.fail_after(PATIENCE_SECONDS):
            async with http.stream("POST", server.url, json=call, headers=headers) as response:
                async for event in read_events(response):
                    if event.message is not None:
                        last_id = event.event_id
                        break
        [stream] = app.sessions[session_id].request_streams.values()
        release.set()
        with anyio.fail_after(PATIENCE_SECONDS):
            while not stream.done:  # noqa: ASYNC110 (the answer is stored, to replay)
                await anyio.sleep(0.01)
        resume = {**headers, "accept": "text/event-stream", "last-event-id": str(last_id)}
        with anyio.fail_after(PATIENCE_SECONDS):
            async with http.stream("GET", server.url, headers=resume) as response:
                replayed = [e.message async for e in read_events(response) if e.message]
        assert [m["id"] for m in replayed] == [3]
        assert replayed[0]["result"]["content"] == [{"type": "text", "text": answer_text}]
        assert len(resume_writes) > 16
        assert max(resume_writes) <= REPLAY_WRITE_BYTES + 256
        await call_pause(http, server.url, session_id)


# -- a resume the store cannot replay never ends the session (no 404) --------------------


async def resume_from(http: httpx2.AsyncClient, url: str, session_id: str, event_id: str) -> Any:
    """A GET resuming from ``event_id`` whose answer ends at once: read whole."""
    headers = {**session_headers(session_id), "accept": "text/event-stream"}
    with anyio.fail_after(PATIENCE_SECONDS):
        return await http.get(url, headers={**headers, "last-event-id": event_id})


def assert_ended_at_once(resumed: httpx2.Response) -> None:
    """A finished stream: an event stream with nothing in it, not an error."""
    assert resumed.status_code == 200, resumed.text
    assert resumed.headers["content-type"].startswith("text/event-stream")
    assert resumed.content == b""


async def cancel_then_resume(http: httpx2.AsyncClient, app: StreamableHTTPApp) -> None:
    """What the TypeScript SDK's client does: it cancels a running call, sees the call's
    stream end without an answer, and resumes it with GET and ``Last-Event-ID``."""
    async with serve(app) as server:
        session_id, _ = await raw_initialize(http, server.url, elicitation={})
        headers = session_headers(session_id)
        call = rpc("tools/call", {"name": "echo_elicit", "arguments": {"tag": "c"}}, id=1)
        last_id: str | None = None
        with anyio.fail_after(PATIENCE_SECONDS):
            async with http.stream("POST", server.url, json=call, headers=headers) as response:
                events = read_events(response)
                async for event in events:
                    last_id = event.event_id or last_id
                    if event.message is not None:
                        break
                cancel = rpc("notifications/cancelled", {"requestId": 1, "reason": "no"}, id=None)
                assert (
                    await http.post(server.url, json=cancel, headers=headers)
                ).status_code == 202
                rest = [event.message async for event in events]  # the stream ends
        assert [m for m in rest if m is not None and "method" not in m] == []
        assert last_id is not None
        assert_ended_at_once(await resume_from(http, server.url, session_id, last_id))
        assert session_id in app.sessions
        await call_pause(http, server.url, session_id)


async def test_resuming_a_cancelled_calls_stream_ends_it_and_keeps_the_session(
    http: httpx2.AsyncClient,
) -> None:
    await cancel_then_resume(http, tagged_server().http_app())


@pytest.mark.parametrize(
    "anyio_backend", [("asyncio", {"loop_factory": ReportingEventLoop})], ids=["asyncio"]
)
async def test_resuming_a_cancelled_calls_stream_ends_it_with_events_in_redis(
    http: httpx2.AsyncClient, tmp_path: Path
) -> None:
    """The same with the session's state and events in Redis (redis-py runs on asyncio
    only)."""
    missing = missing_for_redis()
    if missing is not None:
        pytest.skip(missing)
    with redis_server(tmp_path) as redis:
        state = RedisState(redis.url, replica_id="here")
        await cancel_then_resume(http, StreamableHTTPApp(tagged_server(), state=state))


async def test_resuming_an_answered_calls_stream_once_forgotten_ends_it(
    http: httpx2.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An answered call's events are forgotten ``ANSWERED_KEPT_SECONDS`` after the
    answer went out (0 here); a client resuming its stream later finds it has ended."""
    monkeypatch.setattr(legacy_session_module, "ANSWERED_KEPT_SECONDS", 0.0)
    mcp = tagged_server()

    @mcp.tool()
    async def chatty(ctx: Context) -> str:
        await ctx.info("working")
        return "said"

    app = mcp.http_app()
    async with serve(app) as server:
        session_id, _ = await raw_initialize(http, server.url)
        session = app.sessions[session_id]
        call = rpc("tools/call", {"name": "chatty", "arguments": {}}, id=2)
        with anyio.fail_after(PATIENCE_SECONDS):
            async with http.stream(
                "POST", server.url, json=call, headers=session_headers(session_id)
            ) as response:
                events = [event async for event in read_events(response)]
        answer = events[-1]
        assert answer.message is not None
        assert answer.message["id"] == 2
        assert answer.event_id is not None
        stream_id = answer.event_id.removeprefix(f"{session_id}.").partition("_")[0]
        with anyio.fail_after(PATIENCE_SECONDS):
            while stream_id in session.stored:  # noqa: ASYNC110 (forgotten as it ends)
                await anyio.sleep(0.01)
        assert_ended_at_once(await resume_from(http, server.url, session_id, answer.event_id))
        await call_pause(http, server.url, session_id)


async def test_a_last_event_id_of_no_stream_of_the_session_is_a_400_not_a_404(
    http: httpx2.AsyncClient,
) -> None:
    """Garbage, or another session's event id (a real one, still stored): refused with
    400, saying the session is still valid; the session goes on."""
    app = tagged_server().http_app()
    async with serve(app) as server:
        session_id, _ = await raw_initialize(http, server.url)
        other_id, _ = await raw_initialize(http, server.url)
        get_other = {**session_headers(other_id), "accept": "text/event-stream"}
        with anyio.fail_after(PATIENCE_SECONDS):
            async with http.stream("GET", server.url, headers=get_other) as response:
                [priming] = [event async for event in until_first_event(response)]
        assert priming.event_id is not None
        mine = f"{session_id}.{'0' * 16}"
        for value in [
            "garbage",
            priming.event_id,
            f"{session_id}.not-a-stream_1",
            f"{mine}_",
            f"{mine}_1e3",
            f"{mine}_{'9' * 30}",
        ]:
            refused = await resume_from(http, server.url, session_id, value)
            assert refused.status_code == 400, (value, refused.text)
            error = refused.json()["error"]
            assert error["code"] == -32600
            assert "Last-Event-ID" in error["message"]
            assert "still valid" in error["message"]
        assert session_id in app.sessions
        await call_pause(http, server.url, session_id)


async def until_first_event(response: httpx2.Response) -> AsyncGenerator[RawEvent, None]:
    async for event in read_events(response):
        yield event
        return


async def test_a_running_calls_stream_whose_events_have_gone_is_a_410_not_a_404(
    http: httpx2.AsyncClient,
) -> None:
    """The store keeps one event a stream: resuming from the first log message would
    skip the second, so the resume is refused (never with a hole), with a status that
    does not end the session."""
    release = Flag()
    mcp = tagged_server()

    @mcp.tool()
    async def three_logs(ctx: Context) -> str:
        for n in range(3):
            await ctx.info(n)
        await release.wait()
        return "done"

    app = StreamableHTTPApp(mcp, event_store=InMemoryEventStore(max_events_per_stream=1))
    async with serve(app) as server:
        session_id, _ = await raw_initialize(http, server.url)
        call = rpc("tools/call", {"name": "three_logs", "arguments": {}}, id=6)
        seen: list[RawEvent] = []
        with anyio.fail_after(PATIENCE_SECONDS):
            async with http.stream(
                "POST", server.url, json=call, headers=session_headers(session_id)
            ) as response:
                async for event in read_events(response):
                    seen.append(event)
                    if len([e for e in seen if e.message is not None]) == 3:
                        break
        first_id = next(e.event_id for e in seen if e.message is not None)
        assert first_id is not None
        try:
            refused = await resume_from(http, server.url, session_id, first_id)
        finally:
            release.set()
        assert refused.status_code == 410, refused.text
        assert "still valid" in refused.json()["error"]["message"]
        await call_pause(http, server.url, session_id)


@pytest.mark.parametrize(
    ("suffix", "named"),
    [
        ("_0", True),
        ("_123", True),
        ("_1733462400000-0", True),
        ("_0-1", True),
        ("_unstored-3", True),
        ("_", False),
        ("_-1", False),
        ("_1e3", False),
        ("", False),
    ],
)
async def test_an_event_id_names_its_stream_in_every_stores_form(suffix: str, named: bool) -> None:
    """In memory, in Redis, and unstored (shared state unreachable): the server knows
    the stream from the id alone, even once its events are gone."""
    session = LegacySession("s3ss10n-Id_x", InMemoryEventStore(), 10)
    request_stream = "0123456789abcdef"
    for stream_id in (request_stream, "standalone"):
        expected = stream_id if named else None
        assert session.stream_named(f"{session.key(stream_id)}{suffix}") == expected
    assert session.stream_named(f"other.{request_stream}{suffix}") is None
    assert session.stream_named(f"{session.key('0123')}{suffix}") is None
