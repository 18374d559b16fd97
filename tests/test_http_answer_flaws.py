"""Streamable HTTP server: what a client is told of a response-shaped message it POSTs
that cannot be used. A 2026-07-28 client sends no responses, yet one that sends a
malformed one learns what is wrong with it, as a handshake-era client does; and the error
answer ``decode`` stands in for a response that is not JSON is told from one the client
sent by a mark, not by parsing the body again."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from typing import Any

import anyio
import httpx2
import pydantic_core
import pytest
from http_support import (
    PATIENCE_SECONDS,
    POST_HEADERS,
    raw_initialize,
    read_events,
    rpc,
    serve,
    session_headers,
)
from http_support.apps import tagged_server

from answerback.jsonrpc import Envelope
from answerback.jsonrpc._endpoint import as_object
from answerback.transports._framing import decode
from answerback.transports.http._serving import answer_flaw, message_problem
from answerback.types._errors import PARSE_ERROR

pytestmark = pytest.mark.anyio

MODERN_HEADERS = {**POST_HEADERS, "mcp-protocol-version": "2026-07-28"}


@pytest.fixture
async def http() -> AsyncGenerator[httpx2.AsyncClient, None]:
    async with httpx2.AsyncClient(timeout=PATIENCE_SECONDS) as client:
        yield client


@pytest.mark.parametrize(
    ("body", "told"),
    [
        pytest.param(
            {"jsonrpc": "2.0", "id": 1},
            'a message needs a "method" (a request or a notification), or a "result" or an '
            '"error" (a response)',
            id="neither",
        ),
        pytest.param(
            {"jsonrpc": "2.0", "id": 1, "result": {}, "error": {"code": 1, "message": "x"}},
            'a response has a "result" or an "error", not both',
            id="both",
        ),
        pytest.param(
            {"jsonrpc": "2.0", "id": 1, "error": {"code": "x", "message": 5}},
            '"error" must be an object with an integer "code" and a string "message"',
            id="bad-error",
        ),
        pytest.param(
            {"jsonrpc": "2.0", "id": 1, "result": {}},
            "a 2026-07-28 client sends no responses",
            id="well-formed",
        ),
    ],
)
async def test_a_2026_client_posting_a_response_is_told_what_is_wrong_with_it(
    http: httpx2.AsyncClient, body: dict[str, Any], told: str
) -> None:
    async with serve(tagged_server().http_app()) as server:
        response = await http.post(server.url, json=body, headers=MODERN_HEADERS)
    assert response.status_code == 400, response.text
    answer = response.json()
    assert answer["id"] == 1
    assert told in answer["error"]["message"], answer


def test_only_the_answer_decode_stood_in_is_taken_for_an_unreadable_one() -> None:
    """The stand-in for a body that is not JSON is marked; the same error answer sent
    as JSON is the client's own, and usable."""
    decoded = decode(b'{"jsonrpc":"2.0","id":4,"error":{"code":1,"message":"x"}, not JSON')
    assert isinstance(decoded, Envelope)
    stand_in = as_object(decoded.message)
    assert stand_in is not None
    flaw = answer_flaw(stand_in, message_problem(stand_in))
    assert flaw is not None
    assert flaw.unreadable
    assert flaw.code == PARSE_ERROR
    sent = json.loads(json.dumps(stand_in))
    assert answer_flaw(sent, message_problem(sent)) is None


async def test_an_error_answer_a_legacy_client_posts_is_parsed_once(
    http: httpx2.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every error answer to a question was parsed a second time, to tell it from the
    stand-in for one that is not JSON; the stand-in's mark tells them apart now."""
    mcp = tagged_server()
    async with serve(mcp.http_app()) as server:
        session_id, _ = await raw_initialize(http, server.url, elicitation={})
        headers = session_headers(session_id)
        call = rpc("tools/call", {"name": "echo_elicit", "arguments": {"tag": "t"}}, id=2)
        with anyio.fail_after(PATIENCE_SECONDS):
            async with http.stream("POST", server.url, json=call, headers=headers) as stream:
                events = read_events(stream)
                question = None
                async for event in events:
                    if event.message is not None and "method" in event.message:
                        question = event.message["id"]
                        break
                assert question is not None, "no question came"
                error = {"code": -1, "message": "the person closed the form"}
                body = json.dumps({"jsonrpc": "2.0", "id": question, "error": error}).encode()
                parsed: list[bytes] = []
                from_json = pydantic_core.from_json

                def counting(data: Any, *args: Any, **kwargs: Any) -> Any:
                    if data == body:
                        parsed.append(data)
                    return from_json(data, *args, **kwargs)

                monkeypatch.setattr(pydantic_core, "from_json", counting)
                posted = await http.post(server.url, content=body, headers=headers)
                monkeypatch.undo()
                assert posted.status_code == 202, posted.text
                async for event in events:
                    if event.message is not None and "id" in event.message:
                        assert event.message["id"] == 2
                        break
    assert len(parsed) == 1
