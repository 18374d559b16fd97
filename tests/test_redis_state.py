"""``RedisState`` with a real redis-server: its parts one by one, and three apps in one
process sharing sessions through it (issue 15).

The multi-process deployment (uvicorn replicas, ``kill -9``, haproxy) is tested in
test_scale_out.py; here each Redis class is checked against what the HTTP layer relies
on, and the routing between replicas is driven by hand so that each refusal is seen.
These tests need ``redis-server`` (``make services`` installs it) and run on asyncio
only: redis-py's client, which the test itself uses, runs on nothing else.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Generator, Sequence
from contextlib import (
    AbstractAsyncContextManager,
    AsyncExitStack,
    asynccontextmanager,
    contextmanager,
)
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import anyio
import httpx2
import pytest
from http_support import PATIENCE_SECONDS, read_events, serve
from pydantic import BaseModel
from scale_out.cluster import Redis, missing_for_redis
from scale_out.fixtures import asyncio_only
from scale_out.raw import RawSession, answer, error_of

from answerback.jsonrpc import JSONObject
from answerback.server import Context, MCPServer
from answerback.transports.http import (
    Notice,
    NoticesSince,
    NotificationBus,
    RedisNotificationBus,
    RedisState,
    StreamableHTTPApp,
    _replication,
)
from answerback.transports.http._event_store import StreamOpeningEventStore
from answerback.transports.http._message_bus import CallOwner, Forwarded
from answerback.transports.http._replication import MISSED_BROADCASTS_LIMIT, Replication
from answerback.transports.http._sessions import SessionRecord
from answerback.types import CONNECTION_CLOSED

pytestmark = [
    pytest.mark.anyio,
    asyncio_only,
    pytest.mark.skipif(missing_for_redis() is not None, reason=str(missing_for_redis())),
]

HEARTBEAT_SECONDS = 0.5


@pytest.fixture
async def state(redis: Redis) -> AsyncGenerator[RedisState, None]:
    shared = RedisState(redis.url, replica_id="here", heartbeat_seconds=HEARTBEAT_SECONDS)
    async with shared.running():
        yield shared


class Person(BaseModel):
    name: str


def asking_server() -> MCPServer:
    mcp = MCPServer("asker")

    @mcp.tool()
    async def ask_name(ctx: Context) -> str:
        """Ask the client for a name."""
        answer = await ctx.elicit("Your name?", schema=Person)
        return f"Hello, {answer.data.name}" if answer.action == "accept" else answer.action

    @mcp.tool()
    async def chatty(ctx: Context) -> str:
        """Log at info level, then answer."""
        await ctx.info("working")
        return "done"

    @mcp.resource("note://a")
    def note_a() -> str:
        """A note clients may subscribe to."""
        return "a"

    @mcp.resource("note://b")
    def note_b() -> str:
        """Another note clients may subscribe to."""
        return "b"

    return mcp


# -- the parts ---------------------------------------------------------------------------


async def test_session_records_slide_and_end(state: RedisState) -> None:
    init: JSONObject = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}
    record = SessionRecord("s1", "2025-06-18", init, principal="iss alice")
    await state.sessions.create(record, 60.0)
    subscribe: JSONObject = {"jsonrpc": "2.0", "method": "resources/subscribe", "params": {}}
    level: JSONObject = {"jsonrpc": "2.0", "method": "logging/setLevel", "params": {}}
    await state.sessions.set_state("s1", "resource:a", subscribe)
    await state.sessions.set_state("s1", "resource:b", subscribe)
    await state.sessions.set_state("s1", "level", level)
    await state.sessions.set_state("s1", "level", level)  # the same entry, not a second
    await state.sessions.set_state("s1", "resource:a", None)
    found = await state.sessions.touch("s1", 60.0)
    expected = {"resource:b": subscribe, "level": level}
    assert found == SessionRecord("s1", "2025-06-18", init, "iss alice", expected)
    ttl = await state.redis.pttl("answerback:session:s1:entries")
    assert 0 < ttl <= 60_000
    await state.sessions.end("s1")
    assert await state.sessions.touch("s1", 60.0) is None


async def test_events_replay_from_any_id_kept_and_refuse_the_rest(state: RedisState) -> None:
    events = state.events
    first = await events.store_event("s1.a", b"")
    second = await events.store_event("s1.a", b'{"n":2}')
    third = await events.store_event("s1.a", b'{"n":3}')
    replayed: list[tuple[str, bytes]] = []

    async def collect(event_id: str, data: bytes) -> None:
        replayed.append((event_id, data))

    assert await events.replay_events_after(first, collect) == "s1.a"
    assert replayed == [(second, b'{"n":2}'), (third, b'{"n":3}')]
    assert await events.wait_events_after("s1.a", second, 0.01) == [(third, b'{"n":3}')]
    assert await events.wait_events_after("s1.a", third, 0.01) == []
    for unknown in ("nonsense", "s1.a_1-x", "s1.b_0-1", first.replace("s1.a", "s2.a")):
        assert await events.replay_events_after(unknown, collect) is None
    await events.forget_stream("s1.a")
    assert await events.replay_events_after(second, collect) is None  # never with a hole


async def test_short_commands_outlive_a_script_flush_and_a_dropped_connection(
    state: RedisState,
) -> None:
    """The replicas' short commands share one connection of their own: a script Redis
    forgot is sent again in full, and a connection Redis dropped is opened again, so
    neither turns a request into a 503."""
    first = await state.events.store_event("s1.x", b"")
    await state.redis.script_flush()
    second = await state.events.store_event("s1.x", b'{"n":2}')
    await state.redis.client_kill_filter(_type="normal", skipme=True)
    await state.replicas.beat("here")
    assert await state.replicas.is_alive("here")
    # A question is recorded without waiting for Redis's reply: if the connection
    # drops under it, the next connection records it first.
    await state.redis.client_kill_filter(_type="normal", skipme=True)
    await state.messages.expect_answer("s1", "q", 60.0)
    assert await state.messages.claim_answer("s1", "q")
    replayed: list[tuple[str, bytes]] = []

    async def collect(event_id: str, data: bytes) -> None:
        replayed.append((event_id, data))

    assert await state.events.replay_events_after(first, collect) == "s1.x"
    assert replayed == [(second, b'{"n":2}')]


async def test_a_new_streams_priming_event_is_stored_without_waiting(state: RedisState) -> None:
    """Its id is known at once, and resuming from it replays what came after."""
    events = state.events
    assert isinstance(events, StreamOpeningEventStore)
    await state.replicas.beat("here")  # a request has reached Redis before its stream opens
    prime = events.open_stream("s1.new")
    assert prime is not None
    answer = await events.store_event("s1.new", b'{"n":1}')
    replayed: list[tuple[str, bytes]] = []

    async def collect(event_id: str, data: bytes) -> None:
        replayed.append((event_id, data))

    assert await events.replay_events_after(prime, collect) == "s1.new"
    assert replayed == [(answer, b'{"n":1}')]


async def test_a_follower_wakes_when_the_owner_stores(state: RedisState) -> None:
    start = await state.events.store_event("s1.live", b"")
    got: list[list[tuple[str, bytes]]] = []
    stored = ""

    async def follow() -> None:
        got.append(await state.events.wait_events_after("s1.live", start, PATIENCE_SECONDS))

    async with anyio.create_task_group() as tg:
        tg.start_soon(follow)
        # The follower's XREAD BLOCK waits in Redis, not in this loop: ask Redis. (Stored
        # before, the event would be read at once, and the wake-up never tested.)
        with anyio.fail_after(PATIENCE_SECONDS):
            while not (await state.redis.info("clients"))["blocked_clients"]:  # noqa: ASYNC110
                await anyio.sleep(0.01)
        stored = await state.events.store_event("s1.live", b'{"late":true}')
    assert got == [[(stored, b'{"late":true}')]]


async def test_calls_and_questions_are_claimed_once(state: RedisState) -> None:
    bus = state.messages
    owner = CallOwner("here", "call-1", "stream-1")
    assert await bus.open_call("s1", owner)
    assert not await bus.open_call("s1", CallOwner("elsewhere", "call-1", None))
    assert await bus.call_by_stream("s1", "stream-1") == owner
    assert await bus.close_call("s1", "call-1") == owner
    assert await bus.close_call("s1", "call-1") is None
    assert await bus.call_by_request("s1", "call-1") is None
    # Ended without waiting (the script sent in full: Redis may not have it yet), and
    # gone for the next command, so its id is free again at once.
    await state.redis.script_flush()
    assert await bus.open_call("s1", owner)
    await bus.end_call("s1", "call-1")
    assert await bus.call_by_stream("s1", "stream-1") is None
    assert await bus.open_call("s1", CallOwner("elsewhere", "call-1", None))
    await bus.expect_answer("s1", "q", 60.0)
    assert await bus.claim_answer("s1", "q")
    assert not await bus.claim_answer("s1", "q")


async def test_inbox_keeps_what_arrives_before_and_between_reads(state: RedisState) -> None:
    """The inbox starts when the state starts running, not at its first read: an answer
    sent in between (the server may ask before the inbox task first reads) is kept."""
    message: JSONObject = {"jsonrpc": "2.0", "id": 1, "result": {}}
    await state.messages.send("here", "s1", message)
    inbox = state.messages.inbox()
    got: list[tuple[str, JSONObject]] = []
    first_read = anyio.Event()
    with anyio.fail_after(PATIENCE_SECONDS):
        async with anyio.create_task_group() as tg:

            async def read_two() -> None:
                got.append(await anext(inbox))
                first_read.set()
                got.append(await anext(inbox))

            tg.start_soon(read_two)
            await first_read.wait()  # s2 comes between the reads
            await state.messages.send("here", "s2", message)
    await inbox.aclose()
    assert got == [("s1", message), ("s2", message)]


async def test_an_answer_is_forwarded_to_its_owner_once(state: RedisState) -> None:
    """Claimed and put in the owner's inbox in one step; a duplicate goes nowhere. An
    owner whose beat lapsed gets it all the same (its loop may only be blocked), one
    known to have stopped gets the refusal instead, and a question Redis lost (it
    restarted empty) is still forwarded: only its owner knows if it waits."""

    def reply(request_id: int) -> JSONObject:
        return {"jsonrpc": "2.0", "id": request_id, "result": {"action": "decline"}}

    refusal: JSONObject = {"jsonrpc": "2.0", "id": 4, "error": {"code": -1, "message": "no"}}
    await state.messages.expect_answer("s1", "q", 60.0)
    await state.messages.expect_answer("s1", "q2", 60.0)
    inbox = state.messages.inbox()
    got: list[tuple[str, JSONObject]] = []
    reading = anyio.Event()
    with anyio.fail_after(PATIENCE_SECONDS):
        async with anyio.create_task_group() as tg:

            async def read(count: int) -> None:
                for _ in range(count):
                    got.append(await anext(inbox))
                    reading.set()

            tg.start_soon(read, 4)
            await state.messages.send("here", "s0", reply(0))  # once read, the inbox reads
            await reading.wait()
            assert not await state.replicas.is_alive("here")  # it never beat
            sent = await state.messages.forward_answer("here", "s1", "q", reply(1), refusal)
            assert sent is Forwarded.SENT
            again = await state.messages.forward_answer("here", "s1", "q", reply(2), refusal)
            assert again is Forwarded.REFUSED
            assert not await state.messages.claim_answer("s1", "q")
            lost = await state.messages.forward_answer("here", "s1", "lost", reply(3), refusal)
            assert lost is Forwarded.SENT
            await state.replicas.stop("here")
            stopped = await state.messages.forward_answer("here", "s1", "q2", reply(4), refusal)
            assert stopped is Forwarded.OWNER_STOPPED
    await inbox.aclose()
    assert got == [("s0", reply(0)), ("s1", reply(1)), ("s1", reply(3)), ("s1", refusal)]


async def test_a_beat_says_whether_the_last_one_still_stood(state: RedisState) -> None:
    """``False`` after a lapse, a declared stop or lost data: what the replica keeps in
    Redis may be gone."""
    assert not await state.replicas.beat("here")
    assert await state.replicas.beat("here")
    await state.replicas.declare_stopped("here")  # a beat already back wins
    assert await state.replicas.is_alive("here")
    await state.redis.delete("answerback:replica:here")  # lapsed, or Redis lost it
    assert not await state.replicas.beat("here")
    await state.redis.delete("answerback:replica:here")
    await state.replicas.declare_stopped("here")
    assert not await state.replicas.is_alive("here")
    assert not await state.replicas.beat("here")
    assert await state.replicas.is_alive("here")


async def test_the_question_key_is_agreed_again_after_redis_loses_it(
    state: RedisState,
) -> None:
    """A replica that mints with a key Redis lost puts it back; one that finds another
    key there adopts it, and the key it minted with stays accepted."""
    first = await state.redis.get("answerback:question-key")  # made as it started
    assert await state.agree_question_key(first) == (first, frozenset({first}))
    await state.redis.flushall()
    assert await state.agree_question_key(first) == (first, frozenset({first}))
    await state.redis.flushall()
    newer = b"n" * 32
    assert await state.agree_question_key(newer) == (newer, frozenset({newer}))
    assert await state.agree_question_key(first) == (newer, frozenset({first, newer}))


async def test_dead_owner_call_ends_with_an_error_and_its_questions_close(
    state: RedisState,
) -> None:
    """A replica following a stream whose owner never beats writes the call's error."""
    start = await state.events.store_event("s1.orphan", b"")
    call = CallOwner("ghost", 7, "orphan")
    assert await state.messages.open_call("s1", call)
    replication = Replication(state, b"k" * 32)
    sent: list[bytes] = []

    async def send(_: str, data: bytes) -> None:
        sent.append(data)

    with anyio.fail_after(PATIENCE_SECONDS):
        await replication.follow("s1", "s1.orphan", call, start, send)
    [error] = [json.loads(data) for data in sent]
    assert error["id"] == 7
    assert error["error"]["code"] == CONNECTION_CLOSED
    assert "stopped before answering" in error["error"]["message"]
    assert await state.messages.call_by_request("s1", 7) is None
    await state.messages.expect_answer("s1", "late", 60.0)
    late: JSONObject = {"jsonrpc": "2.0", "id": 1, "result": {}}
    forwarded = await state.messages.forward_answer("ghost", "s1", "late", late, late)
    assert forwarded is Forwarded.OWNER_STOPPED


async def test_heartbeats_lapse(state: RedisState) -> None:
    assert not await state.replicas.is_alive("here")
    await state.replicas.beat("here")
    assert await state.replicas.is_alive("here")
    await state.replicas.stop("here")
    assert not await state.replicas.is_alive("here")


# -- three apps sharing one Redis --------------------------------------------------------


async def three_replicas(
    redis: Redis, stack: AsyncExitStack, servers: Sequence[MCPServer] | None = None
) -> list[str]:
    """Serve ``servers`` (three fresh ``asking_server``s by default) as replicas a, b
    and c sharing ``redis``; their URLs."""
    urls: list[str] = []
    for name, server in zip("abc", servers or [asking_server() for _ in "abc"], strict=True):
        state = RedisState(redis.url, replica_id=name, heartbeat_seconds=HEARTBEAT_SECONDS)
        app = StreamableHTTPApp(server, state=state)
        urls.append((await stack.enter_async_context(serve(app))).url)
    return urls


async def test_session_served_by_every_replica_and_answers_routed_to_the_owner(
    redis: Redis,
) -> None:
    async with AsyncExitStack() as stack:
        urls = await three_replicas(redis, stack)
        http = await stack.enter_async_context(httpx2.AsyncClient(timeout=PATIENCE_SECONDS))
        raw = RawSession(http, urls)
        await raw.initialize(0)
        async with raw.call(1, "ask_name") as (request, stream):
            question = await stream.question()
            assert question["id"].startswith("ab1.b.")  # names its owner, replica b
            forged = await raw.post(2, answer(question["id"][:-2] + "xx"))
            assert forged.status_code == 400, forged.text
            assert "not the id of a request" in error_of(forged)["message"]
            answered = await raw.post(2, answer(question["id"]))
            assert answered.status_code == 202, answered.text
            result = await stream.answer_to(request["id"])
        assert result["result"]["content"][0]["text"] == "Hello, Ada"
        again = await raw.post(0, answer(question["id"]))
        assert again.status_code == 409
        assert "already answered" in error_of(again)["message"]
        assert error_of(again)["data"] == {"reason": "already_answered"}  # for programs
        other = RawSession(http, urls)
        await other.initialize(2)
        stolen = await other.post(1, answer(question["id"]))
        assert stolen.status_code == 400  # bound to the first session


async def test_a_shared_session_answers_a_bounded_number_of_requests_at_once(
    redis: Redis,
) -> None:
    """The bound on a session's requests in flight holds with shared state too (the
    replica's connection for the session is served with it)."""
    async with AsyncExitStack() as stack:
        state = RedisState(redis.url, replica_id="a", heartbeat_seconds=HEARTBEAT_SECONDS)
        app = StreamableHTTPApp(asking_server(), state=state, max_requests_in_flight=1)
        url = (await stack.enter_async_context(serve(app))).url
        http = await stack.enter_async_context(httpx2.AsyncClient(timeout=PATIENCE_SECONDS))
        raw = RawSession(http, [url])
        await raw.initialize(0)
        async with raw.call(0, "ask_name") as (_, stream):
            await stream.question()
            refused = await raw.post(0, raw.request("ping"))
            assert "1 of your requests are being answered" in error_of(refused)["message"]


async def test_state_set_on_one_replica_applies_on_the_others(redis: Redis) -> None:
    """A log level set through replica b holds for calls on a (which opened the session
    before the change) and on c (which first builds its connection from the record after
    it)."""
    async with AsyncExitStack() as stack:
        urls = await three_replicas(redis, stack)
        http = await stack.enter_async_context(httpx2.AsyncClient(timeout=PATIENCE_SECONDS))
        raw = RawSession(http, urls)
        await raw.initialize(0)
        async with raw.call(0, "chatty") as (request, stream):
            first = await stream.next()  # before any level is set, info is sent
            assert first.get("method") == "notifications/message"
            await stream.answer_to(request["id"])
        quiet = await raw.post(1, raw.request("logging/setLevel", {"level": "error"}))
        assert quiet.status_code == 200, quiet.text
        for replica in (0, 2):
            async with raw.call(replica, "chatty") as (_, stream):
                assert "result" in await stream.next()  # no log message before it


async def test_the_record_holds_the_state_not_the_requests_that_made_it(
    redis: Redis, state: RedisState
) -> None:
    """Subscriptions made and dropped through different replicas reach each of them,
    a refused subscription is not recorded, and a request repeated a hundred times
    leaves one entry: the record (read on every request) does not grow with them."""
    async with AsyncExitStack() as stack:
        servers = [asking_server() for _ in "abc"]
        urls = await three_replicas(redis, stack, servers)
        http = await stack.enter_async_context(httpx2.AsyncClient(timeout=PATIENCE_SECONDS))
        raw = RawSession(http, urls)
        await raw.initialize(0)

        async def send(replica: int, method: str, params: dict[str, Any]) -> httpx2.Response:
            return await raw.post(replica, raw.request(method, params))

        assert (await send(0, "resources/subscribe", {"uri": "note://a"})).status_code == 200
        assert (await send(1, "resources/subscribe", {"uri": "note://b"})).status_code == 200
        refused = await send(1, "resources/subscribe", {"uri": "note://nowhere"})
        assert error_of(refused)["code"] == -32002
        assert (await send(1, "resources/unsubscribe", {"uri": "note://a"})).status_code == 200
        for turn in range(100):
            level = "error" if turn % 2 else "debug"
            assert (await send(turn % 2, "logging/setLevel", {"level": level})).status_code == 200
        for replica in range(3):  # c builds its connection from the record here
            assert (await send(replica, "ping", {})).status_code == 200
        for server in servers:
            connections = server._connections  # pyright: ignore[reportPrivateUsage]
            [(client, subscribed)] = [
                (c.legacy_client, c.subscriptions) for c in connections if c.legacy_client
            ]
            assert subscribed == {"note://b"}
            assert client.log_level == "error"
        entries = await state.redis.hgetall(f"answerback:session:{raw.session_id}:entries")
        assert sorted(entries) == [b"level", b"resource:note://b"]


async def test_stream_resumed_on_another_replica_follows_until_the_answer(
    redis: Redis,
) -> None:
    async with AsyncExitStack() as stack:
        urls = await three_replicas(redis, stack)
        http = await stack.enter_async_context(httpx2.AsyncClient(timeout=PATIENCE_SECONDS))
        raw = RawSession(http, urls)
        await raw.initialize(0)
        message = raw.request("tools/call", {"name": "ask_name", "arguments": {}})
        last_event_id: str | None = None
        question: dict[str, Any] | None = None
        async with http.stream(
            "POST", urls[0], content=json.dumps(message), headers=raw.headers()
        ) as response:
            async for event in read_events(response):
                last_event_id = event.event_id or last_event_id
                if event.message is not None and "method" in event.message:
                    question = event.message
                    break  # the client drops the stream mid-question
        assert question is not None
        assert last_event_id is not None
        headers = {**raw.headers(), "accept": "text/event-stream", "last-event-id": last_event_id}
        async with http.stream("GET", urls[2], headers=headers) as resumed:
            assert resumed.status_code == 200
            answered = await raw.post(1, answer(question["id"]))
            assert answered.status_code == 202, answered.text
            messages = [event.message async for event in read_events(resumed) if event.message]
        assert [m.get("id") for m in messages] == [message["id"]]
        assert messages[0]["result"]["content"][0]["text"] == "Hello, Ada"


async def test_redis_down_is_a_503_not_local_memory(redis: Redis) -> None:
    """New requests are refused; a call already open still hears how it ended when
    its replica shuts down, though nothing can be stored for resuming it."""
    async with AsyncExitStack() as stack:
        http = await stack.enter_async_context(httpx2.AsyncClient(timeout=PATIENCE_SECONDS))
        replicas = AsyncExitStack()
        await stack.enter_async_context(replicas)
        urls = await three_replicas(redis, replicas)
        raw = RawSession(http, urls)
        await raw.initialize(0)
        async with raw.call(1, "ask_name") as (request, stream):
            await stream.question()
            redis.process.stop()
            refused = await raw.post(0, raw.request("tools/list"))
            assert refused.status_code == 503
            assert "shared state cannot be reached" in error_of(refused)["message"]
            await replicas.aclose()  # the replicas shut down with the call still open
            ended = await stream.answer_to(request["id"])
        assert ended["error"]["code"] == CONNECTION_CLOSED
        assert "shutting down" in ended["error"]["message"]


# -- broadcasts a GET stream missed ----------------------------------------------------

TOOLS_CHANGED = "notifications/tools/list_changed"


async def two_replicas(
    redis: Redis,
    stack: AsyncExitStack,
    bus_length: int | None = None,
    b_bus: Callable[[RedisNotificationBus], NotificationBus] | None = None,
) -> tuple[list[MCPServer], list[str], Any]:
    """Replicas a and b on ``redis`` (their notification bus capped at ``bus_length``,
    if given; b's wrapped by ``b_bus``, if given): their servers, URLs, and a redis-py
    client."""
    servers = [asking_server(), asking_server()]
    urls: list[str] = []
    client: Any = None
    for name, server in zip("ab", servers, strict=True):
        state = RedisState(redis.url, replica_id=name, heartbeat_seconds=HEARTBEAT_SECONDS)
        if bus_length is not None:
            state.notifications = RedisNotificationBus(state.redis, max_length=bus_length)
        if name == "b" and b_bus is not None:
            assert isinstance(state.notifications, RedisNotificationBus)
            state.notifications = b_bus(state.notifications)
        app = StreamableHTTPApp(server, state=state)
        urls.append((await stack.enter_async_context(serve(app))).url)
        client = state.redis
    return servers, urls, client


async def left_get_stream(http: httpx2.AsyncClient, raw: RawSession) -> str:
    """Open the session's GET stream on replica a and leave it at once; its priming
    event's id."""
    headers = {**raw.headers(), "accept": "text/event-stream"}
    async with http.stream("GET", raw.urls[0], headers=headers) as listening:
        assert listening.status_code == 200
        primed = (await read_events(listening).__anext__()).event_id
    assert primed is not None
    return primed


def resume_on_b(http: httpx2.AsyncClient, raw: RawSession, last_event_id: str) -> Any:
    """Resume the GET stream on replica b, which has never held it (nor kept its
    messages): what it sends, it got from Redis."""
    headers = {**raw.headers(), "accept": "text/event-stream", "last-event-id": last_event_id}
    return http.stream("GET", raw.urls[1], headers=headers)


async def test_a_get_stream_resumed_after_its_events_expired_gets_what_was_broadcast(
    redis: Redis,
) -> None:
    """Its events gone, the stream goes on afresh; the broadcasts raised since its last
    event the client saw still come."""
    async with AsyncExitStack() as stack:
        servers, urls, client = await two_replicas(redis, stack)
        http = await stack.enter_async_context(httpx2.AsyncClient(timeout=PATIENCE_SECONDS))
        raw = RawSession(http, urls)
        await raw.initialize(0)
        primed = await left_get_stream(http, raw)
        await servers[1].notify_tools_changed()  # nobody holds the GET stream
        await client.delete(f"answerback:events:{raw.session_id}.standalone")
        with anyio.fail_after(PATIENCE_SECONDS):
            async with resume_on_b(http, raw, primed) as resumed:
                assert resumed.status_code == 200
                async for event in read_events(resumed):
                    if event.message is not None:
                        assert event.message.get("method") == TOOLS_CHANGED
                        break


async def test_a_resume_says_when_broadcasts_it_missed_were_trimmed(
    redis: Redis, caplog: pytest.LogCaptureFixture
) -> None:
    """More broadcasts than the bus keeps were raised while no replica held the stream:
    a warning says so, and the client gets those still kept (equal ones once)."""
    async with AsyncExitStack() as stack:
        servers, urls, _ = await two_replicas(redis, stack, bus_length=10)
        http = await stack.enter_async_context(httpx2.AsyncClient(timeout=PATIENCE_SECONDS))
        raw = RawSession(http, urls)
        await raw.initialize(0)
        primed = await left_get_stream(http, raw)
        for _ in range(250):
            await servers[1].notify_tools_changed()
        methods: list[str] = []
        with anyio.fail_after(PATIENCE_SECONDS):
            async with resume_on_b(http, raw, primed) as resumed:
                assert resumed.status_code == 200
                async for event in read_events(resumed):
                    if event.message is not None:
                        methods.append(event.message["method"])
                        if len(methods) == 1:
                            await servers[1].notify_prompts_changed()  # live: marks the end
                        else:
                            break
    assert methods == [TOOLS_CHANGED, "notifications/prompts/list_changed"]
    trimmed = [r for r in caplog.records if "or than the bus keeps" in r.message]
    assert len(trimmed) == 1


class ThreeCommands:
    """A redis-py client offering only what ``RedisNotificationBus`` checks for (XADD,
    XREAD, XREVRANGE), passed on to a real one, counting the entries XREVRANGE reads."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.entries_read = 0

    async def xadd(self, *args: Any, **kwargs: Any) -> Any:
        return await self._inner.xadd(*args, **kwargs)

    async def xread(self, *args: Any, **kwargs: Any) -> Any:
        return await self._inner.xread(*args, **kwargs)

    async def xrevrange(self, *args: Any, **kwargs: Any) -> Any:
        entries = await self._inner.xrevrange(*args, **kwargs)
        self.entries_read += len(entries)
        return entries


async def test_a_resume_reads_a_bounded_part_of_a_busy_bus(
    redis: Redis, caplog: pytest.LogCaptureFixture
) -> None:
    """5 000 updates of resources the session never subscribed to were raised while no
    replica held its GET stream, then a list change: the resume reads the newest
    entries only, no more than ``MISSED_BROADCASTS_LIMIT``, delivers the list change,
    and says that older ones were skipped."""
    counting: list[ThreeCommands] = []

    def counted(bus: RedisNotificationBus) -> RedisNotificationBus:
        counting.append(ThreeCommands(bus._redis))  # pyright: ignore[reportPrivateUsage]
        return RedisNotificationBus(cast(Any, counting[0]))

    async with AsyncExitStack() as stack:
        servers, urls, client = await two_replicas(redis, stack, b_bus=counted)
        http = await stack.enter_async_context(httpx2.AsyncClient(timeout=PATIENCE_SECONDS))
        raw = RawSession(http, urls)
        await raw.initialize(0)
        primed = await left_get_stream(http, raw)
        async with client.pipeline(transaction=False) as pipe:
            for n in range(5_000):
                notice = {
                    "id": f"other-{n}",
                    "origin": "elsewhere",
                    "method": "notifications/resources/updated",
                    "params": {"uri": f"note://other/{n}"},
                }
                pipe.xadd("answerback:notifications", {"notice": json.dumps(notice)})
            await pipe.execute()
        await servers[0].notify_tools_changed()
        counting[0].entries_read = 0
        with anyio.fail_after(PATIENCE_SECONDS):
            async with resume_on_b(http, raw, primed) as resumed:
                assert resumed.status_code == 200
                async for event in read_events(resumed):
                    if event.message is not None:
                        assert event.message["method"] == TOOLS_CHANGED
                        break
    assert 0 < counting[0].entries_read <= MISSED_BROADCASTS_LIMIT
    skipped = [r for r in caplog.records if "more broadcasts than a resume reads" in r.message]
    assert len(skipped) == 1


class StuckBus:
    """A replaying bus whose ``notices_since`` never answers (a hung Redis): it says
    when it has been asked, and whether it was given up."""

    def __init__(self, inner: RedisNotificationBus) -> None:
        self._inner = inner
        self.asked = anyio.Event()
        self.given_up = anyio.Event()

    async def publish(self, notice: Notice) -> None:
        await self._inner.publish(notice)

    def subscribe(self) -> AbstractAsyncContextManager[AsyncIterator[Notice]]:
        return self._inner.subscribe()

    async def notices_since(self, ms: int, limit: int) -> NoticesSince:
        self.asked.set()
        try:
            await anyio.sleep_forever()
        finally:
            self.given_up.set()
        raise AssertionError("unreachable")  # pragma: no cover


class Warned(logging.Handler):
    """Sets ``logged`` once a record whose message holds ``text`` is emitted."""

    def __init__(self, text: str) -> None:
        super().__init__(logging.WARNING)
        self.text = text
        self.logged = anyio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if self.text in record.getMessage():
            self.logged.set()


BusT = TypeVar("BusT", bound=StuckBus)


@dataclass
class Resume:
    """A session's GET stream resumed on replica b: b's wrapped bus, the HTTP client, the
    session, and the open response of the resume."""

    bus: Any
    http: httpx2.AsyncClient
    raw: RawSession
    response: httpx2.Response


@asynccontextmanager
async def resumed_on_b_with(
    redis: Redis, wrapper: Callable[[RedisNotificationBus], BusT]
) -> AsyncGenerator[Resume, None]:
    """Replicas a and b, b's notification bus wrapped by ``wrapper``; a session's GET
    stream opened on a, left, and resumed on b (answered 200). While the resumed stream
    is open (and ``PATIENCE_SECONDS`` at most): the ``Resume``. Leaving stops both apps."""
    wrapped: list[BusT] = []

    def wrap(bus: RedisNotificationBus) -> BusT:
        wrapped.append(wrapper(bus))
        return wrapped[0]

    async with AsyncExitStack() as stack:
        _, urls, _ = await two_replicas(redis, stack, b_bus=wrap)
        http = await stack.enter_async_context(httpx2.AsyncClient(timeout=PATIENCE_SECONDS))
        raw = RawSession(http, urls)
        await raw.initialize(0)
        primed = await left_get_stream(http, raw)
        with anyio.fail_after(PATIENCE_SECONDS):
            async with resume_on_b(http, raw, primed) as resumed:
                assert resumed.status_code == 200
                yield Resume(wrapped[0], http, raw, resumed)


@contextmanager
def warned(text: str) -> Generator[anyio.Event]:
    """Set once the ``answerback.http`` logger emits a record holding ``text``."""
    handler = Warned(text)
    logging.getLogger("answerback.http").addHandler(handler)
    try:
        yield handler.logged
    finally:
        logging.getLogger("answerback.http").removeHandler(handler)


async def test_a_resume_answers_at_once_while_redis_hangs_on_the_missed_broadcasts(
    redis: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The GET's response starts while the broadcasts it missed are still being read;
    the read is given up when the app stops (the time bound is far off here)."""
    monkeypatch.setattr(_replication, "MISSED_BROADCASTS_SECONDS", 3600.0)
    async with resumed_on_b_with(redis, StuckBus) as resume:
        stuck = resume.bus
        await stuck.asked.wait()
        assert not stuck.given_up.is_set()
    assert stuck.given_up.is_set()  # ended with the app, not left running


async def test_the_missed_broadcasts_are_given_up_when_the_session_ends(
    redis: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Redis hangs on the read, and the client ends its session (DELETE on replica b):
    the read is given up then, not when its time bound (far off here) or the app ends."""
    monkeypatch.setattr(_replication, "MISSED_BROADCASTS_SECONDS", 3600.0)
    async with resumed_on_b_with(redis, StuckBus) as resume:
        await resume.bus.asked.wait()
        ended = await resume.http.delete(resume.raw.urls[1], headers=resume.raw.headers())
        assert ended.status_code == 200, ended.text
        await resume.bus.given_up.wait()


async def test_the_missed_broadcasts_are_given_up_when_the_client_leaves_the_stream(
    redis: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Redis hangs on the read, and the client closes the resumed GET stream: the read is
    given up then (the client's next resume replays for itself)."""
    monkeypatch.setattr(_replication, "MISSED_BROADCASTS_SECONDS", 3600.0)
    async with resumed_on_b_with(redis, StuckBus) as resume:
        await resume.bus.asked.wait()
        await resume.response.aclose()
        await resume.bus.given_up.wait()


async def test_a_resume_gives_up_the_missed_broadcasts_after_its_time_bound(
    redis: Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Redis hangs on the read: once ``MISSED_BROADCASTS_SECONDS`` have passed (none,
    here) the resume stops waiting for it and a warning says what was skipped."""
    monkeypatch.setattr(_replication, "MISSED_BROADCASTS_SECONDS", 0.0)
    with warned("the list changes and resource updates not sent by then") as logged:
        async with resumed_on_b_with(redis, StuckBus):
            await logged.wait()


class FailingBus(StuckBus):
    """A replaying bus whose ``notices_since`` fails with something else than the
    ``ConnectionError`` its protocol names (redis-py's timeout, a third-party bug)."""

    async def notices_since(self, ms: int, limit: int) -> NoticesSince:
        self.asked.set()
        raise TimeoutError("the bus timed out")


async def test_a_replay_that_fails_leaves_the_replica_serving(redis: Redis) -> None:
    """The replay runs as a task of the app's: failing, it ended the app's task group,
    and the replica answered every request after that with an error. Now it is logged,
    and the replica serves on."""
    with warned("sending the broadcasts raised while no replica held it failed") as logged:
        async with resumed_on_b_with(redis, FailingBus) as resume:
            await logged.wait()
            other = RawSession(resume.http, resume.raw.urls)
            await other.initialize(1)  # replica b, after its replay failed
            listed = await other.post(1, other.request("tools/list"))
    assert listed.status_code == 200, listed.text
