"""Streamable HTTP, server side: an ASGI application serving one MCP endpoint path.

A successful ``initialize`` opens a session (a secure random ``Mcp-Session-Id``) that
runs the server's connection handler for as long as the session lives. A POSTed request
is answered on its own SSE stream, which also carries everything the server sends while
answering it (elicitation, sampling and roots requests, log messages, progress), so a
server can ask the client mid-request. The client's answers arrive as further POSTs.
Every event is stored before it is sent, so a client that loses a stream resumes it
with ``Last-Event-ID``; a stream's events are forgotten once its answer has reached a
live connection, or its request was cancelled.

Everything that arrives is checked before it is routed (shape, ids, the session's
protocol version) and every error goes back on the POST that caused it. Limits: the body
size and the time it may take to arrive, the number of sessions, the messages waiting
for a GET stream, and the event store's own bounds.

The application needs its lifespan to run (uvicorn does this; when mounting it inside
another Starlette app, pass ``lifespan=mcp_app.app.router.lifespan_context`` to that app).
"""

from __future__ import annotations

import logging
import math
import secrets
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from answerback.jsonrpc import Envelope, JSONObject, RequestId, WriteStream
from answerback.jsonrpc._endpoint import CANCELLED, as_object, as_request_id
from answerback.transports._framing import MalformedMessage, decode, encode, undeliverable
from answerback.transports._headers import SESSION_HEADER, VERSION_HEADER
from answerback.transports.http._event_store import EventStore, InMemoryEventStore
from answerback.transports.http._modern_server import (
    StatelessConnection,
    answer_modern,
    is_modern_request,
)
from answerback.transports.http._security import HostPolicy
from answerback.transports.http._serving import (
    CLIENT_CLOSED_REQUEST,
    ClientGone,
    EventStreamResponse,
    error_response,
    json_response,
    message_problem,
    outgoing,
    until_ready,
)
from answerback.transports.http._sse import KEEPALIVE, encode_event
from answerback.types._errors import CONNECTION_CLOSED, INVALID_REQUEST, PARSE_ERROR
from answerback.types._versions import LEGACY_VERSIONS, MODERN_VERSIONS, SUPPORTED_VERSIONS

logger = logging.getLogger("answerback.http")

DEFAULT_VERSION = "2025-03-26"
"""The version to assume when a client sends no ``MCP-Protocol-Version`` header."""
STANDALONE = "standalone"
ALLOW = "GET, POST, DELETE"
_FIRST_EVENT_WAIT_SECONDS = 0.05
"""How long a new SSE response waits for its first event before sending the priming
event alone; a quick answer then shares one write with it."""

_Event = tuple[str, bytes]
"""An SSE event: its id and its data (a message's JSON text; empty for priming)."""
Listener = tuple[MemoryObjectSendStream[_Event], MemoryObjectReceiveStream[_Event]]


class HTTPConnectionServer(Protocol):
    """What the HTTP app needs from a server: answer one connection's streams, and the
    input schema of a tool (to check the ``Mcp-Param-*`` headers mirroring it)."""

    async def serve_connection(self, read_stream: Any, write_stream: WriteStream) -> None: ...

    def tool_input_schema(self, name: str) -> JSONObject | None: ...


@dataclass(eq=False, slots=True)
class _Waiter:
    """A POST waiting for its answer as one JSON body."""

    done: anyio.Event = field(default_factory=anyio.Event)
    answer: tuple[JSONObject, bytes] | None = None
    """The response; ``None`` once done if the request was cancelled or the session ended."""
    cancelled: bool = False

    def settle(self, answer: tuple[JSONObject, bytes] | None, *, cancelled: bool = False) -> None:
        self.answer, self.cancelled = answer, cancelled
        self.done.set()


@dataclass(eq=False, slots=True)
class _Stream:
    """One SSE stream of a session: a POST's response stream, or the GET stream."""

    id: str
    request_id: RequestId | None
    listener: MemoryObjectSendStream[_Event] | None = None
    done: bool = False


class _Session:
    """One MCP session: the server's connection handler plus the routing of its output."""

    def __init__(self, session_id: str, store: EventStore, max_backlog: int) -> None:
        self.id = session_id
        self.store = store
        self.max_backlog = max_backlog
        self.protocol_version = DEFAULT_VERSION
        self.incoming, self.incoming_read = anyio.create_memory_object_stream[Envelope | Exception](
            math.inf
        )
        self.outgoing, self.outgoing_read = anyio.create_memory_object_stream[Envelope](math.inf)
        self.streams: dict[str, _Stream] = {}
        self.request_streams: dict[RequestId, _Stream] = {}
        self.json_waiters: dict[RequestId, _Waiter] = {}
        self.backlog: deque[tuple[str, bytes, JSONObject]] = deque()
        """Messages for the GET stream while none is open (bounded by ``max_backlog``)."""
        self.stored: set[str] = set()
        """The streams that have events in the store: forgotten when the session ends."""
        self.resuming: list[list[tuple[str, _Event]]] = []
        """One list per replay under way: the events stored meanwhile (a store may read
        its snapshot before they were written, and the stream's connection is replaced)."""
        self.scope = anyio.CancelScope()
        self.last_active = anyio.current_time()
        self.closed = False

    def key(self, stream_id: str) -> str:
        """A stream's id in the event store (which every session shares)."""
        return f"{self.id}.{stream_id}"

    async def run(self, server: HTTPConnectionServer) -> None:
        try:
            with self.scope:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self._route)
                    await server.serve_connection(self.incoming_read, self.outgoing)
                    tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                await self.close("the session ended")
            for channel in (self.incoming_read, self.outgoing, self.outgoing_read):
                channel.close()

    async def close(self, reason: str) -> None:
        """End every open stream, answering the requests still open with an error, and
        forget the session's stored events.

        Called again by ``run`` as the session's task ends (shielded), which finishes
        the forgetting if the first call was cancelled part way.
        """
        if not self.closed:
            self.closed = True
            self.scope.cancel()
            self.incoming.close()
            for waiter in self.json_waiters.values():
                waiter.settle(None)
            self.json_waiters.clear()
            try:
                for stream in list(self.streams.values()):
                    if stream.request_id is not None and not stream.done:
                        error = {"code": CONNECTION_CLOSED, "message": f"Server closed: {reason}."}
                        answer = {"jsonrpc": "2.0", "id": stream.request_id, "error": error}
                        await self._deliver(stream, encode(answer), answer)
            finally:
                for stream in list(self.streams.values()):
                    self._finish(stream)
        for stream_id in list(self.stored):
            await self.forget(stream_id)

    def submit(self, envelope: Envelope) -> bool:
        """Hand a client's message to the server; ``False`` if the session has ended."""
        try:
            self.incoming.send_nowait(envelope)  # unbounded: never blocks
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return False
        return True

    def in_use(self, request_id: RequestId) -> bool:
        """Whether a request with this id is still waiting for its answer."""
        return request_id in self.request_streams or request_id in self.json_waiters

    def open_stream(self, request_id: RequestId) -> _Stream:
        stream = _Stream(secrets.token_hex(8), request_id)
        self.streams[stream.id] = stream
        self.request_streams[request_id] = stream
        return stream

    def standalone(self) -> _Stream:
        stream = self.streams.get(STANDALONE)
        if stream is None:
            stream = self.streams[STANDALONE] = _Stream(STANDALONE, None)
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
        self.stored.add(stream_id)
        return await self.store.store_event(self.key(stream_id), data)

    async def forget(self, stream_id: str) -> None:
        if stream_id in self.stored:
            self.stored.discard(stream_id)
            await self.store.forget_stream(self.key(stream_id))

    async def deliver_answer(self, stream: _Stream, data: bytes, answer: JSONObject) -> None:
        await self._deliver(stream, data, answer)
        self._finish(stream)

    async def _route(self) -> None:
        async for envelope in self.outgoing_read:
            raw = as_object(envelope.message)
            if raw is None:
                continue
            message, data, to_self = outgoing(raw)
            if to_self is not None:
                self.submit(Envelope(to_self))
            if message is None:
                continue
            if "method" in message:
                related = envelope.related_request_id
                stream = self.request_streams.get(related) if related is not None else None
                await self._deliver(stream or self.standalone(), data, message)
                continue
            # A response goes only where its request waits: a response on another
            # stream is not allowed, and one nobody waits for (the request was
            # cancelled, or its JSON POST gave up) has nowhere to go.
            response_id = as_request_id(message.get("id"))
            waiter = self.json_waiters.pop(response_id, None) if response_id is not None else None
            if waiter is not None:
                waiter.settle((message, data))
                continue
            stream = self.request_streams.get(response_id) if response_id is not None else None
            if stream is None:
                logger.debug("dropped the answer to %r: nobody waits for it", response_id)
                continue
            await self.deliver_answer(stream, data, message)

    async def _deliver(self, stream: _Stream, data: bytes, message: JSONObject) -> None:
        event_id = await self.store_event(stream.id, data)
        for caught in self.resuming:
            caught.append((stream.id, (event_id, data)))
        if stream.listener is not None:
            try:
                stream.listener.send_nowait((event_id, data))  # unbounded: never blocks
                return
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                stream.listener = None
        if stream.request_id is None:
            self.backlog.append((event_id, data, message))
            if len(self.backlog) > self.max_backlog:
                self._drop_oldest_waiting()

    def _drop_oldest_waiting(self) -> None:
        """The client opened no GET stream while more than ``max_backlog`` messages
        waited for one: the oldest goes. A request of the server's among them fails at
        once on the server's side instead of waiting for an answer that cannot come."""
        _, _, dropped = self.backlog.popleft()
        reason = (
            f"the client has opened no GET stream to receive it and more than "
            f"{self.max_backlog} messages were waiting"
        )
        logger.warning("dropped a message for the GET stream: %s", reason)
        _, to_self = undeliverable(dropped, reason)
        if to_self is not None:
            self.submit(Envelope(to_self))

    def _finish(self, stream: _Stream) -> None:
        stream.done = True
        if stream.listener is not None:
            stream.listener.close()
        if stream.request_id is not None:
            self.request_streams.pop(stream.request_id, None)
            self.streams.pop(stream.id, None)


class _EveryMethod:
    """The endpoint as a plain ASGI app: every HTTP method reaches it, so each gets a
    JSON-RPC error body (a function route answers methods it does not list itself)."""

    def __init__(self, handle: Callable[[Request], Awaitable[Response]]) -> None:
        self.handle = handle

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = await self.handle(Request(scope, receive))
        await response(scope, receive, send)


class StreamableHTTPApp:
    """The ASGI application: sessions, routing, security checks, limits and SSE."""

    def __init__(
        self,
        server: HTTPConnectionServer,
        *,
        path: str = "/mcp",
        host_policy: HostPolicy | None = None,
        event_store: EventStore | None = None,
        json_response: bool = False,
        max_body_bytes: int = 4 * 1024 * 1024,
        body_timeout_seconds: float = 30.0,
        max_sessions: int = 1000,
        max_backlog: int = 1000,
        keepalive_seconds: float = 15.0,
        retry_ms: int = 1000,
        session_idle_seconds: float = 3600.0,
    ) -> None:
        for name, value in (
            ("max_body_bytes", max_body_bytes),
            ("body_timeout_seconds", body_timeout_seconds),
            ("max_sessions", max_sessions),
            ("max_backlog", max_backlog),
        ):
            if value <= 0:
                raise ValueError(f"{name} must be positive, got {value!r}")
        self.server = server
        self.path = path
        self.host_policy = host_policy or HostPolicy()
        self.event_store: EventStore = (
            event_store if event_store is not None else InMemoryEventStore()
        )
        self.json_response = json_response
        self.max_body_bytes = max_body_bytes
        self.body_timeout_seconds = body_timeout_seconds
        self.max_sessions = max_sessions
        self.max_backlog = max_backlog
        self.keepalive_seconds = keepalive_seconds
        self.retry_ms = retry_ms
        self.session_idle_seconds = session_idle_seconds
        self.sessions: dict[str, _Session] = {}
        self._starting = 0
        """Sessions whose ``initialize`` is still being answered (they count as held)."""
        self.task_group: TaskGroup | None = None
        self.stateless = StatelessConnection()
        self._closing = False
        self.app = Starlette(
            routes=[Route(path, _EveryMethod(self._endpoint))], lifespan=self._lifespan
        )

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.app(scope, receive, send)

    @asynccontextmanager
    async def _lifespan(self, _: Starlette) -> AsyncGenerator[None, None]:
        async with anyio.create_task_group() as tg:
            self.task_group = tg
            self.stateless = StatelessConnection()
            await tg.start(self.stateless.run, self.server)
            self._closing = False
            tg.start_soon(self._reap_idle_sessions)
            try:
                yield
            finally:
                self.task_group = None
                for session in list(self.sessions.values()):
                    await session.close("the server is shutting down")
                self.sessions.clear()
                tg.cancel_scope.cancel()

    async def _reap_idle_sessions(self) -> None:
        interval = max(0.05, min(60.0, self.session_idle_seconds / 4))
        while True:
            await anyio.sleep(interval)
            now = anyio.current_time()
            for session in list(self.sessions.values()):
                busy = session.json_waiters or any(
                    s.listener is not None for s in session.streams.values()
                )
                if not busy and now - session.last_active > self.session_idle_seconds:
                    await self._end_session(session, "the session was idle too long")

    async def close_sessions(self, reason: str = "the server is shutting down") -> None:
        """End every session now and refuse new requests (503) until the lifespan restarts.

        Requests still open are answered with an error on their streams, and every stream
        ends, so an ASGI server that waits for open responses before its lifespan shutdown
        (uvicorn does) can stop. ``serve_uvicorn``/``run_uvicorn`` call this for you.
        """
        self._closing = True
        for session in list(self.sessions.values()):
            await self._end_session(session, reason)

    async def _end_session(self, session: _Session, reason: str) -> None:
        if self.sessions.get(session.id) is session:
            del self.sessions[session.id]
        await session.close(reason)

    async def _run_session(self, session: _Session) -> None:
        try:
            await session.run(self.server)
        finally:
            if self.sessions.get(session.id) is session:
                del self.sessions[session.id]

    # -- request handling ------------------------------------------------------------

    async def _endpoint(self, request: Request) -> Response:
        if not self.host_policy.host_allowed(request.headers.get("host")):
            return error_response(
                421, INVALID_REQUEST, "Misdirected request: Host header not allowed."
            )
        if not self.host_policy.origin_allowed(request.headers.get("origin")):
            return error_response(403, INVALID_REQUEST, "Forbidden: Origin not allowed.")
        if request.method not in ("GET", "POST", "DELETE"):
            return error_response(
                405,
                INVALID_REQUEST,
                f"Method Not Allowed: the MCP endpoint takes {ALLOW}, not {request.method}.",
                headers={"allow": ALLOW},
            )
        if self._closing:
            return error_response(
                503, CONNECTION_CLOSED, "Service Unavailable: the server is shutting down."
            )
        if self.task_group is None:
            return error_response(
                500,
                INVALID_REQUEST,
                "The MCP application's lifespan is not running; run it under an ASGI "
                "server with lifespan enabled, or pass its lifespan to the parent app.",
            )
        version = request.headers.get(VERSION_HEADER)
        in_session = SESSION_HEADER in request.headers
        read: tuple[JSONObject, bool] | None = None
        if request.method == "POST":
            parsed = await self._read_message(request)
            if isinstance(parsed, Response):
                return parsed
            read = parsed
            if not in_session and is_modern_request(read[0], version):
                return await answer_modern(self, request, *read)
        elif version in MODERN_VERSIONS and not in_session:
            return error_response(
                405,
                INVALID_REQUEST,
                "Method Not Allowed: 2026-07-28 requests are POSTs only.",
                headers={"allow": ALLOW},
            )
        if version is not None and version not in LEGACY_VERSIONS:
            return error_response(
                400,
                INVALID_REQUEST,
                f"Bad Request: unsupported MCP-Protocol-Version {version!r}; "
                f"supported: {', '.join(SUPPORTED_VERSIONS)}.",
            )
        if read is not None:
            return await self._post(request, *read)
        if request.method == "GET":
            return await self._get(request)
        return await self._delete(request)

    def _session_for(self, request: Request) -> _Session | Response:
        session_id = request.headers.get(SESSION_HEADER)
        if session_id is None:
            return error_response(
                400, INVALID_REQUEST, "Bad Request: Mcp-Session-Id header required."
            )
        session = self.sessions.get(session_id)
        if session is None:
            return error_response(
                404, INVALID_REQUEST, "Session not found: initialize a new session."
            )
        version = request.headers.get(VERSION_HEADER)
        if version is not None and version != session.protocol_version:
            return error_response(
                400,
                INVALID_REQUEST,
                f"Bad Request: MCP-Protocol-Version {version!r} is not the version this "
                f"session negotiated ({session.protocol_version!r}); send that one.",
            )
        session.last_active = anyio.current_time()
        return session

    async def _read_message(self, request: Request) -> tuple[JSONObject, bool] | Response:
        """The POSTed JSON-RPC message and whether the client takes SSE, or the error."""
        accept = request.headers.get("accept", "")
        wants_sse = "text/event-stream" in accept or "*/*" in accept
        if "application/json" not in accept and "*/*" not in accept:
            return error_response(
                406,
                INVALID_REQUEST,
                "Not Acceptable: Accept must include application/json and text/event-stream.",
            )
        content_type = request.headers.get("content-type", "")
        if content_type.split(";")[0].strip().lower() != "application/json":
            return error_response(
                415, INVALID_REQUEST, "Unsupported Media Type: send application/json."
            )
        body = await self._read_body(request)
        if isinstance(body, Response):
            return body
        decoded = decode(body)
        if isinstance(decoded, MalformedMessage):
            return error_response(400, PARSE_ERROR, f"Parse error: {decoded}")
        message = as_object(decoded.message)
        if message is None:
            what = (
                "batch arrays are not supported"
                if isinstance(decoded.message, list)
                else "not an object"
            )
            return error_response(400, INVALID_REQUEST, f"Invalid request: {what}.")
        problem = message_problem(message)
        if problem is not None:
            return error_response(400, *problem, as_request_id(message.get("id")))
        return message, wants_sse

    async def _read_body(self, request: Request) -> bytes | Response:
        """The whole body, or why not: too large (413), or too slow to arrive (408)."""
        limit = self.max_body_bytes
        declared = request.headers.get("content-length")
        if (
            declared is not None
            and declared.isascii()
            and declared.isdigit()
            and (len(declared) > 18 or int(declared) > limit)
        ):
            return _too_large(limit)
        chunks: list[bytes] = []
        size = 0
        with anyio.move_on_after(self.body_timeout_seconds):
            try:
                async for chunk in request.stream():
                    size += len(chunk)
                    if size > limit:
                        return _too_large(limit)
                    chunks.append(chunk)
            except ClientDisconnect:
                return Response(status_code=CLIENT_CLOSED_REQUEST)
            return b"".join(chunks)
        return error_response(
            408,
            INVALID_REQUEST,
            f"Request Timeout: the request body did not arrive in full within "
            f"{self.body_timeout_seconds:g} s.",
            headers={"connection": "close"},
        )

    async def _post(self, request: Request, message: JSONObject, wants_sse: bool) -> Response:
        """A legacy (2025-11-25 and older) POST: sessions, SSE, server requests."""
        method = message.get("method")
        request_id = as_request_id(message.get("id"))
        if method == "initialize":
            if SESSION_HEADER not in request.headers:
                return await self._initialize(request, message, request_id, wants_sse)
            found = self._session_for(request)
            if isinstance(found, Response):
                return found
            return error_response(
                400,
                INVALID_REQUEST,
                "Invalid request: this session is already initialized, and a session "
                "negotiates once. To start over, DELETE it and send initialize without "
                "an Mcp-Session-Id header.",
                request_id,
            )
        found = self._session_for(request)
        if isinstance(found, Response):
            return found
        session = found
        envelope = Envelope(message, transport_context=request)
        if method is None or request_id is None:  # a response, or a notification
            if not session.submit(envelope):
                return _session_ended(request_id)
            if method == CANCELLED:
                await self._cancel(session, message)
            return Response(status_code=202)
        if session.in_use(request_id):
            return error_response(
                400,
                INVALID_REQUEST,
                f"Invalid request: id {request_id!r} is already in use by a request of "
                "this session that has not been answered; give each request its own id.",
                request_id,
            )
        headers = {SESSION_HEADER: session.id}
        if self.json_response or not wants_sse:
            answer = await self._await_answer(session, request, envelope, request_id)
            if isinstance(answer, Response):
                return answer
            return json_response(answer[1], headers=headers)
        stream = session.open_stream(request_id)
        listen = self._listen(stream)
        envelope.transport_context = _ResponseStream(request, stream)
        if not session.submit(envelope):
            listen[0].close()
            listen[1].close()
            return _session_ended(request_id)
        return self._sse_response(session, stream, listen, headers)

    async def _initialize(
        self, request: Request, message: JSONObject, request_id: RequestId | None, wants_sse: bool
    ) -> Response:
        """Open a session, which exists only once ``initialize`` has succeeded: a failed
        one gets its error and leaves nothing behind."""
        if request_id is None:
            return error_response(
                400, INVALID_REQUEST, "Invalid request: initialize is a request; give it an id."
            )
        if len(self.sessions) + self._starting >= self.max_sessions:
            return error_response(
                503,
                CONNECTION_CLOSED,
                f"Service Unavailable: the server already holds its limit of "
                f"{self.max_sessions} sessions. Try again later (clients should DELETE "
                "sessions they no longer need).",
                request_id,
            )
        assert self.task_group is not None
        session = _Session(secrets.token_urlsafe(24), self.event_store, self.max_backlog)
        self._starting += 1
        try:
            self.task_group.start_soon(self._run_session, session)
            envelope = Envelope(message, transport_context=request)
            answer = await self._await_answer(session, request, envelope, request_id)
            if isinstance(answer, Response):
                return answer
            response, data = answer
            result = as_object(response.get("result"))
            if result is None:
                return json_response(data)  # the error, and no session
            negotiated = result.get("protocolVersion")
            if isinstance(negotiated, str) and negotiated in LEGACY_VERSIONS:
                session.protocol_version = negotiated
            self.sessions[session.id] = session
        finally:
            self._starting -= 1
            if session.id not in self.sessions:
                await self._end_session(session, "initialize failed")
        headers = {SESSION_HEADER: session.id}
        if self.json_response or not wants_sse:
            return json_response(data, headers=headers)
        stream = session.open_stream(request_id)
        listen = self._listen(stream)
        await session.deliver_answer(stream, data, response)
        return self._sse_response(session, stream, listen, headers)

    async def _await_answer(
        self, session: _Session, request: Request, envelope: Envelope, request_id: RequestId
    ) -> tuple[JSONObject, bytes] | Response:
        """Submit a request and wait for its answer, to send back as one JSON body."""
        waiter = session.json_waiters[request_id] = _Waiter()
        try:
            if not session.submit(envelope):
                return _session_ended(request_id)
            await until_ready(request, waiter.done)
        except ClientGone:
            # Not a cancellation (the client may still want the work done); the
            # answer, having nowhere to go, is dropped when it comes.
            return Response(status_code=CLIENT_CLOSED_REQUEST)
        finally:
            if session.json_waiters.get(request_id) is waiter:
                del session.json_waiters[request_id]
        if waiter.cancelled:
            return Response(status_code=204)  # cancelled by the client: no answer follows
        if waiter.answer is None:
            return _session_ended(request_id)
        return waiter.answer

    async def _cancel(self, session: _Session, message: JSONObject) -> None:
        """``notifications/cancelled`` from the client: the server's handler stops and
        sends no answer, so end the request's stream now and forget its events."""
        params = as_object(message.get("params")) or {}
        target = as_request_id(params.get("requestId"))
        stream_id = session.cancel_request(target) if target is not None else None
        if stream_id is not None:
            await session.forget(stream_id)

    def _listen(self, stream: _Stream) -> Listener:
        """Attach a new SSE connection to ``stream`` (replacing an older one)."""
        send, receive = anyio.create_memory_object_stream[_Event](math.inf)
        if stream.listener is not None:
            stream.listener.close()
        stream.listener = send
        return send, receive

    def _sse_response(
        self,
        session: _Session,
        stream: _Stream,
        listen: Listener,
        headers: dict[str, str],
        replay: list[_Event] | None = None,
    ) -> Response:
        primes = session.protocol_version >= "2025-11-25"
        listener_send, listener = listen

        def pending_events(sent: set[str]) -> bytes:
            """Every event already waiting, as one chunk (one socket write, not many)."""
            chunks: list[bytes] = []
            while True:
                try:
                    event_id, data = listener.receive_nowait()
                except (anyio.WouldBlock, anyio.EndOfStream):
                    return b"".join(chunks)  # the next receive() sees the end, if it came
                if event_id not in sent:
                    chunks.append(_event(data, event_id))

        async def events() -> AsyncGenerator[bytes, None]:
            sent: set[str] = set()
            head: list[bytes] = []
            ended = False
            try:
                if primes and replay is None:
                    prime_id = await session.store_event(stream.id, b"")
                    head.append(encode_event("", prime_id, self.retry_ms))
                earlier = list(replay or [])
                if stream.id == STANDALONE:
                    earlier.extend((event_id, data) for event_id, data, _ in session.backlog)
                    session.backlog.clear()
                for event_id, data in earlier:
                    if event_id not in sent:
                        sent.add(event_id)
                        head.append(_event(data, event_id))
                # A quick answer goes out with the priming event in a single write.
                with anyio.move_on_after(_FIRST_EVENT_WAIT_SECONDS):
                    event_id, data = await listener.receive()
                    if event_id not in sent:
                        head.append(_event(data, event_id))
                    head.append(pending_events(sent))
                yield b"".join(head)
                head.clear()
                while True:
                    item: _Event | None = None
                    with anyio.move_on_after(self.keepalive_seconds):
                        item = await listener.receive()
                    if item is None:
                        yield KEEPALIVE
                    elif item[0] not in sent:
                        yield _event(item[1], item[0]) + pending_events(sent)
            except anyio.EndOfStream:
                if head:
                    yield b"".join(head)
                ended = True
            finally:
                session.last_active = anyio.current_time()
                listener.close()
                if stream.listener is listener_send:
                    # The client went away; the stream's events stay stored for resumption.
                    listener_send.close()
                    stream.listener = None
            if ended and stream.done:
                # Its answer was written to a live connection: nobody will ask for it again.
                await session.forget(stream.id)

        return EventStreamResponse(events(), headers=headers)

    async def _get(self, request: Request) -> Response:
        if "text/event-stream" not in request.headers.get("accept", ""):
            return error_response(
                406, INVALID_REQUEST, "Not Acceptable: Accept must include text/event-stream."
            )
        found = self._session_for(request)
        if isinstance(found, Response):
            return found
        session = found
        headers = {SESSION_HEADER: session.id}
        last_event_id = request.headers.get("last-event-id")
        if last_event_id is not None:
            return await self._resume(session, last_event_id, headers)
        stream = session.standalone()
        if stream.listener is not None:
            return error_response(
                409, INVALID_REQUEST, "Conflict: this session already has a GET stream."
            )
        return self._sse_response(session, stream, self._listen(stream), headers)

    async def _resume(
        self, session: _Session, last_event_id: str, headers: dict[str, str]
    ) -> Response:
        """A GET with ``Last-Event-ID``: replay the stream after that event, then carry on
        with it live if it has not finished."""
        replayed: list[_Event] = []
        seen: set[str] = set()

        async def collect(event_id: str, data: bytes) -> None:
            if data and event_id not in seen:
                seen.add(event_id)
                replayed.append((event_id, data))

        caught: list[tuple[str, _Event]] = []
        session.resuming.append(caught)
        try:
            stream_key = await self.event_store.replay_events_after(last_event_id, collect)
        finally:
            session.resuming.remove(caught)
        prefix = session.id + "."
        if stream_key is None or not stream_key.startswith(prefix):
            return error_response(
                404,
                INVALID_REQUEST,
                "Unknown Last-Event-ID for this session: the event has expired, its stream "
                "has finished, or it never existed. Send the request again.",
            )
        stream_id = stream_key.removeprefix(prefix)
        for caught_stream, (event_id, data) in caught:
            if caught_stream == stream_id:
                await collect(event_id, data)
        stream = session.streams.get(stream_id)
        if stream is None or stream.done:  # finished since: the replay holds all of it
            stream = _Stream(stream_id, None, done=True)
            listen = _closed_listener()
        else:
            listen = self._listen(stream)
        return self._sse_response(session, stream, listen, headers, replayed)

    async def _delete(self, request: Request) -> Response:
        found = self._session_for(request)
        if isinstance(found, Response):
            return found
        await self._end_session(found, "the client ended the session")
        return Response(status_code=200)


@dataclass(frozen=True, slots=True)
class _ResponseStream:
    """What a handler may know about the SSE stream answering its request."""

    request: Request
    stream: _Stream

    def close_stream(self) -> None:
        """End the SSE response now (SEP-1699 polling): the client reconnects with
        ``Last-Event-ID`` after the ``retry`` delay, and the events sent meanwhile,
        the final answer included, are waiting for it."""
        if self.stream.listener is not None:
            self.stream.listener.close()


def _event(data: bytes, event_id: str) -> bytes:
    return encode_event(data.decode(), event_id)


def _closed_listener() -> Listener:
    send, receive = anyio.create_memory_object_stream[_Event](1)
    send.close()
    return send, receive


def _too_large(limit: int) -> Response:
    return error_response(413, INVALID_REQUEST, f"Payload Too Large: the limit is {limit} bytes.")


def _session_ended(request_id: RequestId | None) -> Response:
    return error_response(
        404,
        INVALID_REQUEST,
        "Session not found: it has ended; initialize a new session.",
        request_id,
    )
