"""Session records in Redis: a hash per session plus a hash of its connection's state
(``state_entry``'s keys to the requests that set them), both with a sliding expiry, so
any replica can serve any session and an idle one disappears by itself.

The record's ``used`` field is when the session was last used, through any replica, in
microseconds of Redis's clock (one clock, however the replicas' differ): a replica that
wants a session's place asks it before ending the session everywhere. A record without
one has had no request since its ``initialize``."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from answerback.jsonrpc import JSONObject
from answerback.jsonrpc._endpoint import as_object
from answerback.transports.http._redis_client import milliseconds, reaching
from answerback.transports.http._redis_link import RedisLink, Reply, Script, array_items
from answerback.transports.http._sessions import SessionRecord

_NOW = """
local clock = redis.call('TIME')
local now = clock[1] .. string.format('%06d', clock[2])
"""
"""Lua: ``now``, Redis's clock in microseconds, as a string (a Lua number would be
written to Redis in exponent form)."""
_TOUCH = Script(
    _NOW
    + """
if redis.call('PEXPIRE', KEYS[1], ARGV[1]) == 1 then
  redis.call('HSET', KEYS[1], 'used', now)
end
redis.call('PEXPIRE', KEYS[2], ARGV[1])
return {redis.call('HGETALL', KEYS[1]), redis.call('HGETALL', KEYS[2])}
"""
)
_MARK_USED = Script(
    _NOW
    + """
local ended = {}
for i = 1, #KEYS, 2 do
  if redis.call('PEXPIRE', KEYS[i], ARGV[1]) == 1 then
    redis.call('HSET', KEYS[i], 'used', now)
    redis.call('PEXPIRE', KEYS[i + 1], ARGV[1])
  else
    table.insert(ended, (i + 1) / 2)
  end
end
return ended
"""
)
"""Returns the positions (from 1) of the sessions whose record is gone."""
_ENDED = Script(
    """
local ended = {}
for i = 1, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 0 then
    table.insert(ended, i)
  end
end
return ended
"""
)
"""The positions (from 1) of the records that are gone, without touching the others."""
_LAST_USE = Script(_NOW + "return {redis.call('HGET', KEYS[1], 'used'), now}")


class RedisSessionManager:
    """Records under ``{key_prefix}session:{id}`` (and ``...:state``)."""

    def __init__(
        self, redis: Any, link: RedisLink, url: str, *, key_prefix: str = "answerback:"
    ) -> None:
        self._redis = redis
        self._link = link
        self._url = url
        self._prefix = f"{key_prefix}session:"

    def _keys(self, session_id: str) -> tuple[str, str]:
        key = self._prefix + session_id
        # Not ":state", where records written before the state was a hash kept a list.
        return key, key + ":entries"

    async def create(self, record: SessionRecord, idle_seconds: float) -> None:
        key, state_key = self._keys(record.id)
        fields = {
            "version": record.protocol_version,
            "initialize": json.dumps(record.initialize),
            "principal": json.dumps(record.principal),
        }
        with reaching(self._url):
            async with self._redis.pipeline(transaction=True) as pipe:
                pipe.hset(key, mapping=fields)
                pipe.pexpire(key, milliseconds(idle_seconds))
                for entry_key, entry in record.state.items():
                    pipe.hset(state_key, entry_key, json.dumps(entry))
                await pipe.execute()

    async def touch(self, session_id: str, idle_seconds: float) -> SessionRecord | None:
        key, state_key = self._keys(session_id)
        with reaching(self._url):
            # Every request reads its session: one script, not four commands.
            reply = await self._link.eval(_TOUCH, [key, state_key], [milliseconds(idle_seconds)])
        flat, state = array_items(reply)
        pairs = array_items(flat)
        fields = dict(zip(pairs[::2], pairs[1::2], strict=True))
        if b"initialize" not in fields:
            return None
        initialize = as_object(json.loads(fields[b"initialize"]))
        principal = json.loads(fields.get(b"principal", b"null"))
        if initialize is None:
            return None
        entries: dict[str, JSONObject] = {}
        state_pairs = array_items(state)
        for raw_key, raw in zip(state_pairs[::2], state_pairs[1::2], strict=True):
            entry = as_object(json.loads(raw))
            if entry is not None:
                entries[raw_key.decode()] = entry
        return SessionRecord(
            session_id,
            fields[b"version"].decode(),
            initialize,
            principal=principal if isinstance(principal, str) else None,
            state=entries,
        )

    async def mark_used(self, session_ids: Sequence[str], idle_seconds: float) -> set[str]:
        if not session_ids:
            return set()
        keys = [key for session_id in session_ids for key in self._keys(session_id)]
        with reaching(self._url):
            reply = await self._link.eval(_MARK_USED, keys, [milliseconds(idle_seconds)])
        return _at_positions(session_ids, reply)

    async def ended(self, session_ids: Sequence[str]) -> set[str]:
        if not session_ids:
            return set()
        keys = [self._keys(session_id)[0] for session_id in session_ids]
        with reaching(self._url):
            reply = await self._link.eval(_ENDED, keys, [])
        return _at_positions(session_ids, reply)

    async def unused_for(self, session_id: str) -> float | None:
        key, _ = self._keys(session_id)
        with reaching(self._url):
            used, now = array_items(await self._link.eval(_LAST_USE, [key], []))
        if used is None:
            return None
        return max(0, int(now) - int(used)) / 1_000_000

    async def set_state(self, session_id: str, key: str, entry: JSONObject | None) -> None:
        record_key, state_key = self._keys(session_id)
        with reaching(self._url):
            if entry is None:
                await self._redis.hdel(state_key, key)
                return
            async with self._redis.pipeline(transaction=True) as pipe:
                pipe.hset(state_key, key, json.dumps(entry))
                pipe.pttl(record_key)
                _, ttl = await pipe.execute()
            if isinstance(ttl, int) and ttl > 0:
                await self._redis.pexpire(state_key, ttl)

    async def end(self, session_id: str) -> None:
        with reaching(self._url):
            await self._link.call("DEL", *self._keys(session_id))


def _at_positions(session_ids: Sequence[str], reply: Reply) -> set[str]:
    """The sessions a script named by their positions among its keys (from 1)."""
    return {session_ids[int(position) - 1] for position in array_items(reply)}
