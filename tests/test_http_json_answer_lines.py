"""The header lines of an answer sent as one JSON body, in both eras.

The server writes them itself rather than through Starlette's ``Response``, which
normalised them on every answer (``_serving.json_response``): what goes out must stay
what a client reads, once each. Real uvicorn on 127.0.0.1, read with raw httpx2.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator

import httpx2
import pytest
from http_support import PATIENCE_SECONDS, POST_HEADERS, rpc, serve

from answerback.server import MCPServer

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
LEGACY = "2025-11-25"


def echo_server() -> MCPServer:
    mcp = MCPServer("json-lines")

    @mcp.tool()
    async def echo(text: str) -> str:
        """Give the text back."""
        return text

    return mcp


@pytest.fixture
async def url() -> AsyncGenerator[str, None]:
    async with serve(echo_server().http_app(json_response=True)) as server:
        yield server.url


@pytest.fixture
async def http() -> AsyncGenerator[httpx2.AsyncClient, None]:
    async with httpx2.AsyncClient(timeout=PATIENCE_SECONDS) as client:
        yield client


def lines(response: httpx2.Response) -> dict[str, list[str]]:
    """Every header line of ``response``, by lower-case name, in the order sent."""
    found: dict[str, list[str]] = {}
    for name, value in response.headers.multi_items():
        found.setdefault(name.lower(), []).append(value)
    return found


def assert_one_json_body(response: httpx2.Response) -> dict[str, list[str]]:
    sent = lines(response)
    assert sent["content-type"] == ["application/json"]
    assert sent["content-length"] == [str(len(response.content))]
    json.loads(response.content)  # the whole body, nothing more nor less
    return sent


async def test_legacy_answers_carry_their_session_once(http: httpx2.AsyncClient, url: str) -> None:
    initialize = rpc(
        "initialize",
        {
            "protocolVersion": LEGACY,
            "capabilities": {},
            "clientInfo": {"name": "lines", "version": "0"},
        },
        id=0,
    )
    opened = await http.post(url, json=initialize, headers=POST_HEADERS)
    assert opened.status_code == 200, opened.text
    session_id = assert_one_json_body(opened)["mcp-session-id"]
    assert len(session_id) == 1
    headers = {**POST_HEADERS, "mcp-session-id": session_id[0], "mcp-protocol-version": LEGACY}
    done = await http.post(url, json=rpc("notifications/initialized", id=None), headers=headers)
    assert done.status_code == 202, done.text

    called = await http.post(
        url, json=rpc("tools/call", {"name": "echo", "arguments": {"text": "é!"}}), headers=headers
    )

    assert called.status_code == 200, called.text
    assert assert_one_json_body(called)["mcp-session-id"] == session_id
    assert called.json()["result"]["content"][0]["text"] == "é!"


def modern_call(name: str, arguments: dict[str, str]) -> tuple[dict[str, object], dict[str, str]]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "lines", "version": "0"},
    }
    message = rpc("tools/call", {"name": name, "arguments": arguments, "_meta": meta})
    headers = {
        **POST_HEADERS,
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/call",
        "mcp-name": name,
    }
    return message, headers


async def test_modern_answer_and_error_status(http: httpx2.AsyncClient, url: str) -> None:
    message, headers = modern_call("echo", {"text": "hello"})
    answered = await http.post(url, json=message, headers=headers)
    assert answered.status_code == 200, answered.text
    assert "mcp-session-id" not in assert_one_json_body(answered)
    assert answered.json()["result"]["content"][0]["text"] == "hello"

    # An error answer goes out the same way, with the status its code calls for.
    message = rpc("no/such/method", {"_meta": message["params"]["_meta"]})  # type: ignore[index]
    unnamed = {key: value for key, value in headers.items() if key != "mcp-name"}
    refused = await http.post(
        url, json=message, headers={**unnamed, "mcp-method": "no/such/method"}
    )
    assert refused.status_code == 404, refused.text
    assert_one_json_body(refused)
    assert refused.json()["error"]["code"] == -32601
