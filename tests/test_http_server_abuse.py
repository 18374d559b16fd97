"""Streamable HTTP server under clients that misbehave: what the operator's log and the
client are told.

A legacy session with no GET stream logs its first dropped broadcast, then counts (the
count said when a GET stream opens or the session ends). An answer to the server's
question that names it but cannot be used fails the question and gets a 400 saying why."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncGenerator, Callable
from typing import Any

import anyio
import httpx2
import pytest
from http_support import (
    PATIENCE_SECONDS,
    raw_initialize,
    read_events,
    rpc,
    serve,
    session_headers,
)
from http_support.apps import CardHolder

from answerback import MCPError
from answerback.server import Context, MCPServer
from answerback.transports.http import StreamableHTTPApp
from answerback.transports.http._serving import UNSENT_BYTES_HELD

pytestmark = pytest.mark.anyio

BACKLOG = 3
BROADCASTS = 50


@pytest.fixture
async def http() -> AsyncGenerator[httpx2.AsyncClient, None]:
    async with httpx2.AsyncClient(timeout=PATIENCE_SECONDS) as client:
        yield client


def churning_server() -> MCPServer:
    mcp = MCPServer("abuse test server")

    @mcp.tool()
    async def churn(n: int) -> str:
        """Broadcast ``n`` list changes (to every session's GET stream)."""
        for _ in range(n):
            await mcp.notify_tools_changed()
        return "churned"

    return mcp


async def test_dropped_broadcasts_are_logged_once_per_session_then_counted(
    http: httpx2.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    """Sessions without a GET stream are normal; a broadcast to each with a full backlog
    must not log a line per session per message."""
    caplog.set_level(logging.WARNING, logger="answerback.http")
    app = StreamableHTTPApp(churning_server(), json_response=True, max_backlog=BACKLOG)
    async with serve(app) as server:
        reader, _ = await raw_initialize(http, server.url)
        ender, _ = await raw_initialize(http, server.url)
        call = rpc("tools/call", {"name": "churn", "arguments": {"n": BROADCASTS}}, id=2)
        with anyio.fail_after(PATIENCE_SECONDS):
            answer = await http.post(server.url, json=call, headers=session_headers(reader))
            assert answer.json()["result"]["content"][0]["text"] == "churned", answer.text
            headers = {**session_headers(reader), "accept": "text/event-stream"}
            async with http.stream("GET", server.url, headers=headers) as stream:
                assert stream.status_code == 200
                kept = 0
                async for event in read_events(stream):
                    if event.message is not None:
                        assert event.message["method"] == "notifications/tools/list_changed"
                        kept += 1
                        if kept == BACKLOG:
                            break
            ended = await http.delete(server.url, headers=session_headers(ender))
            assert ended.status_code == 200, ended.text
    drops = [r.getMessage() for r in caplog.records if "dropped a message for the GET" in r.message]
    assert sorted(drops) == sorted(
        f"session {session}: dropped a message for the GET stream: the client has opened no "
        f"GET stream to receive it and more than {BACKLOG} messages were waiting; more dropped "
        "are counted, and the count logged when the session ends or a GET stream opens"
        for session in (reader, ender)
    )
    counts = [r.getMessage() for r in caplog.records if "had been dropped" in r.message]
    lost = BROADCASTS - BACKLOG
    assert sorted(counts) == sorted(
        [
            f"session {reader}: its client opened a GET stream; {lost} messages for its GET "
            f"stream had been dropped, {BACKLOG} at most (and {UNSENT_BYTES_HELD} bytes) "
            "being kept while none is open",
            f"session {ender}: it ended; {lost} messages for its GET stream had been "
            f"dropped, {BACKLOG} at most (and {UNSENT_BYTES_HELD} bytes) being kept while "
            "none is open",
        ]
    )


def asking_server() -> MCPServer:
    mcp = MCPServer("abuse test server")

    @mcp.tool()
    async def ask(ctx: Context) -> str:
        """Ask for a name; say what came of it."""
        try:
            answer = await ctx.elicit("Name?", schema=CardHolder)
        except MCPError as exc:
            return f"failed: {exc.error.message}"
        return f"answered: {answer.action}"

    return mcp


DEEP = 100_000


def bad_error(question: Any) -> str:
    return json.dumps({"jsonrpc": "2.0", "id": question, "error": {"code": "x", "message": 5}})


def too_deep(question: Any) -> str:
    name = "[" * DEEP + '"x"' + "]" * DEEP
    return (
        '{"jsonrpc":"2.0","id":' + json.dumps(question) + ',"result":{"action":"accept",'
        '"content":{"name":' + name + "}}}"
    )


@pytest.mark.parametrize(
    ("answer_for", "told"),
    [
        pytest.param(
            bad_error,
            '"error" must be an object with an integer "code" and a string "message"',
            id="readable-id-bad-error",
        ),
        pytest.param(too_deep, "nest more than 200 levels deep", id="too-deep"),
    ],
)
async def test_an_unusable_answer_to_a_question_fails_it_and_gets_400(
    http: httpx2.AsyncClient, answer_for: Callable[[Any], str], told: str
) -> None:
    """Neither side waits on an answer that names its question but cannot be used: the
    tool's ``ctx.elicit`` raises with the reason, and the poster is told it too."""
    async with serve(asking_server().http_app()) as server:
        session_id, _ = await raw_initialize(http, server.url, elicitation={})
        headers = session_headers(session_id)
        call = rpc("tools/call", {"name": "ask", "arguments": {}}, id=2)
        with anyio.fail_after(PATIENCE_SECONDS):
            async with http.stream("POST", server.url, json=call, headers=headers) as stream:
                events = read_events(stream)
                async for event in events:
                    if event.message is not None and "method" in event.message:
                        assert event.message["method"] == "elicitation/create"
                        question = event.message["id"]
                        break
                else:
                    raise AssertionError("no question came")
                posted = await http.post(
                    server.url, content=answer_for(question).encode(), headers=headers
                )
                assert posted.status_code == 400, posted.text
                refusal = posted.json()
                assert refusal["id"] == question
                assert told in refusal["error"]["message"]
                assert "has failed with this reason" in refusal["error"]["message"]
                async for event in events:
                    if event.message is not None and "result" in event.message:
                        text = event.message["result"]["content"][0]["text"]
                        break
                else:
                    raise AssertionError("the call got no answer")
        assert text.startswith("failed: "), text
        assert told in text
        # A later proper answer to the failed question is an answer to nothing.
        late = {"jsonrpc": "2.0", "id": question, "result": {"action": "decline"}}
        dropped = await http.post(server.url, json=late, headers=headers)
        assert dropped.status_code == 202, dropped.text


async def test_an_unusable_answer_to_no_waiting_question_is_treated_as_before(
    http: httpx2.AsyncClient,
) -> None:
    """Only a waiting question fails: a malformed answer to nothing is refused (400) as
    before, and one that is not JSON is dropped (202) as any answer to nothing is."""
    async with serve(asking_server().http_app()) as server:
        session_id, _ = await raw_initialize(http, server.url, elicitation={})
        headers = session_headers(session_id)
        bad = {"jsonrpc": "2.0", "id": "nobody", "error": {"code": "x", "message": 5}}
        refused = await http.post(server.url, json=bad, headers=headers)
        assert refused.status_code == 400, refused.text
        assert "has failed" not in refused.json()["error"]["message"]
        dropped = await http.post(server.url, content=too_deep("nobody").encode(), headers=headers)
        assert dropped.status_code == 202, dropped.text
        call = rpc("tools/call", {"name": "ask", "arguments": {}}, id=3)
        # The session still serves: a call asks, and a proper answer completes it.
        async with http.stream("POST", server.url, json=call, headers=headers) as stream:
            events = read_events(stream)
            async for event in events:
                if event.message is None:
                    continue
                if "method" in event.message:
                    good = {"jsonrpc": "2.0", "id": event.message["id"]}
                    good["result"] = {"action": "decline"}
                    answered = await http.post(server.url, json=good, headers=headers)
                    assert answered.status_code == 202, answered.text
                else:
                    result = event.message
                    break
            else:
                raise AssertionError("the call got no answer")
        assert result["result"]["content"][0]["text"] == "answered: decline"
