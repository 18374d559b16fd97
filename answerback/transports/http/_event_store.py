"""Where SSE events are kept so a client that lost its connection can resume.

Every event the server sends on a stream is stored first; a client reconnecting with
``Last-Event-ID`` gets everything after that event replayed. The default store keeps a
bounded number of events per stream in memory. Implement ``EventStore`` on shared
storage (Redis, a database) so several server instances can resume each other's streams.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import Protocol

from answerback.jsonrpc import JSONObject

ReplaySink = Callable[[str, JSONObject], Awaitable[None]]


class EventStore(Protocol):
    """Storage for resumable SSE streams."""

    async def store_event(self, stream_id: str, message: JSONObject) -> str:
        """Keep ``message`` as the next event of ``stream_id``; return its event id."""
        ...

    async def replay_events_after(self, last_event_id: str, send: ReplaySink) -> str | None:
        """Send every event after ``last_event_id`` on its stream, in order, and return the
        stream's id; ``None`` if the event id is unknown (nothing is sent)."""
        ...

    async def forget_stream(self, stream_id: str) -> None:
        """Drop a finished stream's events."""
        ...


class InMemoryEventStore:
    """A bounded, per-process event store: the default."""

    def __init__(self, max_events_per_stream: int = 1000, max_streams: int = 10_000) -> None:
        self._max_events = max_events_per_stream
        self._max_streams = max_streams
        self._streams: OrderedDict[str, list[tuple[int, JSONObject]]] = OrderedDict()
        self._next_seq: dict[str, int] = {}

    async def store_event(self, stream_id: str, message: JSONObject) -> str:
        events = self._streams.get(stream_id)
        if events is None:
            events = self._streams[stream_id] = []
            while len(self._streams) > self._max_streams:
                oldest, _ = self._streams.popitem(last=False)
                self._next_seq.pop(oldest, None)
        seq = self._next_seq.get(stream_id, 0)
        self._next_seq[stream_id] = seq + 1
        events.append((seq, message))
        if len(events) > self._max_events:
            del events[: len(events) - self._max_events]
        return f"{stream_id}_{seq}"

    async def replay_events_after(self, last_event_id: str, send: ReplaySink) -> str | None:
        stream_id, _, seq_text = last_event_id.rpartition("_")
        if stream_id not in self._streams or not seq_text.isdigit():
            return None
        last_seq = int(seq_text)
        for seq, message in list(self._streams[stream_id]):
            if seq > last_seq:
                await send(f"{stream_id}_{seq}", message)
        return stream_id

    async def forget_stream(self, stream_id: str) -> None:
        self._streams.pop(stream_id, None)
        self._next_seq.pop(stream_id, None)

    def __len__(self) -> int:
        return len(self._streams)
