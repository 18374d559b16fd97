"""Streamable HTTP, raw requests: every malformed or unwelcome request gets the right
status and a JSON-RPC error body with a message that says what to fix, and the server
keeps serving a normal client afterwards."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import socket
import sys
from collections.abc import AsyncGenerator
from typing import Any, cast

import anyio
import anyio.to_thread
import httpx2
import pytest
from http_support import (
    PATIENCE_SECONDS,
    POST_HEADERS,
    RunningServer,
    first_result,
    initialize_params,
    raw_initialize,
    read_events,
    rpc,
    serve,
    session_headers,
)
from http_support.apps import tagged_server

from answerback import Client
from answerback.client import ClientRequestContext
from answerback.server import MCPServer
from answerback.transports.http import HostPolicy, StreamableHTTPApp, uvicorn_server
from answerback.transports.http import _heads as heads_module
from answerback.transports.http._heads import MAX_HEAD_BYTES
from answerback.transports.http._server import MAKING_ROOM_AFTER_SECONDS, MAX_INITIALIZE_BYTES
from answerback.types import (
    BUSY,
    META_CLIENT_CAPABILITIES,
    META_PROTOCOL_VERSION,
    ElicitRequestParams,
    ElicitResult,
    MCPError,
    TextContent,
)

pytestmark = pytest.mark.anyio

MAX_BODY = 2048


@pytest.fixture
async def running() -> AsyncGenerator[tuple[RunningServer, StreamableHTTPApp], None]:
    app = tagged_server().http_app(max_body_bytes=MAX_BODY)
    async with serve(app) as server:
        yield server, app


@pytest.fixture
async def http() -> AsyncGenerator[httpx2.AsyncClient, None]:
    async with httpx2.AsyncClient(timeout=PATIENCE_SECONDS) as client:
        yield client


def assert_error(response: httpx2.Response, status: int, code: int, *words: str) -> str:
    """The response has ``status`` and a JSON-RPC error body with ``code`` whose message
    mentions each of ``words``; returns the message."""
    assert response.status_code == status, (response.status_code, response.text)
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert body["jsonrpc"] == "2.0"
    assert "id" in body
    error = body["error"]
    assert error["code"] == code, body
    message = error["message"]
    assert isinstance(message, str)
    for word in words:
        assert word.lower() in message.lower(), (word, message)
    return message


async def accept(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"name": "Ada Lovelace"})


async def still_serves(url: str) -> None:
    async with Client(url, mode="legacy", elicitation_callback=accept) as client:
        result = await client.call_tool("issue_card")
    assert result.content == [TextContent(text="Card issued to Ada Lovelace.")]


INIT = rpc("initialize", initialize_params(), id=0)


async def test_malformed_json_is_a_parse_error(running: Any, http: httpx2.AsyncClient) -> None:
    server, _ = running
    response = await http.post(
        server.url, content=b'{"jsonrpc": "2.0", "id": 1,', headers=POST_HEADERS
    )
    assert_error(response, 400, -32700, "parse error")


async def test_wrong_content_type_is_415(running: Any, http: httpx2.AsyncClient) -> None:
    server, _ = running
    headers = {**POST_HEADERS, "content-type": "text/plain"}
    response = await http.post(server.url, json=INIT, headers=headers)
    assert_error(response, 415, -32600, "application/json")
    no_type = {"accept": POST_HEADERS["accept"]}
    response = await http.post(server.url, content=b"{}", headers=no_type)
    assert_error(response, 415, -32600, "application/json")


@pytest.mark.parametrize("accept_header", [None, "text/html", "text/event-stream"])
async def test_insufficient_accept_is_406(
    running: Any, http: httpx2.AsyncClient, accept_header: str | None
) -> None:
    server, _ = running
    headers = {"content-type": "application/json"}
    if accept_header is not None:
        headers["accept"] = accept_header
    request = http.build_request("POST", server.url, json=INIT, headers=headers)
    if accept_header is None:
        del request.headers["accept"]  # httpx2 sends "*/*" unless told not to
    response = await http.send(request)
    assert_error(response, 406, -32600, "accept", "application/json")


async def test_batch_array_is_rejected(running: Any, http: httpx2.AsyncClient) -> None:
    server, _ = running
    response = await http.post(server.url, json=[INIT, rpc("ping", id=2)], headers=POST_HEADERS)
    assert_error(response, 400, -32600, "batch")


async def test_non_object_body_is_rejected(running: Any, http: httpx2.AsyncClient) -> None:
    server, _ = running
    response = await http.post(server.url, json="initialize", headers=POST_HEADERS)
    assert_error(response, 400, -32600, "invalid request")


async def test_oversize_body_is_413(running: Any, http: httpx2.AsyncClient) -> None:
    server, _ = running
    big = rpc("initialize", {**initialize_params(), "padding": "x" * (MAX_BODY * 2)}, id=0)
    response = await http.post(server.url, json=big, headers=POST_HEADERS)
    assert_error(response, 413, -32600, "too large", str(MAX_BODY))

    async def chunks() -> AsyncGenerator[bytes, None]:  # no Content-Length: streamed
        yield b'{"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"p": "'
        for _ in range(4):
            yield b"x" * MAX_BODY
        yield b'"}}'

    response = await http.post(server.url, content=chunks(), headers=POST_HEADERS)
    assert_error(response, 413, -32600, "too large")


async def test_an_initialize_too_large_to_keep_is_413_and_opens_no_session(
    http: httpx2.AsyncClient,
) -> None:
    """A session keeps its ``initialize`` for its life, parsed into objects many times
    the size of the JSON: ``[{}, {}, ...]`` under the body limit pinned about 100 MiB."""
    app = tagged_server().http_app()
    async with serve(app) as server:
        padding: list[dict[str, Any]] = [{}] * (MAX_INITIALIZE_BYTES // 3)
        big = rpc("initialize", {**initialize_params(), "padding": padding}, id=0)
        response = await http.post(server.url, json=big, headers=POST_HEADERS)
        message = assert_error(response, 413, -32600, str(MAX_INITIALIZE_BYTES), "initialize")
        assert "far less" in message
        assert response.json()["id"] == 0
        assert "mcp-session-id" not in response.headers
        assert app.sessions == {}
        session_id, _ = await raw_initialize(http, server.url)
        assert list(app.sessions) == [session_id]


async def test_unknown_session_is_404(running: Any, http: httpx2.AsyncClient) -> None:
    server, _ = running
    headers = session_headers("no-such-session")
    response = await http.post(server.url, json=rpc("ping"), headers=headers)
    assert_error(response, 404, -32600, "session", "initialize")
    get_headers = {**headers, "accept": "text/event-stream"}
    assert_error(await http.get(server.url, headers=get_headers), 404, -32600, "session")
    assert_error(await http.delete(server.url, headers=headers), 404, -32600, "session")


async def test_missing_session_id_is_400(running: Any, http: httpx2.AsyncClient) -> None:
    server, _ = running
    await raw_initialize(http, server.url)
    response = await http.post(server.url, json=rpc("tools/list"), headers=POST_HEADERS)
    assert_error(response, 400, -32600, "mcp-session-id")


@pytest.mark.parametrize("version", ["1999-01-01", "latest"])
async def test_bad_protocol_version_is_400(
    running: Any, http: httpx2.AsyncClient, version: str
) -> None:
    server, _ = running
    session_id, _ = await raw_initialize(http, server.url)
    response = await http.post(
        server.url, json=rpc("ping"), headers=session_headers(session_id, version)
    )
    message = assert_error(response, 400, -32600, "MCP-Protocol-Version", "2025-11-25")
    assert version in message
    ok = await http.post(server.url, json=rpc("ping"), headers=session_headers(session_id))
    assert ok.status_code == 200


@pytest.mark.parametrize("host", ["evil.example", "evil.example:8000", "127.0.0.1.evil.example"])
async def test_disallowed_host_is_421(running: Any, http: httpx2.AsyncClient, host: str) -> None:
    server, _ = running
    response = await http.post(server.url, json=INIT, headers={**POST_HEADERS, "host": host})
    assert_error(response, 421, -32600, "host")


@pytest.mark.parametrize(
    "origin", ["http://evil.example", "https://localhost.evil.example", "null"]
)
async def test_disallowed_origin_is_403(
    running: Any, http: httpx2.AsyncClient, origin: str
) -> None:
    server, _ = running
    response = await http.post(server.url, json=INIT, headers={**POST_HEADERS, "origin": origin})
    assert_error(response, 403, -32600, "origin")


async def test_local_origin_is_allowed(running: Any, http: httpx2.AsyncClient) -> None:
    server, _ = running
    origin = f"http://localhost:{server.port}"
    response = await http.post(server.url, json=INIT, headers={**POST_HEADERS, "origin": origin})
    assert response.status_code == 200


async def test_host_policy_can_allow_a_public_name(http: httpx2.AsyncClient) -> None:
    """A configured policy lets a proxy's public name through and still rejects others."""
    policy = HostPolicy(allowed_hosts=["mcp.example.com"], allowed_origins=["https://app.example"])
    async with serve(tagged_server().http_app(host_policy=policy)) as server:
        good = {**POST_HEADERS, "host": "mcp.example.com", "origin": "https://app.example"}
        assert (await http.post(server.url, json=INIT, headers=good)).status_code == 200
        local = await http.post(server.url, json=INIT, headers=POST_HEADERS)
        assert_error(local, 421, -32600, "host")
        bad_origin = {**good, "origin": "https://evil.example"}
        assert_error(await http.post(server.url, json=INIT, headers=bad_origin), 403, -32600)


async def test_delete_ends_the_session(running: Any, http: httpx2.AsyncClient) -> None:
    server, app = running
    session_id, _ = await raw_initialize(http, server.url)
    assert session_id in app.sessions
    headers = session_headers(session_id)
    deleted = await http.delete(server.url, headers=headers)
    assert deleted.status_code == 200
    assert session_id not in app.sessions
    after = await http.post(server.url, json=rpc("ping"), headers=headers)
    assert_error(after, 404, -32600, "session")


async def test_session_ids_are_unguessable(running: Any, http: httpx2.AsyncClient) -> None:
    server, _ = running
    ids = {(await raw_initialize(http, server.url))[0] for _ in range(5)}
    assert len(ids) == 5
    for session_id in ids:
        assert len(session_id) >= 32
        assert all(0x21 <= ord(ch) <= 0x7E for ch in session_id)


async def test_get_stream_and_a_second_get_is_409(running: Any, http: httpx2.AsyncClient) -> None:
    """The GET stream delivers server messages not tied to a request; only one at a time."""
    server, app = running
    session_id, _ = await raw_initialize(http, server.url)
    headers = {**session_headers(session_id), "accept": "text/event-stream"}
    with anyio.fail_after(PATIENCE_SECONDS):
        async with http.stream("GET", server.url, headers=headers) as stream:
            assert stream.status_code == 200
            assert stream.headers["content-type"].startswith("text/event-stream")
            assert stream.headers["mcp-session-id"] == session_id
            second = await http.get(server.url, headers=headers)
            assert_error(second, 409, -32600, "GET stream")
            # A message not related to any request goes to the GET stream (put there on
            # the server's own loop: the session's streams belong to it).
            session = app.sessions[session_id]
            notice = _envelope({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            await server.call(lambda: session.outgoing.send(notice))
            events = read_events(stream)
            event = await anext(events)
            while event.message is None:  # a priming event first
                event = await anext(events)
            assert event.event_id
            assert event.message == {
                "jsonrpc": "2.0",
                "method": "notifications/tools/list_changed",
            }
    no_sse = await http.get(server.url, headers={**headers, "accept": "application/json"})
    assert_error(no_sse, 406, -32600, "text/event-stream")


def _envelope(message: dict[str, Any]) -> Any:
    from answerback.jsonrpc import Envelope

    return Envelope(message)


async def test_json_response_when_sse_is_not_accepted(
    running: Any, http: httpx2.AsyncClient
) -> None:
    """A client accepting only JSON gets a plain JSON answer to a simple request."""
    server, _ = running
    session_id, _ = await raw_initialize(http, server.url)
    headers = {**session_headers(session_id), "accept": "application/json"}
    response = await http.post(server.url, json=rpc("tools/list", id=5), headers=headers)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert body["id"] == 5
    assert {tool["name"] for tool in body["result"]["tools"]} >= {"issue_card", "echo_elicit"}


async def test_notification_and_response_posts_are_202(
    running: Any, http: httpx2.AsyncClient
) -> None:
    server, _ = running
    session_id, _ = await raw_initialize(http, server.url)
    headers = session_headers(session_id)
    note = rpc("notifications/roots/list_changed", id=None)
    assert (await http.post(server.url, json=note, headers=headers)).status_code == 202
    stray: dict[str, Any] = {"jsonrpc": "2.0", "id": 999, "result": {}}
    assert (await http.post(server.url, json=stray, headers=headers)).status_code == 202


async def test_all_of_that_and_the_server_still_serves(
    running: Any, http: httpx2.AsyncClient
) -> None:
    """A burst of every kind of bad request, then a normal client is served."""
    server, _ = running
    bad_requests: list[tuple[str, dict[str, str], bytes]] = [
        ("POST", POST_HEADERS, b"not json"),
        ("POST", {**POST_HEADERS, "content-type": "text/plain"}, b"{}"),
        ("POST", {"content-type": "application/json", "accept": "text/html"}, b"{}"),
        ("POST", POST_HEADERS, b"[]"),
        ("POST", POST_HEADERS, b"x" * (MAX_BODY + 1)),
        ("POST", session_headers("nope"), b'{"jsonrpc":"2.0","id":1,"method":"ping"}'),
        ("POST", {**POST_HEADERS, "host": "evil.example"}, b"{}"),
        ("POST", {**POST_HEADERS, "origin": "http://evil.example"}, b"{}"),
        ("GET", {"accept": "text/event-stream"}, b""),
        ("DELETE", {}, b""),
    ]
    for method, headers, body in bad_requests * 3:
        response = await http.request(method, server.url, headers=headers, content=body)
        assert 400 <= response.status_code < 500, (method, headers, response.status_code)
        assert response.json()["error"]["message"]
    await still_serves(server.url)


async def test_a_client_disconnecting_mid_elicitation_harms_no_one(
    running: Any, http: httpx2.AsyncClient
) -> None:
    """One raw client hangs up while the server waits on its elicitation; a normal
    client is served meanwhile and afterwards."""
    server, _ = running
    session_id, _ = await raw_initialize(http, server.url, elicitation={})
    call = rpc("tools/call", {"name": "issue_card", "arguments": {}}, id=1)
    with anyio.fail_after(PATIENCE_SECONDS):
        async with http.stream(
            "POST", server.url, json=call, headers=session_headers(session_id)
        ) as response:
            async for event in read_events(response):
                if event.message is not None:
                    break
    await still_serves(server.url)
    ping = await http.post(server.url, json=rpc("ping", id=9), headers=session_headers(session_id))
    assert ping.status_code == 200


# -- malformed JSON-RPC: every message gets its error on its own POST --------------------


async def call_pause(http: httpx2.AsyncClient, url: str, session_id: str) -> None:
    """A valid call in the session succeeds (the check after every bad request)."""
    call = rpc("tools/call", {"name": "pause", "arguments": {"seconds": 0}}, id=4242)
    with anyio.fail_after(PATIENCE_SECONDS):
        async with http.stream("POST", url, json=call, headers=session_headers(session_id)) as r:
            assert r.status_code == 200, await r.aread()
            answer = await first_result(r)
    assert answer["id"] == 4242
    assert answer["result"]["content"] == [{"type": "text", "text": "done"}], answer


MALFORMED = [
    pytest.param({"jsonrpc": "2.0", "id": True, "method": "ping"}, -32600, "id", id="id-true"),
    pytest.param({"jsonrpc": "2.0", "id": False, "method": "ping"}, -32600, "id", id="id-false"),
    pytest.param({"jsonrpc": "2.0", "id": None, "method": "ping"}, -32600, "id", id="id-null"),
    pytest.param({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}, -32600, "id", id="id-float"),
    pytest.param({"jsonrpc": "2.0", "id": [1], "method": "ping"}, -32600, "id", id="id-array"),
    pytest.param({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}, -32600, "id", id="id-obj"),
    pytest.param({"jsonrpc": "2.0", "id": 1}, -32600, "method", id="no-method"),
    pytest.param({"jsonrpc": "2.0", "id": 1, "method": 5}, -32600, "method", id="method-int"),
    pytest.param({"jsonrpc": "2.0", "id": 1, "method": None}, -32600, "method", id="method-null"),
    pytest.param({"jsonrpc": "2.0", "id": 1, "method": ""}, -32600, "method", id="method-empty"),
    pytest.param({"jsonrpc": "2.0", "method": ["ping"]}, -32600, "method", id="note-method-list"),
    pytest.param({}, -32600, "jsonrpc", id="empty-object"),
    pytest.param({"id": 1, "method": "ping"}, -32600, "jsonrpc", id="no-jsonrpc"),
    pytest.param({"jsonrpc": "1.0", "id": 1, "method": "ping"}, -32600, "jsonrpc", id="jsonrpc-1"),
    pytest.param(
        {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": [1]},
        -32602,
        "params",
        id="params-array",
    ),
    pytest.param(
        {"jsonrpc": "2.0", "method": "notifications/initialized", "params": 5},
        -32602,
        "params",
        id="notification-params-number",
    ),
    pytest.param(
        {"jsonrpc": "2.0", "id": 1, "method": "ping", "result": {}},
        -32600,
        "result",
        id="request-with-result",
    ),
    pytest.param(
        {"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1, "message": "m"}},
        -32600,
        "not both",
        id="result-and-error",
    ),
    pytest.param({"jsonrpc": "2.0", "id": True, "result": {}}, -32600, "id", id="answer-id-true"),
    pytest.param({"jsonrpc": "2.0", "id": None, "result": {}}, -32600, "id", id="answer-id-null"),
    pytest.param({"jsonrpc": "2.0", "result": {}}, -32600, "id", id="answer-no-id"),
    pytest.param({"jsonrpc": "2.0", "id": 1, "error": "bad"}, -32600, "error", id="error-string"),
    pytest.param(
        {"jsonrpc": "2.0", "id": 1, "error": {"code": "x", "message": "m"}},
        -32600,
        "code",
        id="error-code-string",
    ),
]


@pytest.mark.parametrize(("message", "code", "word"), MALFORMED)
async def test_a_malformed_message_gets_its_error_on_its_own_post(
    running: Any, http: httpx2.AsyncClient, message: dict[str, Any], code: int, word: str
) -> None:
    """Each malformed message (bad ids, bad methods, bad params, bad answers, ``{}``) is
    refused with 400 and a JSON-RPC error on the very POST that sent it: nothing waits
    for ever, nothing goes to the GET backlog, and the session carries on."""
    server, app = running
    session_id, _ = await raw_initialize(http, server.url)
    with anyio.fail_after(PATIENCE_SECONDS):
        response = await http.post(server.url, json=message, headers=session_headers(session_id))
    assert_error(response, 400, code, word)
    request_id = message.get("id")
    valid_id = isinstance(request_id, str | int) and not isinstance(request_id, bool)
    assert response.json()["id"] == (request_id if valid_id else None)
    session = app.sessions[session_id]
    assert not session.backlog
    assert not session.request_streams
    await call_pause(http, server.url, session_id)
    # Without a session it is refused the same way, and no session is opened for it.
    sessions = set(app.sessions)
    assert_error(await http.post(server.url, json=message, headers=POST_HEADERS), 400, code)
    assert set(app.sessions) == sessions


@pytest.mark.parametrize(
    "body",
    [
        b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": NaN}}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": Infinity}}',
        b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": -Infinity}}',
    ],
    ids=["nan", "infinity", "minus-infinity"],
)
async def test_nan_and_infinity_in_a_request_are_a_parse_error(
    running: Any, http: httpx2.AsyncClient, body: bytes
) -> None:
    """``NaN`` and ``Infinity`` are not JSON: refused in a session and in the 2026 shape."""
    server, _ = running
    session_id, _ = await raw_initialize(http, server.url)
    response = await http.post(server.url, content=body, headers=session_headers(session_id))
    assert_error(response, 400, -32700, "parse error")
    modern = body.replace(
        b'"params": {',
        b'"params": {"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28", '
        b'"io.modelcontextprotocol/clientCapabilities": {}}, ',
    )
    headers = {**POST_HEADERS, "mcp-protocol-version": "2026-07-28", "mcp-method": "ping"}
    assert_error(await http.post(server.url, content=modern, headers=headers), 400, -32700)
    await call_pause(http, server.url, session_id)


async def test_a_duplicate_in_flight_id_is_refused_and_orphans_nothing(
    running: Any, http: httpx2.AsyncClient
) -> None:
    """A second request reusing the id of one still in flight gets its own 400; the first
    call is not disturbed and still gets its answer."""
    server, _ = running
    session_id, _ = await raw_initialize(http, server.url, elicitation={})
    headers = session_headers(session_id)
    call = rpc("tools/call", {"name": "echo_elicit", "arguments": {"tag": "first"}}, id=7)
    with anyio.fail_after(PATIENCE_SECONDS):
        async with http.stream("POST", server.url, json=call, headers=headers) as first:
            events = read_events(first)
            question = None
            async for event in events:
                if event.message is not None:
                    question = event.message
                    break
            assert question is not None
            assert question["method"] == "elicitation/create"
            again = rpc("tools/call", {"name": "pause", "arguments": {"seconds": 0}}, id=7)
            duplicate = await http.post(server.url, json=again, headers=headers)
            assert_error(duplicate, 400, -32600, "7", "already in use")
            answer = {
                "jsonrpc": "2.0",
                "id": question["id"],
                "result": {"action": "accept", "content": {"value": "yes"}},
            }
            assert (await http.post(server.url, json=answer, headers=headers)).status_code == 202
            final = [event.message async for event in events if event.message is not None]
    assert final == [
        {
            "jsonrpc": "2.0",
            "id": 7,
            "result": {
                "content": [{"type": "text", "text": "first:yes"}],
                "structuredContent": {"result": "first:yes"},
                "isError": False,
            },
        }
    ]
    await call_pause(http, server.url, session_id)


# -- methods, Last-Event-ID ------------------------------------------------------------


@pytest.mark.parametrize("method", ["HEAD", "PUT", "PATCH", "OPTIONS", "PROPFIND"])
async def test_only_delete_ends_a_session_other_methods_are_405(
    running: Any, http: httpx2.AsyncClient, method: str
) -> None:
    server, app = running
    session_id, _ = await raw_initialize(http, server.url)
    response = await http.request(method, server.url, headers=session_headers(session_id))
    assert response.status_code == 405
    assert response.headers["allow"] == "GET, POST, DELETE"
    if method != "HEAD":  # a HEAD response has no body
        assert_error(response, 405, -32600, "method not allowed", method)
    assert session_id in app.sessions
    await call_pause(http, server.url, session_id)


async def a_stored_event_id(http: httpx2.AsyncClient, url: str, session_id: str) -> str:
    """The id of an event the server stored for this session (the priming event of a
    call that asks a question, so its answer comes on a stream, not as plain JSON)."""
    call = rpc("tools/call", {"name": "echo_elicit", "arguments": {"tag": "id"}}, id=4343)
    async with http.stream("POST", url, json=call, headers=session_headers(session_id)) as r:
        async for event in read_events(r):
            if event.event_id is not None:
                return event.event_id
    raise AssertionError("the stream carried no event id")


async def test_a_crafted_last_event_id_is_a_clean_400(
    running: Any, http: httpx2.AsyncClient
) -> None:
    """Other scripts' digits, superscripts, thousands of digits, signs, garbage and other
    sessions' ids: each gets a 400 with a JSON-RPC error, never a 500, nor a 404, which
    would tell the client its session had ended."""
    server, _ = running
    session_id, _ = await raw_initialize(http, server.url, elicitation={})
    other_session, _ = await raw_initialize(http, server.url, elicitation={})
    real = await a_stored_event_id(http, server.url, session_id)
    prefix = real.rpartition("_")[0]
    crafted: list[str | bytes] = [
        "١٢".encode(),
        f"{prefix}_١٢".encode(),
        f"{prefix}_²",
        f"{prefix}_{'9' * 5000}",
        "9" * 5000,
        f"{prefix}_-1",
        f"{prefix}_+1",
        f"{prefix}_ 1",
        f"{prefix}_1e3",
        f"{prefix}_",
        "_",
        "",
        "garbage",
        await a_stored_event_id(http, server.url, other_session),
    ]

    async def resume_from(value: str | bytes) -> httpx2.Response:
        if isinstance(value, str):  # the server reads header bytes as Latin-1
            value = value.encode("latin-1")
        headers: dict[str, str | bytes] = {**session_headers(session_id)}
        headers.update({"accept": "text/event-stream", "last-event-id": value})
        return await http.get(server.url, headers=cast(Any, headers))

    for value in crafted:
        assert_error(await resume_from(value), 400, -32600, "Last-Event-ID")
    # Control characters may not appear in a header at all (RFC 9110, 5.5): httptools,
    # uvicorn's parser where it is installed (a dependency on CPython), refuses the
    # request itself; h11 lets it through to the server's own 400.
    refused = await resume_from("\x7f\x01")
    if importlib.util.find_spec("httptools") is not None:
        assert (refused.status_code, refused.text) == (400, "Invalid HTTP request received.")
    else:
        assert_error(refused, 400, -32600, "Last-Event-ID")
    await call_pause(http, server.url, session_id)


# -- initialize and the negotiated version ---------------------------------------------


async def test_a_failed_initialize_leaves_no_session(
    running: Any, http: httpx2.AsyncClient
) -> None:
    server, app = running
    for params in ({}, {"protocolVersion": "2025-11-25"}, {"capabilities": 5}):
        response = await http.post(
            server.url, json=rpc("initialize", params, id=0), headers=POST_HEADERS
        )
        assert response.status_code == 200
        assert "mcp-session-id" not in response.headers
        body = response.json()
        assert body["id"] == 0
        assert body["error"]["code"] == -32602
        assert not app.sessions
        assert len(app.event_store) == 0
    session_id, _ = await raw_initialize(http, server.url)
    await call_pause(http, server.url, session_id)


async def test_a_second_initialize_in_a_session_is_refused(
    running: Any, http: httpx2.AsyncClient
) -> None:
    server, app = running
    session_id, _ = await raw_initialize(http, server.url)
    again = rpc("initialize", initialize_params("2025-06-18"), id=1)
    response = await http.post(server.url, json=again, headers=session_headers(session_id))
    assert_error(response, 400, -32600, "already initialized", "DELETE")
    assert response.json()["id"] == 1
    assert app.sessions[session_id].protocol_version == "2025-11-25"
    await call_pause(http, server.url, session_id)


async def test_a_version_header_other_than_the_negotiated_one_is_400(
    running: Any, http: httpx2.AsyncClient
) -> None:
    server, app = running
    session_id, _ = await raw_initialize(http, server.url)
    older = session_headers(session_id, "2025-06-18")
    response = await http.post(server.url, json=rpc("ping"), headers=older)
    assert_error(response, 400, -32600, "2025-06-18", "2025-11-25", "negotiated")
    get = await http.get(server.url, headers={**older, "accept": "text/event-stream"})
    assert_error(get, 400, -32600, "negotiated")
    assert_error(await http.delete(server.url, headers=older), 400, -32600, "negotiated")
    assert session_id in app.sessions
    await call_pause(http, server.url, session_id)


async def test_a_sessionless_version_in_a_session_is_400_saying_so(
    running: Any, http: httpx2.AsyncClient
) -> None:
    """It was told 2026-07-28 is unsupported, beside a list of versions naming it."""
    server, app = running
    session_id, _ = await raw_initialize(http, server.url)
    modern = session_headers(session_id, "2026-07-28")
    response = await http.post(server.url, json=rpc("ping"), headers=modern)
    message = assert_error(response, 400, -32600, "2026-07-28", "no sessions", "Mcp-Session-Id")
    assert "unsupported" not in message
    get = await http.get(server.url, headers={**modern, "accept": "text/event-stream"})
    assert_error(get, 400, -32600, "no sessions")
    assert_error(await http.delete(server.url, headers=modern), 400, -32600, "no sessions")
    assert session_id in app.sessions
    await call_pause(http, server.url, session_id)


async def test_the_negotiated_version_is_the_servers_answer(http: httpx2.AsyncClient) -> None:
    """A client asking for a version the server does not speak gets the server's choice,
    and that is the version its headers must name from then on."""
    async with serve(tagged_server().http_app()) as server:
        params = {**initialize_params(), "protocolVersion": "1999-01-01"}
        async with http.stream(
            "POST", server.url, json=rpc("initialize", params, id=0), headers=POST_HEADERS
        ) as response:
            session_id = response.headers["mcp-session-id"]
            chosen = (await first_result(response))["result"]["protocolVersion"]
        assert chosen == "2025-11-25"
        asked = session_headers(session_id, "1999-01-01")
        assert_error(await http.post(server.url, json=rpc("ping"), headers=asked), 400, -32600)
        await call_pause(http, server.url, session_id)


# -- limits ----------------------------------------------------------------------------


async def test_sessions_are_capped_with_a_503(http: httpx2.AsyncClient) -> None:
    app = StreamableHTTPApp(tagged_server(), max_sessions=2)
    async with serve(app) as server:
        first, _ = await raw_initialize(http, server.url)
        await raw_initialize(http, server.url)
        full = await http.post(server.url, json=INIT, headers=POST_HEADERS)
        assert_error(full, 503, -32000, "limit of 2 sessions", "DELETE")
        assert "mcp-session-id" not in full.headers
        assert len(app.sessions) == 2
        # A failed initialize does not take a place either.
        assert (await http.delete(server.url, headers=session_headers(first))).status_code == 200
        bad = await http.post(server.url, json=rpc("initialize", {}, id=0), headers=POST_HEADERS)
        assert bad.json()["error"]["code"] == -32602
        session_id, _ = await raw_initialize(http, server.url)
        await call_pause(http, server.url, session_id)


def age(app: StreamableHTTPApp, session_id: str, seconds: float) -> None:
    """Make a session look unused for ``seconds`` more (the server's clock is anyio's)."""
    app.sessions[session_id].last_active -= seconds


async def test_a_full_server_ends_the_session_unused_longest_for_a_new_one(
    http: httpx2.AsyncClient,
) -> None:
    """Sessions opened and left used to lock every new client out (503) until they idled
    out, an hour by default. A session unused for a minute, with no stream open, now
    gives its place to a new one; its client gets 404 and starts again."""
    app = StreamableHTTPApp(tagged_server(), max_sessions=2)
    async with serve(app) as server:
        left, _ = await raw_initialize(http, server.url)
        kept, _ = await raw_initialize(http, server.url)
        age(app, left, MAKING_ROOM_AFTER_SECONDS + 5)
        age(app, kept, MAKING_ROOM_AFTER_SECONDS + 1)
        newcomer, _ = await raw_initialize(http, server.url)
        assert set(app.sessions) == {kept, newcomer}
        gone = await http.post(server.url, json=rpc("ping", id=1), headers=session_headers(left))
        assert gone.status_code == 404
        await call_pause(http, server.url, kept)  # using it makes it the newest again
        age(app, newcomer, MAKING_ROOM_AFTER_SECONDS + 1)
        await raw_initialize(http, server.url)
        assert kept in app.sessions
        assert newcomer not in app.sessions


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # the store's wait shares the test's loop
async def test_two_newcomers_to_a_full_server_with_one_place_to_make_get_one_place(
    http: httpx2.AsyncClient,
) -> None:
    """The place a session gave up is held for the newcomer that made it, from before
    anything is awaited: another one arriving meanwhile cannot take it as well."""
    app = StreamableHTTPApp(tagged_server(), max_sessions=2)
    one_answered = anyio.Event()
    end_record = app.state.sessions.end

    async def end_after_the_other_newcomer(session_id: str) -> None:
        """As a shared store would, end the record only after a wait, here until the
        other newcomer has its answer (in memory nothing waits, so nothing could race)."""
        with anyio.move_on_after(PATIENCE_SECONDS):
            await one_answered.wait()
        await end_record(session_id)

    async with serve(app) as server:
        left, _ = await raw_initialize(http, server.url)
        await raw_initialize(http, server.url)
        age(app, left, MAKING_ROOM_AFTER_SECONDS + 5)
        app.state.sessions.end = end_after_the_other_newcomer  # type: ignore[method-assign]
        answers: list[int] = []

        async def newcomer() -> None:
            async with http.stream("POST", server.url, json=INIT, headers=POST_HEADERS) as r:
                await r.aread()
                answers.append(r.status_code)
            one_answered.set()

        with anyio.fail_after(PATIENCE_SECONDS):
            async with anyio.create_task_group() as group:
                group.start_soon(newcomer)
                group.start_soon(newcomer)
        assert sorted(answers) == [200, 503]
        assert len(app.sessions) == 2
        assert left not in app.sessions


async def test_a_full_server_keeps_sessions_used_lately_or_with_a_client_connected(
    http: httpx2.AsyncClient,
) -> None:
    """No session is ended to make room while its client listens on its GET stream, or
    when it was used within the minute: the newcomer is refused, saying why."""
    app = StreamableHTTPApp(tagged_server(), max_sessions=2)
    async with serve(app) as server:
        listening, _ = await raw_initialize(http, server.url)
        recent, _ = await raw_initialize(http, server.url)
        age(app, listening, MAKING_ROOM_AFTER_SECONDS * 10)
        age(app, recent, MAKING_ROOM_AFTER_SECONDS - 5)
        get_headers = {**session_headers(listening), "accept": "text/event-stream"}
        with anyio.fail_after(PATIENCE_SECONDS):
            async with http.stream("GET", server.url, headers=get_headers) as stream:
                assert stream.status_code == 200
                while not app.sessions[listening].has_client:  # noqa: ASYNC110 (no event)
                    await anyio.sleep(0.01)
                full = await http.post(server.url, json=INIT, headers=POST_HEADERS)
        assert_error(full, 503, -32000, "limit of 2 sessions", "used in the last 60 s")
        assert set(app.sessions) == {listening, recent}
        await call_pause(http, server.url, listening)
        await call_pause(http, server.url, recent)


async def test_a_connected_client_keeps_its_session_when_room_is_made(
    http: httpx2.AsyncClient,
) -> None:
    """answerback's client listens on its session's GET stream, so however long since
    its last call, a full server makes room by ending a session left without a client."""
    app = StreamableHTTPApp(tagged_server(), max_sessions=2)
    async with serve(app) as server, Client(server.url, mode="legacy") as client:
        (mine,) = app.sessions
        left, _ = await raw_initialize(http, server.url)
        with anyio.fail_after(PATIENCE_SECONDS):
            while not app.sessions[mine].has_client:  # noqa: ASYNC110 (no event to await)
                await anyio.sleep(0.01)
        age(app, mine, MAKING_ROOM_AFTER_SECONDS * 10)
        age(app, left, MAKING_ROOM_AFTER_SECONDS + 1)
        await raw_initialize(http, server.url)
        assert mine in app.sessions
        assert left not in app.sessions
        result = await client.call_tool("pause", {"seconds": 0})
        assert result.content[0].model_dump()["text"] == "done"


async def start_and_hang_up(
    http: httpx2.AsyncClient, url: str, session_id: str, id: int, tag: str | None = None
) -> None:
    """Start an eliciting call and hang up once its question comes: the call waits on."""
    arguments = {"tag": str(id) if tag is None else tag}
    call = rpc("tools/call", {"name": "echo_elicit", "arguments": arguments}, id=id)
    with anyio.fail_after(PATIENCE_SECONDS):
        async with http.stream("POST", url, json=call, headers=session_headers(session_id)) as r:
            async for event in read_events(r):
                if event.message is not None:
                    assert event.message["method"] == "elicitation/create"
                    return
    raise AssertionError("the call's stream ended without its question")


async def test_a_session_answers_a_bounded_number_of_requests_at_once(
    http: httpx2.AsyncClient,
) -> None:
    """A session's calls outlive their POSTs, so starting eliciting calls and hanging up
    held a task per call until the session ended. Past the bound a request is refused
    at once, saying what to do; cancelling a call makes room."""
    app = StreamableHTTPApp(tagged_server(), max_requests_in_flight=2)
    async with serve(app) as server:
        session_id, _ = await raw_initialize(http, server.url, elicitation={})
        headers = session_headers(session_id)
        for n in range(2):
            await start_and_hang_up(http, server.url, session_id, n)
        refused = await http.post(server.url, json=rpc("ping", id=5), headers=headers)
        assert_error(refused, 200, BUSY, "2 of your requests", "cancel those")
        cancel = rpc("notifications/cancelled", {"requestId": 0}, id=None)
        assert (await http.post(server.url, json=cancel, headers=headers)).status_code == 202

        async def room_made() -> bool:
            ping = await http.post(server.url, json=rpc("ping", id=6), headers=headers)
            return "result" in ping.json()

        # The cancellation lands a few loop turns after its 202.
        with anyio.fail_after(PATIENCE_SECONDS):
            while not await room_made():  # noqa: ASYNC110 (the server has no event to await)
                await anyio.sleep(0.01)
        await start_and_hang_up(http, server.url, session_id, 7)
        # Other sessions have their own room.
        await still_serves(server.url)


async def test_the_servers_requests_hold_a_bounded_number_of_bytes_at_once(
    http: httpx2.AsyncClient,
) -> None:
    """A request's parsed body is held while it is answered (up to some 25 times its
    size), and calls outlive their POSTs: every session's requests and every 2026-07-28
    request share one budget of bytes, so that opening more sessions holds no more.
    Past it a request is refused at once, saying what to do; an answer makes room."""
    app = StreamableHTTPApp(tagged_server(), max_request_bytes_in_flight=1000)
    async with serve(app) as server:
        holding, _ = await raw_initialize(http, server.url, elicitation={})
        await start_and_hang_up(http, server.url, holding, 1, tag="x" * 800)
        held = app.request_bytes.held
        assert 800 < held < 1000
        other = session_headers((await raw_initialize(http, server.url))[0])
        small = await http.post(server.url, json=rpc("ping", id=2), headers=other)
        assert small.json() == {"jsonrpc": "2.0", "id": 2, "result": {}}  # bytes, not count
        padded = rpc("ping", {"_meta": {"pad": "y" * (1000 - held)}}, id=3)
        refused = await http.post(server.url, json=padded, headers=other)
        assert_error(refused, 200, BUSY, f"hold {held} bytes already", "past the 1000 bytes")
        with pytest.raises(MCPError, match="past the 1000 bytes of requests answered") as busy:
            async with Client(server.url) as modern:  # its server/discover is refused
                await modern.call_tool("pause", {"seconds": 0})
        assert busy.value.code == BUSY  # not taken for a server of the handshake era
        cancel = rpc("notifications/cancelled", {"requestId": 1}, id=None)
        assert (
            await http.post(server.url, json=cancel, headers=session_headers(holding))
        ).status_code == 202

        async def room_made() -> bool:
            answer = await http.post(server.url, json=padded, headers=other)
            return "result" in answer.json()

        # The cancellation lands a few loop turns after its 202.
        with anyio.fail_after(PATIENCE_SECONDS):
            while not await room_made():  # noqa: ASYNC110 (the server has no event to await)
                await anyio.sleep(0.01)
        assert app.request_bytes.held == 0


async def test_2026_requests_have_no_bound_but_their_posts(http: httpx2.AsyncClient) -> None:
    """2026-07-28 requests share one connection inside the server, and each ends with
    its POST: the session bound is not theirs (here three calls run at once past it)."""
    app = StreamableHTTPApp(tagged_server(), max_requests_in_flight=1)
    async with serve(app) as server, Client(server.url) as client:
        assert client.protocol_version == "2026-07-28"
        results: list[str] = []

        async def pause() -> None:
            result = await client.call_tool("pause", {"seconds": 0.3})
            results.append(cast(TextContent, result.content[0]).text)

        async with anyio.create_task_group() as tg:
            for _ in range(3):
                tg.start_soon(pause)
        assert results == ["done"] * 3


async def test_a_body_cut_short_by_a_hang_up_harms_no_one(
    http: httpx2.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    """A client that sends part of its body and hangs up: the server gives up on that
    request quietly (no error logged, nothing opened) and serves the next one."""
    app = StreamableHTTPApp(tagged_server())
    async with serve(app) as server:
        head = (
            f"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{server.port}\r\n"
            "content-type: application/json\r\naccept: application/json, text/event-stream\r\n"
            "content-length: 500\r\n\r\n"
        ).encode()
        with anyio.fail_after(PATIENCE_SECONDS):
            async with await anyio.connect_tcp("127.0.0.1", server.port) as sock:
                await sock.send(head + b'{"jsonrpc": "2.0", "id": 0, "method": "initialize"')
            session_id, _ = await raw_initialize(http, server.url)
            await call_pause(http, server.url, session_id)
        assert list(app.sessions) == [session_id]
    assert not [record for record in caplog.records if record.levelname == "ERROR"]


async def test_a_stalled_body_gets_408(http: httpx2.AsyncClient) -> None:
    """A client that sends its headers and part of its body, then nothing, is answered
    408 once the body timeout passes, and the connection is closed."""
    app = StreamableHTTPApp(tagged_server(), body_timeout_seconds=0.2)
    async with serve(app) as server:
        part = b'{"jsonrpc": "2.0", "id": 0, "method": "initialize"'
        head = (
            f"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{server.port}\r\n"
            "content-type: application/json\r\naccept: application/json, text/event-stream\r\n"
            "content-length: 500\r\n\r\n"
        ).encode()
        reply = b""
        with anyio.fail_after(PATIENCE_SECONDS):
            async with await anyio.connect_tcp("127.0.0.1", server.port) as sock:
                await sock.send(head + part)
                with contextlib.suppress(anyio.EndOfStream, anyio.BrokenResourceError):
                    while True:  # until the server closes the connection
                        reply += await sock.receive()
        status, _, rest = reply.partition(b"\r\n")
        assert status == b"HTTP/1.1 408 Request Timeout", reply
        body = json.loads(rest.partition(b"\r\n\r\n")[2])
        assert body["error"]["code"] == -32600
        assert "did not arrive" in body["error"]["message"]
        assert not app.sessions
        session_id, _ = await raw_initialize(http, server.url)
        await call_pause(http, server.url, session_id)


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("subscriptions/listen", {"notifications": {"toolsListChanged": True}}),
        ("tools/call", {"name": "pause", "arguments": {"seconds": 0}}),
    ],
)
async def test_a_2026_request_inside_a_session_is_refused_and_holds_nothing(
    running: Any, http: httpx2.AsyncClient, method: str, params: dict[str, Any]
) -> None:
    """Run by 2026-07-28 rules but as a session's request, a ``subscriptions/listen``
    would outlive its POST, so a client that hung up again and again piled listeners up
    until the session ended."""
    server, app = running
    session_id, _ = await raw_initialize(http, server.url)
    meta: dict[str, Any] = {META_PROTOCOL_VERSION: "2026-07-28", META_CLIENT_CAPABILITIES: {}}
    request = rpc(method, {**params, "_meta": meta}, id=7)
    response = await http.post(server.url, json=request, headers=session_headers(session_id))
    assert_error(response, 400, -32600, "_meta", "2025-11-25", "Mcp-Session-Id")
    assert response.json()["id"] == 7
    assert not app.server._registry.listeners
    ping = await http.post(server.url, json=rpc("ping", id=8), headers=session_headers(session_id))
    assert ping.status_code == 200
    await still_serves(server.url)


# -- request heads: bounded in size and in time -----------------------------------------


def exchange(port: int, head: bytes) -> bytes:
    """Send ``head`` on a new connection, send nothing more, and read until the server
    closes it."""
    with socket.create_connection(("127.0.0.1", port), timeout=PATIENCE_SECONDS) as sock:
        sock.sendall(head)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
        return received


async def test_a_head_larger_than_the_bound_is_431_and_the_connection_closed(
    running: Any, http: httpx2.AsyncClient
) -> None:
    """Without the bound, one header that never ended grew the server to 300 MB. The
    head sent is exactly one byte too many, so the server has read it all when it
    refuses (unread bytes would make the kernel reset the connection)."""
    server, _ = running
    start = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: "
    head = start + b"a" * (MAX_HEAD_BYTES + 1 - len(start))
    answer = await anyio.to_thread.run_sync(exchange, server.port, head)
    assert answer.startswith(b"HTTP/1.1 431 Request Header Fields Too Large\r\n"), answer
    assert f"at most {MAX_HEAD_BYTES} bytes".encode() in answer
    assert (await http.post(server.url, json=rpc("ping"), headers=POST_HEADERS)).status_code


async def test_a_head_too_large_behind_a_response_being_sent_closes_without_a_431(
    running: Any, http: httpx2.AsyncClient
) -> None:
    """A pipelined head, sent while the response to the request before it is still being
    streamed: a 431 written then would land in the middle of that response, so the
    connection is only closed. The stream had begun (its 200 and head arrived)."""
    server, _ = running
    session_id, _ = await raw_initialize(http, server.url)
    stream = (
        f"GET /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\naccept: text/event-stream\r\n"
        f"mcp-session-id: {session_id}\r\nmcp-protocol-version: 2025-11-25\r\n\r\n"
    ).encode()
    start = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Padding: "
    too_large = start + b"a" * (MAX_HEAD_BYTES + 1 - len(start))

    def pipelined() -> bytes:
        with socket.create_connection(("127.0.0.1", server.port), timeout=PATIENCE_SECONDS) as sock:
            sock.sendall(stream)
            received = sock.recv(65536)  # the stream's head: its response has begun
            sock.sendall(too_large)
            while chunk := sock.recv(65536):
                received += chunk
            return received

    answer = await anyio.to_thread.run_sync(pipelined)
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n"), answer
    assert b"text/event-stream" in answer
    assert b"431" not in answer
    assert (await http.post(server.url, json=rpc("ping"), headers=POST_HEADERS)).status_code


@pytest.fixture
def quick_heads(monkeypatch: pytest.MonkeyPatch) -> float:
    """A head must arrive within half a second (ten by default)."""
    monkeypatch.setattr(heads_module, "HEAD_SECONDS", 0.5)
    return 0.5


async def test_a_head_that_does_not_arrive_in_time_is_408_and_the_connection_closed(
    quick_heads: float, running: Any, http: httpx2.AsyncClient
) -> None:
    """A client dribbling its head kept its connection for ever: 2,000 of them used up
    the server's file descriptors and real clients were refused."""
    server, _ = running
    answer = await anyio.to_thread.run_sync(exchange, server.port, b"POST /mcp HTTP/1.1\r\nHo")
    assert answer.startswith(b"HTTP/1.1 408 Request Timeout\r\n"), answer
    assert b"did not arrive within 0.5 s" in answer
    session_id, _ = await raw_initialize(http, server.url)
    assert session_id


async def test_a_connection_that_never_sends_a_request_is_closed(
    quick_heads: float, running: Any
) -> None:
    server, _ = running
    assert await anyio.to_thread.run_sync(exchange, server.port, b"") == b""


def test_without_httptools_uvicorn_parses_with_h11_which_bounds_heads_itself(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """httptools is a dependency on CPython only; where it (and so the head-bounded
    protocol built on it) cannot be imported, ``uvicorn_server`` parses with uvicorn's
    h11 protocol, whose own bound on heads holds (watching descriptors as well)."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    monkeypatch.setitem(sys.modules, "answerback.transports.http._heads", None)
    server = uvicorn_server(StreamableHTTPApp(tagged_server()), port=0)
    assert isinstance(server.config.http, type)
    assert issubclass(server.config.http, H11Protocol)
    with_parser = uvicorn_server(StreamableHTTPApp(tagged_server()), port=0, http="h11")
    assert with_parser.config.http == "h11"  # a parser asked for is kept


@pytest.mark.parametrize("anyio_backend", ["asyncio"])  # the tool's event is the test's
@pytest.mark.parametrize("json_response", [True, False])
async def test_a_call_just_ended_counts_as_use_of_its_session(
    http: httpx2.AsyncClient, json_response: bool
) -> None:
    """A session whose long call had just ended was "unused" since the call began, and
    the first to give its place to a newcomer."""
    release = anyio.Event()
    mcp = MCPServer("Long calls")

    @mcp.tool()
    async def long_call() -> str:
        await release.wait()
        return "done"

    app = StreamableHTTPApp(mcp, max_sessions=1, json_response=json_response)
    async with serve(app) as server:
        session_id, _ = await raw_initialize(http, server.url)
        call = rpc("tools/call", {"name": "long_call", "arguments": {}}, id=7)

        async def make_the_call() -> None:
            response = await http.post(server.url, json=call, headers=session_headers(session_id))
            assert (await first_result(response))["result"]["content"][0]["text"] == "done"

        with anyio.fail_after(PATIENCE_SECONDS):
            async with anyio.create_task_group() as group:
                group.start_soon(make_the_call)
                while not app.sessions[session_id].has_client:  # noqa: ASYNC110 (no event)
                    await anyio.sleep(0.01)
                age(app, session_id, MAKING_ROOM_AFTER_SECONDS * 5)  # a long call
                release.set()
        full = await http.post(server.url, json=INIT, headers=POST_HEADERS)
        assert_error(full, 503, -32000, "limit of 1 sessions")
        assert session_id in app.sessions
