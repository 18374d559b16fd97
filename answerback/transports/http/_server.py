"""Streamable HTTP, server side: an ASGI application serving one MCP endpoint path.

A successful ``initialize`` opens a session (a secure random ``Mcp-Session-Id``) that
runs the server's connection handler for as long as the session lives
(``_legacy_session``). Everything that arrives is checked before it is routed (shape,
ids, the session's protocol version, the caller when an authenticator is given) and
every error goes back on the POST that caused it. Limits: the body size and the time
it may take to arrive, the number of sessions, the messages waiting for a GET stream,
and the event store's own bounds. 2026-07-28 requests, which have no sessions, are
answered by ``_modern_server``.

Where sessions, events and calls live is the ``state`` (``_state``): in this process by
default, or shared by several replicas (``RedisState``), in which case any replica can
serve any request of a session (``_replication``).

The application needs its lifespan to run (uvicorn does this; when mounting it inside
another Starlette app, pass ``lifespan=mcp_app.app.router.lifespan_context`` to that app).
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
from collections.abc import AsyncGenerator, Awaitable, Callable, Generator
from contextlib import asynccontextmanager
from functools import partial
from typing import Any, Protocol, cast, runtime_checkable

import anyio
from anyio.abc import TaskGroup
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route
from starlette.types import Receive, Scope, Send

from answerback._options import (
    endpoint_path,
    flag,
    positive_int,
    positive_int_or_none,
    positive_seconds,
    whole_number,
)
from answerback.jsonrpc import Envelope, JSONObject, RequestId, WriteStream
from answerback.jsonrpc._backend import Primitives, native_primitives
from answerback.jsonrpc._budget import REQUEST_BYTES_IN_FLIGHT, RequestBytes
from answerback.jsonrpc._channel import ChannelReceiver, open_channel
from answerback.jsonrpc._endpoint import CANCELLED, REQUESTS_IN_FLIGHT, as_object, as_request_id
from answerback.transports._framing import MalformedMessage, decode
from answerback.transports._headers import SESSION_HEADER, VERSION_HEADER, acceptance
from answerback.transports.http._event_store import EventStore
from answerback.transports.http._legacy_session import (
    STANDALONE,
    Event,
    HTTPConnectionServer,
    LegacySession,
    Listener,
    ResponseStream,
    SSEStream,
    Waiter,
)
from answerback.transports.http._modern_server import (
    ParamHeaders,
    StatelessConnection,
    answer_modern,
    is_modern_request,
)
from answerback.transports.http._replication import Replication
from answerback.transports.http._request_auth import (
    AUTH_SCOPE_KEY,
    AuthInfo,
    RequestAuthenticator,
    principal_of,
)
from answerback.transports.http._security import EndpointRequest, HostPolicy, fields_of
from answerback.transports.http._serving import (
    CLIENT_CLOSED_REQUEST,
    AnswerFlaw,
    ClientGone,
    EventStreamResponse,
    answer_flaw,
    crowded,
    error_response,
    event_bytes,
    json_response,
    message_problem,
    until_read,
    until_ready,
)
from answerback.transports.http._sessions import (
    STATE_METHODS,
    SessionRecord,
    state_entry,
    undoing,
)
from answerback.transports.http._sse import (
    KEEPALIVE,
    encode_event,
    encode_event_pieces,
    encode_retry,
)
from answerback.transports.http._state import (
    InMemoryState,
    ServerState,
    StateFull,
    StateRefused,
    StateUnavailable,
)
from answerback.transports.http._state_outage import StateOutage
from answerback.types._errors import CONNECTION_CLOSED, INVALID_REQUEST, PARSE_ERROR
from answerback.types._versions import LEGACY_VERSIONS, MODERN_VERSIONS, SUPPORTED_VERSIONS

__all__ = ["HTTPConnectionServer", "StreamableHTTPApp"]

logger = logging.getLogger("answerback.http")

ALLOW = "GET, POST, DELETE"
_FIRST_EVENT_WAIT_SECONDS = 0.05
"""How long a new SSE response waits for its first event before sending the priming
event alone; a quick answer then shares one write with it."""
MAX_INITIALIZE_BYTES = 64 * 1024
"""A session keeps its ``initialize`` request (parsed, many times the size of its JSON)
as long as it lives, up to ``max_sessions`` of them: a request near ``max_body_bytes``
would pin about 100 MiB each."""
REPLAY_WRITE_BYTES = 64 * 1024
"""A stream's stored events are replayed in writes of about this size, each waiting for
the client to take the last: every resume of a large stream holds this much, not all of
it, however many clients resume it at once and however slowly they read."""
MAKING_ROOM_AFTER_SECONDS = 60.0
"""How long a session must have gone unused before a new one may take its place when
the server holds ``max_sessions``: sessions opened and left no longer lock everyone else
out until they idle out, and a client that used its session within the minute keeps it."""
NEWCOMER_GRACE_SECONDS = 10.0
"""How long a session may go without a request after its ``initialize`` before, the
server holding ``max_sessions``, a new one may take its place (before any session merely
unused for ``MAKING_ROOM_AFTER_SECONDS``): a burst of ``initialize`` requests, which a
caller the server cannot tell apart (no ``auth=``) may send, no longer locks everyone
else out for a minute. A client sends ``notifications/initialized`` at once; one that
does so within this grace keeps its session as any used one does."""
SHUTTING_DOWN = "the server is shutting down and did not answer this request. Send it again"
"""Why the requests still open when the server stops end: sent again, they are answered
by another replica, or by this server once it is back."""
_RECORD_GONE = (
    "the session's record is gone from the server's shared state: its client deleted it, "
    "or the server lost it (Redis evicted it or lost its data). Start a new session"
)
"""Why a replica ends its connection for a session whose shared record it finds gone:
a DELETE through another replica and a record Redis dropped look the same here."""
STATE_RETRY_AFTER_SECONDS = 1
"""The ``Retry-After`` of a 503 for want of the shared state (about a heartbeat, within
which the replica notices that it is back), and of one while stopping (behind a
balancer, another replica serves the request sent again)."""
_REQUEST_ID_KEY = "answerback.request_id"
"""Where a POST's JSON-RPC id is kept in the ASGI scope, for a 503 raised after it was read."""
_REPLAYED_ID_PREFIX = "answerback-replay-"
"""The ids of the requests a replica replays to rebuild a session's state locally."""


@runtime_checkable
class _CountsCalls(Protocol):
    """A server that can say what a stop now would cut off (``MCPServer`` can)."""

    def calls_in_progress(self) -> tuple[int, int]: ...


class _EveryMethod:
    """The endpoint as a plain ASGI app: every HTTP method reaches it, so each gets a
    JSON-RPC error body (a function route answers methods it does not list itself)."""

    def __init__(self, handle: Callable[[Request], Awaitable[Response]]) -> None:
        self.handle = handle

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = await self.handle(EndpointRequest(scope, receive))
        await response(scope, receive, send)


class _StopSteps:
    """The steps of a stop, each run whatever the one before did: a step that fails is
    logged with its traceback and the stop goes on (one session's broken event store
    must not leave the other sessions open, nor skip the stop's log lines); the first
    failure is raised once every step has run, so the ASGI server still hears of it."""

    def __init__(self) -> None:
        self.first: Exception | None = None

    @contextlib.contextmanager
    def step(self, what: str) -> Generator[None]:
        try:
            yield
        except Exception as exc:
            logger.exception("stopping: %s failed; the rest of the stop goes on", what)
            if self.first is None:
                self.first = exc

    def raise_first(self) -> None:
        if self.first is not None:
            raise self.first


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
        max_sessions_per_principal: int | None = None,
        max_backlog: int = 1000,
        max_requests_in_flight: int = REQUESTS_IN_FLIGHT,
        max_request_bytes_in_flight: int = REQUEST_BYTES_IN_FLIGHT,
        max_request_bytes_per_principal: int | None = None,
        keepalive_seconds: float = 15.0,
        retry_ms: int = 1000,
        session_idle_seconds: float = 3600.0,
        state: ServerState | None = None,
        auth: RequestAuthenticator | None = None,
    ) -> None:
        """``state`` keeps sessions, events and calls (``InMemoryState()`` by default;
        ``RedisState`` to share them between replicas); ``event_store`` is the in-memory
        state's event store, so give one or the other. ``auth`` decides who each request
        to the endpoint comes from (its routes are served beside the endpoint);
        ``max_sessions_per_principal`` and ``max_request_bytes_per_principal`` are what
        one caller it identifies may hold of ``max_sessions`` and
        ``max_request_bytes_in_flight`` (``None``: half), so that no one caller can
        have everyone else refused."""
        if state is not None and event_store is not None:
            raise ValueError(
                "Give either state= or event_store=, not both: the state holds the event "
                "store (InMemoryState(event_store=...))."
            )
        positive_int("max_body_bytes", max_body_bytes, "bytes")
        positive_seconds("body_timeout_seconds", body_timeout_seconds)
        positive_int("max_sessions", max_sessions, "sessions")
        positive_int_or_none(
            "max_sessions_per_principal", max_sessions_per_principal, "sessions", "half"
        )
        positive_int("max_backlog", max_backlog, "messages")
        positive_int("max_requests_in_flight", max_requests_in_flight, "requests")
        positive_int("max_request_bytes_in_flight", max_request_bytes_in_flight, "bytes")
        positive_int_or_none(
            "max_request_bytes_per_principal", max_request_bytes_per_principal, "bytes", "half"
        )
        positive_seconds("keepalive_seconds", keepalive_seconds)
        whole_number("retry_ms", retry_ms, "milliseconds", "reconnect at once")
        positive_seconds("session_idle_seconds", session_idle_seconds)
        endpoint_path("path", path)
        flag("json_response", json_response)
        if host_policy is not None and not isinstance(cast(object, host_policy), HostPolicy):
            raise TypeError(
                "host_policy must be an answerback.transports.http.HostPolicy(...) or None, "
                f"got {host_policy!r}"
            )
        self.server = server
        self.path = path
        self.host_policy = host_policy or HostPolicy()
        self.state: ServerState = (
            state if state is not None else InMemoryState(event_store=event_store)
        )
        self.auth = auth
        self.json_response = json_response
        self.max_body_bytes = max_body_bytes
        self.body_timeout_seconds = body_timeout_seconds
        self.max_sessions = max_sessions
        self.max_sessions_per_principal = max_sessions_per_principal or max(max_sessions // 2, 1)
        self._sessions_of: dict[str, dict[str, LegacySession]] = {}
        """The sessions each authenticated caller has on this process, by id, starting
        ones included: a session counts from ``_new_session`` until it is ended (a DELETE
        gives its place back at once, as it does for ``max_sessions``) or its run ends.
        Kept as the connection objects, so that a connection given up here whose run
        ends late does not uncount the one that took the same session up again."""
        self.max_backlog = max_backlog
        self.max_requests_in_flight = max_requests_in_flight
        """A session's requests answered at once: they outlive their POSTs (to be
        resumed), so a client that hangs up does not end them."""
        share = max_request_bytes_per_principal or max(max_request_bytes_in_flight // 2, 1)
        self.request_bytes = RequestBytes(max_request_bytes_in_flight, share=share)
        """The bytes of the requests being answered, every session's and every
        2026-07-28 request's together: what the server holds for them is bounded
        however many sessions a client opens, and one authenticated caller holds at
        most its share, so it cannot have everyone else refused (see
        ``answerback.jsonrpc._budget``)."""
        self.keepalive_seconds = keepalive_seconds
        self.retry_ms = retry_ms
        self.session_idle_seconds = session_idle_seconds
        self.sessions: dict[str, LegacySession] = {}
        self._starting = 0
        """Sessions whose ``initialize`` is still being answered (they count as held)."""
        self.task_group: TaskGroup | None = None
        self.stateless = StatelessConnection()
        self.param_headers = ParamHeaders(server)
        self._closing = False
        self._stop: tuple[float, int | None] | None = None
        """When this server began to stop, and how many calls it was serving then."""
        self.replication: Replication | None = None
        """The cross-replica routing, while the lifespan runs with a shared state."""
        self.state_outage = StateOutage()
        """Whether the shared state failed when last used: an outage logged once."""
        self.start_failure: StateUnavailable | None = None
        """Why the state could not start, when the lifespan failed for that: said in one
        line, since it is the deployment's fault (Redis down, a wrong password), not a
        bug a traceback would help with."""
        self._adopting: dict[str, anyio.Event] = {}
        """Sessions whose connection this process is building from their record."""
        self._endpoint_app = _EveryMethod(self._endpoint)
        self._primitives: Primitives | None = None
        """The loop's, for the channels opened per request (looked up once a lifespan)."""
        routes: list[BaseRoute] = [
            *(auth.routes if auth is not None else ()),
            Route(path, self._endpoint_app),
        ]
        self.app = Starlette(routes=routes, lifespan=self._lifespan)

    @property
    def event_store(self) -> EventStore:
        """Where SSE events are kept for resumption (the state's event store)."""
        return self.state.events

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if (
            scope["type"] == "http"
            and scope["path"] == self.path
            and not scope.get("root_path")
            and not self.app.user_middleware
            and not self.app.exception_handlers
        ):
            # Straight to the endpoint: Starlette's router and its default middleware
            # would only find the same route, at about a tenth of the cost of an echo.
            await self._endpoint_app(scope, receive, send)
        elif scope["type"] == "lifespan":
            await self.app(scope, receive, self._start_failure_said(send))
        else:  # the auth routes, other paths, middleware added to .app
            await self.app(scope, receive, send)

    def _start_failure_said(self, send: Any) -> Any:
        """``send`` for the lifespan, a failed start for want of the state reported as its
        one-line reason in place of Starlette's traceback: the ASGI server logs either."""

        async def said(message: Any) -> None:
            failure = self.start_failure
            if message.get("type") == "lifespan.startup.failed" and failure is not None:
                message = {**message, "message": f"{type(failure).__name__}: {failure}"}
            await send(message)

        return said

    @asynccontextmanager
    async def _lifespan(self, _: Starlette) -> AsyncGenerator[None, None]:
        async with contextlib.AsyncExitStack() as stack:
            self.start_failure = None
            try:
                key = await stack.enter_async_context(self.state.running())
            except StateUnavailable as exc:
                self.start_failure = exc
                raise
            attach = getattr(self.server, "attach_state", None)
            if attach is not None:  # MCPServer: notifications and single-use state
                await stack.enter_async_context(attach(self.state))
            tg = await stack.enter_async_context(anyio.create_task_group())
            self.task_group = tg
            self._primitives = native_primitives()
            self.stateless = StatelessConnection()
            await tg.start(
                self.stateless.run,
                self.server,
                self._primitives,
                self.request_bytes,
                self.max_body_bytes,
            )
            self._closing = False
            tg.start_soon(self._reap_idle_sessions)
            if self.state.shared:
                logger.info(
                    "replica %s is process %d (named so in other replicas' logs)",
                    self.state.replica_id,
                    os.getpid(),
                )
                self.replication = Replication(self.state, key, self.state_outage)
                tg.start_soon(self.replication.heartbeat)
                tg.start_soon(self.replication.inbox, self._from_inbox)
            try:
                yield
            finally:
                self.task_group = None
                self._say_stopping()  # said already if the sessions were closed first
                steps = _StopSteps()
                for session in list(self.sessions.values()):
                    with steps.step(f"closing session {session.id}"):
                        # Shared sessions live on: another replica resumes their streams.
                        await session.close(SHUTTING_DOWN, forget_events=not self.state.shared)
                self.sessions.clear()
                self._say_stopped()
                tg.cancel_scope.cancel()
                if self.replication is not None:
                    self.replication = None
                    with (
                        steps.step("leaving the replicas"),
                        anyio.CancelScope(shield=True),
                        contextlib.suppress(StateUnavailable),
                    ):
                        await self.state.replicas.stop(self.state.replica_id)
                self.state_outage.stopping()
                steps.raise_first()

    async def _reap_idle_sessions(self) -> None:
        """End the sessions idle here too long; with replicas, also note the sessions
        with a client connected here as used, often enough within
        ``_making_room_after`` that no other replica takes them for idle."""
        interval = max(0.05, self._making_room_after / 4)
        while True:
            await anyio.sleep(interval)
            now = anyio.current_time()
            for session in list(self.sessions.values()):
                if not session.has_client and now - session.last_active > self.session_idle_seconds:
                    await self._end_session(session, "the session was idle too long")
            if self.state.shared:
                await self._mark_connected_sessions_used()

    async def _mark_connected_sessions_used(self) -> None:
        """A client that holds a stream or awaits an answer here sends no request
        meanwhile (a long call, a GET stream that only listens), so the shared record
        would say its session unused. The sessions whose record is gone (deleted
        through another replica) end here too: nothing else would end a GET stream
        that only listens, or stop counting an unused one against its caller's share."""
        connected = [session for session in self.sessions.values() if session.has_client]
        unconnected = [session for session in self.sessions.values() if not session.has_client]
        try:
            ids = [session.id for session in connected]
            ended = await self.state.sessions.mark_used(ids, self.session_idle_seconds)
            ended |= await self.state.sessions.ended([session.id for session in unconnected])
        except StateUnavailable as exc:
            self.state_outage.failed(exc)
            return
        await self._end_ended_elsewhere([*connected, *unconnected], ended)

    async def _end_ended_elsewhere(self, sessions: list[LegacySession], ended: set[str]) -> None:
        """End here the connections of ``sessions`` whose shared record is gone."""
        for session in sessions:
            if session.id in ended and self.sessions.get(session.id) is session:
                await self._end_session(session, _RECORD_GONE, record_gone=True)

    async def _forget_sessions_ended_elsewhere(self, principal: str | None) -> None:
        """Before refusing ``principal`` for holding its share here: a DELETE through
        another replica ends only the shared record, so this process may still count
        sessions its client has ended (until the next ``_mark_connected_sessions_used``)."""
        if not self.state.shared or principal is None:
            return
        held = self._sessions_of.get(principal, {})
        running = [session for session in held.values() if self.sessions.get(session.id) is session]
        ended = await self.state.sessions.ended([session.id for session in running])
        await self._end_ended_elsewhere(running, ended)

    @property
    def _making_room_after(self) -> float:
        return min(MAKING_ROOM_AFTER_SECONDS, self.session_idle_seconds)

    @property
    def _newcomer_grace(self) -> float:
        return min(NEWCOMER_GRACE_SECONDS, self.session_idle_seconds)

    def _unused_longest(self) -> LegacySession | None:
        """The session a new one may take the place of when the server is full, among
        those no client is connected to: the one left the longest after its
        ``initialize`` alone, if for ``NEWCOMER_GRACE_SECONDS``; else the one unused
        the longest, if for ``MAKING_ROOM_AFTER_SECONDS``; ``None`` if there is none.

        Its client gets 404 on its next request and sets up a new session, as the
        specification has it do; so a full server serves everyone who comes back rather
        than whoever opened sessions first and walked away."""
        idle = [session for session in self.sessions.values() if not session.has_client]
        if not idle:
            return None
        now = anyio.current_time()
        newcomers = [session for session in idle if not session.used]
        if newcomers:
            oldest = min(newcomers, key=lambda session: session.last_active)
            if now - oldest.last_active >= self._newcomer_grace:
                return oldest
        longest = min(idle, key=lambda session: session.last_active)
        if now - longest.last_active < self._making_room_after:
            return None
        return longest

    def _room_for_one(self, request_id: RequestId | None) -> LegacySession | Response | None:
        """``None`` while the server holds fewer than ``max_sessions``; else the session
        to end for one more (``_unused_longest``), or the 503 refusing it if none may go.
        A new session and a shared one taken up here both ask it."""
        if len(self.sessions) + self._starting < self.max_sessions:
            return None
        unused = self._unused_longest()
        if unused is not None:
            return unused
        return error_response(
            503,
            CONNECTION_CLOSED,
            f"Service Unavailable: the server already holds its limit of "
            f"{self.max_sessions} sessions, each of them used in the last "
            f"{self._making_room_after:g} s or opened in the last "
            f"{self._newcomer_grace:g} s. Try again later (clients should "
            "DELETE sessions they no longer need).",
            request_id,
        )

    async def _make_room(self, session: LegacySession) -> None:
        """End ``session`` here for a new one, and everywhere too if the shared record
        says it is idle everywhere: not used since its ``initialize``, or not for
        ``_making_room_after``, through any replica.

        A session given up here only lives on where it is used, and is taken up here
        again if its client comes back (no 404 for a client that did nothing wrong).
        One idle everywhere goes with its shared record, which would otherwise outlive
        the place it gave up by ``session_idle_seconds``: a burst of ``initialize``
        requests would fill the shared store far past ``max_sessions``."""
        unused_here = anyio.current_time() - session.last_active
        everywhere = True
        if self.state.shared:
            unused_anywhere = await self.state.sessions.unused_for(session.id)
            everywhere = unused_anywhere is None or unused_anywhere >= self._making_room_after
        logger.info(
            "holding max_sessions=%d: ended session %s%s, unused here for %.0f s%s, for a new one",
            self.max_sessions,
            session.id,
            "" if everywhere else " here only (it is in use through another replica)",
            unused_here,
            "" if session.used else " since its initialize",
        )
        await self._end_session(
            session, "the server needed its place for a new session", everywhere=everywhere
        )

    async def close_sessions(self, reason: str = SHUTTING_DOWN) -> None:
        """End every session now and refuse new requests (503) until the lifespan restarts.

        Requests still open, the sessions' and the 2026-07-28 ones, are answered with an
        error, and every stream ends, so an ASGI server that waits for open responses
        before its lifespan shutdown (uvicorn does) can stop. ``serve_uvicorn``/
        ``run_uvicorn`` call this for you.
        """
        self._closing = True
        self._say_stopping()
        self.stateless.close(reason)
        steps = _StopSteps()
        for session in list(self.sessions.values()):
            with steps.step(f"closing session {session.id}"):
                await self._end_session(session, reason)
        steps.raise_first()

    def _calls_in_progress(self) -> tuple[int, int] | None:
        """The calls the server answers now and its questions waiting for answers (see
        ``MCPServer.calls_in_progress``); ``None`` for a server that does not count."""
        if isinstance(self.server, _CountsCalls):
            return self.server.calls_in_progress()
        return None

    def _say_stopping(self) -> None:
        """Log, once a stop, what this server still serves as it begins to stop: the
        operator who drained it learns whether they waited long enough."""
        if self._stop is not None:
            return
        counted = self._calls_in_progress()
        self._stop = (anyio.current_time(), None if counted is None else counted[0])
        if counted is None:  # "none" here would tell the operator they waited long enough
            logger.info("stopping (this server does not count its calls in progress)")
            return
        calls, questions = counted
        if calls == 0:
            logger.info("stopping: no call in progress here")
            return
        asking = ""
        if questions:
            asking = f" (and {questions} question{'' if questions == 1 else 's'} of the "
            asking += "server's waiting for a client's answer)"
        logger.warning(
            "stopping with %d call%s in progress here%s; each ends now, its client told that "
            "the server is shutting down and to send the request again",
            calls,
            "" if calls == 1 else "s",
            asking,
        )

    def _say_stopped(self) -> None:
        """Log, as the lifespan ends, how the calls in progress at the stop ended: all
        of them, or how many were still running after uvicorn's grace period (a plain
        ``def`` tool stuck in its thread), which the server no longer waits for."""
        if self._stop is None:
            return
        began, calls_then = self._stop
        self._stop = None
        lasted = anyio.current_time() - began
        counted = self._calls_in_progress()
        running = 0 if counted is None else counted[0]
        if running:
            logger.warning(
                "stopped %.1f s after the stop began, with %d call%s still running: a tool "
                "that does not stop when cancelled (a plain def tool stuck in its thread) is "
                "no longer waited for",
                lasted,
                running,
                "" if running == 1 else "s",
            )
        elif calls_then:
            logger.info(
                "stopped %.1f s after the stop began: the %d call%s in progress then %s ended",
                lasted,
                calls_then,
                "" if calls_then == 1 else "s",
                "has" if calls_then == 1 else "have",
            )

    async def _end_session(
        self,
        session: LegacySession,
        reason: str,
        *,
        everywhere: bool = False,
        record_gone: bool = False,
    ) -> None:
        """End this process's connection for a session; ``everywhere`` (the client
        deleted it) ends its shared record too, so no replica serves it again.

        Its stored events go only with the session (``everywhere``, its shared record
        found gone, or no replicas sharing it): a shared session ended only here lives
        on through the other replicas, which resume its streams from those events."""
        if self.sessions.get(session.id) is session:
            del self.sessions[session.id]
        self._give_back_share(session)
        ends = everywhere or record_gone or not self.state.shared
        try:
            if everywhere or not self.state.shared:
                await self.state.sessions.end(session.id)
        finally:
            await session.close(reason, forget_events=ends)

    async def _run_session(self, session: LegacySession) -> None:
        try:
            await session.run(self._serve_connection(session))
        finally:
            self._give_back_share(session)
            if self.sessions.get(session.id) is session:
                del self.sessions[session.id]
            if not self.state.shared:  # the only connection: the session is over
                await self.state.sessions.end(session.id)

    def _give_back_share(self, session: LegacySession) -> None:
        """Stop counting a session against its caller's share; ending it and its run
        ending both call this, so it forgets a session it no longer counts."""
        if session.principal is None:
            return
        held = self._sessions_of.get(session.principal)
        if held is not None and held.get(session.id) is session:
            del held[session.id]
            if not held:
                del self._sessions_of[session.principal]

    def _serve_connection(self, session: LegacySession) -> Callable[[Any, WriteStream], Any]:
        """How to run the server on a session's connection: when replicas share
        sessions, it also learns whether this connection delivers the broadcasts."""
        limit = self.max_requests_in_flight
        if not self.state.shared:
            return partial(
                self.server.serve_connection,
                max_requests_in_flight=limit,
                request_bytes=self.request_bytes,
            )

        async def receives_broadcasts() -> bool:
            if not session.receives_broadcasts():
                return False
            # Resource subscriptions POSTed to other replicas are in the record only.
            with contextlib.suppress(StateUnavailable):
                found = await self._shared_session(session.id, session, session.principal)
                return found is not None
            return True

        async def serve(read: Any, write: WriteStream) -> None:
            serve_connection: Any = self.server.serve_connection
            await serve_connection(
                read,
                write,
                receives_broadcasts=receives_broadcasts,
                max_requests_in_flight=limit,
                request_bytes=self.request_bytes,
                keeps_roots=False,  # the client's "roots changed" may reach another replica
            )

        return serve

    async def _from_inbox(self, session_id: str, message: JSONObject) -> None:
        """A client's answer or cancellation, POSTed to another replica, for a call
        this process owns."""
        session = self.sessions.get(session_id)
        if session is None or not session.submit(Envelope(message)):
            logger.debug("dropped a message for session %s: it has ended here", session_id)
            return
        if message.get("method") == CANCELLED:
            await self._cancel(session, message)

    # -- request handling ------------------------------------------------------------

    async def _endpoint(self, request: Request) -> Response:
        try:
            return await self._checked_endpoint(request)
        except StateUnavailable as exc:
            # The detail (Redis's address, keys, replies) is the operator's, in the log.
            self.state_outage.refuse(exc)
            return _state_unavailable(exc, request.scope.get(_REQUEST_ID_KEY))

    async def _checked_endpoint(self, request: Request) -> Response:
        headers = fields_of(request)
        if "host" in headers.repeated:
            return error_response(
                400,
                INVALID_REQUEST,
                "Bad Request: the request carries more than one Host header field; send "
                "one (RFC 9112, section 3.2).",
            )
        refusal = self.host_policy.host_refusal(headers.get("host"))
        if refusal is not None:
            return error_response(421, INVALID_REQUEST, refusal)
        refusal = self.host_policy.origin_refusal(headers.get("origin"))
        if refusal is not None:
            return error_response(403, INVALID_REQUEST, refusal)
        info: AuthInfo | None = None
        if self.auth is not None:
            verdict = await self.auth.authenticate(request)
            if isinstance(verdict, Response):
                return verdict
            info = request.scope[AUTH_SCOPE_KEY] = verdict
        if request.method not in ("GET", "POST", "DELETE"):
            return error_response(
                405,
                INVALID_REQUEST,
                f"Method Not Allowed: the MCP endpoint takes {ALLOW}, not {request.method}.",
                headers={"allow": ALLOW},
            )
        if self._closing:  # nothing read yet: the Retry-After says it was not handled
            return error_response(
                503,
                CONNECTION_CLOSED,
                "Service Unavailable: the server is shutting down. Send the request again.",
                headers={"retry-after": str(STATE_RETRY_AFTER_SECONDS)},
            )
        if self.task_group is None:
            return error_response(
                500,
                INVALID_REQUEST,
                "The MCP application's lifespan is not running; run it under an ASGI "
                "server with lifespan enabled. Mounted in a Starlette or FastAPI app, "
                "give the parent its lifespan: lifespan=mcp_app.app.router.lifespan_context, "
                "or enter that inside the parent's own lifespan.",
            )
        version = headers.get(VERSION_HEADER)
        in_session = SESSION_HEADER in headers
        if SESSION_HEADER in headers.repeated:
            return _sent_twice("Mcp-Session-Id", "the session id the server gave")
        # A version header sent twice says no version: the body alone tells the era.
        version_repeated = VERSION_HEADER in headers.repeated
        read: tuple[JSONObject, bool, int, AnswerFlaw | None] | None = None
        if request.method == "POST":
            parsed = await self._read_message(request)
            if isinstance(parsed, Response):
                return parsed
            read = parsed
            if "method" in read[0]:  # a response's id is the server's own question's
                request.scope[_REQUEST_ID_KEY] = as_request_id(read[0].get("id"))
            if info is not None and self.auth is not None:
                refusal = await self.auth.authorize(info, read[0])
                if refusal is not None:
                    return refusal
            if not in_session and is_modern_request(read[0], None if version_repeated else version):
                return await answer_modern(self, request, *read)
        elif version in MODERN_VERSIONS and not in_session:
            return error_response(
                405,
                INVALID_REQUEST,
                "Method Not Allowed: 2026-07-28 requests are POSTs only.",
                headers={"allow": ALLOW},
            )
        if version_repeated:
            return _sent_twice("MCP-Protocol-Version", "the protocol version")
        if version in MODERN_VERSIONS:  # only a request naming a session gets here with one
            return error_response(
                400,
                INVALID_REQUEST,
                f"Bad Request: MCP-Protocol-Version {version!r} has no sessions, and this "
                "request names one (Mcp-Session-Id). Send the version the session "
                f"negotiated, or send {version} requests without Mcp-Session-Id.",
            )
        if version is not None and version not in LEGACY_VERSIONS:
            return error_response(
                400,
                INVALID_REQUEST,
                f"Bad Request: unsupported MCP-Protocol-Version {version!r}; "
                f"supported: {', '.join(SUPPORTED_VERSIONS)}.",
            )
        if read is not None:
            response = await self._post(request, *read)
        elif request.method == "GET":
            response = await self._get(request)
        else:
            response = await self._delete(request)
        if self.state_outage.since is not None and (
            in_session or (read is not None and read[0].get("method") == "initialize")
        ):  # it used the shared state, without error: what failed works again
            self.state_outage.reached()
        return response

    async def _session_for(self, request: Request) -> LegacySession | Response:
        """The session a request names, checked: known (to this process, or to the
        shared state, which then builds this process's connection for it, within
        ``max_sessions`` and the caller's share of them), opened by the same caller,
        and spoken in its negotiated version."""
        session_id = request.headers.get(SESSION_HEADER)
        if session_id is None:
            return error_response(
                400, INVALID_REQUEST, "Bad Request: Mcp-Session-Id header required."
            )
        session = self.sessions.get(session_id)
        principal = principal_of(request.scope)
        if self.state.shared:
            shared = await self._shared_session(session_id, session, principal)
            if isinstance(shared, Response):
                return shared
            session = shared
        if session is None:
            return _session_not_found()
        refusal = _misnamed(request, session.principal, session.protocol_version)
        if refusal is not None:
            return refusal
        session.last_active = anyio.current_time()
        session.used = True
        return session

    async def _shared_session(
        self, session_id: str, session: LegacySession | None, principal: str | None
    ) -> LegacySession | Response | None:
        """This process's connection for a shared session, up to date with its record
        (built from it if this process has none and ``principal`` opened it); ``None``
        if the session has ended, or is not ``principal``'s to take up.

        Building one takes a place among ``max_sessions``, and one of the caller's
        share of them, as ``initialize`` does, or gets its 503: any replica takes up
        any record, so an unlimited one would hold every session its clients name, and
        a caller would hold its share once on each replica that took its sessions up."""
        record = await self.state.sessions.touch(session_id, self.session_idle_seconds)
        if record is None:
            if session is not None:  # deleted through another replica, or lost
                await self._end_session(session, _RECORD_GONE, record_gone=True)
            return None
        if session is None:  # unless taken up here while the record was read
            session = self.sessions.get(session_id)
        if (
            session is None
            and record.principal == principal
            and self._over_share(principal, None) is not None
        ):
            await self._forget_sessions_ended_elsewhere(principal)
            session = self.sessions.get(session_id)  # unless taken up here meanwhile
        if session is None:
            if record.principal != principal:
                return None  # not found, as on the replica that opened it
            adopting = self._adopting.get(session_id)
            if adopting is not None:
                await adopting.wait()
                return self.sessions.get(session_id)
            making_room_from = self._room_for_one(None)
            if isinstance(making_room_from, Response):
                return making_room_from
            over_share = self._over_share(principal, None)
            if over_share is not None:
                return over_share
            adopting = self._adopting[session_id] = anyio.Event()
            # The place and the caller's share are held from here, before anything is
            # awaited: two sessions taken up at once cannot both have the last of either.
            self._starting += 1
            starting = self._new_session(record.id, record.principal)
            try:
                if making_room_from is not None:
                    await self._make_room(making_room_from)
                session = await self._adopt(starting, record)
            finally:
                self._starting -= 1
                del self._adopting[session_id]
                adopting.set()
                if self.sessions.get(session_id) is not starting:
                    self._give_back_share(starting)
            if session is None:
                return None
        await self._catch_up(session, record.state)
        return session

    async def _catch_up(self, session: LegacySession, state: dict[str, JSONObject]) -> None:
        """Bring this process's connection for a session to the state its record holds:
        replay each entry it has not applied, and undo what the record no longer has
        (another replica accepted a change meanwhile)."""
        for key, entry in list(state.items()):
            if session.mirrored.get(key) != entry:
                session.mirror(key, entry)
                await self._replay(session, entry)
        for key in [key for key in session.mirrored if key not in state]:
            session.mirror(key, None)
            await self._replay(session, undoing(key))

    async def _adopt(self, session: LegacySession, record: SessionRecord) -> LegacySession | None:
        """Run ``session``, this process's connection for a session another replica
        opened, from its record: the fresh connection gets the ``initialize`` request
        replayed (its answer unused)."""
        assert self.task_group is not None
        session.protocol_version = record.protocol_version
        self.task_group.start_soon(self._run_session, session)
        answer = await session.ask({**record.initialize, "id": f"{_REPLAYED_ID_PREFIX}init"})
        if answer is None or "result" not in answer[0]:
            await session.close("its record could not be replayed", forget_events=False)
            return None
        session.submit(Envelope({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        self.sessions[record.id] = session
        return session

    async def _replay(self, session: LegacySession, message: JSONObject) -> None:
        """Apply one of the session's state-setting requests to this connection."""
        session.replays += 1
        await session.ask({**message, "id": f"{_REPLAYED_ID_PREFIX}{session.replays}"})

    def _new_session(self, session_id: str, principal: str | None) -> LegacySession:
        """A session's connection, to be run by ``_run_session`` at once."""
        session = LegacySession(
            session_id,
            self.event_store,
            self.max_backlog,
            principal=principal,
            hooks=self.replication,
            outage=self.state_outage,
        )
        if principal is not None:
            self._sessions_of.setdefault(principal, {})[session_id] = session
        return session

    async def _read_message(
        self, request: Request
    ) -> tuple[JSONObject, bool, int, AnswerFlaw | None] | Response:
        """The POSTed JSON-RPC message, whether the client takes SSE, the body's size
        (``Envelope.size``) and, for an answer that names its question but cannot be
        used, why (the message is then the error answer that question fails with); or
        the error."""
        headers = fields_of(request)
        accepts = acceptance(headers.joined("accept"))
        if not accepts.json:
            return error_response(
                406,
                INVALID_REQUEST,
                "Not Acceptable: Accept must include application/json and text/event-stream.",
            )
        content_type = headers.get("content-type", "")
        if content_type.split(";")[0].strip().lower() != "application/json":
            return error_response(
                415, INVALID_REQUEST, "Unsupported Media Type: send application/json."
            )
        body = await self._read_body(request)
        if isinstance(body, Response):
            return body
        decoded = decode(body)
        if isinstance(decoded, MalformedMessage):
            return error_response(400, PARSE_ERROR, f"Parse error: {decoded}", decoded.request_id)
        message = as_object(decoded.message)
        if message is None:
            what = (
                "batch arrays are not supported"
                if isinstance(decoded.message, list)
                else "not an object"
            )
            return error_response(400, INVALID_REQUEST, f"Invalid request: {what}.")
        problem = message_problem(message)
        flaw = None
        if "method" not in message and (answered := as_request_id(message.get("id"))) is not None:
            flaw = answer_flaw(message, problem)
            if flaw is not None and not flaw.unreadable:  # decode stood one in for those
                message = flaw.stand_in(answered)
        elif problem is not None:
            return error_response(400, *problem, as_request_id(message.get("id")))
        if len(body) > MAX_INITIALIZE_BYTES and message.get("method") == "initialize":
            return error_response(
                413,
                INVALID_REQUEST,
                f"Payload Too Large: an initialize request may hold at most "
                f"{MAX_INITIALIZE_BYTES} bytes, and this one holds {len(body)}. The server "
                "keeps it for the session's life; a client's capabilities and "
                "information fit in far less.",
                as_request_id(message.get("id")),
            )
        return message, accepts.event_stream, len(body), flaw

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
        receive = request.receive  # not request.stream(): an async generator costs more
        with anyio.move_on_after(self.body_timeout_seconds):
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    return Response(status_code=CLIENT_CLOSED_REQUEST)  # http.disconnect
                chunk: bytes = message.get("body", b"")
                size += len(chunk)
                if size > limit:
                    return _too_large(limit)
                chunks.append(chunk)
                if not message.get("more_body", False):
                    return chunks[0] if len(chunks) == 1 else b"".join(chunks)
        return error_response(
            408,
            INVALID_REQUEST,
            f"Request Timeout: the request body did not arrive in full within "
            f"{self.body_timeout_seconds:g} s.",
            headers={"connection": "close"},
        )

    async def _post(
        self,
        request: Request,
        message: JSONObject,
        wants_sse: bool,
        size: int,
        flaw: AnswerFlaw | None,
    ) -> Response:
        """A legacy (2025-11-25 and older) POST: sessions, SSE, server requests.
        ``flaw``: why the answer POSTed cannot be used (``message`` is the error answer
        standing in for it)."""
        method = message.get("method")
        request_id = as_request_id(message.get("id"))
        if method == "initialize":
            if SESSION_HEADER not in request.headers:
                return await self._initialize(request, message, request_id, wants_sse)
            found = await self._session_for(request)
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
        found = await self._session_for(request)
        if isinstance(found, Response):
            return found
        session = found
        envelope = Envelope(message, transport_context=request, size=size, holder=session.principal)
        if method is None or request_id is None:  # a response, or a notification
            if self.replication is not None:
                routed = await self._route_elsewhere(session, message)
                if routed is not None:
                    if flaw is not None and request_id is not None and routed.status_code == 202:
                        return flaw.refusal(request_id, failed=True)
                    return routed
            if method is None and not session.answers_a_question(message):
                if flaw is not None and request_id is not None and not flaw.unreadable:
                    return flaw.refusal(request_id, failed=False)
                return Response(status_code=202)  # accepted, and of no use to anyone
            if not session.submit(envelope):
                # No id: a notification has none, a response's is the server's question's.
                return _session_ended(None)
            if flaw is not None and request_id is not None:
                return flaw.refusal(request_id, failed=True)
            if method == CANCELLED:
                await self._cancel(session, message)
            return Response(status_code=202)
        if is_modern_request(message, None):
            return _modern_in_session(session, request_id)
        if session.in_use(request_id):
            return _id_in_use(request_id)
        headers = {SESSION_HEADER: session.id}
        # A request that changes what the session's connection remembers is recorded
        # for the other replicas once this connection has accepted it, never before:
        # a refused one would be replayed, and kept in the record, for nothing.
        changes_state = self.state.shared and method in STATE_METHODS
        plain_json = self.json_response and not _asks_for_progress(message)
        if plain_json or not wants_sse or changes_state:
            if self.replication is not None and not await self.replication.open_call(
                session, request_id, None
            ):
                return _id_in_use(request_id)
            answer = await self._await_answer(
                session, request, envelope, request_id, until_hang_up=not changes_state
            )
            if isinstance(answer, Response):
                return answer
            if changes_state and "result" in answer[0]:
                key, entry = state_entry(message)
                try:
                    await self.state.sessions.set_state(session.id, key, entry)
                except StateUnavailable as exc:  # handled already: no Retry-After
                    return _state_unavailable(exc, request_id, handled=True)
                session.mirror(key, entry)
            return json_response(answer[1], headers=headers)
        stream = session.open_stream(request_id)
        if self.replication is not None:
            try:
                opened = await self.replication.open_call(session, request_id, stream.id)
            except StateUnavailable:
                session.cancel_request(request_id)  # the stream ends unused; the POST gets 503
                raise
            if not opened:
                session.cancel_request(request_id)
                return _id_in_use(request_id)
        listen = self._listen(stream)
        envelope.transport_context = ResponseStream(request, stream)
        if not session.submit(envelope):
            listen[0].close()
            listen[1].close()
            return _session_ended(request_id)
        taken, ended = await self._first_events(listen[1])
        if ended and len(taken) == 1 and stream.done and stream.listener is listen[0]:
            return await self._plain_answer(session, stream, listen, taken[0], headers)
        return self._sse_response(session, stream, listen, headers, taken=taken)

    async def _first_events(self, listener: ChannelReceiver[Event]) -> tuple[list[Event], bool]:
        """What the request's stream carries within ``_FIRST_EVENT_WAIT_SECONDS`` (the
        events already waiting after the first included), and whether it has ended."""
        taken: list[Event] = []
        try:
            taken.append(await listener.receive_within(_FIRST_EVENT_WAIT_SECONDS))
            while True:
                taken.append(listener.receive_nowait())
        except (TimeoutError, anyio.WouldBlock):
            return taken, False
        except anyio.EndOfStream:
            return taken, True

    async def _plain_answer(
        self,
        session: LegacySession,
        stream: SSEStream,
        listen: Listener,
        answer: Event,
        headers: dict[str, str],
    ) -> Response:
        """A request answered at once, and with nothing before its answer, gets that
        answer as plain JSON, which the specification lets a server choose: two writes
        instead of an event stream's three, and nothing kept for resuming."""
        listen[1].close()
        if stream.listener is listen[0]:
            stream.listener = None
        await session.forget(stream.id)
        return json_response(answer[1], headers=headers)

    async def _initialize(
        self, request: Request, message: JSONObject, request_id: RequestId | None, wants_sse: bool
    ) -> Response:
        """Open a session, which exists only once ``initialize`` has succeeded: a failed
        one gets its error and leaves nothing behind."""
        if request_id is None:
            return error_response(
                400, INVALID_REQUEST, "Invalid request: initialize is a request; give it an id."
            )
        principal = principal_of(request.scope)
        if self._over_share(principal, request_id) is not None:
            await self._forget_sessions_ended_elsewhere(principal)
        making_room_from = self._room_for_one(request_id)
        if isinstance(making_room_from, Response):
            return making_room_from
        over_share = self._over_share(principal, request_id)
        if over_share is not None:
            return over_share
        assert self.task_group is not None
        session = self._new_session(secrets.token_urlsafe(24), principal)
        self._starting += 1  # the place is held from here, before anything is awaited
        try:
            if making_room_from is not None:
                await self._make_room(making_room_from)
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
            record = SessionRecord(
                session.id, session.protocol_version, message, principal=session.principal
            )
            await self.state.sessions.create(record, self.session_idle_seconds)
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
        # Taken, so that the stream sends the stored answer first: a priming event
        # stored now would get a later id, and a client resuming from it would never
        # get its answer.
        taken, _ = await self._first_events(listen[1])
        return self._sse_response(session, stream, listen, headers, taken=taken)

    def _over_share(self, principal: str | None, request_id: RequestId | None) -> Response | None:
        """The 503 refusing ``principal`` one more session here when it holds its share
        (``max_sessions_per_principal``), new or taken up from another replica."""
        held = len(self._sessions_of.get(principal, ())) if principal is not None else 0
        if held < self.max_sessions_per_principal:
            return None
        return error_response(
            503,
            CONNECTION_CLOSED,
            f"Service Unavailable: you already hold {held} "
            "sessions, the most one caller may hold on this server. DELETE sessions "
            "you no longer need, then try again.",
            request_id,
        )

    async def _await_answer(
        self,
        session: LegacySession,
        request: Request,
        envelope: Envelope,
        request_id: RequestId,
        *,
        until_hang_up: bool = True,
    ) -> tuple[JSONObject, bytes] | Response:
        """Submit a request and wait for its answer, to send back as one JSON body.

        ``until_hang_up=False`` waits for the answer even if the client hangs up: a
        state-setting request (answered at once) whose change must reach the session's
        record whether or not anyone reads the answer.
        """
        waiter = session.json_waiters[request_id] = Waiter(primitives=self._primitives)
        try:
            if not session.submit(envelope):
                return _session_ended(request_id)
            if until_hang_up:
                await until_ready(request, waiter.settled)
            else:
                await waiter.settled.receive()
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

    async def _route_elsewhere(
        self, session: LegacySession, message: JSONObject
    ) -> Response | None:
        """With replicas sharing sessions: a response to a question of the server's,
        or a cancellation of a call that another replica owns, goes to that replica
        (202), or is refused; ``None`` if it is for this process."""
        assert self.replication is not None
        method = message.get("method")
        if method is None:
            routed = await self.replication.route_answer(session, message)
            if isinstance(routed, Response):
                return routed  # in its owner's inbox (202), or refused
            owner, message = self.state.replica_id, routed
        elif method == CANCELLED:
            params = as_object(message.get("params")) or {}
            target = as_request_id(params.get("requestId"))
            found = (
                await self.replication.owner_of(session.id, target) if target is not None else None
            )
            if found is None:
                return None
            owner = found
        else:
            return None
        if owner == self.state.replica_id:
            if not session.submit(Envelope(message)):
                return _session_ended(None)
        else:
            await self.state.messages.send(owner, session.id, message)
        return Response(status_code=202)

    async def _cancel(self, session: LegacySession, message: JSONObject) -> None:
        """``notifications/cancelled`` from the client: the server's handler stops and
        sends no answer, so end the request's stream now and forget its events."""
        params = as_object(message.get("params")) or {}
        target = as_request_id(params.get("requestId"))
        stream_id = session.cancel_request(target) if target is not None else None
        if stream_id is not None:
            await session.forget(stream_id)
        if self.replication is not None and target is not None:
            await self.replication.call_answered(session, target)  # no answer will come

    def _listen(self, stream: SSEStream) -> Listener:
        """Attach a new SSE connection to ``stream`` (replacing an older one)."""
        send, receive = open_channel[Event](self._primitives, event_bytes)
        if stream.listener is not None:
            stream.listener.close()
        stream.listener = send
        return send, receive

    def _sse_response(
        self,
        session: LegacySession,
        stream: SSEStream,
        listen: Listener,
        headers: dict[str, str],
        replay: list[Event] | None = None,
        on_close: Callable[[], object] | None = None,
        *,
        taken: list[Event] | None = None,
    ) -> Response:
        """``taken``: events already read from the listener by a caller that waited for
        them (so the stream need not wait again).

        A stream's events stay stored for ``ANSWERED_KEPT_SECONDS`` after its answer is
        written: a write to a connection that broke unnoticed (or whose close the server
        has not yet read) succeeds, and the client then resumes to get the answer.
        """
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
                earlier = list(replay or [])
                if stream.id == STANDALONE:
                    earlier.extend(session.take_backlog())
                if primes and replay is None:
                    if earlier or taken:
                        # Events stored already go first, each with its id: a priming
                        # event, stored now, would carry a later id ahead of them, and a
                        # client resuming from it would miss them. Only the retry hint.
                        head.append(encode_retry(self.retry_ms))
                    else:
                        prime_id = await session.store_event(stream.id, b"")
                        head.append(encode_event("", prime_id, self.retry_ms))
                held = 0
                for event_id, data in earlier:
                    if event_id in sent:
                        continue
                    sent.add(event_id)
                    for piece in encode_event_pieces(data, event_id, REPLAY_WRITE_BYTES):
                        head.append(piece)
                        held += len(piece)
                        if held >= REPLAY_WRITE_BYTES:  # each write waits for the client
                            yield b"".join(head)
                            head.clear()
                            held = 0
                if taken is not None:
                    head.extend(_event(data, event_id) for event_id, data in taken)
                    sent.update(event_id for event_id, _ in taken)
                    head.append(pending_events(sent))
                else:
                    # A quick answer goes out with the priming event in a single write.
                    with anyio.move_on_after(_FIRST_EVENT_WAIT_SECONDS):
                        event_id, data = await listener.receive()
                        if event_id not in sent:
                            head.append(_event(data, event_id))
                        head.append(pending_events(sent))
                yield b"".join(head)
                head.clear()
                while True:
                    item: Event | None = None
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
                if on_close is not None:
                    on_close()
                session.last_active = anyio.current_time()
                listener.close()
                if stream.listener is listener_send:
                    # The client went away; the stream's events stay stored for resumption.
                    listener_send.close()
                    stream.listener = None
            if ended and stream.done:
                await session.answered_here(stream.id)

        return EventStreamResponse(events(), headers=headers)

    async def _get(self, request: Request) -> Response:
        accept = fields_of(request).joined("accept")
        if SESSION_HEADER not in request.headers and _from_a_browser(accept):
            return Response(_NOT_A_WEB_PAGE, 400, media_type="text/html")
        if not acceptance(accept).event_stream:
            return error_response(
                406, INVALID_REQUEST, "Not Acceptable: Accept must include text/event-stream."
            )
        found = await self._session_for(request)
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
        self, session: LegacySession, last_event_id: str, headers: dict[str, str]
    ) -> Response:
        """A GET with ``Last-Event-ID``: replay the stream after that event, then carry on
        with it live if it has not finished. The GET stream is never finished and never
        another replica's (whichever holds it delivers the broadcasts), so it goes on
        live here even if this process has not held it before: the replica that did may
        have died. In shared state it also gets the broadcasts raised while no replica
        held it (``Replication.deliver_missed_broadcasts``)."""
        replayed: list[Event] = []
        seen: set[str] = set()
        newest = last_event_id

        async def collect(event_id: str, data: bytes) -> None:
            nonlocal newest
            newest = event_id  # in the order stored: the last is the stream's newest
            if data and event_id not in seen:
                seen.add(event_id)
                replayed.append((event_id, data))

        caught: list[tuple[str, Event]] = []
        session.resuming.append(caught)
        try:
            stream_key = await self.event_store.replay_events_after(last_event_id, collect)
        finally:
            session.resuming.remove(caught)
        prefix = session.id + "."
        if stream_key is None or not stream_key.startswith(prefix):
            return await self._resume_unreplayable(session, last_event_id, headers)
        stream_id = stream_key.removeprefix(prefix)
        for caught_stream, (event_id, data) in caught:
            if caught_stream == stream_id:
                await collect(event_id, data)
        stream = session.standalone() if stream_id == STANDALONE else session.streams.get(stream_id)
        if stream is None and self.replication is not None:
            last = replayed[-1][0] if replayed else last_event_id
            return await self._resume_elsewhere(
                session, stream_id, last, headers, collect, replayed
            )
        if stream is None or stream.done:  # finished since: the replay holds all of it
            stream = SSEStream(stream_id, None, done=True)
            listen = _closed_listener()
        else:
            listen = self._listen(stream)
            if stream_id == STANDALONE:
                await self._deliver_missed_broadcasts(session, newest, replayed)
        return self._sse_response(session, stream, listen, headers, replayed)

    async def _deliver_missed_broadcasts(
        self, session: LegacySession, last_stored: str, replayed: list[Event]
    ) -> None:
        """With shared state, send a resumed GET stream the broadcasts raised while no
        replica held it, beside its response, not before: the response starts at once,
        and the connection, attached already, carries them live. The task is bounded in
        time, and ends with the app at the latest."""
        if self.replication is not None and self.task_group is not None:
            await self.task_group.start(
                self.replication.deliver_missed_broadcasts, session, last_stored, replayed
            )

    async def _resume_unreplayable(
        self, session: LegacySession, last_event_id: str, headers: dict[str, str]
    ) -> Response:
        """A GET with a ``Last-Event-ID`` the event store cannot replay after. Never a
        404, which tells the client that its session has ended (and a client must then
        start a new one): the session lives, only the events are not there.

        The id alone says which stream of this session it is an event of, if any. The
        GET stream goes on afresh (what it carried meanwhile is lost, which the log
        says; with shared state, broadcasts since the id's event are sent again). A
        request stream that has finished (answered, cancelled, or its events forgotten)
        is answered with an event stream that ends at once: nothing more will ever
        come on it. A request still running whose events have gone is
        refused (410), rather than resumed with a hole in it. An id that is no event of
        this session's is refused (400).
        """
        stream_id = session.stream_named(last_event_id)
        if stream_id is None:
            return error_response(
                400,
                INVALID_REQUEST,
                "Bad Request: unknown Last-Event-ID: it is no event id this server gave "
                "this session (mistyped, or another session's). The session is still "
                "valid: send a GET without Last-Event-ID to listen, or the request again "
                "for its answer.",
            )
        if stream_id == STANDALONE:
            logger.warning(
                "session %s resumed its GET stream after an event no longer stored: what "
                "was sent on it meanwhile is lost (with shared state, list changes and "
                "resource updates aside); it goes on from now",
                session.id,
            )
            stream = session.standalone()
            listen = self._listen(stream)
            # Every broadcast it got since was stored, and its events are gone too.
            await self._deliver_missed_broadcasts(session, last_event_id, [])
            return self._sse_response(session, stream, listen, headers)
        stream = session.streams.get(stream_id)
        running = stream is not None and not stream.done
        if not running and self.replication is not None:
            running = await self.state.messages.call_by_stream(session.id, stream_id) is not None
        if running:
            return error_response(
                410,
                INVALID_REQUEST,
                "Gone: the events after this Last-Event-ID are no longer kept while its "
                "request still runs, and a resumed stream would miss some. The session is "
                "still valid: cancel the request (notifications/cancelled) and send it "
                "again.",
            )
        return EventStreamResponse(_no_events(), headers=headers)

    async def _resume_elsewhere(
        self,
        session: LegacySession,
        stream_id: str,
        last_event_id: str,
        headers: dict[str, str],
        collect: Callable[[str, bytes], Awaitable[None]],
        replayed: list[Event],
    ) -> Response:
        """Resume a stream this process does not write: while another replica's call
        is open, follow the shared event store live until its answer (or, if that
        replica dies, the error that ends the call); once it is over, the rest of the
        stream as stored (an answer is stored before its call is closed)."""
        assert self.replication is not None
        replication = self.replication
        call = await self.state.messages.call_by_stream(session.id, stream_id)
        if call is None or call.replica_id == self.state.replica_id:
            await self.event_store.replay_events_after(last_event_id, collect)
            done = SSEStream(stream_id, None, done=True)
            return self._sse_response(session, done, _closed_listener(), headers, replayed)
        stream = SSEStream(stream_id, call.request_id)
        send, receive = open_channel[Event](weigh=event_bytes)
        scope = anyio.CancelScope()

        async def deliver(event_id: str, data: bytes) -> None:
            if crowded(send):  # the client reads slowly: follow at its pace
                await until_read(send)
            send.send_nowait((event_id, data))

        async def follow() -> None:
            with scope, send:
                try:
                    await replication.follow(
                        session.id, session.key(stream_id), call, last_event_id, deliver
                    )
                    stream.done = True
                except (StateUnavailable, anyio.ClosedResourceError, anyio.BrokenResourceError):
                    logger.warning(
                        "stopped following stream %s of session %s", stream_id, session.id
                    )

        assert self.task_group is not None
        self.task_group.start_soon(follow)
        return self._sse_response(
            session, stream, (send, receive), headers, replayed, on_close=scope.cancel
        )

    async def _delete(self, request: Request) -> Response:
        session_id = request.headers.get(SESSION_HEADER)
        if self.state.shared and session_id is not None:
            adopting = self._adopting.get(session_id)
            if adopting is not None:  # being taken up here: end it as one served here
                await adopting.wait()
            if session_id not in self.sessions:
                return await self._end_unserved(request, session_id)
        found = await self._session_for(request)
        if isinstance(found, Response):
            return found
        await self._end_session(found, "the client ended the session", everywhere=True)
        return Response(status_code=200)

    async def _end_unserved(self, request: Request, session_id: str) -> Response:
        """A DELETE for a shared session this process has no connection for: its record
        goes (checked as any request naming it is), and with it the session on every
        replica, each of which finds it gone at its next request for it, or at its next
        sweep (``_mark_connected_sessions_used``, every 15 s by default). No connection
        is built here only to be ended: that would run the server's ``initialize`` again,
        and take a place, for nothing."""
        record = await self.state.sessions.touch(session_id, self.session_idle_seconds)
        if record is None:
            return _session_not_found()
        refusal = _misnamed(request, record.principal, record.protocol_version)
        if refusal is not None:
            return refusal
        await self.state.sessions.end(session_id)
        adopting = self._adopting.get(session_id)
        if adopting is not None:  # a request took it up here meanwhile
            await adopting.wait()
        session = self.sessions.get(session_id)
        if session is not None:
            await self._end_session(session, "the client ended the session", record_gone=True)
        return Response(status_code=200)


_NOT_A_WEB_PAGE = (
    "<!doctype html><title>MCP endpoint</title><h1>MCP endpoint</h1><p>This address "
    "serves the Model Context Protocol: it answers MCP clients, not web browsers. Connect "
    "to it with an MCP client (for example <code>answerback connect</code> followed by "
    "this address).</p>"
)
"""What a person who opens the MCP URL in a browser sees, in place of a JSON-RPC error
about a missing session header that means nothing to them."""


def _from_a_browser(accept: str | None) -> bool:
    """Whether a GET comes from a web browser: it asks for HTML and not for an event
    stream, which every MCP client's GET names."""
    media = (accept or "").lower()
    return "text/html" in media and "text/event-stream" not in media


def _event(data: bytes, event_id: str) -> bytes:
    return encode_event(data.decode(), event_id)


async def _no_events() -> AsyncGenerator[bytes, None]:
    """The body of a stream that has finished: it ends at once."""
    return
    yield  # pragma: no cover (an async generator that yields nothing)


def _closed_listener() -> Listener:
    send, receive = open_channel[Event]()
    send.close()
    return send, receive


def _too_large(limit: int) -> Response:
    return error_response(
        413,
        INVALID_REQUEST,
        f"Payload Too Large: this server takes at most {limit} bytes in one request; send "
        "less at a time (its operator sets the limit: max_body_bytes).",
    )


def _sent_twice(header: str, what: str) -> Response:
    """A header that must come once came more than once (see ``EndpointHeaders``)."""
    return error_response(
        400,
        INVALID_REQUEST,
        f"Bad Request: the {header} header was sent more than once; send it once, carrying {what}.",
    )


def _session_not_found() -> Response:
    return error_response(404, INVALID_REQUEST, "Session not found: initialize a new session.")


def _misnamed(request: Request, principal: str | None, protocol_version: str) -> Response | None:
    """Why a request may not use the session it names: another caller opened it (it is
    not found, as if it did not exist), or it speaks another version than the session
    negotiated; ``None`` if it may."""
    if principal != principal_of(request.scope):
        return _session_not_found()
    version = request.headers.get(VERSION_HEADER)
    if version is not None and version != protocol_version:
        return error_response(
            400,
            INVALID_REQUEST,
            f"Bad Request: MCP-Protocol-Version {version!r} is not the version this "
            f"session negotiated ({protocol_version!r}); send that one.",
        )
    return None


def _asks_for_progress(message: JSONObject) -> bool:
    """Whether a request carries a ``progressToken``: with ``json_response``, it is
    answered on its own stream anyway (the specification lets the server choose per
    POST), as its progress sent to the GET stream could reach the client after its
    answer, too late for the caller's progress callback."""
    params = as_object(message.get("params"))
    meta = as_object(params.get("_meta")) if params is not None else None
    return meta is not None and as_request_id(meta.get("progressToken")) is not None


def _state_unavailable(
    error: StateUnavailable, request_id: RequestId | None, *, handled: bool = False
) -> Response:
    """The 503 for a request refused for want of the shared state: what a client may
    do, not the state's internals, which the log has. ``Retry-After`` promises the
    request did nothing and a moment's wait may cure it, so a client sends it again on
    its own: not for one already ``handled`` (only its record failed), nor for a refusal
    only the operator can cure."""
    if isinstance(error, StateRefused):
        why = "refused this request (the server's log says why)"
        when = "once the server's operator has corrected it"
    else:
        why = "is full for now" if isinstance(error, StateFull) else "cannot be reached for now"
        when = "in a moment"
    done = (
        ", after the request was carried out, so the other replicas do not know of it"
        if handled
        else ""
    )
    retry = not handled and not isinstance(error, StateRefused)
    return error_response(
        503,
        CONNECTION_CLOSED,
        f"Service Unavailable: the server's shared state {why}{done}. Send the request "
        f"again {when}.",
        request_id,
        headers={"retry-after": str(STATE_RETRY_AFTER_SECONDS)} if retry else None,
    )


def _session_ended(request_id: RequestId | None) -> Response:
    return error_response(
        404,
        INVALID_REQUEST,
        "Session not found: it has ended; initialize a new session.",
        request_id,
    )


def _id_in_use(request_id: RequestId) -> Response:
    return error_response(
        400,
        INVALID_REQUEST,
        f"Invalid request: id {request_id!r} is already in use by a request of "
        "this session that has not been answered; give each request its own id.",
        request_id,
    )


def _modern_in_session(session: LegacySession, request_id: RequestId) -> Response:
    """A request with a per-request ``_meta`` protocol version is refused inside a
    handshake session. The connection would run it by 2026-07-28 rules, yet as a
    session's request it outlives its POST (so that it can be resumed): a
    ``subscriptions/listen`` sent that way would hold its listener and stream until the
    session ended, however often the client hung up."""
    return error_response(
        400,
        INVALID_REQUEST,
        "Invalid request: it carries a per-request protocol version in _meta (the 2026-07-28 "
        f"way), but it was sent in a session that negotiated {session.protocol_version}. Send "
        "2026-07-28 requests without an Mcp-Session-Id header, or drop the _meta "
        "protocol version inside the session.",
        request_id,
    )
