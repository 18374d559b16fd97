"""Replica liveness in Redis: a key per replica that lapses ``MISSED_BEATS`` heartbeats
after its last beat, so a replica killed without warning is noticed by the others that
soon, and one whose beat comes late under load is not.

A lapsed key says only that the replica has not beaten lately: its event loop may be
blocked, or Redis may have lost its data. So the key's absence never refuses an answer
to its questions; the ``STOPPED`` mark does, which a replica sets when it shuts down and
another sets when it ends a call of a replica that missed its beats. A replica that
beats again clears it.
"""

from __future__ import annotations

from answerback.transports.http._redis_client import milliseconds, reaching
from answerback.transports.http._redis_link import RedisLink, Script
from answerback.transports.http._replicas import MISSED_BEATS

STOPPED = "stopped"
"""A replica's key while it is known to have stopped (``"1"`` while it beats)."""
_STOPPED_SECONDS = 3600
"""How long the mark stays: as long as a message to a dead replica's inbox is kept."""
_BEAT = Script("""
local before = redis.call('GET', KEYS[1])
redis.call('SET', KEYS[1], '1', 'PX', ARGV[1])
if before == '1' then return 1 end
return 0
""")


def replica_key(key_prefix: str, replica_id: str) -> str:
    """``replica_id``'s heartbeat: ``"1"`` while it beats, ``STOPPED`` once it is known
    to have stopped, nothing once its beats lapsed."""
    return f"{key_prefix}replica:{replica_id}"


class RedisReplicas:
    """Heartbeats under ``{key_prefix}replica:{id}``."""

    def __init__(
        self,
        link: RedisLink,
        url: str,
        *,
        key_prefix: str = "answerback:",
        heartbeat_seconds: float,
    ) -> None:
        if heartbeat_seconds <= 0:
            raise ValueError(f"heartbeat_seconds must be positive, got {heartbeat_seconds!r}")
        self._link = link
        self._url = url
        self._key_prefix = key_prefix
        self._heartbeat_seconds = heartbeat_seconds

    @property
    def heartbeat_seconds(self) -> float:
        return self._heartbeat_seconds

    async def beat(self, replica_id: str) -> bool:
        ttl_ms = milliseconds(self._heartbeat_seconds * MISSED_BEATS)
        with reaching(self._url):
            kept = await self._link.eval(
                _BEAT, [replica_key(self._key_prefix, replica_id)], [ttl_ms]
            )
        return kept == 1

    async def is_alive(self, replica_id: str) -> bool:
        with reaching(self._url):
            return await self._link.call("GET", replica_key(self._key_prefix, replica_id)) == b"1"

    async def stop(self, replica_id: str) -> None:
        await self._mark_stopped(replica_id)

    async def declare_stopped(self, replica_id: str) -> None:
        await self._mark_stopped(replica_id, "NX")  # a beat that came meanwhile wins

    async def _mark_stopped(self, replica_id: str, *condition: str) -> None:
        key = replica_key(self._key_prefix, replica_id)
        with reaching(self._url):
            await self._link.call("SET", key, STOPPED, "EX", _STOPPED_SECONDS, *condition)
