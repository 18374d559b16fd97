"""SSE events in Redis Streams, one per session stream, so a client resumes on any replica.

Each stream is capped (approximately) at ``max_events_per_stream`` entries and expires
``max_age_seconds`` after its last event. An event id is the stream's id and the Redis
entry id; a resume from an event that is no longer kept is never replayed with a
hole (the server refuses it, or ends a finished stream at once). ``wait_events_after``
(``XREAD BLOCK``) lets a replica follow a stream that another replica writes, live.
"""

from __future__ import annotations

from typing import Any

from answerback.transports.http._event_store import ReplaySink
from answerback.transports.http._redis_client import milliseconds, reaching
from answerback.transports.http._redis_link import RedisLink, Script, array_items

_STORE_EVENT = Script("""
local entry_id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '*', 'd', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return entry_id
""")


_FIRST_ENTRY = "0-1"
_OPEN_STREAM = Script(f"""
redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[1], '{_FIRST_ENTRY}', 'd', '')
redis.call('PEXPIRE', KEYS[1], ARGV[2])
""")


class RedisEventStore:
    """Events under ``{key_prefix}events:{stream_id}``; ``redis`` is a shared client."""

    def __init__(
        self,
        redis: Any,
        link: RedisLink,
        url: str,
        *,
        key_prefix: str = "answerback:",
        max_events_per_stream: int = 1000,
        max_age_seconds: float = 300.0,
    ) -> None:
        for name, value in (
            ("max_events_per_stream", max_events_per_stream),
            ("max_age_seconds", max_age_seconds),
        ):
            if value <= 0:
                raise ValueError(f"{name} must be positive, got {value!r}")
        self._redis = redis
        self._link = link
        self._url = url
        self._prefix = f"{key_prefix}events:"
        self.max_events_per_stream = max_events_per_stream
        self.max_age_seconds = max_age_seconds

    async def store_event(self, stream_id: str, data: bytes) -> str:
        key = self._prefix + stream_id
        args = [self.max_events_per_stream, data, milliseconds(self.max_age_seconds)]
        with reaching(self._url):
            # A script, not two commands: every event of every call comes here.
            entry_id = await self._link.eval(_STORE_EVENT, [key], args)
        assert isinstance(entry_id, bytes)
        return f"{stream_id}_{entry_id.decode()}"

    def open_stream(self, stream_id: str) -> str | None:
        # The first entry of a new stream can take the smallest id there is, so its id
        # is known without waiting for Redis; entries after it get larger ones.
        key = self._prefix + stream_id
        ttl_ms = milliseconds(self.max_age_seconds)
        args = (_OPEN_STREAM.text, 1, key, self.max_events_per_stream, ttl_ms)
        if not self._link.send_ahead("EVAL", *args):
            return None
        return f"{stream_id}_{_FIRST_ENTRY}"

    async def replay_events_after(self, last_event_id: str, send: ReplaySink) -> str | None:
        parsed = _parse(last_event_id)
        if parsed is None:
            return None
        stream_id, entry_id = parsed
        key = self._prefix + stream_id
        with reaching(self._url):
            if not await self._entries(key, entry_id, entry_id):
                return None  # gone (trimmed, expired, forgotten) or never ours
            entries = await self._entries(key, f"({entry_id}", "+")
        for found_id, data in entries:
            await send(f"{stream_id}_{found_id.decode()}", data)
        return stream_id

    async def _entries(self, key: str, start: str, end: str) -> list[tuple[bytes, bytes]]:
        """``XRANGE`` as ``(entry id, data)``, read through the link when it can (after
        a stream forgotten through it, so the forgetting is seen)."""
        if not self._link.lean:
            found = await self._redis.xrange(key, start, end)
            return [(entry_id, fields.get(b"d", b"")) for entry_id, fields in found]
        entries: list[tuple[bytes, bytes]] = []
        for entry in array_items(await self._link.call("XRANGE", key, start, end)):
            entry_id, flat = array_items(entry)
            fields = array_items(flat)
            data = next(
                (v for f, v in zip(fields[::2], fields[1::2], strict=True) if f == b"d"), b""
            )
            entries.append((entry_id, data))
        return entries

    async def wait_events_after(
        self, stream_id: str, after_event_id: str, wait_seconds: float
    ) -> list[tuple[str, bytes]]:
        parsed = _parse(after_event_id)
        if parsed is None or parsed[0] != stream_id:
            raise ValueError(f"{after_event_id!r} is not an event of stream {stream_id!r}")
        key = self._prefix + stream_id
        with reaching(self._url):
            found = await self._redis.xread({key: parsed[1]}, block=milliseconds(wait_seconds))
        events: list[tuple[str, bytes]] = []
        for _, entries in found or ():
            for entry_id, fields in entries:
                events.append((f"{stream_id}_{entry_id.decode()}", fields.get(b"d", b"")))
        return events

    def stored_at_ms(self, event_id: str) -> int | None:
        # A Redis entry id starts with the time Redis added it, in milliseconds; the
        # first event of a request stream (0-1) takes the smallest id, saying nothing.
        parsed = _parse(event_id)
        ms = int(parsed[1].partition("-")[0]) if parsed is not None else 0
        return ms or None

    async def forget_stream(self, stream_id: str) -> None:
        with reaching(self._url):
            # Nobody waits for this: the next command of this link runs after it.
            if not self._link.send_ahead("DEL", self._prefix + stream_id):
                await self._link.call("DEL", self._prefix + stream_id)


def _parse(event_id: str) -> tuple[str, str] | None:
    """``(stream_id, entry_id)`` of an event id this store gave, else ``None``."""
    stream_id, _, entry_id = event_id.rpartition("_")
    ms, dash, seq = entry_id.partition("-")
    if not (stream_id and dash and _digits(ms) and _digits(seq)):
        return None
    return stream_id, entry_id


def _digits(text: str) -> bool:
    return 0 < len(text) <= 20 and text.isascii() and text.isdigit()
