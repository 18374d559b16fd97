"""Streamable HTTP, client side, over httpx2.

Why httpx2: it is the maintained continuation of httpx (same API, current releases),
async-native, and what the official SDK uses, so users can share one configured client.

Two lanes, so nothing waits behind what it unblocks. Every request is POSTed from its
own task, and its response (usually an SSE stream that lasts as long as the call, a
person's answer included) holds a connection all that time; the GET stream holds one
more. The answers to the server's questions, notifications and the closing DELETE are
short POSTs, and each may be what a waiting stream needs in order to finish. So they
travel on a lane of their own: with the clients answerback makes, a second connection
pool that requests never use, while the request lane has no connection limit at all.

Response streams have no read timeout: a stream may be silent for as long as a person
takes to fill in a form, and the JSON-RPC layer owns request timeouts. A call that is
cancelled or times out closes its stream at once (on 2026-07-28 that close *is* the
cancellation). A stream that breaks before its answer arrived is resumed with
``Last-Event-ID`` after the server's ``retry`` delay (capped), counted from the moment
it broke; a resumed stream the server ends without a single event has finished, so the
call fails at once. A failed POST fails only what it carried: its own request; for a
notification, nothing but a log line; for an answer the server refuses, the call its
question was part of, which could not complete otherwise; so does an answer dropped
because too many waited to be POSTed (the streams are not read while many of the
server's requests wait for answers, so that is rare). Answers and notifications that
meet what may pass (a cut connection, a proxy's 502/503/504) are sent again a few
times; a request only when the server says it did not handle it (429 or 503 with
``Retry-After``, as a replica without Redis, or stopping, answers), a few times, after
the wait it asks for. The GET stream is tried again, backing off with jitter, after
failures that may pass, for as long as the session lasts; a session the server ends
while it listens is set up again (backing off, and only a few times in a row, when each
ends soon after it opened). Failing in a row for ``gone_after_seconds``, a session that
cannot be set up again, or sessions that keep ending at once, tell ``on_server_gone``: a
host that only listens learns the server is gone.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import email.utils
import functools
import json
import logging
import math
import random
import re
import ssl
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TypeVarTuple, cast

import anyio
import httpx2
from anyio.abc import TaskGroup

from answerback._options import instance_or_none, positive_int, positive_seconds, seconds
from answerback.jsonrpc import Envelope, JSONObject, MalformedMessage, RequestId
from answerback.jsonrpc._backend import Backend, current_backend
from answerback.jsonrpc._channel import ChannelReceiver, ChannelSender, open_channel
from answerback.jsonrpc._endpoint import (
    CANCELLED,
    LOCAL_FAILURE,
    REQUESTS_IN_FLIGHT,
    WHY,
    as_object,
    as_request_id,
)
from answerback.transports._base import StreamPair
from answerback.transports._framing import (
    FAULTS_SHOWN,
    FAULTS_SUMMARY_SECONDS,
    Repeated,
    UnencodableMessage,
    decode,
    encode,
    undeliverable,
)
from answerback.transports._headers import (
    METHOD_HEADER,
    NAME_HEADER,
    SESSION_HEADER,
    VERSION_HEADER,
    encode_value,
    name_of,
)
from answerback.transports._pipes import Drained, Held, UntakenMessages, until_drained
from answerback.transports.http._oauth_discovery import Challenge
from answerback.transports.http._sse import Event, EventParser, MessageTooLarge
from answerback.types import META_PROTOCOL_VERSION, AuthorizationError
from answerback.types._errors import (
    ALREADY_ANSWERED,
    AUTHORIZATION_FAILED,
    CONNECTION_CLOSED,
    SERVER_FAILED,
)
from answerback.types._methods import PERSON_FACING_METHODS
from answerback.types._versions import SUPPORTED_VERSIONS, is_modern

logger = logging.getLogger("answerback.http")

SESSION_EXPIRED = "session_expired"
_SESSION_ENDED = "the server ended the session (HTTP 404)"
_SESSION_LOST_AT_ONCE = (
    "the server ended the session (HTTP 404) before answering any request in it{again}. "
    "Behind a balancer, each session's requests must reach the replica that holds it "
    "(sticky sessions) or the replicas must share a session store; otherwise check that "
    "the server keeps its sessions"
)
_ANSWER_ELSEWHERE = (
    "the server did not know the session (HTTP 404) when the answer to its request {} "
    "was POSTed, though the call that asked is still open here: the server ended the "
    "session, or (most likely, if the call is still running there) the POST reached "
    "another server process than the one running the call, and the processes do not "
    "share their sessions (several workers, as with `uvicorn --workers 2` or `gunicorn "
    "-w 2`, or replicas behind a balancer). If so, run one server process, send each "
    "session to one process (sticky sessions), or share the state between them "
    "(RedisState; see the deployment guide, docs/deployment.md)"
)
_AGAIN = ": a new session was set up for this request, and the server did not know that one either"
STAYS_OPEN = (
    "The connection stays open: the next request reaches the server afresh (or says why it cannot)"
)
MAX_MESSAGE_BYTES = 64 * 1024 * 1024
"""The largest message the client accepts (as the stdio transport does)."""
MAX_RETRY_SECONDS = 30.0
"""The longest reconnection delay obeyed, whatever ``retry`` the server asks for."""
_DEFAULT_RETRY_SECONDS = 1.0
_MIN_RETRY_SECONDS = 0.1
"""The shortest reconnection delay, doubled for each reconnection in a row that brought
no message: a server that ends every resumed stream at once with a fresh event id and
``retry: 0`` had the client reconnecting hundreds of times a second."""
_MAX_RECONNECTS = 5
_SHORT_SESSION_SECONDS = 10.0
"""A session whose GET stream the server ends (404) sooner than this after it opened
counts as short-lived: the server is not keeping its sessions."""
_SHORT_SESSIONS_IN_A_ROW = 5
"""Short-lived sessions in a row after which the GET stream stops setting up new ones:
a server that ended each at once had the client set one up every second for ever."""
_SETUP_DELAY_SECONDS = 0.5
"""The wait before setting up again after the first short-lived session, doubled for
each one after it."""
_FINISHED_WITHOUT_ANSWER = (
    "the server ended the stream without the answer (resumed with Last-Event-ID, it sent "
    "no event at all: the stream has finished and the answer is no longer kept). Whether "
    "the request did its work is unknown; send it again if repeating it is safe"
)
_MAX_REDIRECTS = 5
_WORDS_READ_BYTES = 4096
"""The largest body no JSON-RPC answer is searched for the server's words: an error
explains itself in a line; a larger body is a page or a dump."""
_WORDS_SHOWN_CHARS = 200
_EXPLAINING_FIELDS = ("detail", "message", "error_description", "error")
"""Where web frameworks and OAuth put an error's explanation, the most specific first."""
_ANSWER_CONNECTIONS = 16
_POSTED_AT_ONCE = 64
"""Answers and notifications POSTed at once; the rest wait their turn, in order, as
data. A server that holds each answer's POST while it sends request after request had
a task waiting per answer (18 KB each), and the client's closing waited for them all."""
_HIGHEST_PORT = 65535
_Args = TypeVarTuple("_Args")
_UNSENT_HELD = 1024
"""The server's requests not yet answered, with the answers and notifications waiting
for a POST, past which the server's streams are no longer read (again once a quarter
are left): a burst of the server's requests is read as fast as their answers go out.
Read whole first, 20,000 of them had 4,096 answers waiting before the first POST went
out, and the rest were dropped, failing the call."""
_WAITING_TO_POST = REQUESTS_IN_FLIGHT
"""Answers and notifications that may wait for a POST: what the streams read before
``_UNSENT_HELD`` stopped them cannot grow the client without limit; past this the newest
are dropped, with a warning, and the call a dropped answer belonged to fails (it could
never complete)."""
_CALLS_PER_CLIENT = 64
_IDLE_SECONDS = 2.0
"""How long an idle connection is kept: less than the 5 s after which common servers
(uvicorn, Node) close one, so a reused connection is rarely closed under our feet."""
_DELIVERY_ATTEMPTS = 4
"""Tries of an answer or notification POST, the first included (see ``_deliver``)."""
_REQUEST_TRIES = 4
"""Tries of a request the server said it did not handle (429 or 503 with
``Retry-After``), the first included (see ``_request``): with answerback's one-second
``Retry-After``, a replica that gets Redis back, or a balancer that moves the request to
another replica, within about three seconds serves it; past that the caller decides."""
_NOT_HANDLED = (429, 503)
"""The statuses that, with a ``Retry-After``, say the server did not handle the request."""
_RESETS_RESENT = 4
"""Connections reset before an answer, one after the other, that a request is sent again
after (see ``_send``): a server that stopped resets each of its idle kept-alive ones."""
_NOT_RESENT = "tools/call"
"""The one method a reset does not send again once it was written whole: a tool may act
on the world, and a reset can come after the server read the request (a balancer's idle
timeout, a server that closed abruptly), so whether it ran is unknown, which its error
then says. Nor is a retry carrying ``requestState`` (``_carries_state``). Every other
request only reads or sets what a second try sets alike. Any request whose writing failed
is sent again (see ``_Writing``)."""


def _carries_state(message: JSONObject) -> bool:
    """Whether a request is a 2026-07-28 retry: its rounds may act (a confirmation), and
    single-use ``requestState`` refuses a second try as a replay, so a reset after it was
    written whole does not send it again either."""
    return "requestState" in (as_object(message.get("params")) or {})


_MAY_PASS = (502, 503, 504)
"""What a proxy answers while the server behind it restarts or is replaced."""
_CUT_OFF = (httpx2.RemoteProtocolError, httpx2.ReadError, httpx2.WriteError)
"""The connection ended under a request: before its response began, the server (or a
proxy in front of it) failed or stopped while the request was with it."""
_UNKNOWN_SO_SEND_IF_SAFE = (
    "Whether the request did its work is unknown; send it again if repeating it is safe"
)
_CLOSED_BEFORE_ANSWERING = (
    "the server closed the connection before it began to answer ({}): it, or a proxy in "
    "front of it, stopped or failed while the request was with it. " + _UNKNOWN_SO_SEND_IF_SAFE
)
_INITIALIZED = "notifications/initialized"


class _RedirectRefused(Exception):
    """The server redirected somewhere the session must not follow."""


_TRACED_BYTES = 64 * 1024
"""Requests with a body this large are traced (``_Writing``): a body this size may not fit
the socket's buffer, so a connection lost part way through its writing is one the server
never had the whole request on. A smaller body is handed to the kernel whole, and fails
only on a connection already lost, which the pool's check before reuse catches; it keeps
the cautious rule and spares every small request the trace's callbacks."""


_CUT_WRITING_RESENT = 1
"""How many times a request cut while being written is sent again: once covers a
connection that broke; a second cut is more likely a server or proxy refusing the
request's size (cutting it rather than answering 413), which sending it again only
repeats at the cost of the whole upload."""


class _SentInPart(httpx2.WriteError):
    """Every try of a request lost its connection before the request was written whole:
    the server cannot have handled it."""


class _Writing:
    """Whether writing one HTTP request failed, told by httpcore2's ``trace`` extension.

    httpcore2 hides a failed write: it goes on to read the response, so the connection
    cut while the request was being written surfaces as a ``ReadError`` or a
    ``RemoteProtocolError``, as one cut after the server read the request does. Only its
    trace tells them apart. The body has a ``Content-Length``, so a server that was not
    sent all of it cannot have handled it. (On asyncio, a write the reset came before
    is traced as done, the event loop dropping it: that case keeps the cautious rule.)"""

    __slots__ = ("failed",)

    def __init__(self) -> None:
        self.failed = False

    async def trace(self, event: str, info: Mapping[str, Any]) -> None:
        if event.endswith((".send_request_headers.failed", ".send_request_body.failed")):
            self.failed = True


@dataclass(slots=True)
class _Pool:
    client: httpx2.AsyncClient
    in_flight: int = 0


class _Unsent:
    """The server's requests read but not yet answered, and the answers and
    notifications waiting for a POST, in order, as a ``Backlog`` for the readers of the
    server's streams (see ``_UNSENT_HELD``)."""

    def __init__(self) -> None:
        self.asked: set[RequestId] = set()
        self.waiting: deque[tuple[JSONObject, bytes, dict[str, str], _Call | None]] = deque()
        self._drained = Drained()

    def backed_up(self) -> bool:
        return len(self.asked) + len(self.waiting) > _UNSENT_HELD

    def when_drained(self, callback: Callable[[], None]) -> None:
        self._drained.add(callback)

    def settled(self, question: RequestId) -> None:
        """The server's request ``question`` was answered (or cancelled)."""
        self.asked.discard(question)
        self._check()

    def next(self) -> tuple[JSONObject, bytes, dict[str, str], _Call | None] | None:
        """The next one to send, if any."""
        waiting = self.waiting.popleft() if self.waiting else None
        self._check()
        return waiting

    def _check(self) -> None:
        """The readers go on once few are left."""
        if len(self.asked) + len(self.waiting) <= _UNSENT_HELD // 4:
            self._drained.call()


class _Lane:
    """Where one kind of HTTP request goes: one client, or a set of clients that grows
    with the load, each holding at most ``per_client`` requests at a time.

    Why a set: httpcore looks at every connection of a pool for every request it
    places, so one pool holding a thousand calls makes each new call a thousand times
    dearer. Small pools keep that cost flat; the first one serves a quiet connection.
    """

    def __init__(
        self,
        make: Callable[[], httpx2.AsyncClient],
        *,
        per_client: float = math.inf,
        owned: bool = True,
    ) -> None:
        self._make = make
        self._per_client = per_client
        self.owned = owned
        """Whether answerback made the clients (and so sets their limits and closes them)."""
        self._pools: list[_Pool] = []

    def take(self) -> _Pool:
        """A pool with room for one more request, counted in until ``give_back``."""
        pool = next((p for p in self._pools if p.in_flight < self._per_client), None)
        if pool is None:
            pool = _Pool(self._make())
            self._pools.append(pool)
        pool.in_flight += 1
        return pool

    async def give_back(self, pool: _Pool) -> None:
        """One request fewer on ``pool``; an extra pool left idle is closed."""
        pool.in_flight -= 1
        if pool.in_flight == 0 and pool in self._pools[1:]:
            # A burst is over: its extra pool goes, with its idle connections.
            self._pools.remove(pool)
            if self.owned:
                with anyio.CancelScope(shield=True):
                    await pool.client.aclose()

    async def aclose(self) -> None:
        pools, self._pools = self._pools, []
        if self.owned:
            for pool in pools:
                await pool.client.aclose()


@dataclass(frozen=True, slots=True)
class _Lanes:
    """Requests (and their long response streams) on one lane; answers,
    notifications and the DELETE on the other, so they never wait behind requests."""

    requests: _Lane
    answers: _Lane


@dataclass(slots=True)
class _Call:
    """A request in flight: closing its scope closes its response stream."""

    request_id: RequestId
    modern: bool
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    questions: set[RequestId] = field(default_factory=set[RequestId])
    """The server's requests its stream carried that we have not answered yet."""
    reached_server: bool = False
    """Whether the server's response began: only then has it surely read the request."""
    cancelled_early: Callable[[bool], None] | None = None
    """Set when we cancel before ``reached_server``: called with whether the response
    is a stream, once it begins."""
    own_task: bool = False
    """Sent in a task of its own (every request but ``initialize``, which the post loop
    sends itself, in order)."""
    tries: int = 1
    """The try under way (see ``_REQUEST_TRIES``)."""
    first_sent_at: float | None = None
    """When the first try was sent, for the error after the last one."""
    waiting_to_resend: bool = False
    """Between a refused try and the next: the server has not seen the request, so a
    cancel only ends the wait."""


class _NotHandled(Exception):
    """The server answered a request with a status saying it did not handle it, and when
    to send it again: ``wait`` seconds (``Retry-After``); ``said`` is the status and what
    the server wrote."""

    def __init__(self, said: str, wait: float) -> None:
        super().__init__(said)
        self.said = said
        self.wait = wait


@dataclass(slots=True)
class _Cursor:
    """Where one request's SSE stream got to, for resuming it."""

    parser: EventParser
    ended_at: float = 0.0
    """When the stream last ended (the reconnection delay counts from here)."""
    messages: int = 0
    """Messages the stream has brought (a reconnection that brings none backs off)."""
    blocks: int = 0
    """Event blocks the stream has brought, messages or not (a priming event, a ``retry``
    hint): a resumed stream that ends with none is over, not polled."""
    broke: str | None = None
    """Why its last reading broke off (``None``: the server ended it), for the error
    if no answer comes."""
    connecting: bool = False
    """Whether the request is ``initialize``, whose failure fails the connection."""

    def unanswered(self, resumed: bool) -> str:
        """Why the request failed: its stream ended without the answer; and what to do:
        the server had the request (``_fail`` adds ``STAYS_OPEN``)."""
        how = f"broke ({self.broke})" if self.broke else "ended before the answer"
        return (
            f"the response stream {how}"
            + (" and could not be resumed" if resumed else "")
            + ("" if self.connecting else f". {_UNKNOWN_SO_SEND_IF_SAFE}")
        )


class StreamableHTTPTransport:
    """Connects a ``Client`` to an MCP server's streamable HTTP endpoint.

    ``headers`` are added to every request. ``timeout`` bounds connecting, sending a
    body and each short POST (answers, notifications, the closing DELETE); response
    streams have no read timeout. A server's ``retry`` hint is obeyed up to
    ``max_retry_seconds``, and so is the ``Retry-After`` of a 429 or 503 saying a request
    was not handled, after which the request is sent again (a few times; a longer wait is
    left to the caller); a message larger than ``max_message_bytes`` fails the call it
    belongs to. Redirects are followed only when they are 307/308 to the same origin.

    Pass ``http_client`` to control TLS, proxies, auth and event hooks. It is used as it
    is for every request and is not closed for you. Its connection limit must exceed
    the number of calls you run at once plus two (each call holds a connection, and so
    does the GET stream, while the answers need free ones), or answers wait behind the
    calls they would finish until its pool timeout fails them: create it with
    ``limits=httpx2.Limits(max_connections=None)``. Without ``http_client`` answerback
    makes its own pair of clients, which cannot run out.

    ``auth`` authorizes every request (``answerback.client.OAuth`` for servers that
    follow the MCP authorization specification). A request it cannot authorize fails
    with an ``AuthorizationError`` that says what to do.
    """

    mirrors_parameters = True
    """2026-07-28 tool arguments marked ``x-mcp-header`` travel as headers here, so the
    client must check those marks and compute the headers (other transports ignore them)."""

    _endpoint: httpx2.URL
    """``url``, parsed when a connection starts."""
    _backend: Backend
    """The running loop's, which starts each request's task (from ``connect``)."""
    _incoming: ChannelSender[Envelope | Exception]
    """Where what the server sends goes (from ``connect``), and our own calls' failures."""

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        http_client: httpx2.AsyncClient | None = None,
        timeout: float = 30.0,
        max_retry_seconds: float = MAX_RETRY_SECONDS,
        max_message_bytes: int = MAX_MESSAGE_BYTES,
        auth: httpx2.Auth | None = None,
    ) -> None:
        if not isinstance(cast(object, url), str):
            raise TypeError(
                "url must be a string, the server's endpoint URL, such as "
                f"'http://127.0.0.1:8000/mcp', got {url!r}"
            )
        if not url.lower().startswith(("http://", "https://")):
            raise ValueError(
                "url must be the server's http(s) endpoint URL, such as "
                f"'http://127.0.0.1:8000/mcp', got {url!r}"
            )
        parsed_endpoint(url)  # a URL no request can be sent to fails here, not at connect
        if headers is not None and not isinstance(cast(object, headers), Mapping):
            raise TypeError(
                "headers must be a dict of header names to values, such as "
                f"{{'X-Api-Key': '...'}}, or None, got a {type(headers).__name__}"
            )
        self.url = url
        self.auth = instance_or_none(
            "auth",
            auth,
            httpx2.Auth,
            "an httpx2.Auth, such as answerback.client.OAuth(...)",
            secret=True,  # ("user", "password") is what a mistaken one often holds
        )
        self.headers = checked_headers(headers or {})
        self._http_client = instance_or_none(
            "http_client", http_client, httpx2.AsyncClient, "an httpx2.AsyncClient"
        )
        self.timeout = positive_seconds("timeout", timeout)
        self.max_retry_seconds = seconds(
            "max_retry_seconds",
            max_retry_seconds,
            "retry at once, whatever the server hints, and never send a refused request again",
        )
        self.max_message_bytes = positive_int("max_message_bytes", max_message_bytes, "bytes")
        self.session_id: str | None = None
        self._session_ended = False
        """The server ended our session (HTTP 404) and none has replaced it yet: a request
        other than ``initialize`` fails as the 404 did, so the client sets one up again
        (sent without a session, it would only be refused)."""
        self._initialize_id: RequestId | None = None
        """The id of the ``initialize`` request whose answer names the version."""
        self._reached = False
        """Whether the server has answered a request of this connection: until then a
        failure is the connection's, afterwards only the request's."""
        self._session_answered = False
        """Whether the server answered a request in the current session besides
        ``initialize`` (a 404 before that says the server does not keep sessions)."""
        self._renewed = False
        """Whether the current session replaced one the server ended (HTTP 404)."""
        self.protocol_version: str | None = None
        self._calls: dict[RequestId, _Call] = {}
        self._posting = 0
        """Answers and notifications being POSTed now (at most ``_POSTED_AT_ONCE``)."""
        self._unsent = _Unsent()
        """The answers and notifications waiting for one of those to finish."""
        self._dropping = False
        """Whether answers are being dropped, ``_unsent`` being full (warned once)."""
        self._jitter: Callable[[], float] = random.random
        """Where retry delays get their randomness (a test sets its own): clients that
        failed together, behind a balancer whose replica died, must not retry together."""
        self.on_session_ended: Callable[[], Awaitable[None]] | None = None
        """Sets the session up again when the GET stream learns the server ended it
        (the ``Client`` sets it, to what a request meeting the 404 would do);
        ``None``: the next request does."""
        self.on_server_gone: Callable[[str | None], None] | None = None
        """Told why when the GET stream finds the server gone (see ``gone_after_seconds``,
        or a session the server ended could not be set up again), and ``None`` once the
        stream is back. The ``Client`` sets it: its legacy ``listen()`` blocks end then,
        while the stream goes on trying."""
        self.gone_after_seconds: float | None = None
        """How long the GET stream's attempts may fail in a row before the server is
        told gone (the ``Client`` sets its ``connect_timeout_seconds``); ``None``: never."""
        self._gone: str | None = None
        """Why the server was last told gone, until the GET stream is back."""
        self._clock: Callable[[], float] = anyio.current_time
        """What times an outage of the GET stream and a session's life (a test sets its own)."""
        self._sleep: Callable[[float], Awaitable[None]] = anyio.sleep
        """How the GET stream waits before setting up a session again (a test sets its own)."""
        self._short_sessions = 0
        """Sessions in a row whose GET stream the server ended soon after they opened."""
        self._unreadable = Repeated(lambda: self._clock())
        """The server's messages that are not JSON: a server that sends many would log
        a warning each."""
        self._questions: dict[RequestId, _Call] = {}
        """Each unanswered server request, by its id, and the call whose stream carried it."""
        self._ssl_context: ssl.SSLContext | None = None

    def __repr__(self) -> str:
        return f"StreamableHTTPTransport({self.url!r})"

    @property
    def session_ended(self) -> bool:
        """Whether the server ended the session (HTTP 404) and no new one replaced it
        yet: the next request, or ``on_session_ended``, sets one up again."""
        return self._session_ended

    @asynccontextmanager
    async def connect(self) -> AsyncGenerator[StreamPair, None]:
        """Talk to the endpoint until the block ends; then end the session (a DELETE)
        if the server gave one."""
        # Parsed once: parsing it again for every POST cost as much as building the request.
        self._endpoint = parsed_endpoint(self.url)
        incoming, incoming_read = open_channel[Envelope | Exception]()
        outgoing, outgoing_read = open_channel[Envelope]()
        self._calls, self._questions = {}, {}
        self._posting, self._unsent = 0, _Unsent()
        self._gone = None
        self._reached = self._session_answered = self._renewed = False
        self._unreadable = Repeated(lambda: self._clock())
        self._incoming = incoming
        lanes = self._lanes()
        # Each request runs in a task of the backend's own (``answerback.jsonrpc._backend``),
        # cancelled through its call's scope when the connection closes: a defect in one
        # fails that call only, where in the task group it ended the connection.
        self._backend = current_backend()
        await self._backend.open()
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._post_loop, lanes, outgoing_read, incoming, tg)
                try:
                    yield incoming_read, outgoing
                finally:
                    outgoing.close()
                    with anyio.CancelScope(shield=True):
                        await self._terminate(lanes)
                    tg.cancel_scope.cancel()
        finally:
            for call in self._calls.values():
                call.scope.cancel()
            await self._backend.join()
            self._unreadable.say_left(_unreadable_summary, incoming)
            incoming.close()
            outgoing_read.close()
            with anyio.CancelScope(shield=True):
                await lanes.requests.aclose()
                await lanes.answers.aclose()

    def _lanes(self) -> _Lanes:
        user_client = self._http_client
        if user_client is not None:
            lane = _Lane(lambda: user_client, owned=False)
            return _Lanes(lane, lane)
        if self._ssl_context is None:
            # Loading the certificates costs a quarter of a second: once per transport.
            self._ssl_context = httpx2.create_ssl_context()
        ssl_context = self._ssl_context

        def requests() -> httpx2.AsyncClient:
            limits = httpx2.Limits(
                max_connections=None,
                max_keepalive_connections=_CALLS_PER_CLIENT,
                keepalive_expiry=_IDLE_SECONDS,
            )
            return httpx2.AsyncClient(verify=ssl_context, limits=limits)

        def answers() -> httpx2.AsyncClient:
            limits = httpx2.Limits(
                max_connections=_ANSWER_CONNECTIONS,
                max_keepalive_connections=_ANSWER_CONNECTIONS,
                keepalive_expiry=_IDLE_SECONDS,
            )
            return httpx2.AsyncClient(verify=ssl_context, limits=limits)

        return _Lanes(_Lane(requests, per_client=_CALLS_PER_CLIENT), _Lane(answers))

    def _timeout(self, lanes: _Lanes, *, stream: bool) -> httpx2.Timeout:
        """No read timeout on a stream (it may wait on a person for minutes). Our own
        pools never make a request wait for ever: the request lane has no limit and every
        answer POST ends within ``timeout``. A user's pool may be too small, and then its
        pool timeout turns the wait into an error that says so."""
        return _httpx_timeout(self.timeout, stream, not lanes.requests.owned)

    def _headers(self, *, accept: str = "application/json, text/event-stream") -> dict[str, str]:
        """Legacy-era headers: session and negotiated version once known (no body type:
        GET and DELETE carry no body; POSTs add it)."""
        headers = {"accept": accept, **self.headers}
        if self.session_id is not None:
            headers[SESSION_HEADER] = self.session_id
        if self.protocol_version is not None:
            headers[VERSION_HEADER] = self.protocol_version
        return headers

    def _headers_for(self, message: JSONObject, extra: object) -> tuple[dict[str, str], bool]:
        """The headers of one POST, and whether it is a 2026-07-28 message. Such a
        message mirrors its version, method and name (and the ``Mcp-Param-*`` the caller
        computed) and has no session."""
        params = as_object(message.get("params")) or {}
        version = (as_object(params.get("_meta")) or {}).get(META_PROTOCOL_VERSION)
        if not isinstance(version, str) or not is_modern(version):
            return {**self._headers(), "content-type": "application/json"}, False
        headers = {
            "accept": "application/json, text/event-stream",
            "content-type": "application/json",
            VERSION_HEADER: version,
            METHOD_HEADER: str(message.get("method")),
        }
        name = name_of(message)
        if name is not None:
            headers[NAME_HEADER] = encode_value(name)
        headers.update(cast(dict[str, str], as_object(extra) or {}))
        headers.update(self.headers)
        return headers, True

    async def _post_loop(
        self,
        lanes: _Lanes,
        outgoing: ChannelReceiver[Envelope],
        incoming: ChannelSender[Envelope | Exception],
        tg: TaskGroup,
    ) -> None:
        """Send what the engine writes. A message sent in a task of its own starts
        straight from the engine's step while this loop waits idle (the channel hands it
        over), saving a loop turn; ``initialize`` and ``initialized`` go in order, here.
        Tasks start in a copy of this loop's context, whoever handed the message over.

        Once a pool's worth of calls is in flight, messages wait for this loop, which
        starts one per loop turn: a burst of a thousand calls then opens its connections
        at the pace the server takes them, not all in one turn (which made such a burst
        half as fast again, and had a loaded server drop some connections unanswered)."""
        context = contextvars.copy_context()

        def take(envelope: Envelope) -> bool:
            if _goes_in_order(envelope) or len(self._calls) >= _CALLS_PER_CLIENT:
                return False
            context.run(self._start, lanes, envelope, incoming, tg)
            return True

        async with outgoing:
            outgoing.hand_over(take)
            async for envelope in outgoing:
                if not _goes_in_order(envelope):
                    self._start(lanes, envelope, incoming, tg)
                    continue
                prepared = self._prepare(lanes, envelope, incoming, tg)
                if prepared is None:
                    continue
                message, body, headers, modern = prepared
                request_id = as_request_id(message.get("id"))
                if message.get("method") == "initialize" and request_id is not None:
                    # Later messages need the session id this answer brings: wait for it.
                    call = self._calls[request_id] = _Call(request_id, modern)
                    await self._request(lanes, message, body, headers, incoming, tg, call)
                else:
                    # Sent in order: a server may only be ready for requests once it has
                    # seen this (the TypeScript server registers some tools on it).
                    await self._deliver(lanes, message, body, headers)

    def _start(
        self,
        lanes: _Lanes,
        envelope: Envelope,
        incoming: ChannelSender[Envelope | Exception],
        tg: TaskGroup,
    ) -> None:
        """Start sending one message in a task of its own (its POST waits on the server),
        or fail it here if JSON cannot carry it."""
        prepared = self._prepare(lanes, envelope, incoming, tg)
        if prepared is None:
            return
        message, body, headers, modern = prepared
        method = message.get("method")
        request_id = as_request_id(message.get("id"))
        if method is not None and request_id is not None:
            call = self._calls[request_id] = _Call(request_id, modern, own_task=True)
            self._backend.spawn(
                self._in_own_task, self._request, lanes, message, body, headers, incoming, tg, call
            )
        elif method == CANCELLED:
            self._cancel(lanes, message, body, headers, tg)
        else:
            asked_on = None
            if method is None and request_id is not None:  # our answer
                asked_on = self._questions.pop(request_id, None)
                if asked_on is not None:
                    asked_on.questions.discard(request_id)
            self._post_soon(tg, lanes, message, body, headers, asked_on)

    def _prepare(
        self,
        lanes: _Lanes,
        envelope: Envelope,
        incoming: ChannelSender[Envelope | Exception],
        tg: TaskGroup,
    ) -> tuple[JSONObject, bytes, dict[str, str], bool] | None:
        """A message with its body, its headers and whether it is a 2026-07-28 one; or
        ``None`` once a message JSON cannot carry has been dealt with (``_undeliverable``)."""
        try:
            body = encode(envelope.message)
        except UnencodableMessage as exc:
            self._undeliverable(lanes, envelope.message, str(exc), incoming, tg)
            return None
        message = as_object(envelope.message) or {}
        headers, modern = self._headers_for(message, envelope.transport_context)
        return message, body, headers, modern

    def _cancel(
        self,
        lanes: _Lanes,
        message: JSONObject,
        body: bytes,
        headers: dict[str, str],
        tg: TaskGroup,
    ) -> None:
        """Stop a request we gave up on: close its stream, so its connection is free
        again. On 2026-07-28 the close is the cancellation; a legacy server is also told
        with the notification, twice if it may have overtaken the request. A request no
        longer open needs neither."""
        params = as_object(message.get("params")) or {}
        target = as_request_id(params.get("requestId"))
        call = self._calls.get(target) if target is not None else None
        if call is None:
            return
        if call.modern or call.waiting_to_resend:  # nothing to tell a server that lacks it
            call.scope.cancel()
            return
        self._post_soon(tg, lanes, message, body, headers)
        if call.reached_server:
            call.scope.cancel()
            return

        def tell_again(still_running: bool) -> None:
            call.scope.cancel()
            if still_running:
                self._post_soon(tg, lanes, message, body, headers)

        # The notification travels on another connection and may overtake the request;
        # a server that has not seen the request ignores it, and the tool then runs for
        # ever. So the request stays open until its response begins, and the notification
        # goes again if that response is a stream (the server is still working on it).
        call.cancelled_early = tell_again

    def _undeliverable(
        self,
        lanes: _Lanes,
        message: Any,
        reason: str,
        incoming: ChannelSender[Envelope | Exception],
        tg: TaskGroup,
    ) -> None:
        """A message JSON cannot carry: our request fails at once, the server gets an
        error instead of our answer, a notification is dropped."""
        to_peer, to_self = undeliverable(message, reason)
        if to_self is not None:
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                incoming.send_nowait(Envelope(to_self))
        elif to_peer is not None:
            headers, _ = self._headers_for(to_peer, None)
            self._post_soon(tg, lanes, to_peer, encode(to_peer), headers)
        else:
            method = (as_object(message) or {}).get("method")
            logger.warning("dropped the %s notification: %s", method, reason)

    async def _in_own_task(
        self, function: Callable[[*_Args], Awaitable[None]], *args: *_Args
    ) -> None:
        """``function(*args)`` as a task the backend started (see ``Backend.spawn``)."""
        try:
            await function(*args)
        finally:
            self._backend.task_done()

    async def _request(
        self,
        lanes: _Lanes,
        message: JSONObject,
        body: bytes,
        headers: dict[str, str],
        incoming: ChannelSender[Envelope | Exception],
        tg: TaskGroup,
        call: _Call,
    ) -> None:
        """One request from POST to answer; cancelling ``call.scope`` drops it silently
        (the caller has already given up)."""
        request_id = call.request_id
        cursor = self._cursor()
        cursor.connecting = not call.own_task
        data: Any = None
        why: str | None = None
        try:
            with call.scope:
                try:
                    while True:  # sent again while the server says it did not handle it
                        try:
                            settled = await self._post(
                                lanes, message, body, headers, incoming, tg, call, cursor
                            )
                            break
                        except _NotHandled as refused:
                            await self._wait_to_send_again(call, refused)
                    if settled:
                        return
                    if call.modern:  # nothing to resume: a new request would start over
                        reason = cursor.unanswered(resumed=False)
                    else:
                        reason = await self._resume(lanes, request_id, incoming, cursor)
                        if reason is None:
                            return
                except AuthorizationError as exc:
                    # Its data marks it, so the caller gets an AuthorizationError back.
                    reason, data, why = self._describe(exc), exc.data, str(exc)
                except _SentInPart as exc:
                    reason = str(exc)
                except _CUT_OFF as exc:
                    reason = self._describe(exc)
                    if not call.reached_server:
                        reason = _CLOSED_BEFORE_ANSWERING.format(str(exc) or type(exc).__name__)
                except (httpx2.HTTPError, _RedirectRefused, MessageTooLarge) as exc:
                    reason = self._describe(exc)
                except Exception as exc:
                    if not call.own_task:  # initialize: the connection fails, as it must
                        raise
                    # A defect (or a token store the person must fix): only this call
                    # fails; nobody else awaits its task.
                    logger.exception("sending request %r failed unexpectedly", request_id)
                    reason = f"{type(exc).__name__}: {exc} (the log has its traceback)"
                if call.cancelled_early is None:  # else nobody waits for an answer
                    await self._fail(incoming, request_id, reason, data, cursor.connecting, why)
        finally:
            if self._calls.get(request_id) is call:
                del self._calls[request_id]
            self._withdraw_questions(call, incoming)

    def _withdraw_questions(
        self, call: _Call, incoming: ChannelSender[Envelope | Exception]
    ) -> None:
        """End the server's unanswered questions that came on ``call``'s stream, as if
        the server had cancelled them: they are part of that call, which is over
        (answered, cancelled by us, or its stream lost for good), so nobody will take
        their answers, and the callbacks asking a person for them must stop."""
        for question in call.questions:
            self._questions.pop(question, None)
            self._unsent.settled(question)
            reason = "the call this request was part of has ended"
            notice = {
                "jsonrpc": "2.0",
                "method": CANCELLED,
                "params": {"requestId": question, "reason": reason},
            }
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                incoming.send_nowait(Envelope(notice))
        call.questions.clear()

    async def _wait_to_send_again(self, call: _Call, refused: _NotHandled) -> None:
        """Wait what the server asked before ``call`` is POSTed again: it said it did not
        handle the request (a replica without Redis, or stopping, answers so; behind a
        balancer the next try may reach another), a status that promises the request did
        nothing, so nothing runs twice; ``_post`` raises it for at most ``_REQUEST_TRIES``
        tries. The wait ends with the call's scope: its caller giving up, or its timeout."""
        if call.tries == 1:
            logger.info(
                "the server did not handle request %r (%s); sending it again after "
                "%g s (Retry-After), at most %d more times",
                call.request_id,
                refused.said,
                refused.wait,
                _REQUEST_TRIES - 1,
            )
        delay = _backoff(call.tries, refused.wait, self.max_retry_seconds, self._jitter)
        call.tries += 1
        # The next try is a request the server has not seen: a cancel during it must
        # again guard against overtaking it (see ``_cancel``).
        call.reached_server = False
        call.waiting_to_resend = True
        try:
            await anyio.sleep(delay)
        finally:
            call.waiting_to_resend = False

    async def _post(
        self,
        lanes: _Lanes,
        message: JSONObject,
        body: bytes,
        headers: dict[str, str],
        incoming: ChannelSender[Envelope | Exception],
        tg: TaskGroup,
        call: _Call,
        cursor: _Cursor,
    ) -> bool:
        """POST a request; return whether it is settled (answered, or failed here).
        Raises ``_NotHandled`` when the server did not handle it and it may be tried
        again (see ``_not_handled``)."""
        request_id = call.request_id
        if self._session_ended and message.get("method") != "initialize":
            await self._fail(incoming, request_id, _SESSION_ENDED, {"reason": SESSION_EXPIRED})
            return True
        # A 2026-07-28 message has no session (nor has ``server/discover``, which finds
        # the era): a session id on its answer is not adopted, so its 404 ends none.
        in_session = not call.modern and message.get("method") != "server/discover"
        sent_session = self.session_id if in_session else None
        timeout = self._timeout(lanes, stream=True)
        resend = message.get("method") != _NOT_RESENT and not _carries_state(message)
        if call.first_sent_at is None:
            call.first_sent_at = self._clock()
        async with self._open(
            lanes.requests, "POST", headers, body, timeout, resend_after_reset=resend
        ) as response:
            call.reached_server = True
            if call.cancelled_early is not None:
                call.cancelled_early(_is_sse(response))  # ends this call at its next await
            if response.status_code == 404 and sent_session is not None:
                answered_in_it = self._session_answered
                again = _AGAIN if self._renewed else ""
                if self.session_id == sent_session:
                    self.session_id = None
                    self._session_ended = True
                reason = (
                    _SESSION_ENDED if answered_in_it else _SESSION_LOST_AT_ONCE.format(again=again)
                )
                await self._fail(incoming, request_id, reason, {"reason": SESSION_EXPIRED})
                return True
            wait = self._not_handled(response, call)
            if wait is not None:
                raw = await self._read_body(response)  # small: the connection is kept
                raise _NotHandled(_status_reason(response, raw, self.url), wait)
            if response.is_success:
                self._reached = True
            new_session = response.headers.get(SESSION_HEADER) if in_session else None
            # Servers may repeat the session id on every response: checked when it changes.
            if new_session is not None and new_session != self.session_id and response.is_success:
                if not _is_session_id(new_session):
                    shown = new_session if len(new_session) <= 40 else new_session[:37] + "..."
                    await self._fail(
                        incoming,
                        request_id,
                        f"the server sent the session id {shown!r}, which is not visible "
                        "ASCII (the specification allows only characters 0x21 to 0x7E), so "
                        "it could not be sent back; the server breaks the specification",
                        connecting=cursor.connecting,
                    )
                    return True
                self._renewed = self._session_ended
                self.session_id = new_session
                self._session_ended = False
                self._session_answered = False
            elif (
                response.is_success
                and sent_session == self.session_id
                and message.get("method") != "initialize"
            ):
                self._session_answered = True
            opens_session = message.get("method") == "initialize" and response.is_success
            if opens_session:
                self._initialize_id = request_id
            if _is_sse(response):
                answered = await self._read_sse(response, request_id, incoming, cursor)
                if answered and opens_session:
                    # Now the version is known, so the GET stream can carry it too.
                    tg.start_soon(self._listen_standalone, lanes, incoming)
                return answered
            raw = await self._read_body(response)
            answer = _answer_in(raw, request_id, success=response.is_success)
            # A 5xx's error without an id is the HTTP layer's (a lifespan never started, a
            # server stopping), not an answer from MCP: failed like any other 5xx, so no
            # JSON-RPC code in it is read as the server's verdict on the request.
            if answer is None or (response.status_code >= 500 and _has_no_id(raw)):
                # The server's own words may end a sentence; what the status says goes on.
                reason = _status_reason(response, raw, self.url, self._reached).rstrip(".")
                reason += _what_is_known(response)
                not_resent = self._why_not_sent_again(response, call)
                reason += f"; {not_resent}" if not_resent else ""
                data = _failure_data(response)
                await self._fail(incoming, request_id, reason, data, cursor.connecting)
                return True
            self._note_version(answer)
            error = _error_object(answer)
            if error is not None and response.status_code >= 500:
                answer = {**answer, "error": _marked_failed(error, response.status_code)}
                error = _error_object(answer)
            note = self._why_not_sent_again(response, call) if error is not None else ""
            if error is not None and note:  # the server's words, then why they are final
                answer = {**answer, "error": {**error, "message": f"{error['message']} ({note})"}}
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                # Closed: the connection is ending, and nobody waits for the answer.
                incoming.send_nowait(Envelope(answer))
            if opens_session:
                tg.start_soon(self._listen_standalone, lanes, incoming)
            return True

    def _not_handled(self, response: httpx2.Response, call: _Call) -> float | None:
        """How long to wait before trying ``call`` again, if ``response`` says the
        server did not handle it (429 or 503 with ``Retry-After``: answerback's server
        says so without Redis, or while stopping), the call has tries left, and the
        wait is within ``max_retry_seconds``; else ``None``, and the response goes to the
        caller as it is. A 503 without ``Retry-After`` (a balancer with no server up), a
        502 or a 504 says nothing of the sort."""
        if response.status_code not in _NOT_HANDLED or call.tries >= _REQUEST_TRIES:
            return None
        wait = _retry_after(response)
        if wait is None or wait > self.max_retry_seconds:
            return None
        return wait

    def _why_not_sent_again(self, response: httpx2.Response, call: _Call) -> str:
        """For a "not handled" status that goes to the caller, a clause saying how often
        the request was sent (over how long) when it went more than once, or that the
        wait asked for was over ``max_retry_seconds``; else ``""``.

        A last refusal without ``Retry-After`` still ends tries that were refused before:
        the caller learns of them all the same."""
        if response.status_code not in _NOT_HANDLED:
            return ""
        wait = _retry_after(response)
        if call.tries > 1 and (wait is None or call.tries >= _REQUEST_TRIES):
            began = call.first_sent_at if call.first_sent_at is not None else self._clock()
            lasted = self._clock() - began
            return f"it was sent {call.tries} times over {lasted:.1f} s, refused each time"
        if wait is not None and wait > self.max_retry_seconds:
            return (
                f"it was not sent again, as the server asked to wait {wait:g} s, over the "
                f"transport's max_retry_seconds of {self.max_retry_seconds:g} s"
            )
        return ""

    def _cursor(self) -> _Cursor:
        return _Cursor(EventParser(self.max_message_bytes))

    async def _read_body(self, response: httpx2.Response) -> bytes:
        """The whole body, refusing one over ``max_message_bytes`` before storing it."""
        limit = self.max_message_bytes
        declared = response.headers.get("content-length", "")
        if declared.isdigit():
            if int(declared) > limit:
                raise MessageTooLarge(
                    f"the server sent a body of {declared} bytes, larger than {limit} bytes"
                )
            if response.headers.get("content-encoding", "identity").lower() == "identity":
                # HTTP/1.1 framing ends the body at the declared length: no counting needed.
                # (A compressed body's length says nothing of what it decompresses to.)
                return await response.aread()
        body = bytearray()
        async with contextlib.aclosing(response.aiter_bytes()) as chunks:
            async for chunk in chunks:
                body += chunk
                if len(body) > limit:
                    raise MessageTooLarge(f"the server sent a body larger than {limit} bytes")
        return bytes(body)

    def _note_version(self, message: JSONObject) -> None:
        """Learn the version the session negotiated (sent on every later request) from
        the answer to ``initialize`` only, and only a version we know: any other result
        says nothing about the session, and a header must be plain ASCII."""
        if self._initialize_id is None or as_request_id(message.get("id")) != self._initialize_id:
            return
        result = as_object(message.get("result"))
        version = result.get("protocolVersion") if result is not None else None
        if isinstance(version, str) and version in SUPPORTED_VERSIONS:
            self.protocol_version = version

    async def _read_sse(
        self,
        response: httpx2.Response,
        request_id: RequestId | None,
        incoming: ChannelSender[Envelope | Exception],
        cursor: _Cursor,
    ) -> bool:
        """Forward a stream's messages; return whether the answer to ``request_id`` came.

        After the answer the stream is read to its end (the server closes it right then),
        so the connection goes back to the pool; a server that keeps it open longer than
        ``timeout`` is hung up on. While more than ``UNTAKEN_MESSAGES_HELD`` of the
        server's messages wait for the client (its callbacks are slower than the server
        writes), or more than ``_UNSENT_HELD`` answers wait to be POSTed, reading waits:
        the server's writes wait in turn, and the client's memory stays bounded.
        """
        answered = False
        cursor.broke = None
        untaken = Held(UntakenMessages(incoming), self._unsent)
        try:
            with anyio.CancelScope() as reading:
                async with contextlib.aclosing(response.aiter_bytes()) as chunks:
                    async for chunk in chunks:
                        events = cursor.parser.feed(chunk)  # MessageTooLarge ends the reading
                        cursor.blocks += len(events)
                        cursor.messages += sum(1 for event in events if _carries_message(event))
                        if self._forward(events, request_id, incoming) and not answered:
                            answered = True
                            reading.deadline = anyio.current_time() + self.timeout
                        await until_drained(untaken)
        except httpx2.HTTPError as exc:
            if not answered:
                cursor.broke = f"{type(exc).__name__}: {exc}"
                logger.info("SSE stream broke (%r); will resume if possible", exc)
        finally:
            cursor.ended_at = anyio.current_time()
        return answered

    def _forward(
        self,
        events: list[Event],
        request_id: RequestId | None,
        incoming: ChannelSender[Envelope | Exception],
    ) -> bool:
        """Hand the messages of ``events`` on; return whether the answer was among them.

        Never waits (the buffer has no bound): a chunk's events go on together, and the
        reader waits after them while the callbacks are behind (see ``_read_sse``).
        """
        answered = False
        for event in events:
            if not _carries_message(event):
                continue
            envelope = decode(event.data)
            if isinstance(envelope, Envelope):
                message = as_object(envelope.message) or {}
                if _is_unattributed_error(message):
                    # The server could not read what we sent. On a POST's stream that
                    # is the one request the POST carried (as for a JSON body, see
                    # ``_answer_in``): it fails with the server's error instead of
                    # waiting for an answer that cannot come. On the GET stream it
                    # concerns none of our requests (each has its POST), so it is not
                    # passed on, where the engine would fail whatever is waiting.
                    if request_id is None:
                        logger.warning(
                            "the server at %s sent an error with no id on its own stream, "
                            "which answers none of our requests: %s",
                            self.url,
                            message["error"],
                        )
                        continue
                    message = {**message, "id": request_id}
                    envelope = dataclasses.replace(envelope, message=message)
                self._note_version(message)
                answered = answered or _is_answer(message, request_id)
                self._note_question(message, request_id)
                self._note_asked(message)
            elif envelope.request_id is None:  # read by nobody: reported, a few in full
                unread = self._unreadable.report(envelope, _unreadable_summary, _last_in_full)
                if unread is None:
                    continue
                envelope = unread
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                incoming.send_nowait(envelope)  # closed: the client is leaving
        return answered

    def _note_asked(self, message: JSONObject) -> None:
        """Count a server request as asked until it is answered, or until the server
        cancels it (then no answer comes): see ``_UNSENT_HELD``."""
        method = message.get("method")
        if method == CANCELLED:
            target = as_request_id((as_object(message.get("params")) or {}).get("requestId"))
            if target is not None:
                self._unsent.settled(target)
            return
        question = as_request_id(message.get("id"))
        # A question for a person is not counted: its answer may wait long, and the streams
        # must go on being read meanwhile, or the other calls' answers and the server's
        # cancellations of these very questions would wait with it (the client bounds how
        # many it answers at once: ``max_input_requests``).
        if method is not None and method not in PERSON_FACING_METHODS and question is not None:
            self._unsent.asked.add(question)

    def _note_question(self, message: JSONObject, request_id: RequestId | None) -> None:
        """Remember a server request that came on the stream of our request ``request_id``
        (it is part of that call; see ``_withdraw_questions``)."""
        question = as_request_id(message.get("id"))
        call = self._calls.get(request_id) if request_id is not None else None
        if call is not None and question is not None and "method" in message:
            call.questions.add(question)
            self._questions[question] = call

    async def _resume(
        self,
        lanes: _Lanes,
        request_id: RequestId,
        incoming: ChannelSender[Envelope | Exception],
        cursor: _Cursor,
    ) -> str | None:
        """Reconnect a broken response stream with ``Last-Event-ID`` until it answers;
        ``None`` once answered, else why not. Gives up after a few attempts in a row
        that bring no new event.

        A server that closes a stream it means to go on with (polling) sends an event
        first, at least a ``retry`` hint, as the specification asks; one that ends a
        resumed stream cleanly with no event at all says the stream has finished (the
        answer went out earlier, and its events are gone), so waiting cannot bring the
        answer and the call fails at once.
        """
        attempts = 0
        quiet = 0  # reconnections in a row that brought no message
        parser = cursor.parser
        while attempts < _MAX_RECONNECTS:
            last_event_id = parser.last_event_id
            if not last_event_id:
                break
            attempts += 1
            retry = _DEFAULT_RETRY_SECONDS if parser.retry_ms is None else parser.retry_ms / 1000
            delay = max(retry, _MIN_RETRY_SECONDS * 2 ** min(quiet, 16))
            await anyio.sleep_until(cursor.ended_at + min(delay, self.max_retry_seconds))
            messages, blocks = cursor.messages, cursor.blocks
            headers = {**self._headers(accept="text/event-stream"), "last-event-id": last_event_id}
            parser.restart()
            timeout = self._timeout(lanes, stream=True)
            try:
                async with self._open(lanes.requests, "GET", headers, None, timeout) as response:
                    if not (response.is_success and _is_sse(response)):
                        break
                    if await self._read_sse(response, request_id, incoming, cursor):
                        return None
                    if cursor.broke is None and cursor.blocks == blocks:
                        return _FINISHED_WITHOUT_ANSWER
            except httpx2.HTTPError as exc:
                cursor.ended_at = anyio.current_time()
                logger.info("reconnecting a response stream failed: %r", exc)
                continue
            if parser.last_event_id != last_event_id:
                attempts = 0
            quiet = 0 if cursor.messages != messages else quiet + 1
        return cursor.unanswered(resumed=True)

    async def _listen_standalone(
        self, lanes: _Lanes, incoming: ChannelSender[Envelope | Exception]
    ) -> None:
        """The GET stream: server messages not tied to a request. Optional for servers.

        A server may end it at any time (to poll, or because this client read it too
        slowly); it is then resumed from its last event after the server's ``retry``
        delay, backing off while reconnections bring nothing, for as long as the
        session lasts. A failure that may pass (no connection, 5xx, 429: behind a
        balancer, the replica that held the stream died or is shutting down) is tried
        again, backing off (with jitter) and obeying ``Retry-After``, said once when it
        starts and once when it ends. A session the server ends (404) is set up again
        (see ``_session_ended_while_listening``), and the new one listens on its own.
        Listening stops when the server has no GET stream (405, or 404 to the first
        GET), or on a refusal waiting cannot mend, with a warning.
        """
        cursor = self._cursor()
        parser = cursor.parser
        session = self.session_id
        opened_at = self._clock()
        quiet = 0  # reconnections in a row that brought no message
        failures = 0  # attempts in a row that failed
        failing_since = 0.0
        listened = False  # whether the server ever gave this session a GET stream
        while True:
            headers = self._headers(accept="text/event-stream")
            resumed_from = parser.last_event_id
            if resumed_from:
                headers["last-event-id"] = resumed_from
            messages = cursor.messages
            timeout = self._timeout(lanes, stream=True)
            failure: str | None = None
            retry_after: float | None = None
            ended = False
            try:
                async with self._open(lanes.requests, "GET", headers, None, timeout) as response:
                    status = response.status_code
                    refused_resume = bool(resumed_from) and status in _RESUME_REFUSED
                    if failures and (refused_resume or _is_sse(response)):
                        logger.warning(
                            "the standalone SSE stream is back after %d failed attempts in %.1f s",
                            failures,
                            self._clock() - failing_since,
                        )
                        failures = 0
                    if refused_resume or _is_sse(response):
                        self._server_gone(None)
                    if refused_resume:
                        logger.warning(
                            "the server no longer holds the standalone SSE stream's events "
                            "after %r (HTTP %d): messages sent meanwhile are lost; listening "
                            "afresh",
                            resumed_from,
                            status,
                        )
                        parser.last_event_id = ""
                    elif _is_sse(response):
                        listened = True
                        await self._read_sse(response, None, incoming, cursor)
                    elif status >= 500 or status == 429:
                        raw = await self._read_body(response)
                        failure = _status_reason(response, raw, self.url)
                        retry_after = _retry_after(response)
                    elif status == 404 and listened and session is not None:
                        if self.session_id != session:
                            return  # a request met it first: its new session listens
                        ended = True
                    else:
                        self._stop_listening(response, await self._read_body(response))
                        return
            except (
                httpx2.NetworkError,
                httpx2.TimeoutException,
                httpx2.RemoteProtocolError,
                httpx2.ProxyError,
            ) as exc:
                failure = self._describe(exc)
            except (httpx2.HTTPError, _RedirectRefused, MessageTooLarge, AuthorizationError) as exc:
                logger.warning("the standalone SSE stream ended: %s", self._describe(exc))
                return
            if ended:  # with the response closed, not holding its connection
                await self._session_ended_while_listening(session, self._clock() - opened_at)
                return
            if self.session_id != session:
                return  # a new session listens on its own
            if failure is not None:
                failures += 1
                now = self._clock()
                if failures == 1:
                    failing_since = now
                    logger.warning(
                        "the standalone SSE stream failed (%s); trying again, backing off, "
                        "while the session lasts: server messages not tied to a request "
                        "(list changes, resource updates) wait or are lost until it is back",
                        failure,
                    )
                failing_for = now - failing_since
                limit = self.gone_after_seconds
                if limit is not None and failing_for >= limit:
                    self._server_gone(
                        f"its standalone SSE stream failed {failures} times in a row for "
                        f"{failing_for:.0f} s, the last with: {failure}"
                    )
                await anyio.sleep(
                    _backoff(failures, retry_after, self.max_retry_seconds, self._jitter)
                )
                continue
            quiet = 0 if cursor.messages != messages else quiet + 1
            retry = _DEFAULT_RETRY_SECONDS if parser.retry_ms is None else parser.retry_ms / 1000
            delay = max(retry, _MIN_RETRY_SECONDS * 2 ** min(quiet, 16))
            await anyio.sleep(min(delay, self.max_retry_seconds))
            parser.restart()

    async def _session_ended_while_listening(self, session: str | None, lived: float) -> None:
        """The server ended ``session`` (idle expiry, making room, a replica that lost
        it) ``lived`` seconds after it opened, while the client listened: a host that
        only listens would never hear again. The session is set up again, as the next
        request would (the new one listens on its own); only a server that once gave
        this session a GET stream is believed, so one that answers every GET with 404 is
        not set up again and again. A request that met the 404 meanwhile, while this
        response closed, has set one up already (or is doing so), and that one is left
        alone.

        A server that ends every session soon after it opened (a balancer without sticky
        sessions, replicas without a shared session store) is not fed new ones for
        ever: each short-lived one in a row waits twice as long before the next, and
        after ``_SHORT_SESSIONS_IN_A_ROW`` the stream stops setting up and the server is
        taken for gone, saying why (the next request still sets one up)."""
        if self.session_id != session:
            return
        self.session_id = None
        self._session_ended = True
        renew = self.on_session_ended
        self._short_sessions = self._short_sessions + 1 if lived < _SHORT_SESSION_SECONDS else 0
        short = self._short_sessions
        if renew is not None and short >= _SHORT_SESSIONS_IN_A_ROW:
            self._server_gone(
                f"it ended {short} sessions in a row within {_SHORT_SESSION_SECONDS:g} s of "
                "opening them (HTTP 404 on the standalone SSE stream), so no new session is "
                "set up for the stream until the next request: a server behind a balancer "
                "needs sticky sessions (each session's requests to the replica that holds "
                "it) or a session store its replicas share; check also that the server does "
                "not expire or forget sessions at once"
            )
            return
        delay = _SETUP_DELAY_SECONDS * 2 ** (short - 2) if short > 1 else 0.0
        if renew is None:
            plan = "the next request sets up a new one"
        elif delay:
            plan = f"setting up a new session in {delay:g} s ({short} ended soon after opening)"
        else:
            plan = "setting up a new session now"
        logger.warning(
            "the server at %s ended the session (HTTP 404 on the standalone SSE stream): "
            "server messages sent until a new session listens are lost; %s%s",
            self.url,
            plan,
            "" if renew is None else " (a Client subscribes it again to the old one's resources)",
        )
        if renew is None:
            return
        if delay:
            await self._sleep(delay)
            if not self._session_ended:
                return  # a request set one up meanwhile
        try:
            await renew()
        except Exception as exc:
            logger.warning(
                "could not set up a new session after the server ended the old one (%s); "
                "the next request tries again",
                exc,
            )
            self._server_gone(f"it ended the session and a new one could not be set up: {exc}")

    def _server_gone(self, why: str | None) -> None:
        """Tell ``on_server_gone`` the server is gone (``why``) or back (``None``), once
        each time it changes."""
        if (why is None) == (self._gone is None):
            return
        self._gone = why
        if why is not None:
            logger.warning(
                "the server at %s is taken for gone (%s): listen() blocks end, and %s",
                self.url,
                why,
                # Ended: no session is left for the stream to try again with.
                "the next request sets up a new session"
                if self._session_ended
                else "the standalone SSE stream goes on trying",
            )
        if self.on_server_gone is not None:
            self.on_server_gone(why)

    def _stop_listening(self, response: httpx2.Response, body: bytes) -> None:
        """Say why the GET stream ends for good: a server without one (405, or 404 to
        the session's first GET) is normal."""
        status = response.status_code
        if status in (404, 405):
            logger.debug(
                "the server at %s offers no standalone SSE stream (HTTP %d)", self.url, status
            )
        else:
            logger.warning(
                "the server refused the standalone SSE stream (%s); server messages not "
                "tied to a request are not received in this session",
                _status_reason(response, body, self.url),
            )

    def _post_soon(
        self,
        tg: TaskGroup,
        lanes: _Lanes,
        message: JSONObject,
        body: bytes,
        headers: dict[str, str],
        asked_on: _Call | None = None,
    ) -> None:
        """POST an answer or notification in a task, or after those already under way
        if ``_POSTED_AT_ONCE`` are: each task takes the next waiting one when done.
        ``asked_on``: for an answer, the call whose stream carried the question."""
        answered = as_request_id(message.get("id"))
        if "method" not in message and answered is not None:
            self._unsent.settled(answered)
        if self._posting >= _POSTED_AT_ONCE:
            waiting = self._unsent.waiting
            if len(waiting) >= _WAITING_TO_POST:
                # Each of the server's requests was answered; their POSTs did not keep up.
                too_many = (
                    f"{len(waiting)} answers and notifications already waited to be POSTed "
                    f"(the most kept) behind the {self._posting} being POSTed: the server "
                    "asked faster than the answers' POSTs went through (thousands of "
                    "requests at once, or POSTs it held unanswered)"
                )
                if not self._dropping:
                    self._dropping = True
                    logger.warning(
                        "the server at %s: %s; newer answers and notifications are dropped "
                        "until fewer wait",
                        self.url,
                        too_many,
                    )
                if asked_on is not None:
                    lost = f"the answer to the server's request {{}} was dropped: {too_many}"
                    tg.start_soon(self._answer_lost, lanes, message, asked_on, lost)
                return
            self._dropping = False
            waiting.append((message, body, headers, asked_on))
            return
        self._posting += 1
        tg.start_soon(self._post_in_turn, lanes, message, body, headers, asked_on)

    async def _post_in_turn(
        self,
        lanes: _Lanes,
        message: JSONObject,
        body: bytes,
        headers: dict[str, str],
        asked_on: _Call | None,
    ) -> None:
        """Deliver, then what waits. In the connection's task group, not a plain task:
        closing the connection must cut short a POST the server holds. A defect here is
        logged and concerns nothing else."""
        try:
            while True:
                await self._deliver(lanes, message, body, headers, asked_on)
                waiting = self._unsent.next()
                if waiting is None:
                    return
                message, body, headers, asked_on = waiting
        except Exception:
            logger.exception("sending an answer or notification failed unexpectedly")
        finally:
            self._posting -= 1

    async def _deliver(
        self,
        lanes: _Lanes,
        message: JSONObject,
        body: bytes,
        headers: dict[str, str],
        asked_on: _Call | None = None,
    ) -> None:
        """POST an answer or a notification on the answer lane. Nothing waits for it
        here, so a failure is logged; an answer the server refuses also ends the call
        its question was part of (``asked_on``), which could never complete.

        What may pass (a dropped connection; a proxy's 502, 503 or 504 while a replica
        restarts) is tried again, backing off: a repeated notification is harmless, and
        so is a repeated answer (answerback's server drops an answer to a question no
        longer waiting, or, scaled out, refuses it with 409, which after a try that may
        have reached the server means that try did)."""
        method = message.get("method")
        what = f"the {method} notification" if method else "the answer to a server request"
        sent_session = self.session_id
        timeout = self._timeout(lanes, stream=False)
        maybe_taken = False  # whether an earlier try may have reached the server
        for attempt in range(1, _DELIVERY_ATTEMPTS + 1):
            retry_after: float | None = None
            try:
                async with self._open(lanes.answers, "POST", headers, body, timeout) as response:
                    raw = await self._read_body(response)
                    status = response.status_code
                    if response.is_success:
                        return
                    if status == 404 and sent_session is not None:
                        if asked_on is not None and self._waiting(asked_on):
                            logger.warning(
                                "the server at %s does not know the session the answer to "
                                "its request %r was POSTed in (HTTP 404), though the call "
                                "that asked is still open in it; the call fails",
                                self.url,
                                message.get("id"),
                            )
                            await self._answer_lost(lanes, message, asked_on, _ANSWER_ELSEWHERE)
                            return
                        # The next request meets the same 404 and sets the session up again.
                        logger.info("the server no longer knows the session; dropped %s", what)
                        return
                    if (
                        status == 409
                        and maybe_taken
                        and method is None
                        and _error_reason_in(raw) == ALREADY_ANSWERED
                    ):
                        logger.info(
                            "the server already had the answer to its request %r: an "
                            "earlier try, whose response was lost, reached it",
                            message.get("id"),
                        )
                        return
                    reason = _status_reason(response, raw, self.url, self._reached)
                    if status not in _MAY_PASS or attempt == _DELIVERY_ATTEMPTS:
                        logger.warning("the server refused %s: %s", what, reason)
                        lost = f"the server refused the answer to its request {{}}: {reason}"
                        await self._answer_lost(lanes, message, asked_on, lost)
                        return
                    maybe_taken = maybe_taken or status != 503  # 503: not handled
                    retry_after = _retry_after(response)
                    logger.info("sending %s again after %s", what, reason)
            except (httpx2.NetworkError, httpx2.RemoteProtocolError) as exc:
                # Most often a kept-alive connection the server closed just then.
                if attempt == _DELIVERY_ATTEMPTS:
                    logger.warning("could not send %s: %s", what, self._describe(exc))
                    lost = f"the answer to the server's request {{}} could not be sent: {exc}"
                    await self._answer_lost(lanes, message, asked_on, lost)
                    return
                maybe_taken = maybe_taken or not isinstance(exc, (httpx2.ConnectError, _SentInPart))
            except (httpx2.HTTPError, _RedirectRefused, MessageTooLarge, AuthorizationError) as exc:
                logger.warning("could not send %s: %s", what, self._describe(exc))
                lost = f"the answer to the server's request {{}} could not be sent: {exc}"
                await self._answer_lost(lanes, message, asked_on, lost)
                return
            await anyio.sleep(_backoff(attempt, retry_after, self.max_retry_seconds, self._jitter))

    async def _answer_lost(
        self, lanes: _Lanes, answer: JSONObject, call: _Call | None, lost: str
    ) -> None:
        """Our ``answer`` to a server request, part of ``call``, never reached the server
        (refused, or not sent): the server's handler still waits for it, so the call
        fails here, saying why (``lost``, with ``{}`` for the request's id), and is
        cancelled on the server, as when its caller gives up. (Only a handshake-era call
        is asked questions over the wire: a 2026-07-28 one gets them in its result.)"""
        question = as_request_id(answer.get("id"))
        if call is None or question is None or not self._waiting(call):
            return  # a notification, a question of no call's, or a call over or ending
        call.scope.cancel()  # its task ends without failing it: that is done here
        await self._fail(
            self._incoming,
            call.request_id,
            f"{lost.replace('{}', repr(question), 1)}; this call was waiting on it, so it "
            "cannot complete",
        )
        notice: JSONObject = {
            "jsonrpc": "2.0",
            "method": CANCELLED,
            "params": {"requestId": call.request_id, "reason": "an answer it waited on was lost"},
        }
        headers, _ = self._headers_for(notice, None)
        await self._deliver(lanes, notice, encode(notice), headers)

    def _waiting(self, call: _Call) -> bool:
        """Whether ``call`` is still in flight, neither answered nor ending."""
        return self._calls.get(call.request_id) is call and not call.scope.cancel_called

    @asynccontextmanager
    async def _open(
        self,
        lane: _Lane,
        method: str,
        headers: dict[str, str],
        body: bytes | None,
        timeout: httpx2.Timeout,
        *,
        resend_after_reset: bool = True,
    ) -> AsyncGenerator[httpx2.Response, None]:
        """Send one HTTP request and yield its response, following only 307/308
        redirects within the same origin: the session id, the credentials in our headers
        and the body stay with the server they were meant for. ``resend_after_reset``:
        see ``_send``."""
        # What httpx2's ``stream()`` does, without its context manager (nor one for the
        # pool): each would set up a generator on every request.
        url = self._endpoint
        pool = lane.take()
        client = pool.client
        try:
            for _ in range(_MAX_REDIRECTS + 1):
                response = await self._send(
                    client, method, url, body, headers, timeout, resend_after_reset
                )
                try:
                    target = _redirect_target(response, url)
                    if target is None:
                        yield response
                        return
                finally:
                    await response.aclose()
                url = target
        finally:
            await lane.give_back(pool)
        raise _RedirectRefused(f"more than {_MAX_REDIRECTS} redirects from {self.url}")

    async def _send(
        self,
        client: httpx2.AsyncClient,
        method: str,
        url: httpx2.URL,
        body: bytes | None,
        headers: dict[str, str],
        timeout: httpx2.Timeout,
        resend_after_reset: bool,
    ) -> httpx2.Response:
        """Send one HTTP request and return its response (its body still to read).

        A request whose connection was lost while it was still being written is sent
        again, on another connection: the server cannot have handled it. One whose
        connection was reset after, before any answer came, is sent again only if
        ``resend_after_reset``, which its caller gives for what is safe to repeat (see
        ``_NOT_RESENT``). A server that stops resets its kept-alive connections idle in
        the pool, and new ones still in its listening queue: a fresh try then says what
        is true now, the answer, or that nothing is listening. (A try on another of those
        connections, before its reset reached the pool's check, fails as closed without
        an answer: after a reset, that is sent again too.) Any other failure is the
        caller's: the server may have read the request, so whether it did its work is
        unknown (``_SentInPart`` when every try failed while being written).
        """
        auth = self.auth if self.auth is not None else httpx2.USE_CLIENT_DEFAULT
        resets = 0
        unsent = True  # whether every try so far failed while being written
        cut_writing = 0  # the tries that failed while being written
        traced = body is not None and len(body) >= _TRACED_BYTES  # else no trace to pay for
        while True:
            writing = _Writing() if traced else None
            request = client.build_request(
                method,
                url,
                content=body,
                headers=headers,
                timeout=timeout,
                extensions={"trace": writing.trace} if writing is not None else None,
            )
            try:
                return await client.send(request, auth=auth, follow_redirects=False, stream=True)
            except (httpx2.ReadError, httpx2.WriteError, httpx2.RemoteProtocolError) as exc:
                failed = writing is not None and writing.failed
                closed_unanswered = isinstance(exc, httpx2.RemoteProtocolError)
                reset = not closed_unanswered and _caused_by(
                    exc, ConnectionResetError, BrokenPipeError
                )
                # After a reset, another kept-alive connection of the same server closing
                # unanswered is one more of them, its reset not seen by the pool yet.
                stale = closed_unanswered and resets > 0
                if not failed and not (resend_after_reset and (reset or stale)):
                    raise
                unsent = unsent and failed
                cut_writing += failed
                if resets == _RESETS_RESENT or cut_writing > _CUT_WRITING_RESENT:
                    if not unsent:
                        raise  # a try written whole may have been handled
                    raise _SentInPart(
                        f"the connection closed before the whole request ({len(body or b'')} "
                        f"bytes) was sent, {resets + 1} times in a row (the last: "
                        f"{_first_said(exc)}): a server or proxy may cut off requests this "
                        "large; the server did not handle it, so sending it again is safe"
                    ) from exc
                resets += 1
                logger.info(
                    "the connection to %s was %s before an answer came (%r); sending the "
                    "request again on another",
                    self.url,
                    "lost while the request was being written" if failed else "reset",
                    exc,
                )

    def _describe(self, exc: Exception) -> str:
        """What went wrong with an HTTP exchange, and what to do about it."""
        if isinstance(exc, httpx2.PoolTimeout):
            return (
                f"no free connection in the http_client's pool within {self.timeout:g} s; "
                "create the httpx2.AsyncClient you pass with "
                "limits=httpx2.Limits(max_connections=None), or with more connections than "
                "the calls you run at once"
            )
        if isinstance(exc, httpx2.ConnectTimeout):
            return f"could not connect to {self.url} within {self.timeout:g} s"
        if isinstance(exc, httpx2.ConnectError):
            if _caused_by(exc, ConnectionRefusedError):
                return (
                    f"nothing is listening at {self.url} (connection refused); start the "
                    "server, or check the host and port"
                )
            if self.url.startswith("https://") and _caused_by(exc, ssl.SSLError):
                plain = "http://" + self.url.removeprefix("https://")
                return (
                    f"could not connect to {self.url} ({exc}): https:// against a server "
                    f"that speaks plain http? try {plain}"
                )
            return f"could not connect to {self.url} ({_first_said(exc)})"
        if isinstance(exc, httpx2.HTTPError):
            return f"HTTP request to {self.url} failed: {type(exc).__name__}: {exc}"
        if isinstance(exc, AuthorizationError):
            return f"authorization failed: {exc}"
        if isinstance(exc, MessageTooLarge):
            return f"{exc}; pass StreamableHTTPTransport a larger max_message_bytes if expected"
        return str(exc)

    async def _fail(
        self,
        incoming: ChannelSender[Envelope | Exception],
        request_id: RequestId,
        reason: str,
        data: Any = None,
        connecting: bool = False,
        why: str | None = None,
    ) -> None:
        """Answer our own request with an error: it fails, and nothing else does. Until
        the server has answered once, or for ``initialize`` (``connecting``), that is the
        connection failing; otherwise only this request failed, and the connection goes on.
        ``data`` holds the reason alone under ``WHY``: ``why``, else ``reason``."""
        # A reason that is whole sentences (an AuthorizationError's) keeps one full stop.
        reason = reason.rstrip(".")
        if self._reached and not connecting:
            message = f"Request failed: {reason}. {STAYS_OPEN}."
        else:
            message = f"Connection failed: {reason}."
        alone = reason if why is None else why.rstrip(".")
        data = {**cast(JSONObject, data or {}), WHY: f"{alone}."}
        error: JSONObject = {"code": CONNECTION_CLOSED, "message": message, "data": data}
        answer: JSONObject = {"jsonrpc": "2.0", "id": request_id, "error": error}
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            # Closed: the client has left (its DELETE ended the session, so the calls
            # still under way meet a 404), and nobody waits for this answer.
            await incoming.send(Envelope(answer, transport_context=LOCAL_FAILURE))

    async def _terminate(self, lanes: _Lanes) -> None:
        """End the session on the server (DELETE); a server may refuse with 405."""
        if self.session_id is None:
            return
        with anyio.move_on_after(5):
            try:
                timeout = self._timeout(lanes, stream=False)
                async with self._open(lanes.answers, "DELETE", self._headers(), None, timeout):
                    pass
            except (httpx2.HTTPError, _RedirectRefused, AuthorizationError) as exc:
                logger.debug("DELETE of the session failed: %r", exc)
        self.session_id = None


def _last_in_full(fault: Exception) -> Exception:
    return MalformedMessage(
        f"{fault} (the {FAULTS_SHOWN}th such message: from now on they are counted, and a "
        f"count is reported every {FAULTS_SUMMARY_SECONDS:g} s while they go on)"
    )


def _unreadable_summary(count: int, latest: Exception) -> Exception:
    messages, they = (
        ("1 more message", "it was") if count == 1 else (f"{count} more messages", "they were")
    )
    return MalformedMessage(
        f"the server sent {messages} that could not be read since the last report, and "
        f"{they} skipped (the latest: {latest})"
    )


def _goes_in_order(envelope: Envelope) -> bool:
    """``initialize`` and ``initialized``: what the server must have before anything
    sent after them."""
    message = as_object(envelope.message)
    return message is not None and message.get("method") in ("initialize", _INITIALIZED)


def _carries_message(event: Event) -> bool:
    """Whether an SSE event holds a JSON-RPC message (not a priming event, say)."""
    return bool(event.data) and event.event == "message"


_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
"""A header name (RFC 9110's token)."""
_HEADER_VALUE = re.compile(r"[\t\x20-\x7e]*")
"""A header value answerback sends: visible ASCII, spaces and tabs (no CR or LF, which
would start a header of their own)."""


def parsed_endpoint(url: str) -> httpx2.URL:
    """``url`` parsed, or ``ValueError`` saying why it cannot be connected to."""
    try:
        endpoint = httpx2.URL(url)
        port = endpoint.port
        if port is not None and not 0 < port <= _HIGHEST_PORT:
            raise httpx2.InvalidURL(f"port {port} is not 1 to {_HIGHEST_PORT}")
        if not endpoint.host:  # httpx would say the URL is "missing a protocol"
            raise httpx2.InvalidURL("it names no host")
    except httpx2.InvalidURL as exc:
        raise ValueError(
            f"Cannot connect to {url!r}: it is not a valid URL ({exc}). Give the "
            "server's full endpoint URL, such as http://127.0.0.1:8000/mcp."
        ) from None
    return endpoint


def checked_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The extra headers, refused at once if HTTP cannot carry them: each request
    failed with an encoding error instead, far from where the header was given."""
    for name, value in headers.items():
        if not isinstance(cast(object, name), str) or not isinstance(cast(object, value), str):
            raise TypeError(
                "headers must map header names (strings) to values (strings): str() "
                f"what is not one, got {name!r}: a {type(value).__name__} (values are not "
                "shown: they often hold secrets)"
            )
        if not _TOKEN.fullmatch(name):
            raise ValueError(
                f"The header name {name!r} is not one HTTP allows: use letters, digits "
                "and -, as in X-Api-Key."
            )
        if not _HEADER_VALUE.fullmatch(value):
            raise ValueError(
                f"The value of the header {name!r} holds a character HTTP headers cannot "
                "carry (only printable ASCII, spaces and tabs): encode it first, for "
                "example with urllib.parse.quote."
            )
    return dict(headers)


_RESUME_REFUSED = (400, 404, 410)
"""What servers answer a GET resuming from an event they cannot replay after: 404 from
those that read it as an unknown session (listening afresh then tells, with a second 404
if so), 400 or 410 from those that say the event id is unknown or gone."""


def _is_session_id(value: str) -> bool:
    """Whether ``value`` is a session id the specification allows (visible ASCII)."""
    return bool(value) and all("!" <= char <= "~" for char in value)


@functools.lru_cache(maxsize=16)
def _httpx_timeout(seconds: float, stream: bool, pool_bounded: bool) -> httpx2.Timeout:
    """The timeouts of a request (see ``_timeout``), made once: httpx2 checks each of
    them as it builds one, and every POST needs one."""
    return httpx2.Timeout(
        connect=seconds,
        read=None if stream else seconds,
        write=seconds,
        pool=seconds if pool_bounded else None,
    )


def _is_sse(response: httpx2.Response) -> bool:
    content_type = response.headers.get("content-type", "").lower()  # case-insensitive
    return response.is_success and content_type.startswith("text/event-stream")


def _is_answer(message: JSONObject, request_id: RequestId | None) -> bool:
    return (
        request_id is not None
        and "method" not in message
        # As the engine reads ids: 2.0 or true answers neither 2 nor 1 (``==`` would say so).
        and as_request_id(message.get("id")) == request_id
        and ("result" in message or "error" in message)
    )


def _is_unattributed_error(message: JSONObject) -> bool:
    """Whether ``message`` is an error answer with a null (or no) id: JSON-RPC's answer
    to a message the server could not read."""
    return "method" not in message and "error" in message and message.get("id") is None


def _answer_in(raw: bytes, request_id: RequestId, *, success: bool) -> JSONObject | None:
    """The answer to ``request_id`` a JSON body holds; an error without an id (an
    HTTP-level refusal) counts as that request's. A malformed error object (a float
    code, no message) counts only in a JSON-RPC 2.0 answer with that id sent as a
    success: the server's malformed answer, which the engine reports as such."""
    envelope = decode(raw) if raw else None
    message = as_object(envelope.message) if isinstance(envelope, Envelope) else None
    if message is None:
        return None
    if "error" in message and _error_object(message) is None:
        answers = message.get("jsonrpc") == "2.0" and _is_answer(message, request_id)
        # Else not JSON-RPC: an OAuth error body ({"error": "invalid_token"}), a web
        # framework's ({"error": {"message": "..."}}, no code).
        return message if success and answers else None
    if "error" in message and message.get("id") is None:
        message = {**message, "id": request_id}
    return message if _is_answer(message, request_id) else None


def _has_no_id(raw: bytes) -> bool:
    """Whether the JSON-RPC message in ``raw`` has a null id, or none."""
    envelope = decode(raw) if raw else None
    message = as_object(envelope.message) if isinstance(envelope, Envelope) else None
    return message is not None and message.get("id") is None


def _first_said(exc: BaseException) -> str:
    """The first message down ``exc``'s chain of causes, else its type's name: on
    asyncio, httpx2's ``ReadError`` for a reset says nothing, the reset under it does."""
    current: BaseException | None = exc
    for _ in range(16):  # a chain is short; a cycle is not followed for ever
        if current is None:
            break
        if said := str(current):
            return said
        current = current.__cause__ or current.__context__
    return type(exc).__name__


def _caused_by(exc: BaseException, *kinds: type[BaseException]) -> bool:
    """Whether one of ``kinds`` is somewhere in ``exc``'s chain of causes (or in a group
    there: trio reports each failed connection attempt in one)."""
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo and len(seen) < 64:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, kinds):
            return True
        if isinstance(current, BaseExceptionGroup):
            todo.extend(cast(BaseExceptionGroup[BaseException], current).exceptions)
        todo.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    return False


def _failure_data(response: httpx2.Response) -> JSONObject | None:
    """The data of the error for a status that brought no answer. A 5xx says the server
    (or a proxy) failed, which the era negotiation must not take for an older server.
    A 401/403 with a Bearer challenge is an authorization failure (the caller gets an
    ``AuthorizationError``): no auth, or a token the server refuses. The status and the
    challenge are kept apart, for a caller that words its own advice (the command line's
    options, not ``auth=``)."""
    if response.status_code >= 500:
        return {"reason": SERVER_FAILED, "httpStatus": response.status_code}
    if response.status_code not in (401, 403) or "www-authenticate" not in response.headers:
        return None
    challenge = response.headers["www-authenticate"]
    return {
        "reason": AUTHORIZATION_FAILED,
        "oauthError": Challenge.parse(challenge).error,
        "httpStatus": response.status_code,
        "challenge": challenge,
    }


def _status_reason(response: httpx2.Response, body: bytes, url: str, reached: bool = False) -> str:
    """Why a response is no JSON-RPC answer, for the error the caller sees (``reached``:
    whether the server at ``url`` answered an earlier request of the connection)."""
    status = f"HTTP {response.status_code} {response.reason_phrase}".rstrip()
    if response.status_code == 404 and reached:
        return (
            f"the server at {url} answered {status}, though it answered earlier requests "
            "there: a gateway or proxy in front of it does not route this request to it "
            "(check its routes, which may go by method or tool name), or the server was "
            "replaced by one that serves MCP at another path"
        )
    if response.status_code == 404:
        path = httpx2.URL(url).path
        hint = (
            "MCP servers usually serve at /mcp"
            if path.rstrip("/") != "/mcp"
            else "check the path the server serves (run(path=...), http_app(path=...))"
        )
        return f"no MCP endpoint at {url} ({status}); {hint}"
    if response.status_code in (401, 403) and "www-authenticate" in response.headers:
        return (
            f"{status}: the server requires authorization (WWW-Authenticate: "
            f"{response.headers['www-authenticate']}); connect with auth= "
            "(answerback.client.OAuth) or a token it accepts"
        )
    if response.is_redirect:
        return (
            f"{status} to {response.headers.get('location')!r}: only 307/308 redirects "
            "within the same origin are followed; connect to the new address directly"
        )
    said = _error_message_in(body)
    if said is not None:
        return f"{status}: {said}"
    kind = response.headers.get("content-type", "").split(";")[0].strip().lower()
    words = _server_words(kind, body)
    repeated = (status.lower(), response.reason_phrase.lower())  # says nothing more
    if words is not None and words.lower() not in repeated and f"HTTP {words}" != status:
        reason = f"{status}: the server said {words!r}"
    elif not body:
        reason = f"{status} with an empty body"
    else:
        reason = f"{status} with a body that is not a JSON-RPC answer ({kind or 'no content type'})"
    if response.status_code in (401, 403):
        reason += (
            ". If it expects a credential of its own (an API key, a token), send it with "
            "every request: StreamableHTTPTransport(url, headers={...})"
        )
    return reason


def _server_words(kind: str, body: bytes) -> str | None:
    """The server's own explanation in a body that is no JSON-RPC answer: the string a
    web framework's error carries (Starlette's and FastAPI's ``detail``, or ``message``,
    ``error_description``, ``error``), or a short plain-text body. Cut short and its
    whitespace folded; quoted with ``repr``, which writes out every control or invisible
    character, so a server cannot flood or restyle the terminal showing it."""
    if not body or len(body) > _WORDS_READ_BYTES:
        return None
    said: object = None
    if kind == "application/json" or kind.endswith("+json"):
        try:
            parsed: object = json.loads(body)
        except ValueError:
            return None
        fields = as_object(parsed) or {}
        for name in _EXPLAINING_FIELDS:
            value = fields.get(name)
            nested = as_object(value)  # {"error": {"message": ...}}
            said = nested.get("message") if nested is not None else value
            if isinstance(said, str) and said.strip():
                break
    elif kind == "text/plain":
        said = body.decode("utf-8", "replace")
    if not isinstance(said, str):
        return None
    text = " ".join(said.split())
    if not text:
        return None
    if len(text) > _WORDS_SHOWN_CHARS:
        text = text[: _WORDS_SHOWN_CHARS - 1] + "…"
    return text


def _what_is_known(response: httpx2.Response) -> str:
    """What a status that brought no JSON-RPC answer says of the request's fate, so the
    caller knows whether sending it again is safe (a proxy's 502 when a replica dies
    told nothing)."""
    status = response.status_code
    if status in (429, 503):
        wait = _retry_after(response)
        when = f"after {wait:.0f} s (Retry-After)" if wait is not None else "after a pause"
        who = "the server is" if status == 429 else "the server, or a proxy in front of it, is"
        why = "too many requests" if status == 429 else "shutting down, overloaded, or down"
        return (
            f": {who} not taking requests now ({why}), so the request was not handled; "
            f"it is safe to send it again {when}"
        )
    if status == 502:
        return (
            ": a proxy in front of the server got no answer from it (the server stopped "
            f"or failed before it began to answer). {_UNKNOWN_SO_SEND_IF_SAFE}"
        )
    if status == 504:
        return (
            ": a proxy in front of the server stopped waiting for its answer; the request "
            f"may still be running there. {_UNKNOWN_SO_SEND_IF_SAFE}"
        )
    if status >= 500:
        return f": the server failed while handling the request. {_UNKNOWN_SO_SEND_IF_SAFE}"
    return ""


def _error_message_in(body: bytes) -> str | None:
    """The message of the JSON-RPC error ``body`` holds, if it holds one (a server
    refusing what we sent explains itself so, with the id null)."""
    said = _error_member(body, "message")
    return said if isinstance(said, str) and said else None


def _error_reason_in(body: bytes) -> object:
    """The ``reason`` in the data of the JSON-RPC error ``body`` holds, if any."""
    data = as_object(_error_member(body, "data"))
    return data.get("reason") if data is not None else None


def _error_member(body: bytes, name: str) -> object:
    envelope = decode(body) if body else None
    message = as_object(envelope.message) if isinstance(envelope, Envelope) else None
    error = _error_object(message) if message is not None else None
    return error.get(name) if error is not None else None


def _marked_failed(error: JSONObject, status: int) -> JSONObject:
    """The server's own error for a request, sent with a 5xx status, marked with that
    status (``httpStatus`` in its data, when its data is an object or absent): whatever
    its JSON-RPC code, the caller can tell the server failed (setting up a connection,
    a 5xx says nothing of the protocol eras the server speaks)."""
    data = error.get("data")
    if data is None:
        return {**error, "data": {"httpStatus": status}}
    fields = as_object(data)
    if fields is None or "httpStatus" in fields:
        return error
    return {**error, "data": {**fields, "httpStatus": status}}


def _error_object(message: JSONObject) -> JSONObject | None:
    """The JSON-RPC error ``message`` carries: an object with an integer ``code`` and a
    string ``message``, as no other error shape has."""
    error = as_object(message.get("error"))
    if error is None:
        return None
    code = error.get("code")
    if not isinstance(code, int) or isinstance(code, bool):
        return None
    return error if isinstance(error.get("message"), str) else None


def _backoff(
    failures: int, retry_after: float | None, cap: float, jitter: Callable[[], float]
) -> float:
    """How long to wait after ``failures`` failed attempts in a row: a random time
    (``jitter()``, in [0, 1)) between 0.1 s and a ceiling that doubles from 0.2 s, so
    clients that failed together spread out instead of retrying in lockstep; at least
    the server's ``Retry-After``, plus up to a second of the same spread; at most
    ``cap``, but never less than 0.1 s, so a failing server is not hammered."""
    spread = jitter()
    ceiling = min(_MIN_RETRY_SECONDS * 2 ** min(failures, 16), cap)
    delay = _MIN_RETRY_SECONDS + spread * max(ceiling - _MIN_RETRY_SECONDS, 0.0)
    if retry_after is not None:  # clients refused together spread out above it too
        delay = max(delay, retry_after + spread * min(retry_after, 1.0))
    return max(min(delay, cap), _MIN_RETRY_SECONDS)


def _retry_after(response: httpx2.Response) -> float | None:
    """The seconds a ``Retry-After`` header asks to wait (a number, or an HTTP date);
    ``None`` if absent or unreadable."""
    value = response.headers.get("retry-after", "").strip()
    if value.isascii() and value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def _origin(url: httpx2.URL) -> tuple[str, str, int | None]:
    default = {"http": 80, "https": 443}.get(url.scheme)
    return url.scheme, url.host, url.port or default


def _redirect_target(response: httpx2.Response, url: httpx2.URL) -> httpx2.URL | None:
    """Where a 307/308 within the origin leads; ``None`` for any other response.

    Only these two keep the method and the body (a POST stays a POST), and only the
    same origin may receive the session id and the caller's headers. Anything else is
    refused, not silently turned into a failed call.
    """
    if response.status_code not in (307, 308):  # before the header: a lookup scans them all
        return None
    location = response.headers.get("location")
    if location is None:
        return None
    try:
        target = url.join(location)
    except httpx2.InvalidURL as exc:
        raise _RedirectRefused(
            f"the server redirected {url} to {location!r}, which is not a valid URL ({exc})"
        ) from None
    if _origin(target) != _origin(url):
        raise _RedirectRefused(
            f"the server redirected {url} to {target}, another origin; answerback does not "
            "send the session and request there. Connect to the new address directly if "
            "you trust it"
        )
    return target
