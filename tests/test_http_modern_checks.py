"""The 2026-07-28 HTTP path's per-request pieces, held to what they decide.

Each piece was made cheaper (fewer lookups and calls per request); these tests pin the
decisions that must not move with it: which POSTs are 2026-07-28 requests, what a
header value means, which body value ``Mcp-Name`` mirrors, which of a call's messages
wait for a client that reads slowly, and that a route whose client has gone takes a
message without complaint.
"""

from __future__ import annotations

from typing import Any

import pytest

from answerback.jsonrpc import Envelope
from answerback.jsonrpc._endpoint import as_object
from answerback.transports._headers import decode_value, encode_value, name_of, named_value
from answerback.transports.http._modern_server import (
    StatelessConnection,
    _Route,  # pyright: ignore[reportPrivateUsage]
    is_modern_request,
)
from answerback.transports.http._security import EndpointRequest
from answerback.transports.http._serving import UNSENT_EVENTS_HELD, outgoing

VERSION_KEY = "io.modelcontextprotocol/protocolVersion"


@pytest.mark.parametrize(
    ("header", "value"),
    [
        ("echo", "echo"),
        ("", ""),
        ("=?base64?Y2xpZW50X2ZlYXR1cmVz?=", "client_features"),
        ("=?base64??=", ""),
        ("=?base64?ZX?=", None),  # broken base64
        ("=?base64?//4=?=", None),  # not UTF-8
        ("=?base64?Y2xpZW50", "=?base64?Y2xpZW50"),  # no closing ?=: a plain value
        ("=?utf-8?Y2xpZW50?=", "=?utf-8?Y2xpZW50?="),  # another encoding: plain
        ("x=?base64?Y2xpZW50?=", "x=?base64?Y2xpZW50?="),
    ],
)
def test_header_values_decode_as_the_sentinel_says(header: str, value: str | None) -> None:
    assert decode_value(header) == value


@pytest.mark.parametrize("text", ["echo", " über ", "=?base64?abc?=", "a\nb", "", "=?"])
def test_encoded_header_values_decode_to_themselves(text: str) -> None:
    assert decode_value(encode_value(text)) == text


@pytest.mark.parametrize(
    ("message", "name"),
    [
        ({"method": "tools/call", "params": {"name": "echo"}}, "echo"),
        ({"method": "prompts/get", "params": {"name": "greet"}}, "greet"),
        ({"method": "resources/read", "params": {"uri": "file:///a"}}, "file:///a"),
        ({"method": "resources/read", "params": {"name": "not the uri"}}, None),
        ({"method": "tools/call", "params": {"name": 3}}, None),
        ({"method": "tools/call", "params": []}, None),
        ({"method": "tools/call"}, None),
        ({"method": "tools/list", "params": {"name": "echo"}}, None),
        ({"method": 7, "params": {"name": "echo"}}, None),
        ({"params": {"name": "echo"}}, None),
    ],
)
def test_the_named_value_is_name_of_the_message(message: dict[str, Any], name: str | None) -> None:
    params = as_object(message.get("params"))
    assert name_of(message) == name
    assert named_value(message.get("method"), params) == name


@pytest.mark.parametrize(
    ("params", "version", "modern"),
    [
        ({"_meta": {VERSION_KEY: "2026-07-28"}}, None, True),
        ({"_meta": {VERSION_KEY: "2026-07-28"}}, "2025-11-25", True),  # the body says so
        ({}, "2026-07-28", True),  # the header says so
        ({}, "2099-01-01", True),  # not a legacy version: refused by the 2026 checks
        ({}, "2025-11-25", False),
        ({}, None, False),
        ({"_meta": {}}, "2025-06-18", False),
        ({"_meta": "not an object"}, None, False),
        ("not an object", None, False),
    ],
)
def test_which_sessionless_posts_are_2026_requests(
    params: object, version: str | None, modern: bool
) -> None:
    message = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params}
    assert is_modern_request(message, version) is modern


def _crowded_connection(route: _Route) -> StatelessConnection:
    connection = StatelessConnection()
    connection._routes[route.internal_id] = route  # pyright: ignore[reportPrivateUsage]
    for n in range(UNSENT_EVENTS_HELD + 1):
        route.send.send_nowait(({"n": n}, b"{}"))
    return connection


def test_only_a_calls_own_notifications_wait_for_a_crowded_stream() -> None:
    route = _Route(0, "client-id", False, None)
    connection = _crowded_connection(route)
    progress: dict[str, Any] = {"jsonrpc": "2.0", "method": "notifications/progress"}
    cancel: dict[str, Any] = {"jsonrpc": "2.0", "method": "notifications/cancelled"}
    answer: dict[str, Any] = {"jsonrpc": "2.0", "id": 0, "result": {}}
    assert connection.crowded_route(Envelope(progress, 0)) is route
    assert connection.crowded_route(Envelope(cancel, 0)) is None
    assert connection.crowded_route(Envelope(answer, 0)) is None  # the answer never waits
    assert connection.crowded_route(Envelope(progress, None)) is None  # a broadcast
    assert connection.crowded_route(Envelope(progress, 1)) is None  # no such route


def test_a_crowded_listen_stream_is_ended_not_waited_for() -> None:
    route = _Route(0, "client-id", True, None)
    connection = _crowded_connection(route)
    listed = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
    assert connection.crowded_route(Envelope(listed, 0)) is None
    route.deliver(outgoing(listed))
    assert route.unread


def test_a_route_whose_client_has_gone_takes_messages_quietly() -> None:
    connection = StatelessConnection()
    route = _Route(5, "theirs", False, None)
    connection._routes[5] = route  # pyright: ignore[reportPrivateUsage]
    route.receive.close()  # the client hung up
    route.deliver(outgoing({"jsonrpc": "2.0", "method": "notifications/progress"}))
    connection.route(Envelope({"jsonrpc": "2.0", "id": 5, "result": {}}, 5))
    assert not connection._routes  # pyright: ignore[reportPrivateUsage]
    route.close()
    route.deliver(outgoing({"jsonrpc": "2.0", "method": "notifications/progress"}))


def test_a_route_answers_with_the_clients_own_id() -> None:
    connection = StatelessConnection()
    route = _Route(5, "theirs", False, None)
    connection._routes[5] = route  # pyright: ignore[reportPrivateUsage]
    connection.route(Envelope({"jsonrpc": "2.0", "id": 5, "result": {"ok": True}}, 5))
    message, data = route.receive.receive_nowait()
    assert message == {"jsonrpc": "2.0", "id": "theirs", "result": {"ok": True}}
    assert data == b'{"jsonrpc":"2.0","id":"theirs","result":{"ok":true}}'


async def _nothing() -> dict[str, Any]:
    return {"type": "http.disconnect"}


def test_endpoint_requests_index_their_headers_and_note_repeated_ones() -> None:
    """The first of a field sent twice wins, as in Starlette; the field is noted (for
    those that must come once to be refused), and a list field reads whole."""
    scope = {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "headers": [
            (b"mcp-method", b"tools/call"),
            (b"accept", b"application/json"),
            (b"mcp-method", b"tools/list"),
        ],
    }
    request = EndpointRequest(scope, _nothing)
    headers = request.headers
    assert headers is request.headers
    assert headers.get("Mcp-Method") == "tools/call"
    assert headers.repeated == {"mcp-method"}
    assert headers.joined("MCP-Method") == "tools/call, tools/list"
    assert headers.joined("accept") == "application/json"
    assert headers.joined("mcp-name") is None
    assert headers["accept"] == "application/json"
    assert "ACCEPT" in headers
    assert headers.get("mcp-name") is None
