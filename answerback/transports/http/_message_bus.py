"""The message bus seam: a client's answer or cancellation reaches the process that owns
the call it is for.

Each tool call has one owner, the process that got its POST: only there does the handler
wait. Behind a plain load balancer the client's answer to a question the handler asked
(or its cancellation of the call) arrives at any process, so the bus records which
process owns each open call, keeps each question the server asked until it is answered
once, and carries a message to its owner's inbox. The default serves one process, where
every call is owned here.
"""

from __future__ import annotations

import enum
import math
from collections.abc import AsyncGenerator, AsyncIterator
from dataclasses import dataclass
from typing import Protocol

import anyio
from anyio.streams.memory import MemoryObjectSendStream

from answerback.jsonrpc import JSONObject, RequestId


@dataclass(frozen=True, slots=True)
class CallOwner:
    """Who owns an open call of a session, and the stream it is answered on."""

    replica_id: str
    request_id: RequestId
    stream_id: str | None
    """Its SSE stream; ``None`` for a call answered as one JSON body."""


class Forwarded(enum.Enum):
    """What became of an answer forwarded to the replica that asked its question."""

    SENT = "sent"
    """The first answer: it is in the owner's inbox."""
    REFUSED = "refused"
    """A duplicate answer: nothing was sent."""
    OWNER_STOPPED = "owner stopped"
    """The owner is known to have stopped (it shut down, or missed its beats and a
    call of its was ended for it): the owner was sent the refusal, not the answer, so
    that if it lives after all its question fails instead of waiting for ever."""


class MessageBus(Protocol):
    """Open calls by owner, the questions awaiting an answer, and each process's inbox."""

    async def open_call(self, session_id: str, owner: CallOwner) -> bool:
        """Record a call this process now owns; ``False`` (recording nothing) if the
        session already has an open call with that request id."""
        ...

    async def close_call(self, session_id: str, request_id: RequestId) -> CallOwner | None:
        """Forget an open call; returns it to the one caller that closed it (``None``
        if it was not open), so two processes never both finish it."""
        ...

    async def end_call(self, session_id: str, request_id: RequestId) -> None:
        """Forget an open call of this process's whose answer was stored: as
        ``close_call``, but the caller need not learn who closed it, so the state may
        do it without a round trip of its own (after the answer's event, never before)."""
        ...

    async def call_by_request(self, session_id: str, request_id: RequestId) -> CallOwner | None:
        """The open call with this request id."""
        ...

    async def call_by_stream(self, session_id: str, stream_id: str) -> CallOwner | None:
        """The open call answered on this stream."""
        ...

    async def expect_answer(self, session_id: str, question_id: str, ttl_seconds: float) -> None:
        """The server asked the client ``question_id``: accept one answer to it."""
        ...

    async def claim_answer(self, session_id: str, question_id: str) -> bool:
        """An answer to ``question_id`` arrived: ``True`` for the first one only,
        ``False`` for a duplicate. A shared state that has lost the question (Redis
        restarted) says ``True``: its owner knows whether the question still waits."""
        ...

    async def send(self, replica_id: str, session_id: str, message: JSONObject) -> None:
        """Put a client's message in the inbox of the process that owns its call."""
        ...

    async def forward_answer(
        self,
        replica_id: str,
        session_id: str,
        question_id: str,
        message: JSONObject,
        refusal: JSONObject,
    ) -> Forwarded:
        """``claim_answer``, then ``send`` the first answer to ``replica_id``, the
        question's owner, or ``refusal`` (an error response to the question) if that
        owner is known to have stopped, as one step (one round trip where the state is
        remote). An owner whose heartbeat merely lapsed still gets the answer."""
        ...

    def inbox(self) -> AsyncIterator[tuple[str, JSONObject]]:
        """This process's inbox, as ``(session_id, message)``, until cancelled."""
        ...


class InMemoryMessageBus:
    """The bus of one process: every call is owned here, the inbox is a local queue."""

    def __init__(self, replica_id: str) -> None:
        self.replica_id = replica_id
        self._calls: dict[tuple[str, RequestId], CallOwner] = {}
        self._questions: set[tuple[str, str]] = set()
        self._send: MemoryObjectSendStream[tuple[str, JSONObject]] | None = None
        """The open inbox's end to write to (``None`` while nobody reads the inbox)."""

    async def open_call(self, session_id: str, owner: CallOwner) -> bool:
        key = (session_id, owner.request_id)
        if key in self._calls:
            return False
        self._calls[key] = owner
        return True

    async def close_call(self, session_id: str, request_id: RequestId) -> CallOwner | None:
        return self._calls.pop((session_id, request_id), None)

    async def end_call(self, session_id: str, request_id: RequestId) -> None:
        self._calls.pop((session_id, request_id), None)

    async def call_by_request(self, session_id: str, request_id: RequestId) -> CallOwner | None:
        return self._calls.get((session_id, request_id))

    async def call_by_stream(self, session_id: str, stream_id: str) -> CallOwner | None:
        for (owning_session, _), owner in self._calls.items():
            if owning_session == session_id and owner.stream_id == stream_id:
                return owner
        return None

    async def expect_answer(self, session_id: str, question_id: str, ttl_seconds: float) -> None:
        self._questions.add((session_id, question_id))

    async def claim_answer(self, session_id: str, question_id: str) -> bool:
        key = (session_id, question_id)
        if key not in self._questions:
            return False
        self._questions.discard(key)
        return True

    async def send(self, replica_id: str, session_id: str, message: JSONObject) -> None:
        if replica_id != self.replica_id:
            raise ValueError(
                f"replica {replica_id!r} is not this process ({self.replica_id!r}): an "
                "in-memory message bus serves one process; use RedisState for several."
            )
        if self._send is None:
            raise RuntimeError("nobody reads this process's inbox: its lifespan is not running")
        self._send.send_nowait((session_id, message))  # unbounded: never blocks

    async def forward_answer(
        self,
        replica_id: str,
        session_id: str,
        question_id: str,
        message: JSONObject,
        refusal: JSONObject,
    ) -> Forwarded:
        if not await self.claim_answer(session_id, question_id):
            return Forwarded.REFUSED
        await self.send(replica_id, session_id, message)  # only this process is alive here
        return Forwarded.SENT

    async def inbox(self) -> AsyncGenerator[tuple[str, JSONObject]]:
        send, receive = anyio.create_memory_object_stream[tuple[str, JSONObject]](math.inf)
        self._send = send
        try:
            with send, receive:
                async for item in receive:
                    yield item
        finally:
            self._send = None
