"""Streamable HTTP, raw requests: every malformed or unwelcome request gets the right
status and a JSON-RPC error body with a message that says what to fix, and the server
keeps serving a normal client afterwards."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

import anyio
import httpx2
import pytest
from http_support import (
    PATIENCE_SECONDS,
    POST_HEADERS,
    RunningServer,
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
from answerback.transports.http import HostPolicy, StreamableHTTPApp
from answerback.types import ElicitRequestParams, ElicitResult, TextContent

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


@pytest.mark.parametrize("version", ["1999-01-01", "2026-07-28", "latest"])
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
            # A message not related to any request goes to the GET stream.
            session = app.sessions[session_id]
            await session.outgoing.send(
                _envelope({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
            )
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
    stray = {"jsonrpc": "2.0", "id": 999, "result": {}}
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
