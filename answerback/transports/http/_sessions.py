"""The session manager seam: where a legacy session's record lives.

A session's record is what any process needs to serve the session's next request: the
negotiated version, the ``initialize`` request (replayed into a fresh connection), the
state-setting messages since (log level, resource subscriptions, replayed in order) and
who opened it. A process that gets a request for a session it has never served builds
its own connection from the record, so replicas behind a plain load balancer need no
sticky routing. The default keeps records in this process, as one process needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from answerback.jsonrpc import JSONObject

STATE_METHODS = frozenset({"logging/setLevel", "resources/subscribe", "resources/unsubscribe"})
"""The requests that change what a session's connection remembers: replayed in order
when another process builds its connection for the session."""


@dataclass(slots=True)
class SessionRecord:
    """What a process needs to serve a session it has not served before."""

    id: str
    protocol_version: str
    initialize: JSONObject
    """The ``initialize`` request that opened the session."""
    principal: str | None = None
    """Who opened it (an authenticator's principal): nobody else may use the session."""
    state: list[JSONObject] = field(default_factory=list[JSONObject])
    """The state-setting requests since (``STATE_METHODS``), oldest first."""


class SessionManager(Protocol):
    """Create, find (sliding their expiry), extend and end session records."""

    async def create(self, record: SessionRecord, idle_seconds: float) -> None:
        """Keep a new record for ``idle_seconds`` after its last use."""
        ...

    async def touch(self, session_id: str, idle_seconds: float) -> SessionRecord | None:
        """The record, its expiry pushed back; ``None`` if it ended or expired."""
        ...

    async def add_state(self, session_id: str, message: JSONObject) -> None:
        """Remember a state-setting request of the session's (``STATE_METHODS``)."""
        ...

    async def end(self, session_id: str) -> None:
        """Forget the record: the session was deleted."""
        ...


class InMemorySessionManager:
    """Records in this process: the default, for one process serving every session.

    Expiry is left to the application's idle reaper, which ends a session it reaps.
    """

    def __init__(self) -> None:
        self._records: dict[str, SessionRecord] = {}

    def __len__(self) -> int:
        return len(self._records)

    async def create(self, record: SessionRecord, idle_seconds: float) -> None:
        self._records[record.id] = record

    async def touch(self, session_id: str, idle_seconds: float) -> SessionRecord | None:
        return self._records.get(session_id)

    async def add_state(self, session_id: str, message: JSONObject) -> None:
        record = self._records.get(session_id)
        if record is not None:
            record.state.append(message)

    async def end(self, session_id: str) -> None:
        self._records.pop(session_id, None)
