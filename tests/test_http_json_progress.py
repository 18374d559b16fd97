"""``json_response=True`` and progress: a call's progress reaches the caller before its
answer.

A handshake-era request that carries a ``progressToken`` is answered on its own stream
even in JSON mode, so its progress and its answer travel in order on one connection (sent
to the GET stream, progress could arrive after the answer, when the caller's progress
callback is gone). A request without one, or from a client that accepts only JSON, is
still answered with one JSON object. Real uvicorn on 127.0.0.1, with answerback's client
and the official SDK's.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator

import httpx2
import mcp
import pytest
from http_support import (
    PATIENCE_SECONDS,
    RawEvent,
    raw_initialize,
    read_events,
    rpc,
    serve,
    session_headers,
)

from answerback import Client
from answerback.server import Context, MCPServer

pytestmark = pytest.mark.anyio

STEPS = 300
CALLS = 3


def counting_server() -> MCPServer:
    mcp_server = MCPServer("json-progress")

    @mcp_server.tool()
    async def count(ctx: Context, steps: int) -> str:
        """Report progress ``steps`` times, as fast as it can, then answer."""
        for step in range(1, steps + 1):
            await ctx.report_progress(step, steps)
        return "counted"

    return mcp_server


@pytest.fixture
async def json_url() -> AsyncGenerator[str, None]:
    async with serve(counting_server().http_app(json_response=True)) as server:
        yield server.url


@pytest.fixture
async def http() -> AsyncGenerator[httpx2.AsyncClient, None]:
    async with httpx2.AsyncClient(timeout=PATIENCE_SECONDS) as client:
        yield client


async def test_answerbacks_client_gets_every_report_before_the_answer(json_url: str) -> None:
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    async with Client(json_url, mode="legacy") as client:
        for _ in range(CALLS):
            seen.clear()
            result = await client.call_tool(
                "count", {"steps": STEPS}, progress_callback=on_progress
            )
            assert result.text == "counted"
            assert seen == list(range(1, STEPS + 1))


async def test_the_official_client_gets_every_report_before_the_answer(json_url: str) -> None:
    seen: list[float] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(progress)

    async with mcp.Client(json_url, mode="legacy") as client:
        for _ in range(CALLS):
            seen.clear()
            await client.call_tool("count", {"steps": STEPS}, progress_callback=on_progress)
            assert seen == list(range(1, STEPS + 1))


async def test_a_call_with_a_progress_token_is_answered_on_its_own_stream(
    http: httpx2.AsyncClient, json_url: str
) -> None:
    session_id, _ = await raw_initialize(http, json_url)
    call = rpc(
        "tools/call", {"name": "count", "arguments": {"steps": 3}, "_meta": {"progressToken": "t"}}
    )
    async with http.stream(
        "POST", json_url, json=call, headers=session_headers(session_id)
    ) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        events: list[RawEvent] = [event async for event in read_events(response)]
    messages = [event.message for event in events if event.message is not None]
    assert [message.get("params", {}).get("progress") for message in messages[:-1]] == [1, 2, 3]
    assert messages[-1]["result"]["content"][0]["text"] == "counted"


@pytest.mark.parametrize(
    ("accept", "meta"),
    [
        pytest.param("application/json, text/event-stream", {}, id="no-progress-token"),
        pytest.param("application/json", {"progressToken": "t"}, id="json-only-client"),
    ],
)
async def test_other_calls_still_get_one_json_object(
    http: httpx2.AsyncClient, json_url: str, accept: str, meta: dict[str, str]
) -> None:
    session_id, _ = await raw_initialize(http, json_url)
    call = rpc("tools/call", {"name": "count", "arguments": {"steps": 3}, "_meta": meta})
    headers = {**session_headers(session_id), "accept": accept}
    response = await http.post(json_url, json=call, headers=headers)
    assert response.headers["content-type"].startswith("application/json")
    assert response.json()["result"]["content"][0]["text"] == "counted"
