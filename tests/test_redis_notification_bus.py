"""``RedisNotificationBus`` across an outage of one replica's Redis connection, with a real
redis-server: the replica's reader is shut out (its Redis user switched off and its
connections killed) while another replica publishes, then let back in. What was published
meanwhile reaches it, the newest ``CATCH_UP_LIMIT`` notices at most. asyncio only, as
redis-py's client is.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import AsyncGenerator, Generator
from contextlib import asynccontextmanager, contextmanager
from typing import Any
from urllib.parse import urlsplit

import anyio
import pytest
from redis.asyncio import Redis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from scale_out.cluster import Redis as RedisServer
from scale_out.cluster import missing_for_redis
from scale_out.fixtures import asyncio_only
from support import PATIENCE_SECONDS

from answerback.transports.http import Notice, RedisNotificationBus
from answerback.transports.http._redis_notification_bus import CATCH_UP_LIMIT

pytestmark = [
    pytest.mark.anyio,
    asyncio_only,
    pytest.mark.skipif(missing_for_redis() is not None, reason=str(missing_for_redis())),
]

TOOLS_CHANGED = "notifications/tools/list_changed"
READER = "reader"


@pytest.fixture
def redis_url(redis: RedisServer) -> str:
    return redis.url


class Replicas:
    """A reading replica's bus, a publishing replica's bus, and the admin's client that
    shuts the reader out of Redis and lets it back in."""

    def __init__(
        self, reader: RedisNotificationBus, publisher: RedisNotificationBus, admin: Any
    ) -> None:
        self.reader = reader
        self.publisher = publisher
        self.admin = admin

    async def shut_out(self) -> None:
        """The reader's connections are gone, and it cannot make new ones."""
        await self.admin.execute_command("ACL", "SETUSER", READER, "off")
        await self.admin.execute_command("CLIENT", "KILL", "USER", READER)

    async def let_in(self) -> None:
        await self.admin.execute_command("ACL", "SETUSER", READER, "on")

    async def publish(self, *ids: str) -> None:
        for notice_id in ids:
            await self.publisher.publish(Notice(notice_id, "publisher", TOOLS_CHANGED))


@asynccontextmanager
async def replicas(url: str) -> AsyncGenerator[Replicas, None]:
    address = urlsplit(url)
    host, port = address.hostname or "", address.port or 0
    # redis-py's typing leaves ACL and CLIENT KILL's replies unknown.
    admin: Any = Redis(host=host, port=port)
    await admin.execute_command("ACL", "SETUSER", READER, "on", ">secret", "~*", "&*", "+@all")
    # No retries inside redis-py: the bus's own retry loop is what is tested.
    reading = Redis(
        host=host, port=port, username=READER, password="secret", retry=Retry(NoBackoff(), 0)
    )
    publishing = Redis(host=host, port=port)
    prefix = f"test-{secrets.token_hex(4)}:"
    try:
        yield Replicas(
            RedisNotificationBus(reading, key_prefix=prefix, block_seconds=0.5),
            RedisNotificationBus(publishing, key_prefix=prefix),
            admin,
        )
    finally:
        for client in (reading, publishing, admin):
            await client.aclose()


class Warned(logging.Handler):
    """Sets ``logged`` once a record holding ``text`` is emitted; keeps their messages."""

    def __init__(self, text: str) -> None:
        super().__init__(logging.WARNING)
        self.text = text
        self.logged = anyio.Event()
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if self.text in record.getMessage():
            self.messages.append(record.getMessage())
            self.logged.set()


@contextmanager
def warned(text: str) -> Generator[Warned]:
    handler = Warned(text)
    logging.getLogger("answerback.http").addHandler(handler)
    try:
        yield handler
    finally:
        logging.getLogger("answerback.http").removeHandler(handler)


async def test_a_reader_back_from_an_outage_gets_the_newest_notices_it_missed(
    redis_url: str,
) -> None:
    """Shut out after reading one notice, the reader misses ``CATCH_UP_LIMIT`` + 5; back,
    it passes on the newest ``CATCH_UP_LIMIT`` of them, in order, and one warning says
    how many were skipped."""
    missed = [f"missed-{n}" for n in range(CATCH_UP_LIMIT + 5)]
    async with replicas(redis_url) as running, running.reader.subscribe() as notices:
        await running.publish("before")
        with anyio.fail_after(PATIENCE_SECONDS):
            assert (await notices.__anext__()).id == "before"
        with warned("Reading notifications from Redis failed") as failed:
            await running.shut_out()
            with anyio.fail_after(PATIENCE_SECONDS):
                await failed.logged.wait()
        await running.publish(*missed)
        with warned("notifications were published") as skipped:
            await running.let_in()
            with anyio.fail_after(PATIENCE_SECONDS):
                got = [(await notices.__anext__()).id for _ in range(CATCH_UP_LIMIT)]
            await running.publish("after")
            with anyio.fail_after(PATIENCE_SECONDS):
                assert (await notices.__anext__()).id == "after"
    assert got == missed[-CATCH_UP_LIMIT:]
    assert len(skipped.messages) == 1
    assert f"{len(missed)} notifications were published" in skipped.messages[0]
    assert "the 5 older ones are skipped" in skipped.messages[0]


async def test_a_reader_started_while_shut_out_gets_what_was_published_meanwhile(
    redis_url: str,
) -> None:
    """The reader could not ask Redis where the stream was when it started: once back, it
    still passes on what was published since, not only what comes after its return."""
    async with replicas(redis_url) as running:
        await running.shut_out()
        with warned("Redis is unreachable") as unreachable:
            async with running.reader.subscribe() as notices:
                assert unreachable.logged.is_set()
                await running.publish("meanwhile")
                await running.let_in()
                await running.publish("after")
                with anyio.fail_after(PATIENCE_SECONDS):
                    got = [(await notices.__anext__()).id for _ in range(2)]
    assert got == ["meanwhile", "after"]
