"""Scale-out defects an operator found (stop 54, p1): replicas sharing a real Redis
stopping, filling it, evicting from it and losing it.

These tests need ``redis-server`` (``make services`` installs it) and run on asyncio
only: redis-py's client, which the test itself uses, runs on nothing else.
"""

from __future__ import annotations

import json
import os
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from http_support import PATIENCE_SECONDS, read_events, serve
from pydantic import BaseModel
from scale_out.cluster import Redis, missing_for_redis
from scale_out.fixtures import asyncio_only, heard, redis_on
from scale_out.raw import RawSession, error_of

from answerback import Client
from answerback.client import ClientRequestContext
from answerback.server import Context, MCPServer
from answerback.transports.http import InMemoryState, RedisState, StreamableHTTPApp
from answerback.transports.http._redis_client import connect
from answerback.types import CallToolResult, ElicitRequestParams, ElicitResult, TextContent

pytestmark = [
    pytest.mark.anyio,
    asyncio_only,
    pytest.mark.skipif(missing_for_redis() is not None, reason=str(missing_for_redis())),
]

HEARTBEAT_SECONDS = 0.5


class Person(BaseModel):
    name: str


def asking_server() -> MCPServer:
    mcp = MCPServer("scaled")

    @mcp.tool()
    async def ask_name(ctx: Context) -> str:
        """Ask the client for a name."""
        answer = await ctx.elicit("Your name?", schema=Person)
        return f"Hello, {answer.data.name}" if answer.action == "accept" else answer.action

    return mcp


def replica(redis: Redis, name: str) -> StreamableHTTPApp:
    state = RedisState(redis.url, replica_id=name, heartbeat_seconds=HEARTBEAT_SECONDS)
    return StreamableHTTPApp(asking_server(), state=state)


INITIALIZE_PARAMS = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "s54-test", "version": "1"},
}


def assert_no_internals(body: str, redis: Redis) -> None:
    """A client is told what to do, not where Redis is nor what it replied."""
    for internal in (redis.url, str(redis.process.port), "answerback:", "pipeline", "OOM"):
        assert internal not in body, body


async def open_get_stream(http: httpx2.AsyncClient, raw: RawSession, replica: int) -> None:
    """Open the session's GET stream on ``replica`` and leave it once primed (its
    priming event is stored in Redis)."""
    headers = {**raw.headers(), "accept": "text/event-stream"}
    async with http.stream("GET", raw.urls[replica], headers=headers) as listening:
        assert listening.status_code == 200
        assert (await read_events(listening).__anext__()).event_id is not None


# -- a replica stopping leaves the sessions that live on their events ---------------------


async def test_a_replica_stopping_keeps_the_events_of_shared_sessions(redis: Redis) -> None:
    """The GET stream's events outlive the replica that stored them, for the replica
    the stream resumes on; a DELETE, which ends the session, forgets them."""
    async with AsyncExitStack() as stack:
        http = await stack.enter_async_context(httpx2.AsyncClient(timeout=PATIENCE_SECONDS))
        client: Any = connect(redis.url)
        stack.push_async_callback(client.aclose)
        url_b = (await stack.enter_async_context(serve(replica(redis, "b")))).url
        replica_a = AsyncExitStack()  # served last: it stops first
        await stack.enter_async_context(replica_a)
        url_a = (await replica_a.enter_async_context(serve(replica(redis, "a")))).url
        raw = RawSession(http, [url_a, url_b])
        await raw.initialize(0)
        await open_get_stream(http, raw, 0)
        events_key = f"answerback:events:{raw.session_id}.standalone"
        assert await client.exists(events_key) == 1
        await replica_a.aclose()  # a graceful stop, as on SIGTERM
        assert await client.exists(events_key) == 1
        await open_get_stream(http, raw, 1)  # resumed on b, which stores its own events
        deleted = await http.delete(url_b, headers=raw.headers())
        assert deleted.status_code == 200
        assert await client.exists(events_key) == 0


# -- Redis full, or out: short 503s with the request's id, one log line an outage --------


async def test_a_full_redis_refuses_even_pipelined_requests_as_full(redis: Redis) -> None:
    """An ``initialize`` (several commands at once, whose error redis-py rewrites) is
    refused as full: the client gets a short 503 with its id and a Retry-After, the
    operator one line saying Redis is full, and one when it has room again."""
    with heard() as log:
        async with AsyncExitStack() as stack:
            http = await stack.enter_async_context(httpx2.AsyncClient(timeout=PATIENCE_SECONDS))
            client: Any = connect(redis.url)
            stack.push_async_callback(client.aclose)
            url = (await stack.enter_async_context(serve(replica(redis, "a")))).url
            raw = RawSession(http, [url])
            await client.config_set("maxmemory", 1)
            initialize = raw.request("initialize", INITIALIZE_PARAMS)
            refused = [await raw.post(0, initialize) for _ in range(2)]
            health = await http.get(url)  # full is every replica's: none is taken out
            await client.config_set("maxmemory", 0)
            await log.wait_for("has room again")
    for response in refused:
        assert response.status_code == 503, response.text
        assert response.headers["retry-after"] == "1"
        assert response.json()["id"] == json.loads(response.request.content)["id"]
        message = error_of(response)["message"]
        assert message == (
            "Service Unavailable: the server's shared state is full for now. Send the "
            "request again in a moment."
        )
        assert_no_internals(response.text, redis)
    assert health.status_code == 400, health.text
    [full] = log.containing("is full")
    assert "raise its maxmemory" in full
    assert not log.containing("unreachable")
    assert not log.containing("unavailable")
    [again] = log.containing("has room again")
    assert "requests refused meanwhile: 2" in again


async def test_a_redis_outage_is_logged_once_with_its_end(redis: Redis, tmp_path: Path) -> None:
    """Every refused request, heartbeat and inbox read fails on the same outage: one
    line says so and what to check, one its end. A GET without a session (a load
    balancer's health check) answers as before: Redis is every replica's, and taking
    them all out would refuse the 2026-07-28 calls they still serve."""
    with heard() as log:
        async with AsyncExitStack() as stack:
            http = await stack.enter_async_context(httpx2.AsyncClient(timeout=PATIENCE_SECONDS))
            url = (await stack.enter_async_context(serve(replica(redis, "a")))).url
            raw = RawSession(http, [url])
            await raw.initialize(0)
            assert (await http.get(url)).status_code == 400  # healthy: no session
            redis.process.stop()
            refused = [await raw.post(0, raw.request("tools/list")) for _ in range(3)]
            health = await http.get(url)
            with redis_on(redis.process.port, tmp_path):
                await log.wait_for("answers again after")
                healthy = await http.get(url)
                said = list(log.messages)  # not the replica stopping after Redis
    for response in refused:
        assert response.status_code == 503, response.text
        assert response.headers["retry-after"] == "1"
        assert response.json()["id"] == json.loads(response.request.content)["id"]
        assert "shared state cannot be reached for now" in error_of(response)["message"]
        assert_no_internals(response.text, redis)
    assert (health.status_code, healthy.status_code) == (400, 400), health.text
    [outage] = [message for message in said if "shared server state is unavailable" in message]
    assert f"Redis at {redis.url} failed" in outage
    assert "check that Redis is up" in outage
    [end] = [message for message in said if "answers again after" in message]
    assert "requests refused meanwhile: 3" in end
    assert f"replica a is process {os.getpid()}" in said[0]


# -- an evicting Redis -----------------------------------------------------------------


async def test_a_replica_warns_at_start_when_redis_may_evict(redis: Redis) -> None:
    client: Any = connect(redis.url)
    try:
        with heard() as log:
            async with RedisState(redis.url).running():
                pass  # noeviction, Redis's default: nothing to say
            await client.config_set("maxmemory-policy", "allkeys-lru")
            async with RedisState(redis.url).running():
                pass
            # A user that may not run CONFIG: not asked, and the replica starts.
            await client.execute_command(
                "ACL", "SETUSER", "plain", "on", ">secret", "~*", "&*", "+@all", "-config"
            )
            limited = redis.url.replace("redis://", "redis://plain:secret@")
            async with RedisState(limited).running():
                pass
    finally:
        await client.aclose()
    [warned] = log.containing("may evict keys")
    assert "maxmemory-policy allkeys-lru" in warned
    assert "Set maxmemory-policy noeviction" in warned


async def test_a_session_whose_record_vanished_is_not_said_ended_by_its_client(
    redis: Redis,
) -> None:
    """Redis evicting a session's record (or losing its data) looks, to the replica
    serving a call of it, like a DELETE through another replica: the call's error
    does not blame the client."""
    async with AsyncExitStack() as stack:
        http = await stack.enter_async_context(httpx2.AsyncClient(timeout=PATIENCE_SECONDS))
        client: Any = connect(redis.url)
        stack.push_async_callback(client.aclose)
        url = (await stack.enter_async_context(serve(replica(redis, "a")))).url
        raw = RawSession(http, [url])
        await raw.initialize(0)
        async with raw.call(0, "ask_name") as (request, stream):
            await stream.question()
            record = f"answerback:session:{raw.session_id}"
            assert await client.delete(record, f"{record}:entries") >= 1  # as an eviction
            gone = await raw.post(0, raw.request("ping"))
            ended = await stream.answer_to(request["id"])
    assert gone.status_code == 404, gone.text
    message = ended["error"]["message"]
    assert "the client ended the session" not in message
    assert "the server lost it (Redis evicted it or lost its data)" in message


# -- stopping ----------------------------------------------------------------------------


async def test_a_call_ended_by_a_graceful_stop_says_to_send_it_again() -> None:
    async with AsyncExitStack() as stack:
        http = await stack.enter_async_context(httpx2.AsyncClient(timeout=PATIENCE_SECONDS))
        app = StreamableHTTPApp(asking_server(), state=InMemoryState())
        server = AsyncExitStack()
        await stack.enter_async_context(server)
        raw = RawSession(http, [(await server.enter_async_context(serve(app))).url])
        await raw.initialize(0)
        async with raw.call(0, "ask_name") as (request, stream):
            await stream.question()
            await server.aclose()
            ended = await stream.answer_to(request["id"])
    assert ended["error"]["message"] == (
        "Server closed: the server is shutting down and did not answer this request. Send it again."
    )


# -- a client's answer refused while Redis is full --------------------------------------


def text_of(result: CallToolResult) -> str:
    assert not result.is_error, result
    block = result.content[0]
    assert isinstance(block, TextContent), block
    return block.text


async def test_an_answer_refused_while_redis_is_full_is_sent_again(redis: Redis) -> None:
    """The 503 says not handled, and when to try again (Retry-After): the client sends
    the answer again, and the call completes once Redis has room."""
    redis_client: Any = connect(redis.url)

    async def answer_while_full(
        context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult:
        await redis_client.config_set("maxmemory", 1)
        return ElicitResult(action="accept", content={"name": "Ada"})

    try:
        with heard("answerback") as log:
            async with AsyncExitStack() as stack:
                url = (await stack.enter_async_context(serve(replica(redis, "a")))).url
                client = await stack.enter_async_context(
                    Client(url, mode="legacy", elicitation_callback=answer_while_full)
                )
                async with anyio.create_task_group() as group:

                    async def make_room() -> None:
                        await log.wait_for("sending the answer to a server request again")
                        await redis_client.config_set("maxmemory", 0)

                    group.start_soon(make_room)
                    with anyio.fail_after(PATIENCE_SECONDS):
                        result = await client.call_tool("ask_name")
                    assert text_of(result) == "Hello, Ada"
    finally:
        await redis_client.aclose()
