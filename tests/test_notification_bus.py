"""The notification bus: a change announced on one replica reaches clients on all of them.

Servers attached to one shared state (``MCPServer.attach_state``, as the HTTP app does in
its lifespan) are replicas: ``notify_*`` on one delivers to its own clients at once and
publishes on the bus, and each other replica delivers what it receives to its own
2026-07-28 listen streams and to the legacy sessions whose home it is, exactly once. The
bus in memory runs on both backends; the Redis bus (a real redis-server) on asyncio,
and refuses trio saying why.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, cast
from urllib.parse import urlsplit

import anyio
import pytest
from anyio.abc import ObjectReceiveStream
from http_support import serve
from redis.asyncio import Redis
from scale_out.cluster import missing_for_redis, redis_server
from support import PATIENCE_SECONDS, ReportingEventLoop

from answerback import Client
from answerback.client import IncomingMessage
from answerback.jsonrpc import ReadStream, WriteStream
from answerback.server import MCPServer
from answerback.transports import InProcessTransport
from answerback.transports.http import (
    InMemoryNotificationBus,
    InMemoryUsedStates,
    Notice,
    NotificationBus,
    RedisNotificationBus,
    RedisState,
    RedisUsedStates,
    UsedStates,
)
from answerback.types import ServerNotification

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
ASYNCIO = ("asyncio", {"loop_factory": ReportingEventLoop})
TRIO = ("trio", dict[str, Any]())
TOOLS_CHANGED = "notifications/tools/list_changed"
PROMPTS_CHANGED = "notifications/prompts/list_changed"
UPDATED = "notifications/resources/updated"
MARKER = "memo://marker"


def replica(name: str) -> MCPServer:
    """A server with a tool and the marker resource: it declares the list changes and
    the subscription a listen asks for, so it agrees to send them."""
    mcp = MCPServer(name)

    @mcp.tool()
    def ping() -> str:
        return "pong"

    @mcp.resource(MARKER)
    def marker() -> str:
        return "marked"

    return mcp


@dataclass
class Shared:
    """The part of an HTTP app's state that a server attaches to."""

    notifications: NotificationBus = field(default_factory=InMemoryNotificationBus)
    used_states: UsedStates = field(default_factory=InMemoryUsedStates)


@asynccontextmanager
async def attached(*pairs: tuple[MCPServer, Shared]) -> AsyncGenerator[None, None]:
    async with AsyncExitStack() as stack:
        for server, shared in pairs:
            await stack.enter_async_context(server.attach_state(shared))
        yield


async def methods_until_marker(
    notifications: ObjectReceiveStream[ServerNotification],
) -> list[str]:
    """The methods a listen stream receives up to and including the marker update:
    a notice delivered twice would show before it (one replica delivers in order)."""
    seen: list[str] = []
    with anyio.fail_after(PATIENCE_SECONDS):
        while len(seen) < 10:
            notification = await notifications.receive()
            seen.append(notification.method)
            if notification.method == UPDATED:
                return seen
    raise AssertionError(f"no marker among {seen}")


async def test_every_subscriber_gets_every_notice_in_order() -> None:
    bus = InMemoryNotificationBus()
    notices = [Notice(str(n), "origin", TOOLS_CHANGED) for n in range(3)]
    async with bus.subscribe() as first, bus.subscribe() as second:
        for notice in notices:
            await bus.publish(notice)
        with anyio.fail_after(PATIENCE_SECONDS):
            got = [[await stream.__anext__() for _ in notices] for stream in (first, second)]
    assert got == [notices, notices]


async def test_a_change_on_one_replica_reaches_listen_streams_on_each_once() -> None:
    a, b, shared = replica("A"), replica("B"), Shared()
    async with (
        attached((a, shared), (b, shared)),
        Client(a, mode=MODERN) as on_a,
        Client(b, mode=MODERN) as on_b,
        on_a.listen(tools_list_changed=True, resource_subscriptions=[MARKER]) as heard_on_a,
        on_b.listen(tools_list_changed=True, resource_subscriptions=[MARKER]) as heard_on_b,
    ):
        await a.notify_tools_changed()
        await a.notify_prompts_changed()  # not asked for
        await a.notify_resource_updated(MARKER)
        assert await methods_until_marker(heard_on_a) == [TOOLS_CHANGED, UPDATED]
        assert await methods_until_marker(heard_on_b) == [TOOLS_CHANGED, UPDATED]


async def test_a_server_attached_twice_to_one_bus_delivers_a_notice_once() -> None:
    """One server behind two apps on the same Redis receives each notice twice."""
    a, b, shared = replica("A"), replica("B"), Shared()
    second = Shared(notifications=shared.notifications)
    async with (
        attached((a, shared), (b, shared), (b, second)),
        Client(b, mode=MODERN) as on_b,
        on_b.listen(tools_list_changed=True, resource_subscriptions=[MARKER]) as heard,
    ):
        await a.notify_tools_changed()
        await a.notify_resource_updated(MARKER)
        assert await methods_until_marker(heard) == [TOOLS_CHANGED, UPDATED]


class HomeOrNot:
    """Serves legacy connections that are their session's home for broadcasts only
    while ``home`` is set; ``asked`` is set each time a broadcast asks. ``catching_up``
    answers asynchronously, as an HTTP session does that first brings its connection up
    to date with its record in Redis."""

    def __init__(self, server: MCPServer, *, catching_up: bool = False) -> None:
        self.server = server
        self.home = False
        self.asked = anyio.Event()
        self.catching_up = catching_up

    def receives_broadcasts(self) -> bool:
        self.asked.set()
        return self.home

    async def after_catching_up(self) -> bool:
        await anyio.lowlevel.checkpoint()
        return self.receives_broadcasts()

    async def serve_connection(self, read_stream: ReadStream, write_stream: WriteStream) -> None:
        check = self.after_catching_up if self.catching_up else self.receives_broadcasts
        await self.server.serve_connection(read_stream, write_stream, receives_broadcasts=check)


class Heard:
    """A legacy client's message handler, as a stream of notification methods."""

    def __init__(self) -> None:
        self.send, self.receive = anyio.create_memory_object_stream[str](100)

    async def __call__(self, message: IncomingMessage) -> None:
        if not isinstance(message, Exception):
            self.send.send_nowait(message.method)

    async def next(self) -> str:
        with anyio.fail_after(PATIENCE_SECONDS):
            return await self.receive.receive()


@pytest.mark.parametrize("catching_up", [False, True], ids=["sync", "async"])
async def test_a_legacy_session_hears_broadcasts_only_on_its_home_replica(
    catching_up: bool,
) -> None:
    a, b, shared = MCPServer("A"), MCPServer("B"), Shared()
    on_b_connection = HomeOrNot(b, catching_up=catching_up)
    heard_on_a, heard_on_b = Heard(), Heard()
    with heard_on_a.send, heard_on_a.receive, heard_on_b.send, heard_on_b.receive:
        async with (
            attached((a, shared), (b, shared)),
            Client(a, mode="legacy", message_handler=heard_on_a),
            Client(InProcessTransport(on_b_connection), mode="legacy", message_handler=heard_on_b),
        ):
            await a.notify_tools_changed()
            with anyio.fail_after(PATIENCE_SECONDS):
                await on_b_connection.asked.wait()  # B decided: not home, not sent
            on_b_connection.home = True
            await a.notify_prompts_changed()
            assert [await heard_on_a.next(), await heard_on_a.next()] == [
                TOOLS_CHANGED,
                PROMPTS_CHANGED,
            ]
            assert await heard_on_b.next() == PROMPTS_CHANGED


class FailsOnce(HomeOrNot):
    """A home connection whose broadcast check fails the first time it is asked."""

    def receives_broadcasts(self) -> bool:
        if not self.asked.is_set():
            self.asked.set()
            raise RuntimeError("the session store hiccuped")
        return True


async def test_a_failing_delivery_does_not_stop_the_next(caplog: pytest.LogCaptureFixture) -> None:
    a, b, shared = MCPServer("A"), MCPServer("B"), Shared()
    heard = Heard()
    with heard.send, heard.receive:
        async with (
            attached((a, shared), (b, shared)),
            Client(InProcessTransport(FailsOnce(b)), mode="legacy", message_handler=heard),
        ):
            await a.notify_tools_changed()
            await a.notify_prompts_changed()
            assert await heard.next() == PROMPTS_CHANGED
    assert "Delivering notifications/tools/list_changed from another replica failed" in caplog.text


# -- Redis ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    missing = missing_for_redis()
    if missing is not None:
        pytest.skip(f"the Redis bus needs a real redis-server: {missing}")
    with redis_server(tmp_path_factory.mktemp("redis")) as server:
        yield server.url


@asynccontextmanager
async def redis_clients(url: str, count: int) -> AsyncGenerator[list[Redis], None]:
    """One client per replica (each its own pool), closed at the end."""
    address = urlsplit(url)
    clients = [Redis(host=address.hostname or "", port=address.port or 0) for _ in range(count)]
    try:
        yield clients
    finally:
        for client in clients:
            await client.aclose()


def on_redis(client: Redis, prefix: str) -> Shared:
    return Shared(RedisNotificationBus(client, key_prefix=prefix), RedisUsedStates(client))


@pytest.mark.parametrize("anyio_backend", [ASYNCIO])
async def test_redis_bus_delivers_every_notice_in_order_to_every_replica(redis_url: str) -> None:
    prefix = f"test-{secrets.token_hex(4)}:"
    notices = [Notice(str(n), "origin", TOOLS_CHANGED, {"n": n}) for n in range(5)]
    async with redis_clients(redis_url, 2) as (one, two):
        publisher = RedisNotificationBus(one, key_prefix=prefix)
        other = RedisNotificationBus(two, key_prefix=prefix)
        async with publisher.subscribe() as first, other.subscribe() as second:
            for notice in notices:
                await publisher.publish(notice)
            with anyio.fail_after(PATIENCE_SECONDS):
                got = [[await stream.__anext__() for _ in notices] for stream in (first, second)]
    assert got == [notices, notices]


@pytest.mark.parametrize("anyio_backend", [ASYNCIO])
async def test_redis_bus_reader_carries_on_after_its_connection_is_dropped(
    redis_url: str,
) -> None:
    """Redis closing every client connection (a restart, a failover) loses nothing
    published afterwards: the reader reconnects and reads on from its last id."""
    prefix = f"test-{secrets.token_hex(4)}:"
    async with redis_clients(redis_url, 3) as (reader_client, publisher_client, admin):
        reader = RedisNotificationBus(reader_client, key_prefix=prefix, block_seconds=0.5)
        publisher = RedisNotificationBus(publisher_client, key_prefix=prefix)
        async with reader.subscribe() as notices:
            await publisher.publish(Notice("before", "origin", TOOLS_CHANGED))
            with anyio.fail_after(PATIENCE_SECONDS):
                assert (await notices.__anext__()).id == "before"
            # redis-py's typing of CLIENT KILL leaves its options unknown.
            killed: int = await cast(Any, admin).client_kill_filter(_type="normal", skipme=True)
            await publisher.publish(Notice("after", "origin", TOOLS_CHANGED))
            with anyio.fail_after(PATIENCE_SECONDS):
                assert (await notices.__anext__()).id == "after"
    assert killed >= 1


@pytest.mark.parametrize("anyio_backend", [ASYNCIO])
async def test_replicas_on_redis_deliver_a_change_to_listen_streams_once(redis_url: str) -> None:
    prefix = f"test-{secrets.token_hex(4)}:"
    a, b = replica("A"), replica("B")
    async with (
        redis_clients(redis_url, 2) as (for_a, for_b),
        attached((a, on_redis(for_a, prefix)), (b, on_redis(for_b, prefix))),
        Client(b, mode=MODERN) as on_b,
        on_b.listen(tools_list_changed=True, resource_subscriptions=[MARKER]) as heard,
    ):
        await a.notify_tools_changed()
        await a.notify_resource_updated(MARKER)
        assert await methods_until_marker(heard) == [TOOLS_CHANGED, UPDATED]


@pytest.mark.parametrize("anyio_backend", [ASYNCIO])
async def test_two_http_apps_on_redis_deliver_to_a_listen_stream_on_the_other(
    redis_url: str,
) -> None:
    """Over real HTTP: a change made on A reaches a 2026-07-28 listen stream held open on
    B once, and one on A itself once."""
    prefix = f"test-{secrets.token_hex(4)}:"
    a, b = replica("A"), replica("B")
    async with (
        serve(a.http_app(state=RedisState(redis_url, key_prefix=prefix))) as on_a,
        serve(b.http_app(state=RedisState(redis_url, key_prefix=prefix))) as on_b,
        Client(on_a.url, mode=MODERN) as client_a,
        Client(on_b.url, mode=MODERN) as client_b,
        client_a.listen(tools_list_changed=True, resource_subscriptions=[MARKER]) as heard_on_a,
        client_b.listen(tools_list_changed=True, resource_subscriptions=[MARKER]) as heard_on_b,
    ):
        await a.notify_tools_changed()
        await a.notify_resource_updated(MARKER)
        assert await methods_until_marker(heard_on_a) == [TOOLS_CHANGED, UPDATED]
        assert await methods_until_marker(heard_on_b) == [TOOLS_CHANGED, UPDATED]


async def subscribe_to(bus: RedisNotificationBus) -> None:
    async with bus.subscribe():
        raise AssertionError("subscribed on trio")


async def publish_on(bus: RedisNotificationBus) -> None:
    await bus.publish(Notice("1", "origin", TOOLS_CHANGED))


@pytest.mark.parametrize("anyio_backend", [TRIO])
@pytest.mark.parametrize("use", [subscribe_to, publish_on])
async def test_the_redis_bus_refuses_trio_saying_why(
    use: Callable[[RedisNotificationBus], Awaitable[None]],
) -> None:
    client = Redis(host="127.0.0.1", port=1)
    with pytest.raises(RuntimeError, match="needs asyncio: redis-py's client runs only"):
        await use(RedisNotificationBus(client))
