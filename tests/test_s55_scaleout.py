"""Scale-out leftovers an operator's probe found (stop 55, f1), with a real redis-server
and haproxy: a request the server says it did not handle is sent again; a stopping
replica says what it still serves; a Redis outage counts what it cost instead of
logging each event.

These tests need ``redis-server`` (``make services`` installs it) and run on asyncio
only: redis-py's client, which ``RedisState`` uses, runs on nothing else.
"""

from __future__ import annotations

import contextlib
import json
import secrets
from collections.abc import AsyncGenerator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
import redis.asyncio as aioredis
from http_support import PATIENCE_SECONDS, RunningServer, read_request_body, replaying, serve
from scale_out.cluster import Redis, haproxy, missing_for_haproxy, missing_for_redis
from scale_out.fixtures import asyncio_only, heard, redis_on
from scale_out.replica_server import Person, build_server

from answerback import Client, MCPError
from answerback.client import ClientRequestContext
from answerback.server import Context, MCPServer
from answerback.transports.http import RedisState, StreamableHTTPApp
from answerback.transports.http._state import StateFull, StateRefused, StateUnavailable
from answerback.transports.http._state_outage import (
    EVENTS_NOT_STORED,
    QUESTIONS_NOT_RECORDED,
    StateOutage,
)
from answerback.types import CallToolResult, ElicitRequestParams, ElicitResult, TextContent

pytestmark = [
    pytest.mark.anyio,
    asyncio_only,
    pytest.mark.skipif(missing_for_redis() is not None, reason=str(missing_for_redis())),
]

HEARTBEAT_SECONDS = 0.5
RESENT = "did not handle request"
"""What the client logs, once per request, when it sends a request again."""


def replica(redis: Redis, name: str, state_key: bytes | None = None) -> StreamableHTTPApp:
    """A replica of the scale-out tests' server (``whoami``, ``ask_name``...) on ``redis``."""
    state = RedisState(redis.url, replica_id=name, heartbeat_seconds=HEARTBEAT_SECONDS)
    return StreamableHTTPApp(build_server(name, state_key), state=state)


def text_of(result: CallToolResult) -> str:
    assert not result.is_error, result
    block = result.content[0]
    assert isinstance(block, TextContent), block
    return block.text


async def answer_ada(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
    return ElicitResult(action="accept", content=Person(name="Ada").model_dump())


# -- 1. a request the server did not handle is sent again ----------------------------------


async def test_a_call_refused_without_redis_is_sent_again_once_redis_is_back(
    redis: Redis, tmp_path: Path
) -> None:
    """Redis stops under a legacy session: the call's 503 (Retry-After: 1) says it was
    not handled, so the client sends it again, logging that once; Redis is back (empty:
    the session is gone, and set up again) and the call completes."""
    async with AsyncExitStack() as stack:
        url = (await stack.enter_async_context(serve(replica(redis, "a")))).url
        client = await stack.enter_async_context(Client(url, mode="legacy"))
        assert text_of(await client.call_tool("whoami")) == "a"
        with heard() as log:
            redis.process.stop()
            async with anyio.create_task_group() as group:

                async def bring_redis_back() -> None:
                    await log.wait_for(RESENT)
                    stack.enter_context(redis_on(redis.process.port, tmp_path))

                group.start_soon(bring_redis_back)
                with anyio.fail_after(PATIENCE_SECONDS):
                    assert text_of(await client.call_tool("whoami")) == "a"
    [said] = log.containing(RESENT)
    assert "HTTP 503 Service Unavailable: Service Unavailable: the server's shared state" in said
    assert "sending it again after 1 s (Retry-After), at most 3 more times" in said


async def test_a_call_refused_while_redis_stays_down_fails_as_before(redis: Redis) -> None:
    """Redis does not come back within the tries: the call fails with the server's
    503 answer, as it did before the client tried again, and the tries are logged once."""
    async with AsyncExitStack() as stack:
        url = (await stack.enter_async_context(serve(replica(redis, "a")))).url
        client = await stack.enter_async_context(Client(url, mode="legacy"))
        await client.list_tools()
        with heard() as log:
            redis.process.stop()
            with anyio.fail_after(PATIENCE_SECONDS), pytest.raises(MCPError) as caught:
                await client.call_tool("whoami")
            refused = log.containing("requests refused meanwhile")
    assert caught.value.message.startswith(
        "Service Unavailable: the server's shared state cannot be reached for now. Send the "
        "request again in a moment. (it was sent 4 times over "
    )
    assert len(log.containing(RESENT)) == 1
    assert refused == []  # the outage has not ended: Redis is still down


class Recorded:
    """An ASGI app's POSTs, recorded (their JSON bodies) before it gets them."""

    def __init__(self, app: StreamableHTTPApp) -> None:
        self.app = app
        self.bodies: list[dict[str, Any]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = await read_request_body(receive)
        self.bodies.append(json.loads(body))
        await self.app(scope, replaying(body, receive), send)

    def retries(self) -> list[dict[str, Any]]:
        """The 2026-07-28 retries among them: a tool call with the answers to its question."""
        return [body for body in self.bodies if "inputResponses" in body.get("params", {})]


@asynccontextmanager
async def served(app: StreamableHTTPApp) -> AsyncGenerator[tuple[Recorded, RunningServer]]:
    recorded = Recorded(app)
    async with serve(recorded) as running:
        yield recorded, running


@pytest.mark.skipif(missing_for_haproxy() is not None, reason=str(missing_for_haproxy()))
async def test_a_2026_retry_refused_by_a_stopping_replica_is_served_by_another(
    redis: Redis, tmp_path: Path
) -> None:
    """Behind haproxy, replica a stops (its sessions closed, it still listens): each
    request it gets, the MRTR retry among them, is refused with 503 and Retry-After, and
    sent again, to b. The retry's state is single-use across the replicas, so a retry
    that ran twice would be refused as already used."""
    key = secrets.token_bytes(32)
    async with AsyncExitStack() as stack:
        app_a = replica(redis, "a", key)
        stopping, running_a = await stack.enter_async_context(served(app_a))
        serving, running_b = await stack.enter_async_context(served(replica(redis, "b", key)))
        proxy = stack.enter_context(haproxy([running_a.port, running_b.port], tmp_path))
        await running_a.call(app_a.close_sessions)
        with heard() as log:
            async with Client(
                f"http://127.0.0.1:{proxy.port}/mcp",
                mode="2026-07-28",
                elicitation_callback=answer_ada,
            ) as client:
                with anyio.fail_after(PATIENCE_SECONDS):
                    result = await client.call_tool("ask_name")
    assert text_of(result) == "Hello, Ada, from b"
    [retry] = serving.retries()
    assert stopping.retries() == [retry]  # refused by a, then served by b, once
    assert len(log.containing(RESENT)) >= 1


# -- 3. an outage counts what it could not store, instead of a line each ----------------------


def gated_server(gate: anyio.Event, asking: anyio.Event) -> MCPServer:
    """A server whose tool ``ask_later`` waits for ``gate`` (set ``asking`` first), then
    asks its client a question."""
    mcp = MCPServer("gated")

    @mcp.tool()
    async def ask_later(ctx: Context) -> str:
        """Ask for a name once the test lets it."""
        asking.set()
        await gate.wait()
        answer = await ctx.elicit("Your name?", schema=Person)
        return answer.action

    return mcp


async def test_what_an_outage_could_not_store_is_counted_into_its_end(
    redis: Redis, tmp_path: Path
) -> None:
    """Redis stops while a call runs, and its tool asks a question then: the question's
    record and its event cannot be stored. The outage is already logged, so they are not
    logged one by one but counted into the line that says Redis is back."""
    gate, asking, asked = anyio.Event(), anyio.Event(), anyio.Event()

    async def wait_for_ever(context: ClientRequestContext, params: ElicitRequestParams) -> Any:
        asked.set()
        await anyio.sleep_forever()

    state = RedisState(redis.url, replica_id="a", heartbeat_seconds=HEARTBEAT_SECONDS)
    app = StreamableHTTPApp(gated_server(gate, asking), state=state)
    with heard() as log:
        async with AsyncExitStack() as stack:
            url = (await stack.enter_async_context(serve(app))).url
            client = await stack.enter_async_context(
                Client(url, mode="legacy", elicitation_callback=wait_for_ever)
            )

            async def call() -> None:  # ended with Redis's data, or cancelled: not the point
                with contextlib.suppress(MCPError):
                    await client.call_tool("ask_later")

            async with anyio.create_task_group() as group:
                group.start_soon(call)
                with anyio.fail_after(PATIENCE_SECONDS):
                    await asking.wait()
                    redis.process.stop()
                    await log.wait_for("the shared server state is unavailable")
                    gate.set()
                    await asked.wait()
                    with redis_on(redis.process.port, tmp_path):
                        await log.wait_for("answers again after")
                        group.cancel_scope.cancel()
    [back] = log.containing("answers again after")
    assert "events not stored: " in back, back
    assert "questions not recorded: 1" in back, back
    assert log.containing("could not record question") == []
    assert log.containing("could not be stored") == []


async def test_what_cannot_be_stored_begins_an_outage_and_is_counted_from_the_first() -> None:
    """No outage known: the first thing that cannot be stored begins one (logged once,
    with its error), and is counted with the rest."""
    outage = StateOutage()
    with heard() as log:
        outage.count_unsaved("events not stored", StateUnavailable("Redis at x failed: down"))
        outage.count_unsaved("events not stored", StateUnavailable("Redis at x failed: down"))
        outage.reached()
    began, ended = log.messages
    assert began.startswith("the shared server state is unavailable: Redis at x failed: down.")
    assert ended.endswith("(requests refused meanwhile: 0, events not stored: 2)")
    assert outage.since is None  # the outage is over


async def test_a_refused_command_no_request_met_ends_when_what_it_refused_is_stored() -> None:
    """Redis refusing the command that stores events, and no other: a request's success
    says nothing of it (it would log an end between each two refusals); an event stored
    again does."""
    outage = StateOutage()
    refused = StateRefused("redis://127.0.0.1:1/0", "NOPERM no XADD")
    with heard() as log:
        outage.count_unsaved(EVENTS_NOT_STORED, refused)
        outage.reached()
        outage.count_unsaved(EVENTS_NOT_STORED, refused)
        outage.saved(QUESTIONS_NOT_RECORDED)
        assert len(log.messages) == 1  # begun once, not ended
        outage.saved(EVENTS_NOT_STORED)
    assert log.messages[-1].startswith("the shared server state serves requests again after")
    assert log.messages[-1].endswith("(requests refused meanwhile: 0, events not stored: 2)")


def logging_server(logged: anyio.Event) -> MCPServer:
    """A server whose tool ``log_then_wait`` logs two lines to its client, sets
    ``logged``, and waits for ever."""
    mcp = MCPServer("logging")

    @mcp.tool()
    async def log_then_wait(ctx: Context) -> str:
        """Log twice, then wait until cancelled."""
        await ctx.info("one")
        await ctx.info("two")
        logged.set()
        await anyio.sleep_forever()
        return "never"

    return mcp


async def test_a_replica_stopped_in_an_outage_that_events_began_logs_what_it_cost(
    redis: Redis,
) -> None:
    """Redis refuses to store events (an ACL without XADD) while everything else works:
    the first event that cannot be stored begins the outage, so none is logged alone;
    the replica stops before the outage ends, and logs its counts then."""
    logged = anyio.Event()
    state = RedisState(redis.url, replica_id="a", heartbeat_seconds=HEARTBEAT_SECONDS)
    app = StreamableHTTPApp(logging_server(logged), state=state)
    admin = aioredis.from_url(redis.url)  # pyright: ignore[reportUnknownMemberType]
    with heard() as log:
        async with serve(app) as running, Client(running.url, mode="legacy") as client:
            await admin.execute_command("ACL", "SETUSER", "default", "-xadd")  # pyright: ignore[reportUnknownMemberType]

            async def call() -> None:  # ended by the stop: not the point
                with contextlib.suppress(MCPError):
                    await client.call_tool("log_then_wait")

            async with anyio.create_task_group() as group:
                group.start_soon(call)
                with anyio.fail_after(PATIENCE_SECONDS):
                    await logged.wait()
                    running.server.should_exit = True  # stops while the outage lasts
                    await log.wait_for("this server stops while")
                group.cancel_scope.cancel()
    await admin.aclose()
    [began] = log.containing("Redis refused")
    assert "can't run this command" in began, began
    [stopped] = log.containing("this server stops while")
    assert stopped.startswith("this server stops while the shared server state still refuses")
    assert "events not stored: " in stopped, stopped
    assert log.containing("could not be stored") == []
    assert log.containing("serves requests again") == []


# -- 2. a stopping replica says what it still serves ------------------------------------------


async def test_a_stopping_replica_says_what_it_still_serves_and_how_that_ended(
    redis: Redis,
) -> None:
    """The replica stops (as on SIGTERM) while a call waits on its client's
    answer: it logs that call and its question as it begins to stop, and then that the
    call has ended; the client gets the error that says to send the request again."""
    asked = anyio.Event()

    async def hold(context: ClientRequestContext, params: ElicitRequestParams) -> Any:
        asked.set()
        await anyio.sleep_forever()

    failures: list[MCPError] = []

    async def call(client: Client) -> None:
        try:
            await client.call_tool("ask_name")
        except MCPError as exc:
            failures.append(exc)

    with heard() as log, anyio.fail_after(PATIENCE_SECONDS):
        async with AsyncExitStack() as stack:
            running = await stack.enter_async_context(serve(replica(redis, "a")))
            client = await stack.enter_async_context(
                Client(running.url, mode="legacy", elicitation_callback=hold)
            )
            async with anyio.create_task_group() as group:
                group.start_soon(call, client)
                await asked.wait()
                running.server.should_exit = True  # what uvicorn's SIGTERM handler does
    [failed] = failures
    assert failed.message.startswith("Server closed: the server is shutting down")
    assert log.containing("stopping with") == [
        "stopping with 1 call in progress here (and 1 question of the server's waiting for "
        "a client's answer); each ends now, its client told that the server is shutting "
        "down and to send the request again"
    ]
    [ended] = log.containing("after the stop began")
    assert ended.endswith("s after the stop began: the 1 call in progress then has ended")


async def test_a_full_redis_no_request_met_ends_when_what_it_refused_is_stored() -> None:
    """Redis full for what is stored beside requests (an event), while a request's own
    commands still run: a request's success says nothing of it (it logged "has room
    again" between each two failures); an event stored again, or a heartbeat, does."""
    outage = StateOutage()
    full = StateFull("OOM command not allowed when used memory > 'maxmemory'")
    with heard() as log:
        outage.count_unsaved(EVENTS_NOT_STORED, full)
        outage.reached()
        outage.count_unsaved(EVENTS_NOT_STORED, full)
        assert len(log.messages) == 1  # begun once, not ended
        outage.beat()
    assert log.messages[-1].startswith("the shared server state has room again after")
    assert log.messages[-1].endswith("(requests refused meanwhile: 0, events not stored: 2)")
