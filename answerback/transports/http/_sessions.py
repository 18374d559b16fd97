"""The session manager seam: where a legacy session's record lives.

A session's record is what any process needs to serve the session's next request: the
negotiated version, the ``initialize`` request (replayed into a fresh connection), the
connection's state (its log level and resource subscriptions, as the requests that set
them) and who opened it. A process that gets a request for a session it has never
served builds its own connection from the record, so replicas behind a plain load
balancer need no sticky routing. The default keeps records in this process, as one
process needs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

import anyio

from answerback.jsonrpc import JSONObject
from answerback.jsonrpc._endpoint import as_object

STATE_METHODS = frozenset({"logging/setLevel", "resources/subscribe", "resources/unsubscribe"})
"""The requests that change what a session's connection remembers: recorded (once the
connection has accepted them) for the other processes that serve the session."""
_LEVEL = "level"
_RESOURCE = "resource:"


def state_entry(message: JSONObject) -> tuple[str, JSONObject | None]:
    """Where an accepted state-setting request goes in its session's record, and what is
    kept there: one entry for the log level, one per subscribed URI (the request as it
    is replayed), none for a URI unsubscribed. A request repeated replaces its own
    entry, so a record is as large as the state it describes, however many requests
    made it (a record that was a log of them grew with every one)."""
    method = message.get("method")
    params = as_object(message.get("params")) or {}
    entry: JSONObject = {"jsonrpc": "2.0", "method": method, "params": params}
    if method == "logging/setLevel":
        return _LEVEL, entry
    key = f"{_RESOURCE}{params.get('uri')}"
    return key, (entry if method == "resources/subscribe" else None)


def undoing(key: str) -> JSONObject:
    """The request that takes a removed entry back out of a connection that replayed it
    (only subscriptions leave a record: an unsubscribe)."""
    uri = key.removeprefix(_RESOURCE)
    return {"jsonrpc": "2.0", "method": "resources/unsubscribe", "params": {"uri": uri}}


@dataclass(slots=True)
class SessionRecord:
    """What a process needs to serve a session it has not served before."""

    id: str
    protocol_version: str
    initialize: JSONObject
    """The ``initialize`` request that opened the session."""
    principal: str | None = None
    """Who opened it (an authenticator's principal): nobody else may use the session."""
    state: dict[str, JSONObject] = field(default_factory=dict[str, JSONObject])
    """The connection's state as requests to replay, by ``state_entry``'s key."""


class SessionManager(Protocol):
    """Create, find (sliding their expiry), extend and end session records."""

    async def create(self, record: SessionRecord, idle_seconds: float) -> None:
        """Keep a new record for ``idle_seconds`` after its last use."""
        ...

    async def touch(self, session_id: str, idle_seconds: float) -> SessionRecord | None:
        """The record, its expiry pushed back and the session noted as used now (a
        request names it, or a notification is for its GET stream); ``None`` if it
        ended or expired."""
        ...

    async def mark_used(self, session_ids: Sequence[str], idle_seconds: float) -> set[str]:
        """Note sessions as used now, their expiry pushed back, as ``touch`` does, without
        reading them: a client is connected to each (a stream open, an answer awaited),
        which is use, though no request names the session meanwhile. Returns those whose
        record has ended or expired: nothing else tells a replica that a session it
        serves was deleted through another one."""
        ...

    async def ended(self, session_ids: Sequence[str]) -> set[str]:
        """Those of the sessions whose record has ended or expired, the others left as
        they are (not noted as used): a replica ends its connections for them rather
        than count them against ``max_sessions`` and their caller's share."""
        ...

    async def unused_for(self, session_id: str) -> float | None:
        """Seconds since the session was last used, through any process; ``None`` if it
        has not been since its ``initialize`` (or has ended). A process must not end a
        session everywhere for idling when it is in use through another."""
        ...

    async def set_state(self, session_id: str, key: str, entry: JSONObject | None) -> None:
        """Keep ``entry`` under ``key`` in the record's state, or drop the key (``None``)."""
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
        self._used_at: dict[str, float] = {}

    def __len__(self) -> int:
        return len(self._records)

    async def create(self, record: SessionRecord, idle_seconds: float) -> None:
        self._records[record.id] = record

    async def touch(self, session_id: str, idle_seconds: float) -> SessionRecord | None:
        await self.mark_used([session_id], idle_seconds)
        return self._records.get(session_id)

    async def mark_used(self, session_ids: Sequence[str], idle_seconds: float) -> set[str]:
        now = anyio.current_time()
        for session_id in session_ids:
            if session_id in self._records:
                self._used_at[session_id] = now
        return await self.ended(session_ids)

    async def ended(self, session_ids: Sequence[str]) -> set[str]:
        return {session_id for session_id in session_ids if session_id not in self._records}

    async def unused_for(self, session_id: str) -> float | None:
        used_at = self._used_at.get(session_id)
        return None if used_at is None else anyio.current_time() - used_at

    async def set_state(self, session_id: str, key: str, entry: JSONObject | None) -> None:
        record = self._records.get(session_id)
        if record is None:
            return
        if entry is None:
            record.state.pop(key, None)
        else:
            record.state[key] = entry

    async def end(self, session_id: str) -> None:
        self._records.pop(session_id, None)
        self._used_at.pop(session_id, None)
