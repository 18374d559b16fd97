"""The notification bus on Redis: one Redis Stream that every replica follows.

Pub/sub would be simpler but is at-most-once: a replica whose connection drops for a
moment misses whatever was published meanwhile, and its clients never hear that the tool
list changed. A stream keeps the notices (capped at ``max_length``, trimmed
approximately), and each reader asks with ``XREAD BLOCK`` for the entries after the last
one it saw, so a reconnecting reader picks up where it left off. The blocking read is
itself the wake-up; no pub/sub is needed.

A reader back after an outage passes on only the newest ``CATCH_UP_LIMIT`` notices it
missed, as a GET stream's resume does: each makes clients fetch a list or a resource
again, and a later one of the same kind covers an earlier.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections import deque
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, cast

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from answerback._options import positive_int, positive_seconds, text
from answerback.jsonrpc._endpoint import as_object
from answerback.transports.http._notification_bus import (
    READER_LONGEST_RETRY_SECONDS,
    Notice,
    NoticesSince,
    require_asyncio,
)
from answerback.transports.http._redis_client import check_client, milliseconds

try:
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import RedisError
    from redis.exceptions import TimeoutError as RedisTimeoutError
except ImportError as missing:  # pragma: no cover - the extra is installed for the tests
    raise ImportError(
        "The Redis notification bus needs redis-py: pip install 'answerback[redis]'."
    ) from missing

if TYPE_CHECKING:
    from redis.asyncio import Redis

logger = logging.getLogger("answerback.http")

_BATCH = 100
_PUBLISH_ATTEMPTS = 2
_FIRST_RETRY_SECONDS = 0.1
CATCH_UP_LIMIT = 1_000
"""The most notices a reader passes on after a failed read (the newest of those published
meanwhile); the older are skipped with a warning saying how many."""
_CLOCK_SKEW_SECONDS = 5.0
"""How far a reader that could not ask Redis for the stream's newest entry when it
started looks back from its own clock's time (Redis's clock may be behind): a notice
that much older comes too, which costs a client a needless fetch at most."""


class RedisNotificationBus:
    """Notices in the Redis Stream ``{key_prefix}notifications``.

    ``redis`` is the caller's client (its pool is shared; the bus never closes it).
    ``max_length`` bounds the stream: a replica that falls further behind than that
    loses the oldest notices. ``block_seconds`` is how long one ``XREAD`` waits.
    A ``redis`` that is a URL string or a synchronous ``redis.Redis`` is refused
    (``TypeError``) when the bus is made; nothing connects then.
    """

    def __init__(
        self,
        redis: Redis,
        *,
        key_prefix: str = "answerback:",
        max_length: int = 10_000,
        block_seconds: float = 5.0,
    ) -> None:
        check_client("redis", redis, ("xadd", "xread", "xrevrange"))  # every command it sends
        positive_int("max_length", max_length, "notices")
        positive_seconds("block_seconds", block_seconds)
        text("key_prefix", key_prefix, "put before every key, such as 'answerback:'")
        self._redis = redis
        self.key = f"{key_prefix}notifications"
        self._max_length = max_length
        self._block_ms = milliseconds(block_seconds)

    async def publish(self, notice: Notice) -> None:
        """Append ``notice`` to the stream; ``ConnectionError`` if Redis cannot take it."""
        require_asyncio("RedisNotificationBus")
        body = json.dumps(
            {
                "id": notice.id,
                "origin": notice.origin,
                "method": notice.method,
                "params": notice.params,
            },
            separators=(",", ":"),
        )
        failure: RedisError | None = None
        for _ in range(_PUBLISH_ATTEMPTS):
            try:
                await self._redis.xadd(
                    self.key, {"notice": body}, maxlen=self._max_length, approximate=True
                )
                return
            except (RedisConnectionError, RedisTimeoutError) as exc:
                # A pooled connection Redis closed (a restart): once more on a fresh one.
                # Should the first XADD have landed after all, receivers drop the copy.
                failure = exc
            except RedisError as exc:
                failure = exc
                break
        raise ConnectionError(
            f"Could not publish {notice.method} to Redis ({failure}); clients served by other "
            "replicas miss it. Check that Redis is up and reachable."
        ) from failure

    async def notices_since(self, ms: int, limit: int) -> NoticesSince:
        """The newest notices appended at or after ``ms`` (Redis's clock), in order.

        Read newest first, ``_BATCH`` at a time, down to the first entry older than
        ``ms``, reading at most ``limit`` entries however busy the stream is. That older
        entry proves nothing from ``ms`` on was trimmed (trimming takes the oldest
        first); reaching ``limit`` before it, or the stream's start once it holds
        ``max_length``, leaves the result incomplete.
        """
        require_asyncio("RedisNotificationBus")
        start = (max(ms, 0), 0)
        newest_first: list[Notice] = []
        read = 0
        below = "+"
        complete = False
        try:
            while read < limit:
                count = min(_BATCH, limit - read)
                entries = cast(
                    list[Any], await self._redis.xrevrange(self.key, below, "-", count=count)
                )
                read += len(entries)
                for entry_id, fields in entries:
                    below = f"({_text(entry_id)}"
                    if _position(_text(entry_id)) < start:
                        complete = True
                        break
                    notice = _notice(cast(dict[Any, Any], fields))
                    if notice is not None:
                        newest_first.append(notice)
                if complete:
                    break
                if len(entries) < count:  # the stream's start: all of it was read
                    complete = read < self._max_length  # trimming keeps max_length
                    break
        except RedisError as exc:
            raise ConnectionError(
                f"Could not read the notifications kept in Redis ({exc}). Check that Redis "
                "is up and reachable."
            ) from exc
        newest_first.reverse()
        return NoticesSince(newest_first, complete)

    @asynccontextmanager
    async def subscribe(self) -> AsyncGenerator[AsyncIterator[Notice], None]:
        """Every notice appended after entering, in order, until the block exits; while
        Redis is unreachable the reader retries, and then reads on from where it was
        (the newest ``CATCH_UP_LIMIT`` of the notices it missed)."""
        require_asyncio("RedisNotificationBus")
        send, receive = anyio.create_memory_object_stream[Notice](math.inf)
        try:
            start, behind = await self._last_id(), False
        except RedisError as exc:
            logger.warning("Redis is unreachable (%s); notifications follow once it is back", exc)
            # Where the stream is now, by this machine's clock: what is published from
            # here on is delivered once Redis is back, not only what comes after that.
            start = f"{int((time.time() - _CLOCK_SKEW_SECONDS) * 1000)}-0"
            behind = True
        async with anyio.create_task_group() as tg:
            tg.start_soon(self._follow, start, behind, send)
            try:
                with receive:
                    yield receive
            finally:
                tg.cancel_scope.cancel()

    async def _last_id(self) -> str:
        """The id of the newest entry now (``0-0`` for none): reading after it gets
        everything published from here on."""
        newest = cast(list[Any], await self._redis.xrevrange(self.key, count=1))
        return _text(newest[0][0]) if newest else "0-0"

    async def _follow(
        self, last_id: str, behind: bool, send: MemoryObjectSendStream[Notice]
    ) -> None:
        """Read the stream for ever after ``last_id``, retrying with backoff while Redis
        is unreachable, and catching up (``behind``) after a failed read."""
        delay = _FIRST_RETRY_SECONDS
        with send:
            while True:
                try:
                    if behind:
                        last_id = await self._catch_up(last_id, send)
                        behind = False
                    replies = await self._redis.xread(
                        {self.key: last_id}, count=_BATCH, block=self._block_ms
                    )
                except RedisError as exc:
                    # The first failure of a run is said; the rest of the outage, which
                    # the server's own line reports with its end, only at debug level.
                    logger.log(
                        logging.WARNING if delay == _FIRST_RETRY_SECONDS else logging.DEBUG,
                        "Reading notifications from Redis failed (%s); retrying in %.1f s, "
                        "backing off",
                        exc,
                        delay,
                    )
                    await anyio.sleep(delay)
                    delay = min(delay * 2, READER_LONGEST_RETRY_SECONDS)
                    behind = True
                    continue
                delay = _FIRST_RETRY_SECONDS
                for entry_id, fields in _entries(replies):
                    last_id = entry_id
                    self._pass_on(entry_id, fields, send)

    async def _catch_up(self, last_id: str, send: MemoryObjectSendStream[Notice]) -> str:
        """Pass on the newest ``CATCH_UP_LIMIT`` entries after ``last_id`` (the reader
        missed them, its reads failing), warning of the older ones skipped; the id of
        the newest read. Reads every entry after ``last_id``, to count them: once per
        outage, at most ``max_length``."""
        kept: deque[tuple[str, dict[Any, Any]]] = deque(maxlen=CATCH_UP_LIMIT)
        missed = 0
        while True:
            entries = _entries(await self._redis.xread({self.key: last_id}, count=_BATCH))
            missed += len(entries)
            kept.extend(entries)
            if entries:
                last_id = entries[-1][0]
            if len(entries) < _BATCH:
                break
        if missed > len(kept):
            logger.warning(
                "%d notifications were published in %s while this replica could not read "
                "them: its clients get the newest %d list changes and resource updates, and "
                "the %d older ones are skipped",
                missed,
                self.key,
                len(kept),
                missed - len(kept),
            )
        for entry_id, fields in kept:
            self._pass_on(entry_id, fields, send)
        return last_id

    def _pass_on(
        self, entry_id: str, fields: dict[Any, Any], send: MemoryObjectSendStream[Notice]
    ) -> None:
        notice = _notice(fields)
        if notice is None:
            logger.warning("Skipped a malformed notice %s in %s", entry_id, self.key)
        else:
            send.send_nowait(notice)


def _entries(replies: object) -> list[tuple[str, dict[Any, Any]]]:
    """``XREAD``'s entries for our one stream (RESP2 answers a list, RESP3 a mapping)."""
    if isinstance(replies, dict):
        streams = list(cast(dict[Any, Any], replies).values())
    else:
        streams = [stream[1] for stream in cast(list[Any], replies or [])]
    found: list[tuple[str, dict[Any, Any]]] = []
    for entries in streams:
        for entry in cast(list[Any], entries):
            if isinstance(entry, list | tuple) and len(cast(Any, entry)) == 2:
                entry_id, fields = cast(tuple[Any, Any], entry)
                found.append(
                    (
                        _text(entry_id),
                        cast(dict[Any, Any], fields) if isinstance(fields, dict) else {},
                    )
                )
    return found


def _notice(fields: dict[Any, Any]) -> Notice | None:
    raw = fields.get(b"notice", fields.get("notice"))
    try:
        decoded = as_object(json.loads(_text(raw))) if raw is not None else None
    except ValueError:
        return None
    if decoded is None:
        return None
    notice_id, origin, method = decoded.get("id"), decoded.get("origin"), decoded.get("method")
    params = decoded.get("params")
    if not (isinstance(notice_id, str) and isinstance(origin, str) and isinstance(method, str)):
        return None
    if params is not None and as_object(params) is None:
        return None
    return Notice(notice_id, origin, method, as_object(params))


def _position(entry_id: str) -> tuple[int, int]:
    """An entry id as numbers, to compare (``"12-3"`` is ``(12, 3)``)."""
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq or 0)


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
