"""The Redis link's faults, against a server on loopback that a test drives by hand: a
reply split anywhere is still read, a reply it cannot read and a Redis that does not
answer each fail the command with an ``OSError`` (which ``RedisState`` reports as Redis
being unavailable), and the next command opens a new connection.

A real ``redis-server`` cannot be made to misbehave; the link's normal work against one
is covered by ``test_redis_state.py`` and ``test_scale_out.py``.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from redis.exceptions import ResponseError
from scale_out.fixtures import asyncio_only
from support import PATIENCE_SECONDS

from answerback.transports.http._redis_link import RedisLink

pytestmark = [pytest.mark.anyio, asyncio_only]

Answer = Callable[[bytes, asyncio.StreamWriter], Any]
"""What the hand-driven server does with each chunk a connection sends it."""


@asynccontextmanager
async def fake_redis(answer: Answer) -> AsyncGenerator[tuple[str, list[int]], None]:
    """A server whose replies ``answer`` writes; yields its URL and the number of
    connections it has had (as a one-item list the test reads)."""
    connections = [0]
    handlers: list[asyncio.Task[None]] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections[0] += 1
        task = asyncio.current_task()
        assert task is not None
        handlers.append(task)
        try:
            while chunk := await reader.read(65536):
                result = answer(chunk, writer)
                if asyncio.iscoroutine(result):
                    await result
        except ConnectionError:
            pass  # the link hung up on purpose
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"redis://127.0.0.1:{port}", connections
    finally:
        server.close()
        await server.wait_closed()
        # Every connection ends once the link closes its side (each test closes it).
        async with asyncio.timeout(PATIENCE_SECONDS):
            await asyncio.gather(*handlers)


async def test_a_reply_split_byte_by_byte_is_read_whole() -> None:
    reply = b"*3\r\n$5\r\nhello\r\n:42\r\n*2\r\n$-1\r\n+OK\r\n"

    async def dribble(chunk: bytes, writer: asyncio.StreamWriter) -> None:
        for index in range(len(reply)):
            writer.write(reply[index : index + 1])
            await writer.drain()

    async with fake_redis(dribble) as (url, _):
        link = RedisLink(url, redis=None, reply_timeout=PATIENCE_SECONDS)
        try:
            assert await link.call("ANY") == [b"hello", 42, [None, b"OK"]]
        finally:
            link.close()


async def test_an_error_reply_raises_and_the_connection_carries_on() -> None:
    def refuse_then_answer(chunk: bytes, writer: asyncio.StreamWriter) -> None:
        writer.write(b"-ERR wrong kind of value\r\n" if b"BAD" in chunk else b"+OK\r\n")

    async with fake_redis(refuse_then_answer) as (url, connections):
        link = RedisLink(url, redis=None, reply_timeout=PATIENCE_SECONDS)
        try:
            with pytest.raises(ResponseError, match="wrong kind"):
                await link.call("BAD")
            assert await link.call("GOOD") == b"OK"
        finally:
            link.close()
        assert connections == [1]


async def test_a_reply_it_cannot_read_fails_the_command_and_a_new_connection_follows() -> None:
    replies = iter([b"?garbage\r\n", b"?garbage\r\n", b"+OK\r\n"])

    def answer(chunk: bytes, writer: asyncio.StreamWriter) -> None:
        writer.write(next(replies))

    async with fake_redis(answer) as (url, connections):
        link = RedisLink(url, redis=None, reply_timeout=PATIENCE_SECONDS)
        try:
            # Sent once more on a new connection (as redis-py does), then given up.
            with pytest.raises(ConnectionError, match="cannot read"):
                await link.call("PING")
            assert await link.call("PING") == b"OK"
        finally:
            link.close()
        assert connections == [3]


async def test_a_redis_that_does_not_answer_times_out() -> None:
    def stay_silent(chunk: bytes, writer: asyncio.StreamWriter) -> None:
        return None

    async with fake_redis(stay_silent) as (url, _):
        link = RedisLink(url, redis=None, reply_timeout=0.2)
        try:
            with pytest.raises(TimeoutError, match=r"did not answer within 0\.2 s"):
                await link.call("PING")
        finally:
            link.close()
