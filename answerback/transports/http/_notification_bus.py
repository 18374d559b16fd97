"""The notification bus: how a server-wide notification reaches every replica.

``notify_tools_changed()`` and friends run on one replica, but the clients that must
hear about the change are spread over all of them (legacy sessions whose home is
elsewhere, 2026-07-28 ``subscriptions/listen`` streams held open on each). So the server
publishes a ``Notice`` on the bus, and every replica subscribed to it receives every
notice, in publishing order, and delivers it to its own local listeners. A notice
carries an id made by its publisher, the same however often it is delivered, so a
receiver can drop a duplicate. In one process the bus is a fan-out of memory streams;
``RedisNotificationBus`` spans machines.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from answerback.jsonrpc import JSONObject
from answerback.transports.http._used_states import UsedStates


@dataclass(frozen=True, slots=True)
class Notice:
    """One server-wide notification on its way to every replica."""

    id: str
    """Made by the publisher, unique, and the same on every delivery (for dedupe)."""
    origin: str
    """Who published it (a receiver skips its own: it delivered them when publishing)."""
    method: str
    params: JSONObject | None = None


class NotificationBus(Protocol):
    """Carries notices from the replica that publishes them to every replica."""

    async def publish(self, notice: Notice) -> None:
        """Send ``notice`` to every subscriber (the publisher's own included)."""
        ...

    def subscribe(self) -> AbstractAsyncContextManager[AsyncIterator[Notice]]:
        """Every notice published after entering, in order, until exit."""
        ...


READER_LONGEST_RETRY_SECONDS = 5.0
"""The longest a bus's reader waits before reading again after a failed read: how far
behind its publisher a reader that is up may fall. A GET stream's resume looks back that
far (``Replication``), so a replaying bus's reader must not wait longer."""


@dataclass(frozen=True, slots=True)
class NoticesSince:
    """The newest notices a bus keeps from a time on (``ReplayingNotificationBus``)."""

    notices: list[Notice]
    """In publishing order."""
    complete: bool
    """``False`` if notices from that time on may be left out: older than the ``limit``
    newest, or trimmed by the bus."""


@runtime_checkable
class ReplayingNotificationBus(NotificationBus, Protocol):
    """A bus that keeps its notices, stamped by the shared state's clock, which also
    stamps the stored SSE events (``TimedEventStore``): a GET stream resumed after no
    replica held it for a while gets the broadcasts raised meanwhile from it. Its
    readers retry a failed read within ``READER_LONGEST_RETRY_SECONDS``."""

    async def notices_since(self, ms: int, limit: int) -> NoticesSince:
        """The newest notices published at or after ``ms`` (milliseconds since the
        epoch, by the shared state's clock), in publishing order, reading at most
        ``limit`` of the bus's entries; ``ConnectionError`` if unreachable."""
        ...


class InMemoryNotificationBus:
    """The bus inside one process (the default): each subscriber gets its own queue."""

    def __init__(self) -> None:
        self._subscribers: set[MemoryObjectSendStream[Notice]] = set()

    async def publish(self, notice: Notice) -> None:
        """Queue ``notice`` for every current subscriber (the publisher's own included)."""
        for subscriber in list(self._subscribers):
            # Unbounded: a publisher never waits on a slow subscriber.
            subscriber.send_nowait(notice)

    @asynccontextmanager
    async def subscribe(self) -> AsyncGenerator[AsyncIterator[Notice], None]:
        """Every notice published from now until the block exits, in order."""
        send, receive = anyio.create_memory_object_stream[Notice](math.inf)
        self._subscribers.add(send)
        try:
            with receive:
                yield receive
        finally:
            self._subscribers.discard(send)
            send.close()


def require_asyncio(what: str) -> None:
    """Refuse to run redis-py's client on another event loop, saying why."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        raise RuntimeError(
            f"{what} needs asyncio: redis-py's client runs only on asyncio, and this code "
            "runs on another event loop (trio?). Serve the app with uvicorn (asyncio) or "
            "anyio's asyncio backend, or use InMemoryState."
        ) from None


class SharedState(Protocol):
    """What a server attaches to (``MCPServer.attach_state``): the HTTP app's state.
    ``None`` for either keeps the server's own (local delivery, its own record)."""

    @property
    def notifications(self) -> NotificationBus | None: ...

    @property
    def used_states(self) -> UsedStates | None: ...
