"""Where SSE events are kept so a client that lost its connection can resume.

Every event the server sends on a stream is stored first; a client reconnecting with
``Last-Event-ID`` gets everything after that event replayed. The server forgets a
stream's events once they cannot be asked for again: its final answer was written to a
live connection, its request was cancelled, or its session ended. The default store
keeps events in memory, bounded by count, bytes and age. Implement ``EventStore`` on
shared storage (Redis, a database) so several server instances can resume each other's
streams.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from time import monotonic
from typing import Protocol, runtime_checkable

from answerback._options import positive_int, positive_seconds

ReplaySink = Callable[[str, bytes], Awaitable[None]]


class EventStore(Protocol):
    """Storage for resumable SSE streams.

    An event's ``data`` is the JSON text of one message (UTF-8), or empty for the
    priming event that opens a stream. Event ids must name their stream: the server
    finds the stream from the id alone. Make an id the stream's id, ``_``, then a
    number (or ``digits-digits``, as Redis entry ids are), as the stores here do: the
    server then still knows the stream once its events are gone, so a client resuming
    a finished stream is told it has ended instead of that its event id is unknown.
    """

    async def store_event(self, stream_id: str, data: bytes) -> str:
        """Keep ``data`` as the next event of ``stream_id``; return its event id."""
        ...

    async def replay_events_after(self, last_event_id: str, send: ReplaySink) -> str | None:
        """Send every event after ``last_event_id`` on its stream, in order, and return the
        stream's id; ``None`` (sending nothing) if the id is unknown, malformed, or older
        than what is still kept, so that a replay never silently skips events."""
        ...

    async def forget_stream(self, stream_id: str) -> None:
        """Drop a stream's events: nobody will ask for them again."""
        ...


@dataclass(slots=True)
class _StreamEvents:
    seqs: deque[int] = field(default_factory=deque[int])
    trimmed_through: int = -1
    """The newest event of this stream dropped by the per-stream limit."""


class InMemoryEventStore:
    """A per-process event store, bounded three ways: the default.

    Past ``max_events`` events or ``max_bytes`` bytes in all, the oldest events go
    first; events older than ``max_age_seconds`` go too; a stream keeps at most its
    ``max_events_per_stream`` newest events. A client asking to resume a running
    request's stream from an event that has gone is refused (410) and fails its
    request, rather than get a replay with a hole; a finished stream just ends.
    """

    def __init__(
        self,
        *,
        max_events: int = 10_000,
        max_bytes: int = 64 * 1024 * 1024,
        max_age_seconds: float = 300.0,
        max_events_per_stream: int = 1000,
    ) -> None:
        self.max_events = positive_int("max_events", max_events, "events")
        self.max_bytes = positive_int("max_bytes", max_bytes, "bytes")
        self.max_age_seconds = positive_seconds("max_age_seconds", max_age_seconds)
        self.max_events_per_stream = positive_int(
            "max_events_per_stream", max_events_per_stream, "events"
        )
        # Every event, oldest first, by its sequence number (unique across streams, so
        # an id is never reused, even for a stream forgotten and written to again).
        self._events: OrderedDict[int, tuple[str, float, bytes]] = OrderedDict()
        self._streams: dict[str, _StreamEvents] = {}
        self._next_seq = 0
        self._evicted_through = -1
        """The newest event dropped by the store-wide limits (they drop oldest first)."""
        self._bytes = 0

    @property
    def stored_bytes(self) -> int:
        """The bytes of event data held now."""
        return self._bytes

    @property
    def event_count(self) -> int:
        """The events held now."""
        return len(self._events)

    def __len__(self) -> int:
        """The streams with events held now."""
        return len(self._streams)

    async def store_event(self, stream_id: str, data: bytes) -> str:
        """Keep ``data`` as the next event of ``stream_id``, dropping what the limits no
        longer allow; return the new event's id."""
        return self.store_event_now(stream_id, data)

    def store_event_now(self, stream_id: str, data: bytes) -> str:
        """``store_event``, which never has to wait here (see ``ImmediateEventStore``)."""
        now = monotonic()
        seq = self._next_seq
        self._next_seq += 1
        stream = self._streams.get(stream_id)
        if stream is None:
            stream = self._streams[stream_id] = _StreamEvents()
        stream.seqs.append(seq)
        self._events[seq] = (stream_id, now, data)
        self._bytes += len(data)
        if len(stream.seqs) > self.max_events_per_stream:
            oldest = stream.seqs.popleft()
            stream.trimmed_through = oldest
            self._bytes -= len(self._events.pop(oldest)[2])
        self._evict(now)
        return f"{stream_id}_{seq}"

    async def replay_events_after(self, last_event_id: str, send: ReplaySink) -> str | None:
        """Send the events after ``last_event_id`` on its stream and return the stream's
        id; ``None`` for an id this store never gave, or whose successors have gone."""
        stream_id, _, seq_text = last_event_id.rpartition("_")
        # ASCII digits only, and no more than a sequence number can have: a header may
        # hold anything (other scripts' digits, thousands of digits).
        if not (0 < len(seq_text) <= 19 and seq_text.isascii() and seq_text.isdigit()):
            return None
        last_seq = int(seq_text)
        self._evict(monotonic())
        stream = self._streams.get(stream_id)
        if (
            stream is None
            or last_seq >= self._next_seq
            or last_seq < self._evicted_through
            or last_seq < stream.trimmed_through
        ):
            return None
        for seq in [seq for seq in stream.seqs if seq > last_seq]:
            event = self._events.get(seq)
            if event is not None:
                await send(f"{stream_id}_{seq}", event[2])
        return stream_id

    async def forget_stream(self, stream_id: str) -> None:
        """Drop a stream's events: nobody will ask for them again."""
        stream = self._streams.pop(stream_id, None)
        if stream is not None:
            for seq in stream.seqs:
                self._bytes -= len(self._events.pop(seq)[2])

    def _evict(self, now: float) -> None:
        events = self._events
        too_old = now - self.max_age_seconds
        while events:
            seq, (stream_id, stored_at, data) = next(iter(events.items()))
            if (
                len(events) <= self.max_events
                and self._bytes <= self.max_bytes
                and stored_at >= too_old
            ):
                return
            del events[seq]
            self._bytes -= len(data)
            self._evicted_through = seq
            stream = self._streams[stream_id]
            stream.seqs.popleft()  # a stream's events are in the store's order too
            if not stream.seqs:
                del self._streams[stream_id]


@runtime_checkable
class StreamOpeningEventStore(EventStore, Protocol):
    """An event store that can store the priming event of a stream never written to
    before without making its caller wait (a remote store saves a round trip per
    request stream)."""

    def open_stream(self, stream_id: str) -> str | None:
        """Store an empty first event of ``stream_id``, which has no events yet, and
        return its id at once; ``None`` if that cannot be done without waiting (then
        ``store_event`` it)."""
        ...


@runtime_checkable
class ImmediateEventStore(EventStore, Protocol):
    """An event store that keeps an event without waiting (it holds events in this
    process's memory). A session then routes each message of the server's in the
    server's own step, instead of waking a task to store it: a loop turn fewer per
    message."""

    def store_event_now(self, stream_id: str, data: bytes) -> str:
        """``store_event``, done at once."""
        ...


@runtime_checkable
class FollowableEventStore(EventStore, Protocol):
    """An event store that several processes share: one of them can follow a stream
    another writes, so a client resuming on any replica sees the rest of its stream."""

    async def wait_events_after(
        self, stream_id: str, after_event_id: str, wait_seconds: float
    ) -> list[tuple[str, bytes]]:
        """The events of ``stream_id`` after ``after_event_id``, waiting up to
        ``wait_seconds`` for one if there are none yet (then an empty list)."""
        ...


@runtime_checkable
class TimedEventStore(EventStore, Protocol):
    """An event store whose event ids say when each event was stored, by the shared
    state's clock, which also stamps its notification bus (``ReplayingNotificationBus``):
    a GET stream's last event says until when a replica was serving it."""

    def stored_at_ms(self, event_id: str) -> int | None:
        """When the event ``event_id`` was stored (milliseconds since the epoch, by the
        shared state's clock); ``None`` if its id does not say."""
        ...
