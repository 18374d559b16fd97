"""What a streamable HTTP server keeps beyond one request, as one replaceable bundle.

Four seams (sessions, events, the message bus to a call's owner, the notification bus)
plus this process's identity and liveness. ``InMemoryState`` keeps everything in the
process: one server, no setup, today's behaviour. ``RedisState`` shares it through Redis,
so several replicas behind a plain round-robin load balancer serve the same sessions.
Swapping the bundle touches neither the ASGI code nor ``MCPServer``.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncGenerator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Protocol

from answerback._options import having_methods
from answerback.transports.http._event_store import EventStore, InMemoryEventStore
from answerback.transports.http._message_bus import InMemoryMessageBus, MessageBus
from answerback.transports.http._notification_bus import NotificationBus
from answerback.transports.http._replicas import InMemoryReplicas, ReplicaLiveness
from answerback.transports.http._sessions import InMemorySessionManager, SessionManager
from answerback.transports.http._used_states import UsedStates


class StateUnavailable(Exception):
    """The shared state could not be reached: the request is refused (503), never
    served from this process's memory, which the other replicas cannot see."""


class StateRefused(StateUnavailable):
    """The shared state answers but refuses a command with an error reply (Redis's
    ``NOPERM`` from an ACL, ``WRONGTYPE`` on a key another program wrote): waiting or
    restarting it will not cure that, a change to its configuration or data will."""

    def __init__(self, where: str, reply: str) -> None:
        self.where = where
        """The state's address, without its password."""
        self.reply = reply
        """Its error reply."""
        super().__init__(f"Redis at {where} refused: {reply}")


class StateFull(StateUnavailable):
    """The shared state answers but refuses to store more (Redis at its ``maxmemory``):
    refused as when it cannot be reached, though the fix is another (more memory)."""


class ServerState(Protocol):
    """The bundle a ``StreamableHTTPApp`` keeps its state in."""

    @property
    def shared(self) -> bool:
        """Whether other processes share this state (turns on cross-replica routing)."""
        ...

    @property
    def replica_id(self) -> str:
        """This process's name among the replicas (random per process by default)."""
        ...

    @property
    def sessions(self) -> SessionManager:
        """The records of handshake-era sessions (what a process needs to serve one)."""
        ...

    @property
    def events(self) -> EventStore:
        """The SSE events kept for ``Last-Event-ID`` (followable, when shared)."""
        ...

    @property
    def messages(self) -> MessageBus:
        """Open calls by owner, questions awaiting one answer, and each process's inbox."""
        ...

    @property
    def replicas(self) -> ReplicaLiveness:
        """This process's heartbeat, and which other processes are alive."""
        ...

    @property
    def notifications(self) -> NotificationBus | None:
        """The notification bus, or ``None``: each server delivers its own."""
        ...

    @property
    def used_states(self) -> UsedStates | None:
        """Where single-use ``requestState`` is claimed, or ``None``: each server's own."""
        ...

    def running(self) -> AbstractAsyncContextManager[bytes]:
        """Connect for the application's lifespan; yields the key that authenticates
        question ids (the same on every replica)."""
        ...

    async def agree_question_key(self, used: bytes) -> tuple[bytes, frozenset[bytes]]:
        """Publish ``used``, the key this process mints question ids with, if the
        deployment has none (the shared state lost it); return the key every process
        is to mint with now, and the keys recently used, whose ids are all genuine."""
        ...


class InMemoryState:
    """Everything in this process: the default, for one server process."""

    shared = False

    def __init__(self, *, event_store: EventStore | None = None) -> None:
        if event_store is not None:
            having_methods(
                "event_store",
                event_store,
                ("store_event", "replay_events_after", "forget_stream"),
                "an EventStore, such as InMemoryEventStore(), or None",
            )
        self.replica_id = secrets.token_hex(8)
        self.sessions = InMemorySessionManager()
        self.events: EventStore = event_store if event_store is not None else InMemoryEventStore()
        self.messages = InMemoryMessageBus(self.replica_id)
        self.replicas = InMemoryReplicas(self.replica_id)
        self.notifications: NotificationBus | None = None
        self.used_states: UsedStates | None = None
        self._key = secrets.token_bytes(32)

    def running(self) -> AbstractAsyncContextManager[bytes]:
        """For the application's lifespan: nothing to connect; yields a key of its own."""
        return self._running()

    @asynccontextmanager
    async def _running(self) -> AsyncGenerator[bytes]:
        yield self._key

    async def agree_question_key(self, used: bytes) -> tuple[bytes, frozenset[bytes]]:
        """One process: its own key is the deployment's."""
        return self._key, frozenset((self._key,))
