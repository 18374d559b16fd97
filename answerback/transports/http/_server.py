"""Streamable HTTP, server side: an ASGI application serving one MCP endpoint path.

Each ``initialize`` opens a session (a secure random ``Mcp-Session-Id``) that runs the
server's connection handler for as long as the session lives. A POSTed request is
answered on its own SSE stream, which also carries everything the server sends while
answering it (elicitation, sampling and roots requests, log messages, progress), so a
server can ask the client mid-request. The client's answers arrive as further POSTs.
Every event is stored before it is sent, so a client that loses a stream resumes it
with ``Last-Event-ID``.

The application needs its lifespan to run (uvicorn does this; when mounting it inside
another Starlette app, pass ``lifespan=mcp_app.router.lifespan_context`` to that app).
"""

from __future__ import annotations

import logging
import math
import secrets
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol

import anyio
import pydantic_core
from anyio.abc import TaskGroup
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from answerback.jsonrpc import Envelope, JSONObject, RequestId, WriteStream
from answerback.jsonrpc._endpoint import as_object
from answerback.transports._headers import SESSION_HEADER, VERSION_HEADER
from answerback.transports.http._event_store import EventStore, InMemoryEventStore
from answerback.transports.http._modern_server import (
    StatelessConnection,
    answer_modern,
    is_modern_request,
)
from answerback.transports.http._security import HostPolicy
from answerback.transports.http._sse import KEEPALIVE, encode_event
from answerback.types._errors import (
    CONNECTION_CLOSED,
    INVALID_REQUEST,
    PARSE_ERROR,
)
from answerback.types._versions import LEGACY_VERSIONS, MODERN_VERSIONS, SUPPORTED_VERSIONS

logger = logging.getLogger("answerback.http")

DEFAULT_VERSION = "2025-03-26"
"""The version to assume when a client sends no ``MCP-Protocol-Version`` header."""
STANDALONE = "standalone"
_FIRST_EVENT_WAIT_SECONDS = 0.05
"""How long a new SSE response waits for its first event before sending the priming
event alone; a quick answer then shares one write with it."""

Listener = tuple[
    MemoryObjectSendStream[tuple[str, JSONObject]],
    MemoryObjectReceiveStream[tuple[str, JSONObject]],
]


class HTTPConnectionServer(Protocol):
    """What the HTTP app needs from a server: answer one connection's streams, and the
    input schema of a tool (to check the ``Mcp-Param-*`` headers mirroring it)."""

    async def serve_connection(self, read_stream: Any, write_stream: WriteStream) -> None: ...

    def tool_input_schema(self, name: str) -> JSONObject | None: ...


@dataclass(slots=True)
class _Stream:
    """One SSE stream of a session: a POST's response stream, or the GET stream."""

    id: str
    request_id: RequestId | None
    listener: MemoryObjectSendStream[tuple[str, JSONObject]] | None = None
    backlog: list[tuple[str, JSONObject]] = field(default_factory=list[tuple[str, JSONObject]])
    done: bool = False


class _Session:
    """One MCP session: the server's connection handler plus the routing of its output."""

    def __init__(self, session_id: str, store: EventStore) -> None:
        self.id = session_id
        self.store = store
        self.protocol_version = DEFAULT_VERSION
        self.incoming, self.incoming_read = anyio.create_memory_object_stream[Envelope | Exception](
            math.inf
        )
        self.outgoing, self.outgoing_read = anyio.create_memory_object_stream[Envelope](math.inf)
        self.streams: dict[str, _Stream] = {}
        self.request_streams: dict[RequestId, _Stream] = {}
        self.stream_ids: set[str] = {STANDALONE}
        """Every stream this session ever opened: their stored events go when it ends."""
        self.json_waiters: dict[RequestId, MemoryObjectSendStream[JSONObject]] = {}
        self.scope = anyio.CancelScope()
        self.last_active = anyio.current_time()
        self.ended = anyio.Event()

    async def run(self, server: HTTPConnectionServer) -> None:
        with self.scope:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._route)
                await server.serve_connection(self.incoming_read, self.outgoing)
                tg.cancel_scope.cancel()
        await self.close("the session ended")

    async def close(self, reason: str) -> None:
        """End every open stream, answering the requests still open with an error."""
        self.scope.cancel()
        for stream in list(self.streams.values()):
            if stream.request_id is not None and not stream.done:
                error = {"code": CONNECTION_CLOSED, "message": f"Server closed: {reason}."}
                await self._deliver(
                    stream, {"jsonrpc": "2.0", "id": stream.request_id, "error": error}
                )
            self._finish(stream)
        for waiter in self.json_waiters.values():
            waiter.close()
        self.ended.set()

    def open_stream(self, request_id: RequestId | None) -> _Stream:
        stream_id = STANDALONE if request_id is None else secrets.token_hex(8)
        stream = self.streams.get(stream_id) or _Stream(stream_id, request_id)
        self.streams[stream_id] = stream
        self.stream_ids.add(stream_id)
        if request_id is not None:
            self.request_streams[request_id] = stream
        return stream

    async def _route(self) -> None:
        async for envelope in self.outgoing_read:
            message = as_object(envelope.message)
            if message is None:
                continue
            response_id = message.get("id") if "method" not in message else None
            waiter = self.json_waiters.get(response_id) if response_id is not None else None
            if waiter is not None:
                await waiter.send(message)
                continue
            stream = self.request_streams.get(envelope.related_request_id)  # type: ignore[arg-type]
            if stream is None:
                stream = self.open_stream(None)
            await self._deliver(stream, message)
            if stream.request_id is not None and response_id == stream.request_id:
                self._finish(stream)

    async def _deliver(self, stream: _Stream, message: JSONObject) -> None:
        event_id = await self.store.store_event(f"{self.id}.{stream.id}", message)
        if stream.listener is not None:
            try:
                await stream.listener.send((event_id, message))
                return
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                stream.listener = None
        if stream.request_id is None:
            stream.backlog.append((event_id, message))

    def _finish(self, stream: _Stream) -> None:
        stream.done = True
        if stream.listener is not None:
            stream.listener.close()
        if stream.request_id is not None:
            self.request_streams.pop(stream.request_id, None)
            self.streams.pop(stream.id, None)


class StreamableHTTPApp:
    """The ASGI application: sessions, routing, security checks and SSE."""

    def __init__(
        self,
        server: HTTPConnectionServer,
        *,
        path: str = "/mcp",
        host_policy: HostPolicy | None = None,
        event_store: EventStore | None = None,
        json_response: bool = False,
        max_body_bytes: int = 4 * 1024 * 1024,
        keepalive_seconds: float = 15.0,
        retry_ms: int = 1000,
        session_idle_seconds: float = 3600.0,
    ) -> None:
        self.server = server
        self.path = path
        self.host_policy = host_policy or HostPolicy()
        self.event_store: EventStore = (
            event_store if event_store is not None else InMemoryEventStore()
        )
        self.json_response = json_response
        self.max_body_bytes = max_body_bytes
        self.keepalive_seconds = keepalive_seconds
        self.retry_ms = retry_ms
        self.session_idle_seconds = session_idle_seconds
        self.sessions: dict[str, _Session] = {}
        self.task_group: TaskGroup | None = None
        self.stateless = StatelessConnection()
        self._closing = False
        self.app = Starlette(
            routes=[Route(path, self._endpoint, methods=["GET", "POST", "DELETE"])],
            lifespan=self._lifespan,
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
                busy = any(s.listener is not None for s in session.streams.values())
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
        self.sessions.pop(session.id, None)
        await session.close(reason)
        for stream_id in [f"{session.id}.{s}" for s in session.stream_ids]:
            await self.event_store.forget_stream(stream_id)

    # -- request handling ------------------------------------------------------------

    async def _endpoint(self, request: Request) -> Response:
        if not self.host_policy.host_allowed(request.headers.get("host")):
            return _error(421, INVALID_REQUEST, "Misdirected request: Host header not allowed.")
        if not self.host_policy.origin_allowed(request.headers.get("origin")):
            return _error(403, INVALID_REQUEST, "Forbidden: Origin not allowed.")
        if self._closing:
            return _error(
                503, CONNECTION_CLOSED, "Service Unavailable: the server is shutting down."
            )
        if self.task_group is None:
            return _error(
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
            return _error(
                405, INVALID_REQUEST, "Method Not Allowed: 2026-07-28 requests are POSTs only."
            )
        if version is not None and version not in LEGACY_VERSIONS:
            return _error(
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
            return _error(400, INVALID_REQUEST, "Bad Request: Mcp-Session-Id header required.")
        session = self.sessions.get(session_id)
        if session is None:
            return _error(404, INVALID_REQUEST, "Session not found: initialize a new session.")
        session.last_active = anyio.current_time()
        return session

    async def _read_message(self, request: Request) -> tuple[JSONObject, bool] | Response:
        """The POSTed JSON-RPC message and whether the client takes SSE, or the error."""
        accept = request.headers.get("accept", "")
        wants_sse = "text/event-stream" in accept or "*/*" in accept
        if "application/json" not in accept and "*/*" not in accept:
            return _error(
                406,
                INVALID_REQUEST,
                "Not Acceptable: Accept must include application/json and text/event-stream.",
            )
        content_type = request.headers.get("content-type", "")
        if content_type.split(";")[0].strip().lower() != "application/json":
            return _error(415, INVALID_REQUEST, "Unsupported Media Type: send application/json.")
        body = await _read_body(request, self.max_body_bytes)
        if body is None:
            return _error(
                413,
                INVALID_REQUEST,
                f"Payload Too Large: the limit is {self.max_body_bytes} bytes.",
            )
        try:
            decoded: object = pydantic_core.from_json(body)
        except ValueError as exc:
            return _error(400, PARSE_ERROR, f"Parse error: {exc}")
        message = as_object(decoded)
        if message is None:
            what = (
                "batch arrays are not supported" if isinstance(decoded, list) else "not an object"
            )
            return _error(400, INVALID_REQUEST, f"Invalid request: {what}.")
        return message, wants_sse

    async def _post(self, request: Request, message: JSONObject, wants_sse: bool) -> Response:
        """A legacy (2025-11-25 and older) POST: sessions, SSE, server requests."""
        method = message.get("method")
        request_id = message.get("id")
        is_request = isinstance(method, str) and isinstance(request_id, str | int)
        if method == "initialize" and request.headers.get(SESSION_HEADER) is None:
            session = self._new_session()
        else:
            found = self._session_for(request)
            if isinstance(found, Response):
                return found
            session = found
        if method == "initialize":
            params = as_object(message.get("params")) or {}
            requested = params.get("protocolVersion")
            if isinstance(requested, str) and requested in LEGACY_VERSIONS:
                session.protocol_version = requested
        envelope = Envelope(message, transport_context=request)
        if not is_request:
            await session.incoming.send(envelope)
            return Response(status_code=202)
        assert isinstance(request_id, str | int)
        headers = {SESSION_HEADER: session.id}
        if self.json_response or not wants_sse:
            return await self._answer_json(session, envelope, request_id, headers)
        stream = session.open_stream(request_id)
        listener = self._listen(stream)
        envelope.transport_context = _ResponseStream(request, stream)
        await session.incoming.send(envelope)
        return self._sse_response(session, stream, listener, headers)

    async def _answer_json(
        self, session: _Session, envelope: Envelope, request_id: RequestId, headers: dict[str, str]
    ) -> Response:
        send, receive = anyio.create_memory_object_stream[JSONObject](1)
        session.json_waiters[request_id] = send
        try:
            await session.incoming.send(envelope)
            with receive:
                try:
                    message = await receive.receive()
                except anyio.EndOfStream:
                    return _error(503, CONNECTION_CLOSED, "The session ended before answering.")
        finally:
            session.json_waiters.pop(request_id, None)
        return JSONResponse(message, headers=headers)

    def _listen(self, stream: _Stream) -> Listener:
        """Attach a new SSE connection to ``stream`` (replacing an older one)."""
        send, receive = anyio.create_memory_object_stream[tuple[str, JSONObject]](math.inf)
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
        replay: list[tuple[str, JSONObject]] | None = None,
    ) -> Response:
        primes = session.protocol_version >= "2025-11-25"
        listener_send, listener = listen

        def pending_events(sent: set[str]) -> bytes:
            """Every event already waiting, as one chunk (one socket write, not many)."""
            chunks: list[bytes] = []
            while True:
                try:
                    event_id, message = listener.receive_nowait()
                except (anyio.WouldBlock, anyio.EndOfStream):
                    return b"".join(chunks)  # the next receive() sees the end, if it came
                if event_id not in sent:
                    chunks.append(encode_event(pydantic_core.to_json(message).decode(), event_id))

        async def events() -> AsyncGenerator[bytes, None]:
            sent: set[str] = set()
            head: list[bytes] = []
            try:
                if primes and replay is None:
                    prime_id = await self.event_store.store_event(f"{session.id}.{stream.id}", {})
                    head.append(encode_event("", prime_id, self.retry_ms))
                for event_id, message in [*(replay or []), *stream.backlog]:
                    sent.add(event_id)
                    head.append(encode_event(pydantic_core.to_json(message).decode(), event_id))
                stream.backlog.clear()
                # A quick answer goes out with the priming event in a single write.
                with anyio.move_on_after(_FIRST_EVENT_WAIT_SECONDS):
                    event_id, message = await listener.receive()
                    if event_id not in sent:
                        head.append(encode_event(pydantic_core.to_json(message).decode(), event_id))
                    head.append(pending_events(sent))
                yield b"".join(head)
                head.clear()
                while True:
                    item: tuple[str, JSONObject] | None = None
                    with anyio.move_on_after(self.keepalive_seconds):
                        item = await listener.receive()
                    if item is None:
                        yield KEEPALIVE
                    elif item[0] not in sent:
                        event = encode_event(pydantic_core.to_json(item[1]).decode(), item[0])
                        yield event + pending_events(sent)
            except anyio.EndOfStream:
                if head:
                    yield b"".join(head)
                return
            finally:
                session.last_active = anyio.current_time()
                listener.close()
                if stream.listener is not None and stream.listener is listener_send:
                    # The client went away; the stream's events stay stored for resumption.
                    stream.listener.close()
                    stream.listener = None

        sse_headers = {
            **headers,
            "cache-control": "no-cache",
            "x-accel-buffering": "no",
        }
        return StreamingResponse(events(), media_type="text/event-stream", headers=sse_headers)

    async def _get(self, request: Request) -> Response:
        if "text/event-stream" not in request.headers.get("accept", ""):
            return _error(
                406, INVALID_REQUEST, "Not Acceptable: Accept must include text/event-stream."
            )
        found = self._session_for(request)
        if isinstance(found, Response):
            return found
        session = found
        headers = {SESSION_HEADER: session.id}
        last_event_id = request.headers.get("last-event-id")
        if last_event_id is not None:
            replayed: list[tuple[str, JSONObject]] = []

            async def collect(event_id: str, message: JSONObject) -> None:
                if message:
                    replayed.append((event_id, message))

            stream_key = await self.event_store.replay_events_after(last_event_id, collect)
            prefix = session.id + "."
            if stream_key is None or not stream_key.startswith(prefix):
                return _error(404, INVALID_REQUEST, "Unknown Last-Event-ID for this session.")
            stream = session.streams.get(stream_key.removeprefix(prefix))
            if stream is None:  # finished since: the replay holds all of it
                stream = _Stream(stream_key.removeprefix(prefix), None, done=True)
            listener = self._listen(stream) if not stream.done else _closed_listener()
            return self._sse_response(session, stream, listener, headers, replayed)
        stream = session.open_stream(None)
        if stream.listener is not None:
            return _error(409, INVALID_REQUEST, "Conflict: this session already has a GET stream.")
        return self._sse_response(session, stream, self._listen(stream), headers)

    async def _delete(self, request: Request) -> Response:
        found = self._session_for(request)
        if isinstance(found, Response):
            return found
        await self._end_session(found, "the client ended the session")
        return Response(status_code=200)

    def _new_session(self) -> _Session:
        assert self.task_group is not None
        session = _Session(secrets.token_urlsafe(24), self.event_store)
        self.sessions[session.id] = session

        async def run() -> None:
            try:
                await session.run(self.server)
            finally:
                self.sessions.pop(session.id, None)

        self.task_group.start_soon(run)
        return session


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


def _closed_listener() -> Listener:
    send, receive = anyio.create_memory_object_stream[tuple[str, JSONObject]](1)
    send.close()
    return send, receive


async def _read_body(request: Request, limit: int) -> bytes | None:
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        return None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _error(status: int, code: int, message: str, request_id: object = None) -> JSONResponse:
    return JSONResponse(
        {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}},
        status_code=status,
    )
