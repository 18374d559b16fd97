"""The message bus on Redis: open calls by owner, questions awaiting one answer, and an
inbox stream per replica.

Open calls of a session live in one hash (by request id and by stream id); a question
is a key that the first answer marks answered, so a duplicate is refused; the inbox is
a Redis Stream read with ``XREAD BLOCK``, so a message put there while its reader
reconnects is still read (pub/sub alone would lose it).

An answer whose question is not in Redis at all (Redis lost its data) still goes to the
question's owner, which takes it if that question still waits there and drops it
otherwise: refusing it would leave the owner waiting for ever. For the same reason an
owner whose heartbeat merely lapsed (a blocked event loop, or Redis lost its key) gets
its answers; only one known to have stopped does not, and then gets an error for the
question instead, so that, if it is alive after all, its call ends rather than waits.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from typing import Any

from answerback.jsonrpc import JSONObject, RequestId
from answerback.jsonrpc._endpoint import as_object, as_request_id
from answerback.transports.http._message_bus import CallOwner, Forwarded
from answerback.transports.http._redis_client import milliseconds, reaching
from answerback.transports.http._redis_link import RedisLink, Script, array_items
from answerback.transports.http._redis_replicas import STOPPED, replica_key

ANSWERED = "0"
"""A question's value once answered (``"1"`` while it waits)."""
_CALL_SECONDS = 24 * 3600
"""How long a call's record outlives its last change (a call that never ends)."""
_OPEN_CALL = Script(f"""
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[3]) == 0 then return 0 end
if ARGV[2] ~= '' then redis.call('HSET', KEYS[1], ARGV[2], ARGV[3]) end
redis.call('EXPIRE', KEYS[1], {_CALL_SECONDS})
return 1
""")
_CLOSE_CALL = Script("""
local record = redis.call('HGET', KEYS[1], ARGV[1])
if not record then return false end
redis.call('HDEL', KEYS[1], ARGV[1])
local stream = cjson.decode(record)['stream']
if type(stream) == 'string' then redis.call('HDEL', KEYS[1], 's:' .. stream) end
return record
""")
_INBOX_LENGTH = 10_000
_INBOX_SECONDS = 3600
"""A dead replica's inbox disappears this long after the last message put there."""
_ANSWERED_SECONDS = 60
"""How long an answered question is remembered, to refuse a duplicate answer (a later
one goes to the owner, which drops it)."""
_CLAIM_ANSWER = Script(f"""
if redis.call('GET', KEYS[1]) == '{ANSWERED}' then return 0 end
redis.call('SET', KEYS[1], '{ANSWERED}', 'EX', {_ANSWERED_SECONDS})
return 1
""")
_FORWARD_ANSWER = Script(f"""
if redis.call('GET', KEYS[1]) == '{ANSWERED}' then return 0 end
redis.call('SET', KEYS[1], '{ANSWERED}', 'EX', {_ANSWERED_SECONDS})
local message, sent = ARGV[2], 1
if redis.call('GET', KEYS[3]) == '{STOPPED}' then message, sent = ARGV[3], -1 end
redis.call('XADD', KEYS[2], 'MAXLEN', '~', {_INBOX_LENGTH}, '*',
           'session', ARGV[1], 'message', message)
redis.call('EXPIRE', KEYS[2], {_INBOX_SECONDS})
return sent
""")


class RedisMessageBus:
    """Calls in ``{key_prefix}calls:{session}``, questions in
    ``{key_prefix}question:{session}:{id}``, inboxes in ``{key_prefix}inbox:{replica}``."""

    def __init__(
        self,
        redis: Any,
        link: RedisLink,
        url: str,
        replica_id: str,
        *,
        key_prefix: str = "answerback:",
        block_seconds: float = 1.0,
        inbox_link: RedisLink | None = None,
    ) -> None:
        """``inbox_link``: a link of the inbox's own for its blocking reads (they would
        hold up ``link``'s other commands); without one, redis-py reads the inbox."""
        self._redis = redis
        self._link = link
        self._inbox_link = inbox_link
        self._url = url
        self.replica_id = replica_id
        self._prefix = key_prefix
        self._block_ms = milliseconds(block_seconds)
        self._inbox_last: str | None = None
        """The last inbox entry read (``None``: not reading yet)."""

    def _calls(self, session_id: str) -> str:
        return f"{self._prefix}calls:{session_id}"

    async def open_call(self, session_id: str, owner: CallOwner) -> bool:
        key = self._calls(session_id)
        record = json.dumps(
            {"owner": owner.replica_id, "id": owner.request_id, "stream": owner.stream_id}
        )
        stream_field = "s:" + owner.stream_id if owner.stream_id is not None else ""
        with reaching(self._url):
            # One round trip each, atomically: a call is recorded by request id (only
            # if that id is free) and by stream, and closed by whoever removes it first.
            opened = await self._link.eval(
                _OPEN_CALL, [key], ["r:" + json.dumps(owner.request_id), stream_field, record]
            )
        return bool(opened)

    async def close_call(self, session_id: str, request_id: RequestId) -> CallOwner | None:
        with reaching(self._url):
            raw = await self._link.eval(
                _CLOSE_CALL, [self._calls(session_id)], ["r:" + json.dumps(request_id)]
            )
        return _owner(raw)

    async def end_call(self, session_id: str, request_id: RequestId) -> None:
        args = (_CLOSE_CALL.text, 1, self._calls(session_id), "r:" + json.dumps(request_id))
        # The answer's event went down this link before: Redis closes the call after it.
        # EVAL, not EVALSHA: nobody would hear that Redis had not loaded the script.
        if not self._link.send_ahead("EVAL", *args):
            await self.close_call(session_id, request_id)

    async def call_by_request(self, session_id: str, request_id: RequestId) -> CallOwner | None:
        with reaching(self._url):
            raw = await self._link.call(
                "HGET", self._calls(session_id), "r:" + json.dumps(request_id)
            )
        return _owner(raw)

    async def call_by_stream(self, session_id: str, stream_id: str) -> CallOwner | None:
        with reaching(self._url):
            raw = await self._link.call("HGET", self._calls(session_id), "s:" + stream_id)
        return _owner(raw)

    async def expect_answer(self, session_id: str, question_id: str, ttl_seconds: float) -> None:
        command = (
            "SET",
            self._question(session_id, question_id),
            b"1",
            "PX",
            milliseconds(ttl_seconds),
        )
        # The question's event is stored next, down the same connection: Redis records
        # the question first, so no answer can come before it, and no reply is awaited.
        if not self._link.send_ahead(*command):
            with reaching(self._url):
                await self._link.call(*command)

    def _question(self, session_id: str, question_id: str) -> str:
        return f"{self._prefix}question:{session_id}:{question_id}"

    def _inbox(self, replica_id: str) -> str:
        return f"{self._prefix}inbox:{replica_id}"

    async def claim_answer(self, session_id: str, question_id: str) -> bool:
        with reaching(self._url):
            claimed = await self._link.eval(
                _CLAIM_ANSWER, [self._question(session_id, question_id)], []
            )
        return claimed == 1

    async def forward_answer(
        self,
        replica_id: str,
        session_id: str,
        question_id: str,
        message: JSONObject,
        refusal: JSONObject,
    ) -> Forwarded:
        keys = [
            self._question(session_id, question_id),
            self._inbox(replica_id),
            replica_key(self._prefix, replica_id),
        ]
        args = [session_id, json.dumps(message), json.dumps(refusal)]
        with reaching(self._url):
            # The answer (or the refusal) reaches its owner's inbox only if it is the first.
            sent = await self._link.eval(_FORWARD_ANSWER, keys, args)
        if sent == 1:
            return Forwarded.SENT
        return Forwarded.OWNER_STOPPED if sent == -1 else Forwarded.REFUSED

    async def send(self, replica_id: str, session_id: str, message: JSONObject) -> None:
        key = self._inbox(replica_id)
        fields = {"session": session_id, "message": json.dumps(message)}
        with reaching(self._url):
            async with self._redis.pipeline(transaction=False) as pipe:
                pipe.xadd(key, fields, maxlen=_INBOX_LENGTH, approximate=True)
                pipe.expire(key, _INBOX_SECONDS)
                await pipe.execute()

    async def open_inbox(self) -> str:
        """Mark where this process's inbox starts, and return the last entry read:
        what is sent to the inbox from the mark on is read, even before ``inbox()``
        first reads. Done as the process starts, before it serves anything: marked at
        the first read instead, an answer to a question already asked could come
        before the mark and never be read."""
        last = self._inbox_last
        if last is None:  # kept across reconnections
            with reaching(self._url):
                key = self._inbox(self.replica_id)
                newest = await self._redis.xrevrange(key, "+", "-", count=1)
            last = self._inbox_last = newest[0][0].decode() if newest else "0-0"
        return last

    async def inbox(self) -> AsyncGenerator[tuple[str, JSONObject]]:
        key = self._inbox(self.replica_id)
        while True:
            last = await self.open_inbox()
            with reaching(self._url):
                entries = await self._read_inbox(key, last)
            for entry_id, fields in entries:
                self._inbox_last = entry_id.decode()
                message = as_object(json.loads(fields.get(b"message", b"null")))
                session = fields.get(b"session", b"").decode()
                if message is not None and session:
                    yield session, message

    async def _read_inbox(self, key: str, after: str) -> list[tuple[bytes, dict[bytes, bytes]]]:
        """The inbox's entries after ``after``, waiting up to ``block_seconds`` for one."""
        link = self._inbox_link
        if link is None or not link.lean:
            found = await self._redis.xread({key: after}, block=self._block_ms)
            return [entry for _, entries in found or () for entry in entries]
        # One answer in three arrives here through haproxy: redis-py's CPU per read
        # would be a good part of what forwarding it costs.
        reply = await link.call("XREAD", "BLOCK", self._block_ms, "STREAMS", key, after)
        entries: list[tuple[bytes, dict[bytes, bytes]]] = []
        for _, found in array_items(reply):
            for entry_id, flat in array_items(found):
                fields = array_items(flat)
                entries.append((entry_id, dict(zip(fields[::2], fields[1::2], strict=True))))
        return entries


def _owner(raw: object) -> CallOwner | None:
    if not isinstance(raw, bytes):
        return None
    record = as_object(json.loads(raw))
    if record is None:
        return None
    owner, stream = record.get("owner"), record.get("stream")
    request_id = as_request_id(record.get("id"))
    if not isinstance(owner, str) or request_id is None:
        return None
    return CallOwner(owner, request_id, stream if isinstance(stream, str) else None)
