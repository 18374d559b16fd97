"""Scale-out defects review1 found (stop 54): an outage's end logged while requests still
failed, and error answers naming the server's own question as if it were a request.

The Redis tests need ``redis-server`` (``make services`` installs it) and run on asyncio
only: redis-py's client, which the test itself uses, runs on nothing else.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AsyncExitStack
from typing import Any

import anyio
import httpx2
import pytest
from http_support import PATIENCE_SECONDS, serve
from scale_out.cluster import Redis, missing_for_redis
from scale_out.fixtures import asyncio_only
from scale_out.raw import RawSession, answer, error_of
from test_s54_scaleout_server import INITIALIZE_PARAMS, asking_server, heard, replica

from answerback.jsonrpc import Envelope
from answerback.transports.http import RedisState, StreamableHTTPApp
from answerback.transports.http._redis_client import connect

pytestmark = [pytest.mark.anyio, asyncio_only]

needs_redis = pytest.mark.skipif(missing_for_redis() is not None, reason=str(missing_for_redis()))


class Beats:
    """Wakes a test at a replica's heartbeats (its calls to ``replicas.beat``)."""

    def __init__(self, beat: Callable[[str], Awaitable[bool]]) -> None:
        self._beat = beat
        self._next = anyio.Event()

    async def beat(self, replica_id: str) -> bool:
        try:
            return await self._beat(replica_id)
        finally:
            self._next.set()
            self._next = anyio.Event()

    async def wait(self, count: int) -> None:
        """Until ``count`` more heartbeats have begun: every one before the last has run
        to its end, the outage log's update included."""
        with anyio.fail_after(PATIENCE_SECONDS):
            for _ in range(count):
                await self._next.wait()


@needs_redis
async def test_redis_refusing_requests_is_said_so_and_ends_once_a_request_succeeds(
    redis: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Redis answers the heartbeat but refuses what requests need (an ACL without HSET,
    as an operator or a managed Redis may set): the log says Redis refused, with its
    reply, once; heartbeats meanwhile do not say the outage over; the first request
    served after the ACL is mended does."""
    app = replica(redis, "a")
    assert isinstance(app.state, RedisState)
    beats = Beats(app.state.replicas.beat)
    monkeypatch.setattr(app.state.replicas, "beat", beats.beat)
    client: Any = connect(redis.url)
    try:
        with heard() as log:
            async with AsyncExitStack() as stack:
                http = await stack.enter_async_context(httpx2.AsyncClient(timeout=PATIENCE_SECONDS))
                url = (await stack.enter_async_context(serve(app))).url
                raw = RawSession(http, [url])
                await client.execute_command("ACL", "SETUSER", "default", "-hset")
                refused = [
                    await raw.post(0, raw.request("initialize", INITIALIZE_PARAMS))
                    for _ in range(3)
                ]
                await beats.wait(2)
                ended_early = log.containing("again after")
                await client.execute_command("ACL", "SETUSER", "default", "+hset")
                served = await raw.post(0, raw.request("initialize", INITIALIZE_PARAMS))
                said = list(log.messages)
    finally:
        await client.execute_command("ACL", "SETUSER", "default", "+hset")
        await client.aclose()
    assert ended_early == [], "the outage was said over while every request still failed"
    for response in refused:
        assert response.status_code == 503, response.text
        assert error_of(response)["message"] == (
            "Service Unavailable: the server's shared state refused this request (the "
            "server's log says why). Send the request again once the server's operator "
            "has corrected it."
        )
    assert served.status_code == 200, served.text
    [refusal] = [message for message in said if message.startswith("Redis refused: ")]
    assert "no permissions to run the 'hset' command" in refusal
    assert f"(Redis at {redis.url})" in refusal
    assert not [message for message in said if "check that Redis is up" in message]
    [end] = [message for message in said if "again after" in message]
    assert "serves requests again" in end
    assert "requests refused meanwhile: 3" in end


@needs_redis
async def test_a_503_for_a_posted_answer_names_no_request(redis: Redis) -> None:
    """A client's answer to the server's question, refused for want of Redis: the 503's
    JSON-RPC error answers no request of the client's, so its id is null, not the id
    of the server's own question."""
    async with AsyncExitStack() as stack:
        http = await stack.enter_async_context(httpx2.AsyncClient(timeout=PATIENCE_SECONDS))
        url = (await stack.enter_async_context(serve(replica(redis, "a")))).url
        raw = RawSession(http, [url])
        await raw.initialize(0)
        async with raw.call(0, "ask_name") as (_, stream):
            question = await stream.question()
            redis.process.stop()
            refused = await raw.post(0, answer(question["id"]))
    assert refused.status_code == 503, refused.text
    assert refused.json()["id"] is None, refused.text


def refuse_envelope(envelope: Envelope) -> bool:
    """``LegacySession.submit`` of a session that has just ended."""
    return False


async def test_a_404_for_an_answer_to_an_ended_session_names_no_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The session ends between finding it and handing it the client's answer (here:
    the hand-over fails, as on a session just closed): the 404 answers no request of
    the client's, so its id is null. Without shared state the server's question ids
    are small numbers, which a client's own pending requests may have too."""
    app = StreamableHTTPApp(asking_server())
    async with AsyncExitStack() as stack:
        http = await stack.enter_async_context(httpx2.AsyncClient(timeout=PATIENCE_SECONDS))
        url = (await stack.enter_async_context(serve(app))).url
        raw = RawSession(http, [url])
        await raw.initialize(0)
        async with raw.call(0, "ask_name") as (_, stream):
            question = await stream.question()
            assert raw.session_id is not None
            session = app.sessions[raw.session_id]
            monkeypatch.setattr(session, "submit", refuse_envelope)
            ended = await raw.post(0, answer(question["id"]))
            monkeypatch.undo()
    assert ended.status_code == 404, ended.text
    assert "Session not found" in error_of(ended)["message"]
    assert ended.json()["id"] is None, ended.text
