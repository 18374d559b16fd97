"""Messages a side cannot parse still end the calls they belong to.

A request nested deeper than the server's JSON reader takes (its limit is 200 levels;
the client's encoder allows 254) was answered with a parse error whose id was null, as
JSON-RPC allows when the id cannot be read, and the caller waited for ever. The first
members of such a message (``id`` and ``method``, which senders put before the nested
values) still say what it was: a request gets its parse error by id, and an answer that
cannot be read fails the call it answers, on either side and over every transport.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from http_support import serve
from http_support.apps import http_app
from support import PATIENCE_SECONDS, SERVERS, server_object

from answerback import Client, MCPError, StdioServer
from answerback.jsonrpc import Envelope, MalformedMessage
from answerback.transports._framing import JSON_DEPTH_LIMIT, decode
from answerback.types import INTERNAL_ERROR, PARSE_ERROR

pytestmark = pytest.mark.anyio

DEEP_SERVER = SERVERS / "deep_server.py"
ASKING_SERVER = SERVERS / "asking_server.py"
TOO_DEEP = 220
"""Past the reader's limit, within what the encoder writes (254)."""


def nested_list(levels: int) -> Any:
    value: Any = "bottom"
    for _ in range(levels):
        value = [value]
    return value


def test_the_readers_depth_limit_is_what_the_errors_say() -> None:
    """Pins pydantic-core's fixed limit, which the error messages name."""
    at_limit = json.dumps(nested_list(JSON_DEPTH_LIMIT))
    assert isinstance(decode(at_limit), Envelope)
    refused = decode(json.dumps(nested_list(JSON_DEPTH_LIMIT + 1)))
    assert isinstance(refused, MalformedMessage)
    assert f"more than {JSON_DEPTH_LIMIT} levels deep" in str(refused)
    assert refused.request_id is None  # a bare list names no request


def test_a_request_too_deep_to_read_still_names_its_id() -> None:
    request = {"jsonrpc": "2.0", "id": "r-9", "method": "tools/call", "params": nested_list(300)}
    refused = decode(json.dumps(request))
    assert isinstance(refused, MalformedMessage)
    assert refused.request_id == "r-9"


def test_an_answer_too_deep_to_read_becomes_an_error_answer_to_its_id() -> None:
    answer = {"jsonrpc": "2.0", "id": 12, "result": {"value": nested_list(300)}}
    decoded = decode(json.dumps(answer))
    assert isinstance(decoded, Envelope)
    assert decoded.message["id"] == 12
    assert decoded.message["error"]["code"] == INTERNAL_ERROR
    assert "levels deep" in decoded.message["error"]["message"]


@asynccontextmanager
async def deep_client(transport: str, mode: str) -> AsyncGenerator[Client, None]:
    if transport == "stdio":
        async with Client(StdioServer(sys.executable, [str(DEEP_SERVER)]), mode=mode) as client:
            yield client
        return
    async with (
        serve(http_app(server_object(DEEP_SERVER))) as running,
        Client(running.url, mode=mode) as client,
    ):
        yield client


TRANSPORTS_AND_MODES = [
    pytest.param(transport, mode, id=f"{transport}-{mode}")
    for transport in ("stdio", "http")
    for mode in ("legacy", "2026-07-28")
]


@pytest.mark.parametrize(("transport", "mode"), TRANSPORTS_AND_MODES)
async def test_a_request_too_deep_for_the_server_fails_its_call(transport: str, mode: str) -> None:
    async with deep_client(transport, mode) as client:
        with anyio.fail_after(PATIENCE_SECONDS), pytest.raises(MCPError) as caught:
            await client.call_tool("depth", {"value": nested_list(TOO_DEEP)})
        assert caught.value.code == PARSE_ERROR
        assert f"more than {JSON_DEPTH_LIMIT} levels deep" in caught.value.message
        assert "send flatter data" in caught.value.message
        served = await client.call_tool("depth", {"value": nested_list(JSON_DEPTH_LIMIT - 10)})
    assert served.structured_content == {"result": JSON_DEPTH_LIMIT - 10}


@pytest.mark.parametrize(("transport", "mode"), TRANSPORTS_AND_MODES)
async def test_an_answer_too_deep_for_the_client_fails_its_call(transport: str, mode: str) -> None:
    async with deep_client(transport, mode) as client:
        with anyio.fail_after(PATIENCE_SECONDS), pytest.raises(MCPError) as caught:
            await client.call_tool("nested", {"levels": TOO_DEEP})
        assert caught.value.code == INTERNAL_ERROR
        assert caught.value.message.startswith("The answer could not be read (")
        assert f"more than {JSON_DEPTH_LIMIT} levels deep" in caught.value.message
        served = await client.call_tool("nested", {"levels": 3})
    assert served.structured_content == {"value": [[["bottom"]]]}


async def read_json_line(stdout: Any, buffer: bytearray) -> Any:
    with anyio.fail_after(PATIENCE_SECONDS):
        while b"\n" not in buffer:
            buffer += await stdout.receive()
    line, _, rest = bytes(buffer).partition(b"\n")
    buffer[:] = rest
    return json.loads(line)


def line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


async def test_an_answer_the_server_cannot_read_fails_its_question_not_its_connection() -> None:
    """The client's answer to the server's question holds NaN: the question fails at once,
    and with it the call that asked, where it waited for an answer that had come and gone."""
    initialize: dict[str, Any] = {
        "protocolVersion": "2025-11-25",
        "capabilities": {"roots": {}},
        "clientInfo": {"name": "by-hand", "version": "0"},
    }
    async with await anyio.open_process([sys.executable, str(ASKING_SERVER)]) as process:
        assert process.stdin is not None
        buffer = bytearray()
        await process.stdin.send(
            line({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": initialize})
        )
        assert "result" in await read_json_line(process.stdout, buffer)
        await process.stdin.send(line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        call: dict[str, Any] = {"name": "list_my_roots", "arguments": {}}
        await process.stdin.send(
            line({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call})
        )
        question = await read_json_line(process.stdout, buffer)
        assert question["method"] == "roots/list"
        broken = '{"jsonrpc":"2.0","id":%s,"result":{"roots":[{"uri":"file:///a","name":NaN}]}}'
        await process.stdin.send((broken % json.dumps(question["id"])).encode() + b"\n")
        answer = await read_json_line(process.stdout, buffer)
        await process.stdin.send(line({"jsonrpc": "2.0", "id": 2, "method": "ping"}))
        alive = await read_json_line(process.stdout, buffer)
        await process.stdin.aclose()
        with anyio.fail_after(PATIENCE_SECONDS):
            await process.wait()
    assert answer["id"] == 1
    assert answer["error"]["code"] == INTERNAL_ERROR
    assert answer["error"]["message"].startswith("The answer could not be read (not JSON")
    assert alive == {"jsonrpc": "2.0", "id": 2, "result": {}}


@pytest.mark.parametrize(
    ("arguments", "shown"),
    [
        ({"when": object()}, "Unable to serialize unknown type"),
        ({"value": nested_list(300)}, "depth"),
    ],
    ids=["an object JSON has no form for", "nested past the encoder's limit"],
)
async def test_arguments_that_cannot_become_json_are_a_clear_error(
    arguments: dict[str, Any], shown: str
) -> None:
    async with Client(server_object(DEEP_SERVER)) as client:
        with pytest.raises(TypeError) as caught:
            await client.call_tool("depth", arguments)
        assert "The arguments of tool 'depth' cannot be sent as JSON" in str(caught.value)
        assert shown in str(caught.value)
        served = await client.call_tool("depth", {"value": [[1]]})
    assert served.structured_content == {"result": 2}
