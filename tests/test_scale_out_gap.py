"""Broadcasts raised while no replica holds a session's GET stream (its replica was killed,
or the connection broke and the client's resume is not yet sent) reach the client once it
resumes the stream, on another replica or the same one, as one process would keep them
for the reconnect; a resource update only if the session is subscribed to it then."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Self, cast
from urllib.parse import urlsplit

import anyio
import httpx2
import pytest
from redis.asyncio import Redis
from scale_out.cluster import cluster, missing_for_redis, redis_server
from scale_out.fixtures import asyncio_only
from scale_out.replica_server import SENTINEL_URI
from scale_out.router import ReplicaRouter, routed_transport

from answerback import Client
from answerback.client import IncomingMessage
from answerback.transports.http import (
    InMemoryEventStore,
    Notice,
    NoticesSince,
    RedisNotificationBus,
)
from answerback.transports.http._notification_bus import READER_LONGEST_RETRY_SECONDS
from answerback.transports.http._replication import BUS_LAG_MARGIN_SECONDS, Replication
from answerback.types import ResourceUpdatedNotification, ToolListChangedNotification

pytestmark = [
    pytest.mark.anyio,
    asyncio_only,
    pytest.mark.skipif(missing_for_redis() is not None, reason=str(missing_for_redis())),
]

PATIENCE_SECONDS = 30.0
"""A safety net so a broken test fails instead of hanging; never a claim about speed."""
TOOLS = "tools"


class GetStreams(httpx2.AsyncBaseTransport):
    """Holds every GET that resumes a stream until ``release`` is set, so a test can act
    while no replica holds the session's GET stream; and breaks the GET stream (a read
    error, as a network break gives) once ``cut`` is set."""

    def __init__(self, inner: httpx2.AsyncBaseTransport) -> None:
        self.inner = inner
        self.waiting = anyio.Event()
        self.release = anyio.Event()
        self.cut = anyio.Event()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        resuming = "last-event-id" in request.headers
        if request.method == "GET" and resuming:
            self.waiting.set()
            await self.release.wait()
        response = await self.inner.handle_async_request(request)
        if request.method == "GET" and not resuming:
            assert isinstance(response.stream, httpx2.AsyncByteStream)
            response.stream = _Cuttable(response.stream, self.cut)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


class _Cuttable(httpx2.AsyncByteStream):
    """A response body that fails with ``ReadError`` once ``cut`` is set."""

    def __init__(self, inner: httpx2.AsyncByteStream, cut: anyio.Event) -> None:
        self._inner = inner
        self._chunks = inner.__aiter__()
        self._cut = cut

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> bytes:
        chunk: bytes | None = None
        failure: BaseException | None = None  # raised outside the task group, unwrapped
        async with anyio.create_task_group() as tg:

            async def on_cut() -> None:
                await self._cut.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(on_cut)
            try:
                chunk = await self._chunks.__anext__()
            except (StopAsyncIteration, httpx2.HTTPError) as exc:
                failure = exc
            tg.cancel_scope.cancel()
        if failure is not None:
            raise failure
        if chunk is None:
            raise httpx2.ReadError("the test cut the GET stream")
        return chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


class Heard:
    """The broadcasts a client heard, in order (``tools`` for a tool list change, the
    URI for a resource update), and a way to wait for the n-th of one."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self._changed = anyio.Event()

    async def handle(self, message: IncomingMessage) -> None:
        if isinstance(message, ToolListChangedNotification):
            self._add(TOOLS)
        elif isinstance(message, ResourceUpdatedNotification):
            self._add(str(message.params.uri))

    def _add(self, item: str) -> None:
        self.items.append(item)
        self._changed.set()
        self._changed = anyio.Event()

    async def until(self, item: str, count: int) -> None:
        while self.items.count(item) < count:
            await self._changed.wait()


async def test_broadcast_while_no_replica_holds_the_get_stream_is_heard_on_resume(
    tmp_path: Path,
) -> None:
    with cluster(tmp_path) as running:
        router = ReplicaRouter(running.ports)
        router.listen_on = 0
        streams = GetStreams(router)
        heard = Heard()
        async with httpx2.AsyncClient(transport=streams) as http:
            transport = routed_transport(router, http)
            async with Client(transport, mode="legacy", message_handler=heard.handle) as client:
                with anyio.fail_after(PATIENCE_SECONDS):
                    await router.listening.wait()
                    await client.subscribe_resource(SENTINEL_URI)
                    await client.call_tool("announce")
                    await heard.until(SENTINEL_URI, 1)  # the stream has events: it resumes
                running.replicas[0].kill()
                router.down.add(0)
                with anyio.fail_after(PATIENCE_SECONDS):
                    await streams.waiting.wait()  # nobody holds the GET stream now
                    await client.call_tool("announce")  # published into the gap
                    streams.release.set()
                with anyio.move_on_after(PATIENCE_SECONDS):
                    await heard.until(SENTINEL_URI, 2)
                assert heard.items.count(SENTINEL_URI) == 2, running.logs()
                with anyio.fail_after(PATIENCE_SECONDS):
                    await client.call_tool("announce")  # live again, on the survivor
                    await heard.until(SENTINEL_URI, 3)
        assert heard.items == [TOOLS, SENTINEL_URI] * 3, running.logs()
        assert [route.replica for route in router.routed("resume")] == [2]


async def test_a_get_stream_resumed_on_its_own_replica_hears_what_was_raised_meanwhile(
    tmp_path: Path,
) -> None:
    """A broken connection, the same replica: it did not hold the stream meanwhile
    either, so it delivered nothing; the resume brings it."""
    with cluster(tmp_path) as running:
        router = ReplicaRouter(running.ports)
        router.listen_on = 2  # where resumes go, too, when no call is in flight
        streams = GetStreams(router)
        heard = Heard()
        async with httpx2.AsyncClient(transport=streams) as http:
            transport = routed_transport(router, http)
            async with Client(transport, mode="legacy", message_handler=heard.handle) as client:
                with anyio.fail_after(PATIENCE_SECONDS):
                    await router.listening.wait()
                    await client.subscribe_resource(SENTINEL_URI)
                    await client.call_tool("announce")
                    await heard.until(SENTINEL_URI, 1)
                    streams.cut.set()
                    await streams.waiting.wait()  # nobody holds the GET stream now
                    await client.call_tool("announce")
                    streams.release.set()
                with anyio.move_on_after(PATIENCE_SECONDS):
                    await heard.until(SENTINEL_URI, 2)
                assert heard.items.count(SENTINEL_URI) == 2, running.logs()
                with anyio.fail_after(PATIENCE_SECONDS):
                    await client.call_tool("announce")
                    await heard.until(SENTINEL_URI, 3)
        assert heard.items == [TOOLS, SENTINEL_URI] * 3, running.logs()
        assert [route.replica for route in router.routed("resume")] == [2]


async def test_an_update_raised_in_the_gap_is_not_delivered_once_unsubscribed(
    tmp_path: Path,
) -> None:
    """The session unsubscribed (through another replica) while its GET stream was away:
    the tool list change raised meanwhile comes on resume, the resource update does not."""
    with cluster(tmp_path) as running:
        router = ReplicaRouter(running.ports)
        router.listen_on = 0
        streams = GetStreams(router)
        heard = Heard()
        async with httpx2.AsyncClient(transport=streams) as http:
            transport = routed_transport(router, http)
            async with Client(transport, mode="legacy", message_handler=heard.handle) as client:
                with anyio.fail_after(PATIENCE_SECONDS):
                    await router.listening.wait()
                    await client.subscribe_resource(SENTINEL_URI)
                    await client.call_tool("announce")
                    await heard.until(SENTINEL_URI, 1)
                    streams.cut.set()
                    await streams.waiting.wait()
                    await client.unsubscribe_resource(SENTINEL_URI)
                    await client.call_tool("announce")
                    streams.release.set()
                with anyio.move_on_after(PATIENCE_SECONDS):
                    await heard.until(TOOLS, 2)
                assert heard.items.count(TOOLS) == 2, running.logs()
                with anyio.fail_after(PATIENCE_SECONDS):
                    # Subscribed again, live: marks the end of what the gap brought.
                    await client.subscribe_resource(SENTINEL_URI)
                    await client.call_tool("announce")
                    await heard.until(SENTINEL_URI, 2)
        assert heard.items == [TOOLS, SENTINEL_URI, TOOLS, TOOLS, SENTINEL_URI], running.logs()


# -- the bus's record of its notices ------------------------------------------------------


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with redis_server(tmp_path_factory.mktemp("redis")) as server:
        yield server.url


def redis_client(url: str) -> Redis:
    address = urlsplit(url)
    return Redis(host=address.hostname or "", port=address.port or 0)


async def entry_ms(redis: Redis, bus: RedisNotificationBus, *, newest: bool) -> int:
    """When the newest (or oldest) notice the bus keeps was added, by Redis's clock."""
    client = cast(Any, redis)
    entries = await (client.xrevrange if newest else client.xrange)(bus.key, count=1)
    return int(entries[0][0].decode().partition("-")[0])


def tools_changed(n: int) -> Notice:
    return Notice(str(n), "origin", "notifications/tools/list_changed", {"n": n})


async def test_the_redis_bus_gives_its_notices_since_a_time_in_order(redis_url: str) -> None:
    redis = redis_client(redis_url)
    try:
        bus = RedisNotificationBus(redis, key_prefix=f"test-{secrets.token_hex(4)}:")
        published = [tools_changed(n) for n in range(250)]  # more than one read's worth
        for notice in published:
            await bus.publish(notice)
        everything = await bus.notices_since(0, 1_000)
        later = await bus.notices_since(await entry_ms(redis, bus, newest=True) + 1, 1_000)
        newest = await bus.notices_since(0, 120)
    finally:
        await redis.aclose()
    assert everything.notices == published
    assert everything.complete
    assert later.notices == []
    assert later.complete
    assert newest.notices == published[-120:]  # the newest, in order
    assert not newest.complete


async def test_the_redis_bus_says_when_notices_since_a_time_may_be_trimmed(
    redis_url: str,
) -> None:
    redis = redis_client(redis_url)
    try:
        bus = RedisNotificationBus(redis, key_prefix=f"test-{secrets.token_hex(4)}:", max_length=10)
        published = [tools_changed(n) for n in range(250)]
        for notice in published:
            await bus.publish(notice)
        since_start = await bus.notices_since(0, 1_000)
        since_kept = await bus.notices_since(await entry_ms(redis, bus, newest=False) + 1, 1_000)
    finally:
        await redis.aclose()
    assert not since_start.complete
    assert since_start.notices == published[-len(since_start.notices) :]
    assert len(since_start.notices) < len(published)
    assert since_kept.complete


# -- how far back a resume looks -------------------------------------------------------


class StampedBus:
    """A replaying bus whose notices carry the times they were published at."""

    def __init__(self, stamped: list[tuple[int, Notice]]) -> None:
        self.stamped = stamped

    async def publish(self, notice: Notice) -> None:
        raise AssertionError("a resume only reads")  # pragma: no cover

    def subscribe(self) -> AbstractAsyncContextManager[AsyncIterator[Notice]]:
        raise AssertionError("a resume only reads")  # pragma: no cover

    async def notices_since(self, ms: int, limit: int) -> NoticesSince:
        found = [notice for at, notice in self.stamped if at >= ms]
        return NoticesSince(found[-limit:], len(found) <= limit)


class TimedStore(InMemoryEventStore):
    """An event store on the bus's clock: here an event's id is just its time."""

    def stored_at_ms(self, event_id: str) -> int | None:
        return int(event_id)


class Resumed:
    """The side of a resumed session a resume touches: what it is sent."""

    def __init__(self) -> None:
        self.id = "s1"
        self.closed = False
        self.resuming: list[list[Any]] = []
        self.sent: list[Any] = []
        # The GET stream, its resumed connection attached (the replay ends with it).
        self.streams = {"standalone": SimpleNamespace(listener=object(), done=False)}

    def subscribed(self, uri: str) -> bool:
        return False

    async def deliver_broadcast(self, message: Any) -> None:
        self.sent.append(message)


async def test_a_resume_looks_back_past_a_lagging_reader_and_a_slow_fan_out() -> None:
    """The replica holding the stream stored a later event (a log line) before it had
    passed on a list change published 6 s earlier, then died: the list change comes on
    resume. The margin covers the reader's longest retry delay and the fan-out after it."""
    stored_at = 1_000_000
    notice = tools_changed(1)
    bus = StampedBus([(stored_at - 6_000, notice)])
    state = SimpleNamespace(replica_id="b", notifications=bus, events=TimedStore())
    replication = Replication(cast(Any, state), b"k" * 32)
    session = Resumed()
    await replication.deliver_missed_broadcasts(cast(Any, session), str(stored_at), [])
    assert session.sent == [{"jsonrpc": "2.0", "method": notice.method, "params": {"n": 1}}]
    assert BUS_LAG_MARGIN_SECONDS > READER_LONGEST_RETRY_SECONDS
