"""What travels between the JSON-RPC engine and a transport.

A transport moves ``Envelope`` objects: the JSON-RPC message as a plain dict plus the
routing facts a transport needs and the engine must not interpret (which incoming request
an outgoing message belongs to, and what the transport knew about an incoming message,
such as the HTTP request that carried it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias

from anyio.streams.memory import MemoryObjectReceiveStream

from answerback.jsonrpc._channel import ChannelReceiver

CANCELLED = "notifications/cancelled"
RequestId: TypeAlias = str | int
JSONObject: TypeAlias = dict[str, Any]


@dataclass(slots=True)
class Envelope:
    """One JSON-RPC message and its routing facts."""

    message: Any
    """The decoded JSON value: normally a dict; anything else is answered as invalid."""
    related_request_id: RequestId | None = None
    """For outgoing messages: the incoming request this one is part of (HTTP routes
    a server's request to the client onto that request's response stream)."""
    transport_context: Any = None
    """For incoming messages: transport-specific facts (for HTTP, the request headers)."""
    size: int = 0
    """For incoming messages: the bytes the message took on the wire, which a request
    holds of its endpoint's budget while it is answered (0: not counted; see
    ``_budget``)."""
    holder: str | None = None
    """For incoming messages: who the transport knows sent it (the HTTP app's
    authenticated principal), whose share of the budget a request holds; ``None`` when
    the transport cannot tell callers apart."""

    @property
    def paced(self) -> bool:
        """Whether a transport may hold this outgoing message back while its peer reads
        too slowly: one sent while answering a request (a log message, progress, a
        question), whose sender is that request's own handler. Never an answer, a
        cancellation, or a message of no request (a broadcast): their senders may be
        serving everyone, or cleaning up. (An answer carries its request's id as
        ``related_request_id`` too, but no ``method``.)"""
        method = self.message.get("method")
        return self.related_request_id is not None and method is not None and method != CANCELLED


class MalformedMessage(Exception):
    """A transport read bytes that are not JSON; the engine answers with a parse error.

    ``request_id`` is the id of the request the bytes were, when their first members say
    so (senders put ``id`` and ``method`` before the nested values, so a message too
    deep or too broken to parse still says them): the parse error then goes to that id,
    and the peer's call fails instead of waiting for an answer that cannot come.
    """

    def __init__(self, reason: str, *, request_id: RequestId | None = None) -> None:
        super().__init__(reason)
        self.request_id = request_id


# answerback's transports use its own channels (see ``_channel``); a transport written
# with anyio's memory object streams works as well.
ReadStream: TypeAlias = (
    ChannelReceiver[Envelope | Exception] | MemoryObjectReceiveStream[Envelope | Exception]
)


class WriteStream(Protocol):
    """Where an endpoint writes its envelopes. The send end of an unbounded anyio memory
    object stream is one, and so is answerback's channel (``open_channel``); a transport
    may also write straight to its medium, as the stdio pipes do on asyncio."""

    def send_nowait(self, item: Envelope, /) -> None:
        """Take ``item`` now, or raise ``anyio.WouldBlock`` if where it goes is full (the
        engine then awaits ``send``). The engine's own buffers have no bound."""
        ...

    async def send(self, item: Envelope, /) -> None:
        """``send_nowait`` after a checkpoint, waiting first for room if need be."""
        ...

    def close(self) -> None:
        """No more envelopes will come."""
        ...
