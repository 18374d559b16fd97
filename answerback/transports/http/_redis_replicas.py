"""Replica liveness in Redis: a key per replica that lapses ``MISSED_BEATS`` heartbeats
after its last beat, so a replica killed without warning is noticed by the others that
soon, and one whose beat comes late under load is not."""

from __future__ import annotations

from answerback.transports.http._redis_client import milliseconds, reaching
from answerback.transports.http._redis_link import RedisLink
from answerback.transports.http._replicas import MISSED_BEATS


def replica_key(key_prefix: str, replica_id: str) -> str:
    """The key that exists while ``replica_id`` beats."""
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

    async def beat(self, replica_id: str) -> None:
        with reaching(self._url):
            ttl_ms = milliseconds(self._heartbeat_seconds * MISSED_BEATS)
            await self._link.call(
                "SET", replica_key(self._key_prefix, replica_id), b"1", "PX", ttl_ms
            )

    async def is_alive(self, replica_id: str) -> bool:
        with reaching(self._url):
            return bool(await self._link.call("EXISTS", replica_key(self._key_prefix, replica_id)))

    async def stop(self, replica_id: str) -> None:
        with reaching(self._url):
            await self._link.call("DEL", replica_key(self._key_prefix, replica_id))
