"""Streamable HTTP against a hostile peer: what one client may hold, header fields sent
twice or with raw bytes, notifications, ``Accept``, ``Host`` and ``Origin``, the
versions a refusal lists, and how much a client can make the server log.

Each test talks to a real server (uvicorn on loopback) the way a peer that does not
follow the rules would.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncGenerator
from typing import Annotated, Any

import anyio
import httpx2
import pytest
from http_support import (
    PATIENCE_SECONDS,
    POST_HEADERS,
    RunningServer,
    raw_initialize,
    read_events,
    rpc,
    serve,
    session_headers,
    settle,
)
from pydantic import Field

from answerback.server import MCPServer
from answerback.transports._headers import acceptance
from answerback.transports.http import HostPolicy, StreamableHTTPApp
from answerback.transports.http._modern_server import MAX_LISTEN_BYTES

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
LEGACY = "2025-11-25"
Headers = list[tuple[bytes, bytes]]
"""Header fields as sent, in order, repeats included."""


def fields(headers: dict[str, str], *more: tuple[str, str]) -> Headers:
    return [(key.encode(), value.encode()) for key, value in [*headers.items(), *more]]


def probe_server() -> MCPServer:
    mcp = MCPServer("Hostile peer target")

    @mcp.tool()
    def echo(text: str) -> str:
        """Echo the text."""
        return text

    @mcp.tool()
    def where(region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})]) -> str:
        """Say where."""
        return f"in {region}"

    @mcp.tool()
    def count(n: Annotated[int, Field(json_schema_extra={"x-mcp-header": "N"})]) -> int:
        """Give the number back."""
        return n

    @mcp.tool()
    def code(c: Annotated[str, Field(json_schema_extra={"x-mcp-header": "C"})]) -> str:
        """Give the code back."""
        return c

    @mcp.resource("notes://readme", mime_type="text/plain")
    def readme() -> str:
        return "Read me."

    return mcp


def meta(version: str = MODERN, **extra: Any) -> dict[str, Any]:
    return {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "hostile", "version": "0"},
        **extra,
    }


def modern(method: str, params: dict[str, Any] | None = None, id: int = 1) -> dict[str, Any]:
    return rpc(method, {**(params or {}), "_meta": meta()}, id=id)


def modern_headers(method: str, name: str | None = None, **extra: str) -> Headers:
    headers = {**POST_HEADERS, "mcp-protocol-version": MODERN, "mcp-method": method}
    if name is not None:
        headers["mcp-name"] = name
    return fields({**headers, **extra})


@pytest.fixture
async def running() -> AsyncGenerator[tuple[RunningServer, StreamableHTTPApp], None]:
    app = probe_server().http_app()
    async with serve(app) as server:
        yield server, app


@pytest.fixture
async def http() -> AsyncGenerator[httpx2.AsyncClient, None]:
    async with httpx2.AsyncClient(timeout=PATIENCE_SECONDS) as client:
        yield client


def refused(response: httpx2.Response, status: int, code: int, *words: str) -> dict[str, Any]:
    """The response is ``status`` with a JSON-RPC error ``code`` whose message holds each
    of ``words``; returns the error."""
    assert response.status_code == status, (response.status_code, response.text)
    error = response.json()["error"]
    assert error["code"] == code, error
    for word in words:
        assert word.lower() in error["message"].lower(), (word, error["message"])
    return error


# -- 1. what a listen holds ------------------------------------------------------------


async def test_an_acknowledged_listen_gives_its_bytes_back(http: httpx2.AsyncClient) -> None:
    """A listen waits for broadcasts, not for work: once acknowledged, its request's
    bytes leave the budget every client shares, so open listens do not keep other
    requests out (they got BUSY for as long as the listens stayed open), and given back
    once they are not given back again when the listen ends."""
    mcp = probe_server()
    app = StreamableHTTPApp(mcp, max_request_bytes_in_flight=4096)
    listen = modern("subscriptions/listen", {"notifications": {"toolsListChanged": True}}, id=7)
    listen["params"]["_meta"]["pad"] = "x" * 3000
    call = modern("tools/call", {"name": "echo", "arguments": {"text": "y" * 2000}}, id=8)
    async with serve(app) as server:
        with anyio.fail_after(PATIENCE_SECONDS):
            async with http.stream(
                "POST", server.url, json=listen, headers=modern_headers("subscriptions/listen")
            ) as stream:
                assert stream.status_code == 200
                acknowledged = await anext(read_events(stream))
                assert acknowledged.message is not None
                assert acknowledged.message["method"] == "notifications/subscriptions/acknowledged"
                assert app.request_bytes.held == 0
                answer = await http.post(
                    server.url, json=call, headers=modern_headers("tools/call", "echo")
                )
                assert answer.status_code == 200, answer.text
                assert answer.json()["result"]["content"][0]["text"] == "y" * 2000
            assert await settle(lambda: not mcp._registry.listeners)  # pyright: ignore[reportPrivateUsage]
            assert app.request_bytes.held == 0


async def test_a_listen_larger_than_its_bound_is_refused(
    running: tuple[RunningServer, StreamableHTTPApp], http: httpx2.AsyncClient
) -> None:
    """What a listen holds is bounded by its size instead, as an initialize's is."""
    server, app = running
    listen = modern("subscriptions/listen", {"notifications": {"toolsListChanged": True}})
    listen["params"]["_meta"]["pad"] = "x" * MAX_LISTEN_BYTES
    with anyio.fail_after(PATIENCE_SECONDS):
        async with http.stream(
            "POST", server.url, json=listen, headers=modern_headers("subscriptions/listen")
        ) as response:
            assert response.status_code == 413  # not a stream opened
            await response.aread()
    refused(response, 413, -32600, "subscriptions/listen", str(MAX_LISTEN_BYTES))
    assert app.request_bytes.held == 0


async def test_a_listen_from_a_client_taking_only_json_is_refused_at_once(
    running: tuple[RunningServer, StreamableHTTPApp], http: httpx2.AsyncClient
) -> None:
    """A listen is answered only as an open event stream: a client that takes only
    JSON is told so, instead of a POST that hangs with its acknowledgement dropped."""
    server, _ = running
    listen = modern("subscriptions/listen", {"notifications": {"toolsListChanged": True}})
    headers = [*modern_headers("subscriptions/listen")[1:], (b"accept", b"application/json")]
    with anyio.fail_after(PATIENCE_SECONDS):
        response = await http.post(server.url, json=listen, headers=headers)
    refused(response, 406, -32600, "event stream", "text/event-stream")


# -- 2. header fields sent twice -------------------------------------------------------


def twice(headers: Headers, name: str, second: str) -> Headers:
    """``headers`` with a second ``name`` field right after the first."""
    at = next(i for i, (key, _) in enumerate(headers) if key == name.encode())
    return [*headers[: at + 1], (name.encode(), second.encode()), *headers[at + 1 :]]


@pytest.mark.parametrize(
    ("body", "headers", "named"),
    [
        (
            modern("tools/call", {"name": "echo", "arguments": {"text": "ran"}}),
            twice(modern_headers("tools/call", "echo"), "mcp-name", "harmless"),
            "Mcp-Name",
        ),
        (
            modern("tools/call", {"name": "echo", "arguments": {"text": "ran"}}),
            twice(modern_headers("tools/call", "echo"), "mcp-method", "tools/list"),
            "Mcp-Method",
        ),
        (
            modern("tools/list"),
            twice(modern_headers("tools/list"), "mcp-protocol-version", LEGACY),
            "MCP-Protocol-Version",
        ),
        (
            modern("tools/call", {"name": "where", "arguments": {"region": "eu"}}),
            twice(
                modern_headers("tools/call", "where", **{"mcp-param-region": "eu"}),
                "mcp-param-region",
                "us",
            ),
            "Mcp-Param-Region",
        ),
    ],
    ids=["name", "method", "version", "param"],
)
async def test_a_mirrored_header_sent_twice_is_refused(
    running: tuple[RunningServer, StreamableHTTPApp],
    http: httpx2.AsyncClient,
    body: dict[str, Any],
    headers: Headers,
    named: str,
) -> None:
    """Served on its first copy, a proxy acting on the last (or on both joined) would
    see another request than the one that runs."""
    server, _ = running
    response = await http.post(server.url, content=json.dumps(body), headers=headers)
    refused(response, 400, -32020, named, "more than once")


async def test_a_session_header_sent_twice_is_refused_and_the_session_lives(
    running: tuple[RunningServer, StreamableHTTPApp], http: httpx2.AsyncClient
) -> None:
    """Two ``Mcp-Session-Id`` fields name no one session id (joined, they hold a space,
    which no session id may), and nor do two versions: 400, never a 404, which would
    tell the client its session has ended."""
    server, _ = running
    session_id, _ = await raw_initialize(http, server.url)
    good = fields(session_headers(session_id))
    other, _ = await raw_initialize(http, server.url)
    call = rpc("tools/list", id=3)
    for headers in (
        twice(good, "mcp-session-id", other),
        twice(good, "mcp-session-id", session_id),
    ):
        response = await http.post(server.url, json=call, headers=headers)
        refused(response, 400, -32600, "Mcp-Session-Id", "more than once")
    get = await http.get(server.url, headers=twice(good, "mcp-session-id", other))
    refused(get, 400, -32600, "Mcp-Session-Id")
    delete = await http.delete(server.url, headers=twice(good, "mcp-session-id", other))
    refused(delete, 400, -32600, "Mcp-Session-Id")
    versions = twice(good, "mcp-protocol-version", LEGACY)
    refused(
        await http.post(server.url, json=call, headers=versions),
        400,
        -32600,
        "MCP-Protocol-Version",
        "more than once",
    )
    listed = await http.post(server.url, json=call, headers=good)
    assert listed.status_code == 200, listed.text


# -- 3. notifications ------------------------------------------------------------------


def notice(version: str | None = MODERN) -> dict[str, Any]:
    params: dict[str, Any] = {"requestId": 1}
    if version is not None:
        params["_meta"] = {"io.modelcontextprotocol/protocolVersion": version}
    return rpc("notifications/cancelled", params, id=None)


@pytest.mark.parametrize(
    ("body", "headers", "code"),
    [
        (notice(), {"mcp-protocol-version": MODERN, "mcp-method": "tools/call"}, -32020),
        (
            notice(),
            {"mcp-protocol-version": LEGACY, "mcp-method": "notifications/cancelled"},
            -32020,
        ),
        (notice(), {"mcp-method": "notifications/cancelled"}, -32020),
        (
            notice("1999-01-01"),
            {"mcp-protocol-version": "1999-01-01", "mcp-method": "notifications/cancelled"},
            -32022,
        ),
        (notice(None), {"mcp-protocol-version": "1999-01-01"}, -32022),
        (
            notice(),
            {"mcp-protocol-version": MODERN, "mcp-method": "notifications/caf\u00e9"},
            -32020,
        ),
    ],
    ids=[
        "method-disagrees",
        "version-header-disagrees",
        "version-header-missing",
        "unsupported",
        "unsupported-header-only",
        "method-not-ascii",
    ],
)
async def test_a_2026_notification_is_checked_before_it_is_accepted(
    running: tuple[RunningServer, StreamableHTTPApp],
    http: httpx2.AsyncClient,
    body: dict[str, Any],
    headers: dict[str, str],
    code: int,
) -> None:
    """Headers a proxy may act on must agree with the body, and the version must be one
    the server speaks, or the notification is refused (400, an error with no id) rather
    than accepted (202)."""
    server, _ = running
    sent = fields({**POST_HEADERS, **headers})
    response = await http.post(server.url, content=json.dumps(body), headers=sent)
    error = refused(response, 400, code)
    assert response.json()["id"] is None
    if code == -32022:
        assert MODERN in error["data"]["supported"]


async def test_a_2026_notification_that_agrees_is_accepted_with_or_without_mcp_method(
    running: tuple[RunningServer, StreamableHTTPApp], http: httpx2.AsyncClient
) -> None:
    """The specification sets no header requirements for a notification POST (a
    2026-07-28 client sends none over HTTP): without ``Mcp-Method`` it is accepted."""
    server, _ = running
    for headers in (
        {**POST_HEADERS, "mcp-protocol-version": MODERN, "mcp-method": "notifications/cancelled"},
        {**POST_HEADERS, "mcp-protocol-version": MODERN},
    ):
        response = await http.post(server.url, json=notice(), headers=headers)
        assert response.status_code == 202, response.text


# -- 4. raw bytes in mirrored values ---------------------------------------------------


@pytest.mark.parametrize(
    ("body", "method", "field", "value"),
    [
        (
            modern("tools/call", {"name": "where", "arguments": {"region": "caf\u00e9"}}),
            "tools/call",
            b"mcp-param-region",
            "caf\u00e9".encode("latin-1"),
        ),
        (
            modern("tools/call", {"name": "where", "arguments": {"region": "a\tb"}}),
            "tools/call",
            b"mcp-param-region",
            b"a\tb",
        ),
        (
            modern("resources/read", {"uri": "notes://caf\u00e9"}),
            "resources/read",
            b"mcp-name",
            "notes://caf\u00e9".encode("latin-1"),
        ),
    ],
    ids=["param-raw-byte", "param-tab", "name-raw-byte"],
)
async def test_a_mirrored_value_not_plain_ascii_is_refused(
    running: tuple[RunningServer, StreamableHTTPApp],
    http: httpx2.AsyncClient,
    body: dict[str, Any],
    method: str,
    field: bytes,
    value: bytes,
) -> None:
    """Such a value must travel as ``=?base64?...?=``; sent raw, each reader may read
    its bytes differently, so it is refused even when one reading matches the body."""
    server, _ = running
    name = body["params"].get("name")
    headers = [
        *modern_headers(method, None if method == "resources/read" else name),
        (field, value),
    ]
    response = await http.post(server.url, content=json.dumps(body), headers=headers)
    refused(response, 400, -32020, "visible ASCII", "base64")


# -- 5. Accept -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("accept", "json_ok", "stream_ok", "prefers_json"),
    [
        ("application/json, text/event-stream", True, True, True),
        ("Application/JSON, Text/Event-Stream", True, True, True),
        ("text/event-stream, application/json", True, True, False),
        ("application/json;q=0.5, text/event-stream", True, True, False),
        ("application/json;q=0, text/event-stream", False, True, False),
        ("application/json-seq", False, False, False),
        ("*/*", True, True, False),
        ("text/*", False, True, False),
        ("*/*;q=0, application/json", True, False, False),
        ("application/json;q=2, text/event-stream", False, True, False),
        ("", False, False, False),
        (None, False, False, False),
    ],
)
def test_accept_is_read_as_media_ranges(
    accept: str | None, json_ok: bool, stream_ok: bool, prefers_json: bool
) -> None:
    read = acceptance(accept)
    assert (read.json, read.event_stream, read.prefers_json) == (json_ok, stream_ok, prefers_json)


async def test_accept_is_matched_alike_on_post_and_get(
    running: tuple[RunningServer, StreamableHTTPApp], http: httpx2.AsyncClient
) -> None:
    """Media types ignore case, ``*/*`` and ``type/*`` count on a GET as on a POST,
    ``q=0`` refuses, and ``application/json-seq`` is not ``application/json``."""
    server, _ = running
    session_id, _ = await raw_initialize(http, server.url)
    listing = rpc("tools/list", id=5)

    async def post(accept: str) -> httpx2.Response:
        headers = {**session_headers(session_id), "accept": accept}
        return await http.post(server.url, json=listing, headers=headers)

    assert (await post("Application/JSON, Text/Event-Stream")).status_code == 200
    assert (await post("APPLICATION/JSON")).headers["content-type"] == "application/json"
    for refused_accept in ("application/json-seq", "application/json;q=0, text/event-stream"):
        refused(await post(refused_accept), 406, -32600, "Accept")
    for accept in ("Text/Event-Stream", "*/*", "text/*"):
        headers = {**session_headers(session_id), "accept": accept}
        with anyio.fail_after(PATIENCE_SECONDS):
            async with http.stream("GET", server.url, headers=headers) as stream:
                assert stream.status_code == 200, accept
                assert stream.headers["content-type"].startswith("text/event-stream")
    get = await http.get(
        server.url, headers={**session_headers(session_id), "accept": "text/event-stream;q=0"}
    )
    refused(get, 406, -32600, "text/event-stream")


# -- 6. Host and Origin ----------------------------------------------------------------


def test_a_port_pattern_matches_only_a_port() -> None:
    policy = HostPolicy()
    for host in ("localhost:80@evil.com", "127.0.0.1:evil.example", "localhost:", "[::1]:8o"):
        assert not policy.host_allowed(host), host
    for host in ("localhost:8080", "127.0.0.1:1", "[::1]:65535", "localhost"):
        assert policy.host_allowed(host), host
    assert not policy.origin_allowed("http://localhost:1@evil.com")
    assert policy.origin_allowed("http://localhost:5173")


async def test_a_host_with_more_than_a_port_after_the_colon_is_misdirected(
    running: tuple[RunningServer, StreamableHTTPApp], http: httpx2.AsyncClient
) -> None:
    server, _ = running
    for host in ("localhost:80@evil.com", "127.0.0.1:evil.example"):
        headers = [*modern_headers("tools/list"), (b"host", host.encode())]
        response = await http.post(server.url, json=modern("tools/list"), headers=headers)
        refused(response, 421, -32600, "Host")


async def raw_exchange(port: int, request: bytes) -> bytes:
    """Send ``request`` as it is (an HTTP client would refuse to send it) and read the
    whole response (the request asks for the connection to close after it)."""
    received = b""
    with anyio.fail_after(PATIENCE_SECONDS):
        async with await anyio.connect_tcp("127.0.0.1", port) as stream:
            await stream.send(request)
            try:
                while True:
                    received += await stream.receive()
            except (anyio.EndOfStream, anyio.BrokenResourceError):
                return received


async def test_two_host_fields_are_refused_even_where_any_host_passes(
    http: httpx2.AsyncClient,
) -> None:
    """RFC 9112 3.2: a request with more than one Host is a 400, whatever the policy."""
    app = probe_server().http_app(host_policy=HostPolicy(allowed_hosts=["*"]))
    body = json.dumps(modern("tools/list")).encode()
    lines = b"".join(key + b": " + value + b"\r\n" for key, value in modern_headers("tools/list"))
    async with serve(app) as server:
        head = f"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{server.port}\r\nhost: evil.example\r\n"
        tail = f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
        response = await raw_exchange(server.port, head.encode() + lines + tail.encode() + body)
        status, _, rest = response.partition(b"\r\n")
        assert status.startswith(b"HTTP/1.1 400"), response
        assert b"more than one Host" in rest
        single = await http.post(
            server.url, json=modern("tools/list"), headers=modern_headers("tools/list")
        )
        assert single.status_code == 200, single.text
        origin = await http.post(
            server.url,
            json=modern("tools/list"),
            headers=[*modern_headers("tools/list"), (b"origin", b"http://localhost:1@evil.com")],
        )
        refused(origin, 403, -32600, "Origin")


# -- 7. what -32022 lists --------------------------------------------------------------


async def test_a_handshake_version_sent_per_request_is_not_listed_as_its_remedy(
    running: tuple[RunningServer, StreamableHTTPApp], http: httpx2.AsyncClient
) -> None:
    """2025-11-25 is spoken here, but in a session: refused per request, the list a
    client is to choose from must not hold it, and the message says how to use it."""
    server, _ = running
    body = rpc("tools/list", {"_meta": meta(LEGACY)}, id=1)
    headers = [
        *POST_HEADERS.items(),
        ("mcp-protocol-version", LEGACY),
        ("mcp-method", "tools/list"),
    ]
    response = await http.post(server.url, json=body, headers=headers)
    error = refused(response, 400, -32022, "initialize", LEGACY)
    assert error["data"]["requested"] == LEGACY
    assert LEGACY not in error["data"]["supported"]
    assert error["data"]["supported"] == [MODERN]


# -- 9. integers compared as numbers ---------------------------------------------------


@pytest.mark.parametrize(
    ("tool", "arguments", "sent", "status"),
    [
        ("count", {"n": 42}, "42.0", 200),
        ("count", {"n": 42}, "4.2e1", 200),
        ("count", {"n": 42}, "42", 200),
        ("count", {"n": 42}, "42.5", 400),
        ("count", {"n": 42}, "+42", 400),
        ("count", {"n": 42}, "0x2a", 400),
        ("code", {"c": "42"}, "42.0", 400),
        ("code", {"c": "42"}, "42", 200),
    ],
)
async def test_integer_parameters_are_compared_as_numbers_and_strings_exactly(
    running: tuple[RunningServer, StreamableHTTPApp],
    http: httpx2.AsyncClient,
    tool: str,
    arguments: dict[str, Any],
    sent: str,
    status: int,
) -> None:
    server, _ = running
    header = "mcp-param-n" if tool == "count" else "mcp-param-c"
    body = modern("tools/call", {"name": tool, "arguments": arguments})
    response = await http.post(
        server.url, json=body, headers=modern_headers("tools/call", tool, **{header: sent})
    )
    if status == 200:
        assert response.status_code == 200, response.text
    else:
        refused(response, 400, -32020, "does not match")


# -- 10. what a client can make the server log -----------------------------------------


async def test_responses_to_nothing_are_logged_once_per_session_then_counted(
    running: tuple[RunningServer, StreamableHTTPApp],
    http: httpx2.AsyncClient,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A client POSTing responses to no question of the server's sets the volume of
    its warnings no more: the first is logged, the rest counted, the count logged
    once when the session ends."""
    server, _ = running
    session_id, _ = await raw_initialize(http, server.url)
    caplog.set_level(logging.WARNING)
    for number in range(20):
        answer: dict[str, Any] = {"jsonrpc": "2.0", "id": 10_000 + number, "result": {}}
        posted = await http.post(server.url, json=answer, headers=session_headers(session_id))
        assert posted.status_code == 202
    ended = await http.delete(server.url, headers=session_headers(session_id))
    assert ended.status_code == 200
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 2, warnings
    assert "dropped a response to id 10000" in warnings[0]
    assert "20 responses" in warnings[1]
