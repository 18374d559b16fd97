"""``RedisState``: the HTTP server's state shared through Redis, so replicas scale out.

With it, several server processes behind a plain round-robin load balancer (no sticky
sessions) serve the same sessions: a session opened on one is served by any; a client's
answer to a question reaches the replica whose tool asked it; a stream resumes on any
replica; list-changed notifications reach the clients of every replica. Each replica
connects to the same Redis with the same ``key_prefix``.

redis-py's asyncio client runs only on asyncio, so ``RedisState`` refuses to start on
trio (the in-memory state runs on both).

The key that authenticates the ids of the server's questions lives in Redis too, made
by the first replica. Redis kept without persistence loses it on a restart, and the
next replica to start would then make another while the running ones keep theirs, and
refuse each other's answers. So it is agreed again on every heartbeat: a replica puts
back the key it mints with if the deployment has none (``SET NX``), adopts whichever
key is there, and adds the key it minted with to a set of recent keys that every
replica accepts. Within a heartbeat of a loss all replicas mint with one key again, and
a question asked before the switch keeps its answer.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import AsyncGenerator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import anyio

from answerback._options import positive_int, positive_seconds, text, text_or_none
from answerback.transports.http._notification_bus import NotificationBus, require_asyncio
from answerback.transports.http._question_ids import REPLICA_ID
from answerback.transports.http._redis_client import (
    checked_url,
    connect,
    login_refused,
    reaching,
    safe_url,
    unreachable,
)
from answerback.transports.http._redis_events import RedisEventStore
from answerback.transports.http._redis_link import RedisLink, Script, array_items
from answerback.transports.http._redis_message_bus import RedisMessageBus
from answerback.transports.http._redis_notification_bus import RedisNotificationBus
from answerback.transports.http._redis_replicas import RedisReplicas
from answerback.transports.http._redis_sessions import RedisSessionManager
from answerback.transports.http._redis_used_states import RedisUsedStates
from answerback.transports.http._state import StateUnavailable
from answerback.transports.http._used_states import UsedStates

logger = logging.getLogger("answerback.http")

START_SECONDS = 30.0
"""How long a replica starting waits for a Redis that does not answer yet."""
_START_RETRY_SECONDS = 0.5

_AGREE_KEY = Script("""
redis.call('SET', KEYS[1], ARGV[1], 'NX')
local current = redis.call('GET', KEYS[1])
redis.call('SADD', KEYS[2], current)
if ARGV[2] == '1' then redis.call('SADD', KEYS[2], ARGV[1]) end
return {current, redis.call('SMEMBERS', KEYS[2])}
""")
"""Put ``ARGV[1]`` as the question key if there is none; the key, and the recent keys
(with ``ARGV[1]`` among them if ``ARGV[2]`` says ids were minted with it)."""


class RedisState:
    """Sessions, events, calls, notifications and single-use state in Redis at ``url``.

    ``replica_id`` names this process among the replicas (random by default; give a
    stable one only if no two processes ever use it at once). Each replica beats every
    ``heartbeat_seconds`` and counts as dead after three missed beats: when one dies,
    the calls it owned end with an error on their clients' streams within about four
    heartbeats. Streams keep at most
    ``max_events_per_stream`` events, for ``event_max_age_seconds`` after the last one.
    Every replica must also share ``MCPServer(state_keys=...)`` for 2026-07-28 requests.

    Options are checked before anything connects: a ``url`` whose scheme is not
    ``redis://``, ``rediss://`` or ``unix://``, or whose port, host or database cannot be
    one, is a ``ValueError`` (its password is not repeated), wrong types and counts are
    ``TypeError`` and ``ValueError``.
    """

    shared = True

    def __init__(
        self,
        url: str = "redis://127.0.0.1:6379/0",
        *,
        replica_id: str | None = None,
        heartbeat_seconds: float = 1.0,
        key_prefix: str = "answerback:",
        max_events_per_stream: int = 1000,
        event_max_age_seconds: float = 300.0,
    ) -> None:
        url = checked_url(url)
        text_or_none("replica_id", replica_id, "this process's name among the replicas")
        heartbeat_seconds = positive_seconds("heartbeat_seconds", heartbeat_seconds)
        key_prefix = text("key_prefix", key_prefix, "put before every key, such as 'answerback:'")
        max_events_per_stream = positive_int(
            "max_events_per_stream", max_events_per_stream, "events"
        )
        event_max_age_seconds = positive_seconds("event_max_age_seconds", event_max_age_seconds)
        self.replica_id = replica_id if replica_id is not None else secrets.token_hex(8)
        if not REPLICA_ID.fullmatch(self.replica_id):
            raise ValueError(
                f"replica_id {self.replica_id!r} must be 1 to 64 letters, digits, '_' or '-'."
            )
        self.url = url
        self.key_prefix = key_prefix
        redis = self._redis = connect(url)
        link = self._link = RedisLink(url, redis)
        self._inbox_link = RedisLink(url, redis)
        self.sessions = RedisSessionManager(redis, link, url, key_prefix=key_prefix)
        self.events = RedisEventStore(
            redis,
            link,
            url,
            key_prefix=key_prefix,
            max_events_per_stream=max_events_per_stream,
            max_age_seconds=event_max_age_seconds,
        )
        self.messages = RedisMessageBus(
            redis,
            link,
            url,
            self.replica_id,
            key_prefix=key_prefix,
            block_seconds=min(1.0, heartbeat_seconds),
            inbox_link=self._inbox_link,
        )
        self.replicas = RedisReplicas(
            link, url, key_prefix=key_prefix, heartbeat_seconds=heartbeat_seconds
        )
        self.notifications: NotificationBus | None = RedisNotificationBus(
            redis, key_prefix=key_prefix
        )
        self.used_states: UsedStates | None = RedisUsedStates(redis, key_prefix=key_prefix)

    @property
    def redis(self) -> Any:
        """The ``redis.asyncio`` client every part shares (one connection pool)."""
        return self._redis

    def __repr__(self) -> str:
        return f"RedisState({safe_url(self.url)!r}, replica_id={self.replica_id!r})"

    def running(self) -> AbstractAsyncContextManager[bytes]:
        """For the application's lifespan: yields the deployment's question-id key (made
        by the first replica, kept in Redis) and closes the client at the end. Raises
        ``RuntimeError`` on trio, and ``StateUnavailable`` if Redis refuses, or does not
        answer within ``START_SECONDS`` (it may be starting alongside this replica)."""
        return self._running()

    @asynccontextmanager
    async def _running(self) -> AsyncGenerator[bytes]:
        require_asyncio("RedisState")
        try:
            key = await self._first_key()
            await self._warn_if_evicting()
            await self.messages.open_inbox()
            yield key
        finally:
            self._link.close()
            self._inbox_link.close()
            await self._redis.aclose()

    async def _first_key(self) -> bytes:
        """The deployment's question key, at start-up. Redis not answering yet (started
        alongside the replicas, as compose and Kubernetes do) is waited for, up to
        ``START_SECONDS``; Redis refusing (a wrong password) is not."""
        candidate = secrets.token_bytes(32)
        deadline = anyio.current_time() + START_SECONDS
        waiting = False
        while True:
            try:
                key, _ = await self._agree(candidate, minted=False)
            except StateUnavailable as exc:
                if login_refused(exc):
                    said = str(exc)
                    end = " " if said.endswith((".", "?")) else ". "
                    raise StateUnavailable(
                        f"{said}{end}Correct the user or password in RedisState's url."
                    ) from None
                if not unreachable(exc):
                    raise
                if anyio.current_time() >= deadline:
                    raise StateUnavailable(
                        f"{exc} (waited {START_SECONDS:g} s for it). Start Redis before the "
                        "server, or correct RedisState's url."
                    ) from None  # the message says it all: no chain of socket errors
                if not waiting:
                    logger.warning("waiting up to %g s for Redis: %s", START_SECONDS, exc)
                    waiting = True
                await anyio.sleep(_START_RETRY_SECONDS)
            else:
                return key

    async def _warn_if_evicting(self) -> None:
        """Warn once, at start-up, if Redis may evict keys when full: an evicted session,
        call or answer is lost without an error anywhere, where ``noeviction`` has a
        full Redis refuse new work (503s, logged) until it has room. A Redis that does
        not allow ``CONFIG GET`` (a managed one, an ACL user without it) is not asked."""
        from redis.exceptions import RedisError

        try:
            reply: Any = await self._redis.config_get("maxmemory-policy")
        except (RedisError, OSError):
            return
        policy = reply.get(b"maxmemory-policy", reply.get("maxmemory-policy"))
        if isinstance(policy, bytes):
            policy = policy.decode()
        if policy is not None and policy != "noeviction":
            logger.warning(
                "Redis at %s may evict keys when full (maxmemory-policy %s): an evicted "
                "key loses a session, a call or an answer without an error. Set "
                "maxmemory-policy noeviction for answerback's Redis (a full Redis then "
                "refuses new requests with 503 until it has room).",
                safe_url(self.url),
                policy,
            )

    async def agree_question_key(self, used: bytes) -> tuple[bytes, frozenset[bytes]]:
        """Put ``used`` back as the deployment's key if Redis has none (it lost its data),
        and return the key every replica mints with now and the keys recently used."""
        return await self._agree(used, minted=True)

    async def _agree(self, key: bytes, *, minted: bool) -> tuple[bytes, frozenset[bytes]]:
        names = [f"{self.key_prefix}question-key", f"{self.key_prefix}question-keys"]
        with reaching(self.url):
            reply = await self._link.eval(_AGREE_KEY, names, [key, "1" if minted else "0"])
        current, recent = array_items(reply)
        if not isinstance(current, bytes):
            raise StateUnavailable(f"Redis at {safe_url(self.url)} lost key {names[0]!r}")
        return current, frozenset(k for k in array_items(recent) if isinstance(k, bytes))
