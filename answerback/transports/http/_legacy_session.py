"""One legacy (handshake era) session as this process holds it: a local connection to the
server plus the routing of everything the server sends on it.

A POSTed request is answered on its own SSE stream (or as one JSON body), which also
carries what the server sends while answering it (elicitation, sampling, log messages),
so a server can ask the client mid-request; anything else goes to the session's GET
stream. Every event is stored before it is sent, so a client that loses a stream
resumes it with ``Last-Event-ID``. With events kept in this process's memory and no
replicas to tell, a message is routed in the server's own step as it is written, not by
a task woken for it. Kept apart from the ASGI application so that the application
decides *which* process serves a session (any replica may hold a local connection for
it) and this module only *how* one connection's output is routed.
"""

from __future__ import annotations

import logging
import re
import secrets
from collections import deque
from collections.abc import Callable
from dataclasses import InitVar, dataclass, field
from functools import partial
from typing import Any, Protocol

import anyio
from starlette.datastructures import Address
from starlette.requests import Request

from answerback.jsonrpc import Envelope, JSONObject, RequestId, WriteStream
from answerback.jsonrpc._backend import Primitives
from answerback.jsonrpc._budget import RequestBytes
from answerback.jsonrpc._channel import ChannelReceiver, ChannelSender, open_channel
from answerback.jsonrpc._endpoint import CANCELLED, as_object, as_request_id
from answerback.transports._framing import encode, undeliverable
from answerback.transports.http._event_store import (
    EventStore,
    ImmediateEventStore,
    StreamOpeningEventStore,
)
from answerback.transports.http._serving import (
    UNSENT_BYTES_HELD,
    UNSENT_EVENTS_HELD,
    crowded,
    outgoing,
    until_read,
)
from answerback.transports.http._sessions import state_entry
from answerback.transports.http._state import StateUnavailable
from answerback.transports.http._state_outage import (
    EVENTS_NOT_STORED,
    STREAMS_NOT_FORGOTTEN,
    StateOutage,
)
from answerback.types._errors import CONNECTION_CLOSED, SERVER_CLOSED

logger = logging.getLogger("answerback.http")

DEFAULT_VERSION = "2025-03-26"
"""The version to assume when a client sends no ``MCP-Protocol-Version`` header."""
STANDALONE = "standalone"
_STREAM_ID_BYTES = 8
_REQUEST_STREAM_ID = re.compile(f"[0-9a-f]{{{2 * _STREAM_ID_BYTES}}}")
_EVENT_PART = re.compile(r"(?:unstored-)?[0-9]{1,20}(?:-[0-9]{1,20})?")
"""What follows a stream's key and ``_`` in an event id: a sequence number
(``InMemoryEventStore``), a Redis entry id (``RedisEventStore``), ``unstored-N``."""
STREAMS_REMEMBERED = 1024
"""How many of a session's streams it remembers, to forget their events when it ends."""
ANSWERED_KEPT_SECONDS = 60.0
"""How long a stream's events stay stored once its answer was written to a connection.
The write succeeds even to a connection that broke unnoticed, or whose close the server
has not read yet; the client, finding no answer, resumes within this time (its own
read timeout, then the ``retry`` delay) and gets it. Then the events go, rather than
fill the store (Redis above all) with answers already delivered."""

Event = tuple[str, bytes]
"""An SSE event: its id and its data (a message's JSON text; empty for priming)."""
Listener = tuple[ChannelSender[Event], ChannelReceiver[Event]]


class HTTPConnectionServer(Protocol):
    """What the HTTP app needs from a server: answer one connection's streams (with no
    bound on requests in flight for the 2026-07-28 one, whose POSTs bound them, and the
    app's budget of request bytes for all; the 2026-07-28 one is told the app's
    ``max_body_bytes``, which a retry must fit in), and the input schema of a tool (to
    check the ``Mcp-Param-*`` headers mirroring it)."""

    async def serve_connection(
        self,
        read_stream: Any,
        write_stream: WriteStream,
        *,
        max_requests_in_flight: int | None = ...,
        request_bytes: RequestBytes | None = ...,
        max_request_bytes: int | None = ...,
    ) -> None: ...

    def tool_input_schema(self, name: str) -> JSONObject | None: ...


class CallHooks(Protocol):
    """What a session tells the replicas it shares its state with (``None``: nobody)."""

    async def server_request(self, session: LegacySession, message: JSONObject) -> JSONObject:
        """A request (or cancellation) of the server's is about to go out: the message
        with its id as the client must see it."""
        ...

    async def call_answered(self, session: LegacySession, request_id: RequestId) -> None:
        """The answer to a client's request was routed: the call is over."""
        ...


@dataclass(eq=False, slots=True)
class Waiter:
    """A POST waiting for its answer as one JSON body."""

    answer: tuple[JSONObject, bytes] | None = None
    """The response; ``None`` once done if the request was cancelled or the session ended."""
    cancelled: bool = False
    settled: ChannelReceiver[None] = field(init=False)
    """Gives an item once the waiter is settled: a channel, whose wait can be timed
    cheaply (``until_ready``)."""
    _settle: ChannelSender[None] = field(init=False)
    primitives: InitVar[Primitives | None] = None
    """The loop's, if the caller has them (else looked up at the first wait)."""

    def __post_init__(self, primitives: Primitives | None) -> None:
        self._settle, self.settled = open_channel[None](primitives)

    def settle(self, answer: tuple[JSONObject, bytes] | None, *, cancelled: bool = False) -> None:
        self.answer, self.cancelled = answer, cancelled
        self._settle.send_nowait(None)


@dataclass(eq=False, slots=True)
class SSEStream:
    """One SSE stream of a session: a POST's response stream, or the GET stream."""

    id: str
    request_id: RequestId | None
    listener: ChannelSender[Event] | None = None
    done: bool = False


class LegacySession:
    """One MCP session: the server's connection handler plus the routing of its output."""

    def __init__(
        self,
        session_id: str,
        store: EventStore,
        max_backlog: int,
        *,
        principal: str | None = None,
        hooks: CallHooks | None = None,
        outage: StateOutage | None = None,
    ) -> None:
        self.id = session_id
        self.outage = outage or StateOutage()
        """The server's view of its shared state, which counts the events and streams
        this session could not store or forget while it is out."""
        self.store = store
        self.max_backlog = max_backlog
        self.principal = principal
        """Who opened the session (an authenticator's principal); others cannot use it."""
        self.hooks = hooks
        self.protocol_version = DEFAULT_VERSION
        self.mirrored: dict[str, JSONObject] = {}
        """The entries of the session record's state this connection has applied."""
        self.replays = 0
        """Requests replayed into this connection from the record (each needs its own id)."""
        self.incoming, self.incoming_read = open_channel[Envelope | Exception]()
        self.outgoing, self.outgoing_read = open_channel[Envelope]()
        self.streams: dict[str, SSEStream] = {}
        self.request_streams: dict[RequestId, SSEStream] = {}
        self.json_waiters: dict[RequestId, Waiter] = {}
        self.backlog: deque[tuple[str, bytes, JSONObject]] = deque()
        """Messages for the GET stream while none is open (bounded by ``max_backlog``, and
        by ``UNSENT_BYTES_HELD`` as an unread stream is)."""
        self.backlog_bytes = 0
        """What the ``backlog``'s messages weigh (their JSON text): in JSON-response mode
        a call's log messages wait there too, and they may be large."""
        self.stored: dict[str, None] = {}
        """The streams with events in the store, least recently written first, whose
        events are forgotten when the session ends. It keeps the ``STREAMS_REMEMBERED``
        most recently written: streams abandoned by a client that hung up would
        otherwise pile up here for the session's life, while the store's own bounds
        drop their events anyway."""
        self.answered: deque[tuple[float, str]] = deque()
        """Streams whose answer was written, and when to forget them, oldest first."""
        self.resuming: list[list[tuple[str, Event]]] = []
        """One list per replay under way: the events stored meanwhile (a store may read
        its snapshot before they were written, and the stream's connection is replaced)."""
        self.owned_calls: set[RequestId] = set()
        """The calls recorded in the shared state as this process's, until answered."""
        self.unstored = 0
        """Events that could not be stored (the shared state was unreachable)."""
        self.forgets_events = True
        """Whether closing forgets the stored events (see ``close``)."""
        self.asked: set[RequestId] = set()
        """The ids of the server's requests sent on this process's streams and not yet
        answered, cancelled or dropped, when no replicas share the session (with
        replicas, ``CallHooks`` check the answers)."""
        self.unsolicited = 0
        """Responses the client POSTed that answered none of those: dropped, the first
        logged and the rest counted, so a client cannot set the log's volume."""
        self.backlog_dropped = 0
        """Messages dropped from a full ``backlog`` since a GET stream last took it: the
        first logged and the rest counted (the count logged when the session ends or a
        GET stream opens), so N sessions without one do not log N lines per broadcast."""
        self.scope = anyio.CancelScope()
        self.last_active = anyio.current_time()
        self.used = False
        """Whether a request has named the session since its ``initialize`` (its
        ``notifications/initialized``, any other): until one has, a full server lets it
        give its place sooner (``NEWCOMER_GRACE_SECONDS``)."""
        self.closed = False

    def key(self, stream_id: str) -> str:
        """A stream's id in the event store (which every session shares)."""
        return f"{self.id}.{stream_id}"

    def stream_named(self, event_id: str) -> str | None:
        """The stream of this session that ``event_id`` has the form of an event of
        (its ``key``, ``_``, then the store's part), whether or not that stream, or its
        events, are still held anywhere; ``None`` if no event of this session's could
        have that id (garbage, or another session's event)."""
        prefix = self.id + "."
        if not event_id.startswith(prefix):
            return None
        stream_id, underscore, part = event_id.removeprefix(prefix).partition("_")
        if not (underscore and _EVENT_PART.fullmatch(part)):
            return None
        if stream_id != STANDALONE and not _REQUEST_STREAM_ID.fullmatch(stream_id):
            return None
        return stream_id

    def mirror(self, key: str, entry: JSONObject | None) -> None:
        """Note that this connection now holds ``entry`` of the record's state under
        ``key`` (``None``: it holds nothing there)."""
        if entry is None:
            self.mirrored.pop(key, None)
        else:
            self.mirrored[key] = entry

    def subscribed(self, uri: str) -> bool:
        """Whether the session is subscribed to ``uri``, as this connection holds its
        record's state."""
        key, _ = state_entry({"method": "resources/subscribe", "params": {"uri": uri}})
        return key in self.mirrored

    @property
    def has_client(self) -> bool:
        """Whether a client is still connected to this session: a stream open or a JSON
        answer awaited. Only a session without one is ended for idling or to make room."""
        return bool(self.json_waiters) or any(
            stream.listener is not None for stream in self.streams.values()
        )

    def receives_broadcasts(self) -> bool:
        """Whether this process delivers the session's broadcasts (list changes, resource
        updates): the one holding its open GET stream, when replicas share sessions."""
        stream = self.streams.get(STANDALONE)
        return stream is not None and stream.listener is not None

    async def run(self, serve: Callable[[Any, WriteStream], Any]) -> None:
        """Serve the session: ``serve(read, write)`` runs the server's connection."""
        try:
            with self.scope:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self._route)
                    await serve(self.incoming_read, _PacedWriter(self))
                    tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await self.close("the session ended")
            for channel in (self.incoming_read, self.outgoing, self.outgoing_read):
                channel.close()

    async def close(self, reason: str, *, forget_events: bool = True) -> None:
        """End every open stream, answering the requests still open with an error, and
        forget the session's stored events unless ``forget_events`` is false: when
        replicas share the session and it lives on (this process stops, or gives its
        connection up), another replica resumes its streams from those events.

        Called again by ``run`` as the session's task ends (shielded), which finishes
        the forgetting if the first call was cancelled part way; the first call's
        ``forget_events`` holds for it.
        """
        if not self.closed:
            self.closed = True
            self.forgets_events = forget_events
            if self.unsolicited > 1:
                logger.warning(
                    "session %s ended; its client had sent %d responses that answered no "
                    "request of the server's",
                    self.id,
                    self.unsolicited,
                )
            self._log_backlog_dropped("it ended")
            self.scope.cancel()
            self.incoming.close()
            for waiter in self.json_waiters.values():
                waiter.settle(None)
            self.json_waiters.clear()
            try:
                for stream in list(self.streams.values()):
                    if stream.request_id is not None and not stream.done:
                        error = {
                            "code": CONNECTION_CLOSED,
                            "message": f"Server closed: {reason}.",
                            "data": {"reason": SERVER_CLOSED},
                        }
                        answer = {"jsonrpc": "2.0", "id": stream.request_id, "error": error}
                        await self.deliver_answer(stream, encode(answer), answer)
            finally:
                for stream in list(self.streams.values()):
                    self._finish(stream)
        if self.forgets_events:
            for stream_id in list(self.stored):
                await self.forget(stream_id)

    def submit(self, envelope: Envelope) -> bool:
        """Hand a client's message to the server; ``False`` if the session has ended."""
        try:
            self.incoming.send_nowait(envelope)  # unbounded: never blocks
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return False
        return True

    async def ask(self, message: JSONObject) -> tuple[JSONObject, bytes] | None:
        """Send a request of the transport's own (rebuilding the session's state on
        this process) and wait for its answer; ``None`` if the session ended first."""
        request_id = as_request_id(message.get("id"))
        assert request_id is not None
        waiter = self.json_waiters[request_id] = Waiter()
        try:
            if not self.submit(Envelope(message)):
                return None
            await waiter.settled.receive()
        finally:
            if self.json_waiters.get(request_id) is waiter:
                del self.json_waiters[request_id]
        return waiter.answer

    def answers_a_question(self, response: JSONObject) -> bool:
        """Whether a response the client POSTed answers a request of the server's that
        still waits (which from now on it does not); if not, it is to be dropped. One
        with a null id (the client could not read a message) is for the server to
        judge."""
        request_id = as_request_id(response.get("id"))
        if request_id is None or self.hooks is not None:
            return True
        if request_id in self.asked:
            self.asked.discard(request_id)
            return True
        self.unsolicited += 1
        if self.unsolicited == 1:
            logger.warning(
                "session %s: dropped a response to id %r, which answers no request of the "
                "server's that still waits (answered already, cancelled, or never sent); "
                "more in this session are counted, and the count logged when it ends",
                self.id,
                request_id,
            )
        return False

    def in_use(self, request_id: RequestId) -> bool:
        """Whether a request with this id is still waiting for its answer."""
        return request_id in self.request_streams or request_id in self.json_waiters

    def open_stream(self, request_id: RequestId) -> SSEStream:
        stream = SSEStream(secrets.token_hex(_STREAM_ID_BYTES), request_id)
        self.streams[stream.id] = stream
        self.request_streams[request_id] = stream
        return stream

    def standalone(self) -> SSEStream:
        stream = self.streams.get(STANDALONE)
        if stream is None:
            stream = self.streams[STANDALONE] = SSEStream(STANDALONE, None)
        return stream

    def cancel_request(self, request_id: RequestId) -> str | None:
        """The client cancelled a request: no answer will come, so end what waits for
        one. Returns the id of the request's stream, whose events are of no more use."""
        waiter = self.json_waiters.pop(request_id, None)
        if waiter is not None:
            waiter.settle(None, cancelled=True)
        stream = self.request_streams.get(request_id)
        if stream is None:
            return None
        self._finish(stream)
        return stream.id

    async def store_event(self, stream_id: str, data: bytes) -> str:
        """Store an event and return its id. If shared storage cannot be reached, the
        event still goes to a live connection, under an id no store knows (resuming
        from it is refused): a stream's messages are never held back for Redis."""
        self._remember_stored(stream_id)
        if not data and stream_id in self.streams and stream_id != STANDALONE:
            # A request stream's priming event: its stream id is new, so its key too.
            store = self.store
            if isinstance(store, StreamOpeningEventStore):
                opened = store.open_stream(self.key(stream_id))
                if opened is not None:
                    return opened
        try:
            event_id = await self.store.store_event(self.key(stream_id), data)
        except StateUnavailable as exc:
            self.unstored += 1
            self.outage.count_unsaved(EVENTS_NOT_STORED, exc)
            return f"{self.key(stream_id)}_unstored-{self.unstored}"
        self.outage.saved(EVENTS_NOT_STORED)
        return event_id

    def _store_now(self, store: ImmediateEventStore, stream_id: str, data: bytes) -> str:
        """``store_event`` in a store that keeps events at once, for a message (never a
        priming event, and no remote storage that could be unreachable)."""
        self._remember_stored(stream_id)
        return store.store_event_now(self.key(stream_id), data)

    def _remember_stored(self, stream_id: str) -> None:
        stored = self.stored
        stored.pop(stream_id, None)
        stored[stream_id] = None
        if len(stored) > STREAMS_REMEMBERED:
            del stored[next(iter(stored))]

    async def forget(self, stream_id: str) -> None:
        if stream_id in self.stored:
            del self.stored[stream_id]
            try:
                await self.store.forget_stream(self.key(stream_id))
            except StateUnavailable as exc:  # the events expire in the store by themselves
                self.outage.count_unsaved(STREAMS_NOT_FORGOTTEN, exc)
            else:
                self.outage.saved(STREAMS_NOT_FORGOTTEN)

    async def answered_here(self, stream_id: str) -> None:
        """A stream's answer was written to a connection: forget its events
        ``ANSWERED_KEPT_SECONDS`` from now, and those of streams answered that long ago
        (done here, as answers go out, rather than by a timer per stream)."""
        now = anyio.current_time()
        answered = self.answered
        answered.append((now + ANSWERED_KEPT_SECONDS, stream_id))
        while answered and answered[0][0] <= now:
            await self.forget(answered.popleft()[1])

    async def deliver_broadcast(self, message: JSONObject) -> None:
        """Send a broadcast on the GET stream (stored first, as the server's own are):
        one raised while no replica held the stream."""
        await self._deliver(self.standalone(), encode(message), message)

    async def deliver_answer(self, stream: SSEStream, data: bytes, answer: JSONObject) -> None:
        await self._deliver(stream, data, answer)
        self._finish(stream)
        if self.hooks is not None and stream.request_id is not None:
            await self.hooks.call_answered(self, stream.request_id)

    async def _route(self) -> None:
        store = self.store
        if self.hooks is None and isinstance(store, ImmediateEventStore):
            # Routing waits for nothing (no replicas to tell, events kept in memory), so
            # each message goes out in the server's own step while this task idles: a
            # loop turn fewer per message. What queues up meanwhile still comes here.
            self.outgoing_read.hand_over(partial(self._route_now, store))
        async for envelope in self.outgoing_read:
            raw = as_object(envelope.message)
            if raw is None:
                continue
            if self.hooks is not None and "method" in raw:
                raw = await self.hooks.server_request(self, raw)
            placed = self._place(envelope, raw)
            if placed is None:
                continue
            stream, message, data = placed
            if stream is None:  # an answer, handed to the JSON POST waiting for it
                response_id = as_request_id(message.get("id"))
                if self.hooks is not None and response_id is not None:
                    await self.hooks.call_answered(self, response_id)
            elif "method" in message:
                await self._deliver(stream, data, message)
            else:
                await self.deliver_answer(stream, data, message)

    def _route_now(self, store: ImmediateEventStore, envelope: Envelope) -> bool:
        """``_route``'s work for one message, done in the server's step (see there)."""
        raw = as_object(envelope.message)
        placed = self._place(envelope, raw) if raw is not None else None
        if placed is None:
            return True
        stream, message, data = placed
        if stream is not None:
            self._pass_on(stream, self._store_now(store, stream.id, data), data, message)
            if "method" not in message:
                self._finish(stream)
        return True

    def _place(
        self, envelope: Envelope, raw: JSONObject
    ) -> tuple[SSEStream | None, JSONObject, bytes] | None:
        """Where a message of the server's goes: the stream to deliver it on, with the
        message and its data as sent (no stream for an answer handed to the JSON POST
        waiting for it, here); ``None`` if it goes nowhere."""
        message, data, to_self = outgoing(raw)
        if to_self is not None:
            self.submit(Envelope(to_self))
        if message is None:
            return None
        if "method" in message:
            if self.hooks is None:
                self._note_asked(message)
            related = envelope.related_request_id
            stream = self.request_streams.get(related) if related is not None else None
            return stream or self.standalone(), message, data
        # A response goes only where its request waits: a response on another stream is
        # not allowed, and one nobody waits for (the request was cancelled, or its JSON
        # POST gave up) has nowhere to go.
        response_id = as_request_id(message.get("id"))
        waiter = self.json_waiters.pop(response_id, None) if response_id is not None else None
        if waiter is not None:
            waiter.settle((message, data))
            self.last_active = anyio.current_time()  # a call just ended is use
            return None, message, data
        stream = self.request_streams.get(response_id) if response_id is not None else None
        if stream is None:
            logger.debug("dropped the answer to %r: nobody waits for it", response_id)
            return None
        return stream, message, data

    def _note_asked(self, message: JSONObject) -> None:
        """Keep ``asked`` up to date with a message of the server's going out: a request
        waits for its answer, a cancellation ends a wait."""
        if "id" in message:
            request_id = as_request_id(message["id"])
            if request_id is not None:
                self.asked.add(request_id)
        elif message["method"] == CANCELLED:
            params = as_object(message.get("params")) or {}
            target = as_request_id(params.get("requestId"))
            if target is not None:
                self.asked.discard(target)

    async def _deliver(self, stream: SSEStream, data: bytes, message: JSONObject) -> None:
        self._pass_on(stream, await self.store_event(stream.id, data), data, message)

    def _pass_on(self, stream: SSEStream, event_id: str, data: bytes, message: JSONObject) -> None:
        """Send a stored event on its stream, or keep it for the GET stream to come."""
        for caught in self.resuming:
            caught.append((stream.id, (event_id, data)))
        listener = stream.listener
        if listener is not None:
            try:
                listener.send_nowait((event_id, data))  # a call's own writes are paced
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                stream.listener = None
            else:
                if stream.request_id is None and crowded(listener):
                    self._end_unread_get_stream(listener)
                return
        if stream.request_id is None:
            self.backlog.append((event_id, data, message))
            self.backlog_bytes += len(data)
            if len(self.backlog) > self.max_backlog:
                self._drop_oldest_waiting(f"{self.max_backlog} messages")
            while self.backlog_bytes > UNSENT_BYTES_HELD and len(self.backlog) > 1:
                self._drop_oldest_waiting(f"{UNSENT_BYTES_HELD} bytes of messages")

    def _end_unread_get_stream(self, listener: ChannelSender[Event]) -> None:
        """The client leaves its GET stream unread while broadcasts pile up for it: end
        that connection (the task broadcasting to every session must not wait for one).
        Its events are stored; what comes next waits in the backlog for the client to
        resume with ``Last-Event-ID``."""
        logger.warning(
            "ended the GET stream of session %s: the client left %d messages (%d bytes) "
            "unread, more than the %d messages or %d bytes a stream holds; it can resume "
            "the stream",
            self.id,
            listener.buffered(),
            listener.buffered_bytes(),
            UNSENT_EVENTS_HELD,
            UNSENT_BYTES_HELD,
        )
        listener.close()
        self.standalone().listener = None

    def _drop_oldest_waiting(self, bound: str) -> None:
        """The client opened no GET stream while more than ``bound`` (``max_backlog``
        messages, or ``UNSENT_BYTES_HELD`` bytes) waited for one: the oldest goes. A
        request of the server's among them fails at once on the server's side instead of
        waiting for an answer that cannot come."""
        _, data, dropped = self.backlog.popleft()
        self.backlog_bytes -= len(data)
        reason = (
            f"the client has opened no GET stream to receive it and more than {bound} were waiting"
        )
        self.backlog_dropped += 1
        if self.backlog_dropped == 1:
            logger.warning(
                "session %s: dropped a message for the GET stream: %s; more dropped are "
                "counted, and the count logged when the session ends or a GET stream opens",
                self.id,
                reason,
            )
        dropped_id = as_request_id(dropped.get("id"))
        if dropped_id is not None:  # a request of the server's, failed on its side below
            self.asked.discard(dropped_id)
        _, to_self = undeliverable(dropped, reason)
        if to_self is not None:
            self.submit(Envelope(to_self))

    def take_backlog(self) -> list[Event]:
        """The messages kept for the GET stream opening now, oldest first (the backlog
        is empty after); the count of those dropped meanwhile is logged."""
        events = [(event_id, data) for event_id, data, _ in self.backlog]
        self.backlog.clear()
        self.backlog_bytes = 0
        self._log_backlog_dropped("its client opened a GET stream")
        return events

    def _log_backlog_dropped(self, event: str) -> None:
        if self.backlog_dropped > 1:
            logger.warning(
                "session %s: %s; %d messages for its GET stream had been dropped, %d at "
                "most (and %d bytes) being kept while none is open",
                self.id,
                event,
                self.backlog_dropped,
                self.max_backlog,
                UNSENT_BYTES_HELD,
            )
        self.backlog_dropped = 0

    def _finish(self, stream: SSEStream) -> None:
        stream.done = True
        self.last_active = anyio.current_time()  # a call just ended is use
        if stream.listener is not None:
            stream.listener.close()
        if stream.request_id is not None:
            self.request_streams.pop(stream.request_id, None)
            self.streams.pop(stream.id, None)


class _PacedWriter:
    """The server's write end of a session: a message a call's handler sends
    (``Envelope.paced``) waits while the call's client leaves more than
    ``UNSENT_EVENTS_HELD`` messages (or ``UNSENT_BYTES_HELD`` bytes) of its stream
    unread, so that a client that does not read costs a bounded buffer, not all its
    tools write. Only that handler waits, never the session."""

    __slots__ = ("_session",)

    def __init__(self, session: LegacySession) -> None:
        self._session = session

    def _crowded_stream(self, envelope: Envelope) -> ChannelSender[Event] | None:
        related = envelope.related_request_id
        stream = self._session.request_streams.get(related) if related is not None else None
        listener = stream.listener if stream is not None else None
        if listener is None or not crowded(listener) or not envelope.paced:
            return None
        return listener

    def send_nowait(self, envelope: Envelope) -> None:
        if self._crowded_stream(envelope) is not None:
            raise anyio.WouldBlock
        self._session.outgoing.send_nowait(envelope)

    async def send(self, envelope: Envelope) -> None:
        while (listener := self._crowded_stream(envelope)) is not None:
            await until_read(listener)
        await self._session.outgoing.send(envelope)

    def close(self) -> None:
        self._session.outgoing.close()


@dataclass(frozen=True, slots=True)
class ResponseStream:
    """What a handler may know about the SSE stream answering its request."""

    request: Request
    stream: SSEStream

    @property
    def client(self) -> Address | None:
        """The peer's address, as on the request itself (``error_details="local"``
        judges a caller by it)."""
        return self.request.client

    def close_stream(self) -> None:
        """End the SSE response now (SEP-1699 polling): the client reconnects with
        ``Last-Event-ID`` after the ``retry`` delay, and the events sent meanwhile,
        the final answer included, are waiting for it."""
        if self.stream.listener is not None:
            self.stream.listener.close()
