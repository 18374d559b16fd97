"""2026-07-28 requests when a server stops, and while a call is silent.

Stopping answers every 2026-07-28 request in flight with "Server closed: the server is
shutting down ... Send it again." at once, as it does a session's, whether its response
has started or not, and a ``subscriptions/listen`` stream ends with the same answer:
nothing is left for uvicorn to cut off after its grace period (with a 500 and a
traceback in the log).
A call that is silent past the quick-answer window starts its SSE answer and writes
keepalive comments, so that a proxy's read timeout does not end it; a client that
accepts only JSON still gets a JSON body.
"""

from __future__ import annotations

import json
import re
import signal
import sys
from collections.abc import AsyncGenerator
from typing import Any

import anyio
import httpx2
import pytest
from http_support import PATIENCE_SECONDS, POST_HEADERS, Flag, read_events, read_line, rpc, serve
from support import SERVERS

from answerback import Client
from answerback.server import MCPServer
from answerback.transports.http import StreamableHTTPApp
from answerback.transports.http import _modern_server as modern_server_module
from answerback.transports.http._sse import KEEPALIVE, EventParser
from answerback.types import CONNECTION_CLOSED, ConnectionClosedError
from answerback.types._errors import SERVER_CLOSED

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
CLOSED = (
    "Server closed: the server is shutting down and did not answer this request. Send it again."
)
HOLDING_SERVER = SERVERS / "holding_http_server.py"
START_LINE = re.compile(
    r"answerback: serving MCP at (http://127\.0\.0\.1:\d+/mcp) \(Ctrl-C to stop\)\n"
)


@pytest.fixture
async def http() -> AsyncGenerator[httpx2.AsyncClient, None]:
    async with httpx2.AsyncClient(timeout=PATIENCE_SECONDS) as client:
        yield client


def modern_call(name: str, request_id: int = 1) -> dict[str, Any]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
    }
    return rpc("tools/call", {"name": name, "arguments": {}, "_meta": meta}, id=request_id)


def modern_headers(method: str, name: str | None, accept: str) -> dict[str, str]:
    headers = {**POST_HEADERS, "accept": accept, "mcp-protocol-version": MODERN}
    headers["mcp-method"] = method
    if name is not None:
        headers["mcp-name"] = name
    return headers


def assert_server_closed(answer: dict[str, Any], request_id: int) -> None:
    assert answer == {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {"code": CONNECTION_CLOSED, "message": CLOSED, "data": {"reason": SERVER_CLOSED}},
    }


# -- D4: stopping answers 2026-07-28 requests at once ------------------------------------


async def call_held_raw(url: str) -> dict[str, Any]:
    """Call ``hold`` as a client that accepts only JSON: its response has not started
    when the server stops."""
    async with httpx2.AsyncClient(timeout=PATIENCE_SECONDS) as http:
        headers = modern_headers("tools/call", "hold", "application/json")
        response = await http.post(url, json=modern_call("hold", 7), headers=headers)
    assert response.headers["content-type"] == "application/json", response.text
    return response.json()


async def call_held_with_client(url: str) -> dict[str, Any]:
    """Call ``hold`` with answerback's client (its answer is a started SSE stream)."""
    async with Client(url, mode=MODERN) as client:
        with pytest.raises(ConnectionClosedError) as caught:
            await client.call_tool("hold")
    error = caught.value
    return {"jsonrpc": "2.0", "id": 7, "error": {"code": error.code, "message": error.message}}


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("client", ["json-only", "answerback"])
async def test_sigterm_answers_a_2026_call_in_flight_at_once(client: str) -> None:
    """A supervisor stops the server (SIGTERM) while a 2026-07-28 call runs: the call
    gets the legacy calls' "Server closed" error, and the server stops with exit status 0
    and nothing in its log but the call it cut off and its last line (no uvicorn
    traceback)."""
    command = [sys.executable, str(HOLDING_SERVER), "0"]
    async with await anyio.open_process(command) as process:
        stderr = bytearray()
        match = START_LINE.fullmatch(await read_line(process, stderr))
        assert match is not None
        answers: list[dict[str, Any]] = []

        async def call() -> None:
            calling = call_held_raw if client == "json-only" else call_held_with_client
            answers.append(await calling(match.group(1)))

        with anyio.fail_after(PATIENCE_SECONDS):
            async with anyio.create_task_group() as tg:
                tg.start_soon(call)
                assert await read_line(process, bytearray(), stdout=True) == "holding\n"
                process.send_signal(signal.SIGTERM)
            assert process.stderr is not None
            async for chunk in process.stderr:
                stderr += chunk
            code = await process.wait()
    [answer] = answers
    if client == "json-only":
        assert_server_closed(answer, 7)
    else:
        assert answer["error"] == {"code": CONNECTION_CLOSED, "message": CLOSED}
    assert stderr.decode() == (
        "stopping with 1 call in progress here; each ends now, its client told that the "
        "server is shutting down and to send the request again\nanswerback: stopped\n"
    )
    assert code == 0


async def test_close_sessions_answers_2026_calls_and_listen_streams(
    http: httpx2.AsyncClient,
) -> None:
    """uvicorn is given no grace period here: only the app can end these responses."""
    started = Flag()
    mcp = MCPServer("Holding")

    @mcp.tool()
    async def hold() -> str:
        started.set()
        await anyio.sleep_forever()
        return "unreachable"

    app = StreamableHTTPApp(mcp)
    listen = rpc(
        "subscriptions/listen",
        {
            "notifications": {"toolsListChanged": True},
            "_meta": modern_call("hold")["params"]["_meta"],
        },
        id=3,
    )
    listened = Flag()
    answers: dict[str, dict[str, Any]] = {}

    async def listen_until_closed(url: str) -> None:
        accept = "text/event-stream, application/json"
        headers = modern_headers("subscriptions/listen", None, accept)
        async with http.stream("POST", url, json=listen, headers=headers) as response:
            async for event in read_events(response):
                assert event.message is not None
                if event.message.get("method") == "notifications/subscriptions/acknowledged":
                    listened.set()
                elif "method" not in event.message:
                    answers["listen"] = event.message

    async def call_until_closed(url: str) -> None:
        headers = modern_headers("tools/call", "hold", "application/json")
        response = await http.post(url, json=modern_call("hold", 7), headers=headers)
        answers["call"] = response.json()

    with anyio.fail_after(PATIENCE_SECONDS):
        async with (
            anyio.create_task_group() as tg,
            serve(app, graceful_seconds=None) as running,
        ):
            tg.start_soon(listen_until_closed, running.url)
            tg.start_soon(call_until_closed, running.url)
            await started.wait()
            await listened.wait()
            await running.call(app.close_sessions)
    assert_server_closed(answers["call"], 7)
    assert_server_closed(answers["listen"], 3)


async def test_a_2026_request_read_while_the_server_closes_is_answered_at_once() -> None:
    """New requests get 503 once the server closes, but one whose body was still being
    read then reaches the stateless connection afterwards: it is answered at once, not
    left for uvicorn to cut off."""
    mcp = MCPServer("Holding")

    @mcp.tool()
    async def hold() -> str:
        await anyio.sleep_forever()
        return "unreachable"

    app = StreamableHTTPApp(mcp)

    async def submit_after_closing() -> list[dict[str, Any]]:
        await app.close_sessions()
        route = app.stateless.submit(modern_call("hold", 9), None, 0, None)
        return [message async for message, _ in route.receive]

    async with serve(app) as running:
        with anyio.fail_after(PATIENCE_SECONDS):
            [answer] = await running.call(submit_after_closing)
    assert_server_closed(answer, 9)


# -- D5: a silent call keeps its proxy informed ------------------------------------------


def silent_server(release: Flag) -> MCPServer:
    mcp = MCPServer("Silent")

    @mcp.tool()
    async def silent() -> str:
        await release.wait()
        return "done"

    return mcp


@pytest.mark.parametrize(
    "accept", ["application/json, text/event-stream", "text/event-stream, application/json"]
)
async def test_a_silent_2026_call_starts_its_stream_and_keeps_it_alive(
    http: httpx2.AsyncClient, accept: str
) -> None:
    """The tool answers only once the test has seen the response's headers and a
    keepalive comment: a proxy between them sees a live response all along."""
    release = Flag()
    app = StreamableHTTPApp(silent_server(release), keepalive_seconds=0.05)
    async with serve(app) as running:
        with anyio.fail_after(PATIENCE_SECONDS):
            headers = modern_headers("tools/call", "silent", accept)
            body = modern_call("silent", 5)
            async with http.stream("POST", running.url, json=body, headers=headers) as response:
                assert response.status_code == 200
                assert response.headers["content-type"].startswith("text/event-stream")
                assert response.headers["x-accel-buffering"] == "no"
                received = bytearray()
                chunks = response.aiter_bytes()
                while KEEPALIVE not in received:
                    received += await anext(chunks)
                release.set()
                async for chunk in chunks:
                    received += chunk
    [event] = EventParser().feed(bytes(received))  # keepalives are comments, not events
    answer = json.loads(event.data)
    assert answer["id"] == 5
    assert answer["result"]["content"] == [{"type": "text", "text": "done"}]


async def test_a_silent_2026_call_answers_a_json_only_client_in_json(
    http: httpx2.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With no quick-answer window at all, every call is "silent"; a client that
    accepts only JSON still gets one JSON body (proxies need a read timeout longer than
    its longest call: docs/transports.md)."""
    monkeypatch.setattr(modern_server_module, "QUICK_ANSWER_SECONDS", 0)
    release = Flag()
    release.set()
    app = StreamableHTTPApp(silent_server(release), keepalive_seconds=0.05)
    async with serve(app) as running:
        headers = modern_headers("tools/call", "silent", "application/json")
        response = await http.post(running.url, json=modern_call("silent", 6), headers=headers)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.json()["result"]["content"] == [{"type": "text", "text": "done"}]
