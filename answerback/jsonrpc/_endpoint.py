"""The JSON-RPC engine shared by client and server.

An ``Endpoint`` owns one connection's message streams. It reads in one task, answers
each incoming request in a task of its own (so both sides can have many requests in
flight at once, in both directions), correlates responses with the requests that wait
for them, and turns every exception a handler raises into an error response in exactly
one place (``error_from_exception``).

On the engine's own channel the reader task is skipped for the common messages: while
it waits with nothing buffered, a well-formed response or new request is dispatched in
the sender's step (``_take``), which costs no loop turn. Everything else (notifications,
transport errors, anything malformed) still goes through the reader, in order. So does
whatever queued up while the reader was busy, which it reads in batches (``_BATCH``): read
one at a time, a backlog on a connection many peers share starts one handler per loop turn.

A peer's requests are answered at most ``REQUESTS_IN_FLIGHT`` at a time, and holding
at most a budget of bytes (``_budget``); the next is refused at once. Without a bound a
peer grows the other side without limit: requests can outlive what carried them (an HTTP
session's calls outlive their POST so the client can resume them, and a question put to
a person waits for them), so sending requests and walking away would hold a task and its
state per request until the connection ends.
"""

from __future__ import annotations

import contextlib
import logging
import math
import secrets
import time
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any, Self, TypeVar, cast

import anyio
import anyio.lowlevel
from anyio.abc import TaskGroup

from answerback.jsonrpc._attention import Attention
from answerback.jsonrpc._backend import Backend, CancelScope, Waiter, current_backend
from answerback.jsonrpc._budget import RequestBytes
from answerback.jsonrpc._channel import ChannelReceiver
from answerback.jsonrpc._envelope import (
    CANCELLED,
    Envelope,
    JSONObject,
    MalformedMessage,
    ReadStream,
    RequestId,
    WriteStream,
)
from answerback.types._errors import (
    BUSY,
    CONNECTION_CLOSED,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    ConnectionClosedError,
    ErrorData,
    MCPError,
    RequestTimeoutError,
    local_failure,
)

logger = logging.getLogger("answerback.jsonrpc")

RequestHandler = Callable[["IncomingRequest"], Awaitable[JSONObject]]
NotificationHandler = Callable[[str, JSONObject | None, Envelope], Awaitable[None]]
ProgressCallback = Callable[[float, float | None, str | None], Awaitable[None]]
ErrorHandler = Callable[[Exception], Awaitable[None]]
T = TypeVar("T")

PROGRESS = "notifications/progress"
REQUESTS_IN_FLIGHT = 4096
"""A peer's requests one connection answers at once: far above any real concurrency (a
benchmark starts a thousand eliciting calls at once), yet a bound on what one peer holds."""
_BATCH = 64
"""Buffered messages the reader takes per checkpoint: enough to start a backlog's
handlers in one loop turn, few enough that a flooded reader still lets others run."""


class ResultNotObjectError(MCPError):
    """The peer answered a request with a result that is not an object: its bug (the
    client raises it as ``InvalidServerResultError``, naming the server)."""


class SkippedAnswer(MalformedMessage):
    """A message over the transport's limit, skipped, whose start names no id yet may be
    an answer of the peer's (it names no ``method`` and has no ``params``). Its request
    would wait for ever: the engine fails it once it is known which (``failure`` says
    why, to its caller; see ``Endpoint._settle_suspects``)."""

    def __init__(self, reason: str, *, failure: str) -> None:
        super().__init__(reason)
        self.failure = failure


class _Skipped:
    """Answers skipped (``SkippedAnswer``) and the requests they may have been: those
    waiting when each came, not answered since; and our requests given up unanswered
    (cancelled, timed out), whose late answer a skipped one may be."""

    __slots__ = ("count", "failure", "given_up", "suspects", "timer")

    def __init__(self) -> None:
        self.suspects: set[RequestId] = set()
        self.count = 0
        self.failure = ""
        self.given_up: dict[RequestId, float] = {}
        """When each was given up (``_now``): newest last, ``_GIVEN_UP_KEPT`` at most; one
        whose late answer comes leaves."""
        self.timer = False
        """Whether ``Endpoint._settle_later`` waits for the newest to pass its grace."""


_GIVEN_UP_KEPT = 256
GIVEN_UP_GRACE = 10.0
"""Seconds after we give up a request during which an answer skipped may be its late one.
A peer told of the cancel does not answer (MCP asks it not to), so a late answer is one
already on its way as we gave up; an older given-up request must not keep a skipped answer
from failing the call it belongs to (which, with no timeout, would wait for ever)."""
_now = time.monotonic
"""The clock of ``GIVEN_UP_GRACE`` (tests replace it, and ``_sleep``)."""
_sleep = anyio.sleep


class _LocalFailure:
    __slots__ = ()

    def __repr__(self) -> str:
        return "LOCAL_FAILURE"


LOCAL_FAILURE: Any = _LocalFailure()
"""The ``transport_context`` of an error answer a transport made up for our own request,
which it could not deliver or whose answer it could not get (HTTP failed, the session
expired, authorization failed): its -32000 raises ``ConnectionClosedError`` (or
``AuthorizationError``), not the plain ``MCPError`` of a -32000 the peer sent."""

WHY = "why"
"""The member of a connection error's ``data`` that holds the reason alone, without what
the message adds for a program that goes on (to open a new connection, that it stays
open): the CLI, which exits, shows it."""


def error_from_exception(
    exc: BaseException, *, redact: bool = False, answering: str | None = None
) -> ErrorData:
    """The error response for an exception raised while answering a request.

    ``MCPError`` is sent as raised; anything else is an internal error whose message
    names the exception, so the peer is not left guessing and no traceback leaks. That
    includes a pydantic ``ValidationError``: params are parsed where the request is
    handled, which turns their errors into -32602 (``invalid_params``), so one that gets
    here came from the answering side's own code, not from the peer. With ``redact``
    the exception's text (which may hold secrets) stays here: the peer gets a short
    reference, logged with the traceback. An exception group holding a single
    exception (a task group inside a handler) is judged by that exception.
    ``answering`` names the request in the log line (method, id, peer), so a host with
    several connections can tell whose request failed.
    """
    exc = _sole_exception(exc)
    if isinstance(exc, MCPError):
        return exc.error
    failed = "request handler" if answering is None else f"request handler for {answering}"
    if redact:
        reference = new_error_reference()
        logger.error("%s failed (reference %s)", failed, reference, exc_info=exc)
        return ErrorData(code=INTERNAL_ERROR, message=redacted_message("Internal error", reference))
    logger.exception("%s failed", failed, exc_info=exc)
    return ErrorData(code=INTERNAL_ERROR, message=f"Internal error: {type(exc).__name__}: {exc}")


def new_error_reference() -> str:
    """A short id that ties a redacted error to the server's log line about it."""
    return secrets.token_hex(4)


def redacted_message(what: str, reference: str, *, logged_by: str = "server") -> str:
    """What a peer reads instead of a redacted exception's text; ``logged_by`` names the
    side whose log holds it."""
    return f"{what}; the {logged_by} logged the details under reference {reference}."


class IncomingRequest:
    """A request the peer sent us, as seen by the handler answering it."""

    __slots__ = ("_endpoint", "envelope", "id", "method", "params")

    def __init__(
        self,
        endpoint: Endpoint,
        request_id: RequestId,
        method: str,
        params: JSONObject | None,
        envelope: Envelope,
    ) -> None:
        self._endpoint = endpoint
        self.id = request_id
        self.method = method
        self.params = params
        self.envelope = envelope

    @property
    def meta(self) -> JSONObject | None:
        """The request's ``_meta`` object, if it sent one."""
        if self.params is None:
            return None
        return as_object(self.params.get("_meta"))

    @property
    def progress_token(self) -> str | int | None:
        """The ``_meta.progressToken`` the requester sent; ``None`` when it wants no
        progress (or sent a token that is neither a string nor an integer)."""
        meta = self.meta
        return as_request_id(meta.get("progressToken")) if meta else None

    async def send_progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        """Report progress, if the requester asked for it (otherwise do nothing)."""
        token = self.progress_token
        if token is None:
            return
        params: JSONObject = {"progressToken": token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        await self.notify(PROGRESS, params)

    async def request(
        self, method: str, params: JSONObject | None = None, *, timeout: float | None = None
    ) -> JSONObject:
        """Send a request to the peer as part of answering this one."""
        return await self._endpoint.request(
            method, params, timeout=timeout, related_request_id=self.id
        )

    async def notify(self, method: str, params: JSONObject | None = None) -> None:
        """Send a notification to the peer as part of answering this one."""
        await self._endpoint.notify(method, params, related_request_id=self.id)

    async def until_input_ends(self) -> None:
        """Wait until the peer's input has ended with this request still being answered.

        For a request that never ends by itself (a subscription): where the endpoint
        answers what it read after the input ends (a pipe the peer closed its end of),
        such a request would keep the connection open for ever; waiting here, it ends,
        and the connection with it. Where the end of input cancels the handlers (the
        peer is gone), this waits until then.
        """
        await self._endpoint.input_ended.wait()


class _Pending:
    """A request of ours waiting for its answer.

    A backend-native waiter rather than an ``anyio.Event``: this is the hottest object in
    the library (one per request) and the event's backend lookups cost more than the rest.
    """

    __slots__ = (
        "answered",
        "callbacks_at",
        "last_activity",
        "local",
        "method",
        "on_progress",
        "progress_failures",
        "response",
    )

    def __init__(self, method: str, on_progress: ProgressCallback | None, answered: Waiter) -> None:
        self.method = method
        self.on_progress = on_progress
        self.answered = answered
        self.response: JSONObject | None = None
        self.local = False
        """This side made the answer up: the connection ended or the transport failed
        (see ``LOCAL_FAILURE``); else the peer sent it."""
        self.last_activity = time.monotonic()
        self.callbacks_at = 0.0
        """Our callbacks' time in all at ``last_activity`` (see ``_CallbackTime``); set
        only for a request with a timeout."""
        self.progress_failures = 0
        """How often ``on_progress`` failed (see ``Endpoint._progress_failed``)."""

    def resolve(self, response: JSONObject, *, local: bool = False) -> None:
        if self.response is None:
            self.response = response
            self.local = local
            if not self.answered.done():
                self.answered.set_result(None)


class _CallbackTime:
    """The time our notification callbacks took, which request timers do not count:
    the reader reads nothing while one runs, so an answer may wait unread behind it.

    A timer restarts at the latest activity (a request's progress, a handler's end, the
    person let go); only callback time after that instant is added to it. So the total
    is kept with its value at each such instant: callback time since is the difference.
    """

    __slots__ = (
        "attention",
        "handler_done",
        "handler_done_total",
        "released_at",
        "released_total",
        "started",
        "total",
    )

    def __init__(self, attention: Attention | None) -> None:
        self.attention = attention
        self.started: float | None = None
        """When the callback running in the reader started (one runs at a time)."""
        self.total = 0.0
        """The finished callbacks' time in all."""
        self.handler_done = 0.0
        """When a handler of the peer's requests last finished."""
        self.handler_done_total = 0.0
        self.released_at = -math.inf
        """``attention.released_at`` as last seen, and the total then."""
        self.released_total = 0.0

    def at(self, now: float) -> float:
        """The callback time in all up to ``now``, the running callback's included."""
        started = self.started
        return self.total if started is None else self.total + now - started

    def note_release(self) -> None:
        """Take the total at the person's latest release. Called at every callback's
        start and end and by timers: a release seen new happened since the last call,
        meanwhile no callback started or ended, so ``at`` tells the total then."""
        attention = self.attention
        if attention is not None and attention.released_at != self.released_at:
            self.released_at = attention.released_at
            self.released_total = self.at(self.released_at)

    def begin(self) -> float:
        self.note_release()
        started = self.started = time.monotonic()
        return started

    def end(self, started: float) -> None:
        self.note_release()
        self.started = None
        self.total += time.monotonic() - started


class Endpoint:
    """One side of a JSON-RPC connection over a pair of envelope streams.

    Use as an async context manager: entering starts the reader; leaving stops it,
    cancels the handlers still running (through their cancel scopes, so what a handler
    shields still finishes), waits for them, and fails every request still waiting for
    an answer with ``ConnectionClosedError``. Runs on asyncio and trio alike.

    When the peer ends its side (the read stream ends), ``closed`` is set. By default the
    peer is gone, so the handlers still running are cancelled first: nobody would read
    their answers. Over a pipe the peer may close only its end and still read ours
    (``server < requests.jsonl``); with ``answer_after_input_ends`` the requests already
    read are answered before ``closed`` is set. Either way our own requests fail at once,
    since the peer can no longer answer them.
    """

    def __init__(
        self,
        read_stream: ReadStream,
        write_stream: WriteStream,
        *,
        on_request: RequestHandler,
        on_notification: NotificationHandler,
        on_transport_error: ErrorHandler | None = None,
        name: str | Callable[[], str] = "peer",
        attention: Attention | None = None,
        redact_errors: Callable[[IncomingRequest], bool] | None = None,
        max_in_flight: int | None = REQUESTS_IN_FLIGHT,
        request_bytes: RequestBytes | None = None,
        answer_after_input_ends: bool = False,
    ) -> None:
        """``name`` is what errors and log lines call the peer, after "the" ("server
        'Library' 1.0"); a function gives it when needed, as the peer may introduce
        itself only once connected.
        ``redact_errors(request)`` says whether an internal error answering
        ``request`` keeps its exception text here (see ``error_from_exception``).
        ``max_in_flight`` bounds the peer's requests answered at once (``None``: no
        bound, for a connection whose requests each hold a connection of their own).
        ``request_bytes`` is the budget their sizes are held from (``None``: one of
        this connection's own, of ``REQUEST_BYTES_IN_FLIGHT``).
        ``answer_after_input_ends``: see the class docstring."""
        self._read_stream = read_stream
        self._write_stream = write_stream
        self._on_request = on_request
        self._on_notification = on_notification
        self._on_transport_error = on_transport_error
        self._named = name if callable(name) else lambda: name
        self._redact_errors = redact_errors
        self._max_in_flight = max_in_flight
        self._request_bytes = request_bytes or RequestBytes()
        self._warned_full = False
        self._stray_answers = 0
        """Answers to no request of ours (see ``_stray_answer``)."""
        self._stray_answers_logged_at = 1
        self._notification_failures: dict[str | None, int] = {}
        """How often the notification handler failed, by method, past
        ``_METHODS_COUNTED_APART`` all under ``None`` (see ``_notification_failed``)."""
        self._skipped: _Skipped | None = None
        """Answers skipped whose requests are not yet known. One attribute, not three:
        past 30 attributes CPython 3.11 stops sharing the keys of instances' dicts, and
        every lookup on an endpoint costs more (+0.8 % instructions per stdio echo)."""
        # Ids start at 1: some peers treat an id of 0 as missing.
        self._next_id = 1
        self._pending: dict[RequestId, _Pending] = {}
        self._in_flight: dict[RequestId, CancelScope] = {}
        self._bound: set[CancelScope] = set()
        """The scopes of ``until_closed``: work for the peer done outside a handler."""
        self._answer_after_input_ends = answer_after_input_ends
        self._all_answered: Waiter | None = None
        """Set while the reader, at the end of input, waits for the last answer."""
        self._handlers_running = 0
        self._callbacks = _CallbackTime(attention)
        """Time notification callbacks took: the reader read nothing meanwhile, so
        timeouts do not count it (see ``_wait``)."""
        self._attention = attention
        """A person shared with other connections: our timers stand still while held."""
        self._closed_reason: str | None = None
        self._task_group: TaskGroup | None = None
        self._backend: Backend
        self.closed = anyio.Event()
        self.input_ended = anyio.Event()
        """Set when the peer's input ends (see ``IncomingRequest.until_input_ends``)."""

    @property
    def requests_waiting(self) -> int:
        """Our requests sent and not yet answered."""
        return len(self._pending)

    @property
    def _name(self) -> str:
        """The peer as errors and log lines name it (see ``name``)."""
        return self._named()

    async def __aenter__(self) -> Self:
        # The backend is looked up once here, not per request (see ``_backend``). Its
        # task owner is entered first so that it is left last, after the reader.
        self._backend = current_backend()
        await self._backend.open()
        self._task_group = anyio.create_task_group()
        await self._task_group.__aenter__()
        self._task_group.start_soon(self._read_loop)
        if isinstance(self._read_stream, ChannelReceiver):
            self._read_stream.hand_over(self._take)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        assert self._task_group is not None
        self._task_group.cancel_scope.cancel()
        if isinstance(self._read_stream, ChannelReceiver):
            self._read_stream.hand_over(None)
        # Handlers first, before the reader can see the end of the stream and fail their
        # own requests to the peer: a handler learns it was cancelled, not disconnected.
        self._cancel_handlers()
        try:
            try:
                return await self._task_group.__aexit__(exc_type, exc, tb)
            finally:
                self._cancel_handlers()  # any the reader started before it stopped
                await self._backend.join()
        finally:
            self._fail_pending("the connection was closed")
            self._write_stream.close()
            self._read_stream.close()

    def _cancel_handlers(self) -> None:
        for scope in (*self._in_flight.values(), *self._bound):
            scope.cancel()

    @property
    def in_flight_count(self) -> int:
        """Requests from the peer still being answered (for leak checks and tests)."""
        return len(self._in_flight)

    @property
    def pending_count(self) -> int:
        """Our requests still waiting for an answer."""
        return len(self._pending)

    @property
    def closing(self) -> bool:
        """Whether the connection is ending or over, from either side (``closed`` says
        the peer ended it): work for the peer cancelled now was cancelled by the close."""
        leaving = self._task_group is not None and self._task_group.cancel_scope.cancel_called
        return leaving or self._closed_reason is not None

    async def until_closed(self, work: Callable[[], Awaitable[T]], what: str) -> T:
        """``await work()``, cancelled if the connection ends first, like a handler.

        For work done for the peer outside a handler: a 2026-07-28 client answers the
        server's questions inside its own call's retry loop, and once the connection is
        gone nobody can receive the answer, so the person must not be kept asking.
        Raises ``ConnectionClosedError`` saying it stopped ``what`` (a gerund phrase).
        """
        if self._closed_reason is None:
            scope = self._backend.new_cancel_scope()
            self._bound.add(scope)
            try:
                with scope:
                    return await work()
            finally:
                self._bound.discard(scope)
        why = f"Stopped {what}: {self._closed_reason or 'the connection was closed'}."
        raise ConnectionClosedError(f"{why} Open a new connection.", {WHY: why})

    # -- sending ---------------------------------------------------------------------

    def reserve_id(self) -> int:
        """A fresh request id, for a caller that must know it before sending (``listen``
        notifications name the request that opened their stream)."""
        request_id = self._next_id
        self._next_id += 1
        return request_id

    async def request(
        self,
        method: str,
        params: JSONObject | None = None,
        *,
        timeout: float | None = None,
        on_progress: ProgressCallback | None = None,
        related_request_id: RequestId | None = None,
        cancellable: bool = True,
        transport_context: Any = None,
        request_id: RequestId | None = None,
    ) -> JSONObject:
        """Send a request and wait for its result; an error response raises ``MCPError``.

        ``timeout`` is an inactivity limit: progress on this request, or a request from
        the peer that we are still answering (a person filling in a form), keeps it alive,
        as does the endpoint's ``attention`` while held (the person busy with another peer).
        The time our notification callbacks take does not count: the answer may be
        waiting unread behind them. When it expires, or the caller is cancelled, the
        peer is told with ``notifications/cancelled`` (unless ``cancellable`` is false,
        as for ``initialize``).
        """
        if self._closed_reason is not None:
            why = f"Cannot send {method!r}: {self._closed_reason}."
            raise ConnectionClosedError(f"{why} Open a new connection.", {WHY: why})
        if request_id is None:
            request_id = self.reserve_id()
        pending = _Pending(method, on_progress, self._backend.new_waiter())
        if timeout is not None:
            callbacks = self._callbacks
            if callbacks.started is None:
                pending.callbacks_at = callbacks.total
            else:  # sent from a callback
                pending.callbacks_at = callbacks.at(pending.last_activity)
        if on_progress is not None:
            params = dict(params or {})
            params["_meta"] = {**params.get("_meta", {}), "progressToken": request_id}
        message: JSONObject = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        self._pending[request_id] = pending
        try:
            await self._send(Envelope(message, related_request_id, transport_context))
            if timeout is None:
                await pending.answered
            else:
                await self._wait(pending, timeout)
        except BaseException as exc:
            if pending.response is None:
                self._given_up(request_id)
            if pending.response is None and cancellable and self._closed_reason is None:
                reason = self._why_given_up(exc, related_request_id)
                with anyio.CancelScope(shield=True):
                    await self._notify_cancelled(request_id, reason, related_request_id)
            raise
        finally:
            del self._pending[request_id]
            if pending.progress_failures:
                self._progress_failures_in_all(pending)
        response = pending.response
        assert response is not None
        if "error" in response:
            error = _parse_error(response["error"])
            if pending.local and error.code == CONNECTION_CLOSED:
                raise local_failure(error)
            raise MCPError.from_error_data(error)
        result = as_object(response.get("result"))
        if result is None:
            raise ResultNotObjectError(
                INTERNAL_ERROR,
                f"The {self._name} answered {method!r} with a result that is not an object; "
                "it breaks JSON-RPC. Report it to its authors.",
                {"method": method},
            )
        return result

    def _why_given_up(self, exc: BaseException, related_request_id: RequestId | None) -> str:
        """The ``reason`` of the ``notifications/cancelled`` for a request given up: when
        the peer cancelled the request of its own that this one was sent for, who did it
        and that nothing needs answering, so the peer does not wonder what it did."""
        if isinstance(exc, RequestTimeoutError):
            return "timed out"
        answering = None if related_request_id is None else self._in_flight.get(related_request_id)
        if answering is not None and answering.cancel_called and not self.closing:
            return (
                f"the {self._name} cancelled its request {related_request_id!r}, which this "
                "one was sent for; nothing needs answering"
            )
        return "cancelled"

    async def _wait(self, pending: _Pending, timeout: float) -> None:
        # Time our notification callbacks take is ours, not the peer's: while one runs
        # the reader reads nothing, so an answer already sent would time out unread. Only
        # their time since the latest activity counts out: the timer restarted there.
        callbacks = self._callbacks
        attention = self._attention
        while True:
            if pending.last_activity >= callbacks.handler_done:
                idle_since, callbacks_then = pending.last_activity, pending.callbacks_at
            else:
                idle_since, callbacks_then = callbacks.handler_done, callbacks.handler_done_total
            if attention is not None:
                callbacks.note_release()
                if attention.released_at > idle_since:
                    idle_since, callbacks_then = attention.released_at, callbacks.released_total
            # A callback running now holds the timer (below): only finished ones count.
            ours = callbacks.total - callbacks_then
            remaining = timeout - (time.monotonic() - idle_since) + ours
            if (
                self._handlers_running
                or callbacks.started is not None
                or (attention is not None and attention.held)
            ):
                remaining = max(remaining, timeout)
            if remaining <= 0:
                raise RequestTimeoutError(
                    f"No answer to {pending.method!r} from the {self._name} within "
                    f"{timeout:g} s; the request was cancelled. Raise the timeout if the "
                    "operation is expected to take longer."
                )
            with anyio.move_on_after(remaining):
                # A timed-out wait must leave the waiter usable for the next.
                await self._backend.wait_keeping(pending.answered)
                return

    async def notify(
        self,
        method: str,
        params: JSONObject | None = None,
        *,
        related_request_id: RequestId | None = None,
    ) -> None:
        """Send a notification (no answer expected).

        A checkpoint, unlike the hand-over itself: a handler that loops sending progress
        or log messages still lets the loop run and can still be cancelled.
        """
        await anyio.lowlevel.checkpoint()
        message: JSONObject = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self._send(Envelope(message, related_request_id))

    async def _notify_cancelled(
        self, request_id: RequestId, reason: str, related_request_id: RequestId | None
    ) -> None:
        with contextlib.suppress(
            anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionClosedError
        ):
            await self.notify(
                CANCELLED,
                {"requestId": request_id, "reason": reason},
                related_request_id=related_request_id,
            )

    async def _send(self, envelope: Envelope) -> None:
        # Straight into the buffer when there is room (every transport's outgoing buffer
        # is unbounded): ``send`` would first yield to the loop, a whole extra loop turn
        # per message for nothing, since the caller awaits its answer or ends next.
        try:
            try:
                self._write_stream.send_nowait(envelope)
            except anyio.WouldBlock:
                await self._write_stream.send(envelope)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            # A caller whose scope was cancelled as the connection closed was cancelled:
            # an error here instead would turn a timeout into a failure (``fail_after``
            # would not raise ``TimeoutError``).
            await anyio.lowlevel.checkpoint_if_cancelled()
            reason = self._closed_reason or "the connection is closed"
            raise ConnectionClosedError(f"Cannot send to the {self._name}: {reason}.") from None

    # -- receiving -------------------------------------------------------------------

    async def _read_loop(self) -> None:
        assert self._task_group is not None
        stream = self._read_stream
        try:
            async for item in stream:
                await self._handle(item)
                # The rest of a backlog without a checkpoint each (see the docstring).
                for _ in range(_BATCH - 1):
                    try:
                        item = stream.receive_nowait()
                    except (anyio.WouldBlock, anyio.EndOfStream):
                        break
                    await self._handle(item)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        if self._answer_after_input_ends:
            # The peer still reads: a handler waiting on it learns it will get no
            # answer, and every handler's answer goes out before the connection ends
            # (one that would never end by itself ends now: ``until_input_ends``).
            self._fail_pending(f"the {self._name} closed its end of the connection")
            self.input_ended.set()
            if self._in_flight:
                self._all_answered = self._backend.new_waiter()
                await self._all_answered
        else:
            # The peer is gone: nobody will read what the handlers answer. Cancelling
            # them before failing our requests means a handler waiting on the peer is
            # cancelled, on every backend, rather than first woken with a connection error.
            self._cancel_handlers()
            self._fail_pending(f"the {self._name} closed the connection")
            self.input_ended.set()
        self.closed.set()

    async def _handle(self, item: Envelope | Exception) -> None:
        if isinstance(item, Exception):
            await self._transport_error(item)
        else:
            await self._dispatch(item)

    async def _transport_error(self, exc: Exception) -> None:
        if isinstance(exc, SkippedAnswer):
            # An answer, not a request: nothing is sent back. A parse error with no id
            # would tell the peer we cannot read it, and it would fail all it awaits.
            skipped = self._skipped = self._skipped or _Skipped()
            skipped.suspects.update(
                request_id
                for request_id, pending in self._pending.items()
                if pending.response is None
            )
            skipped.count += 1
            skipped.failure = exc.failure
            self._settle_suspects(skipped)
        elif isinstance(exc, MalformedMessage):
            # An id still being answered keeps its one answer: the error goes to null.
            named = exc.request_id if exc.request_id not in self._in_flight else None
            await self._send_error(named, PARSE_ERROR, f"Parse error: {exc}")
        if isinstance(exc, ConnectionClosedError):
            self._fail_pending(exc.message)
        if self._on_transport_error is not None:
            await self._on_transport_error(exc)
        else:
            logger.warning("transport error from the %s: %s", self._name, exc)

    async def _dispatch(self, envelope: Envelope) -> None:
        message = as_object(envelope.message)
        if message is None:
            what = (
                "Batch requests are not supported"
                if isinstance(envelope.message, list)
                else ("A JSON-RPC message must be an object")
            )
            await self._send_error(None, INVALID_REQUEST, f"Invalid request: {what}.")
            return
        request_id = as_request_id(message.get("id"))
        id_ok = request_id is not None
        method: object = message.get("method")
        if message.get("jsonrpc") != "2.0":
            await self._invalid(request_id, 'the "jsonrpc" member must be exactly "2.0"')
            return
        if method is None:
            if "result" in message or "error" in message:
                self._resolve(message, local=envelope.transport_context is LOCAL_FAILURE)
            else:
                await self._invalid(request_id, "no method, result or error")
            return
        if not isinstance(method, str):
            await self._invalid(request_id, '"method" must be a string')
            return
        raw_params: object = message.get("params")
        params = as_object(raw_params)
        if raw_params is not None and params is None:
            if "id" in message:
                await self._send_error(
                    request_id,
                    INVALID_PARAMS,
                    f"Invalid params for {method!r}: params must be an object.",
                )
            return
        if "id" not in message:
            await self._notification(method, params, envelope)
        elif not id_ok:
            await self._invalid(None, '"id" must be a string or an integer')
        elif request_id in self._in_flight:
            await self._invalid(request_id, f"id {request_id!r} is already in use by a request")
        elif self._full():
            await self._refuse_as_full(request_id, method)
        elif not self._request_bytes.admits(envelope.size, envelope.holder):
            await self._refuse_as_heavy(request_id, method, envelope)
        else:
            assert isinstance(request_id, str | int)
            self._start_handler(IncomingRequest(self, request_id, method, params, envelope))

    def _take(self, envelope: Envelope | Exception) -> bool:
        """Dispatch ``envelope`` at once if it is a well-formed response, or a request with
        a new id, while the connection is open; whether it did (else the reader gets it).
        Runs in the sender's step (see ``ChannelReceiver.hand_over``)."""
        if not isinstance(envelope, Envelope) or self._closed_reason is not None:
            return False
        message = as_object(envelope.message)
        if message is None or message.get("jsonrpc") != "2.0":
            return False
        request_id = as_request_id(message.get("id"))
        if request_id is None:
            return False
        method: object = message.get("method")
        if method is None:
            if "result" not in message and "error" not in message:
                return False
            self._resolve(message, local=envelope.transport_context is LOCAL_FAILURE)
            return True
        raw_params: object = message.get("params")
        params = as_object(raw_params)
        if not isinstance(method, str) or request_id in self._in_flight or self._full():
            return False
        if not self._request_bytes.admits(envelope.size, envelope.holder):
            return False
        if raw_params is not None and params is None:
            return False
        self._start_handler(IncomingRequest(self, request_id, method, params, envelope))
        return True

    def _start_handler(self, request: IncomingRequest) -> None:
        # The peer cancels through a cancel scope (not Task.cancel), so a handler's
        # shielded sections stay shielded.
        scope = self._backend.new_cancel_scope()
        self._in_flight[request.id] = scope
        self._request_bytes.take(request.envelope.size, request.envelope.holder)
        self._backend.spawn(self._answer, request, scope)

    def _full(self) -> bool:
        return self._max_in_flight is not None and len(self._in_flight) >= self._max_in_flight

    async def _refuse_as_full(self, request_id: RequestId | None, method: str) -> None:
        if not self._warned_full:
            self._warned_full = True
            logger.warning(
                "refusing requests from the %s: %d are being answered already, the most "
                "answered at once (first refused: %r)",
                self._name,
                self._max_in_flight,
                method,
            )
        await self._send_error(
            request_id,
            BUSY,
            f"Busy: {self._max_in_flight} of your requests are being answered on this "
            "connection already, the most it answers at once. Wait for their answers (or "
            "cancel those you no longer need), then send this again.",
        )

    async def _refuse_as_heavy(
        self, request_id: RequestId | None, method: str, envelope: Envelope
    ) -> None:
        budget, size, holder = self._request_bytes, envelope.size, envelope.holder
        share = budget.share
        if holder is not None and share is not None and not budget.holder_admits(size, holder):
            held, limit, yours = budget.held_by(holder), share, "your requests"
            whose, what = f"{holder}'s requests", "one caller's requests may hold"
        else:
            held, limit, yours = budget.held, budget.limit, "the requests"
            whose, what = "the requests", "of requests answered at once"
        if not self._warned_full:
            self._warned_full = True
            logger.warning(
                "refusing requests from the %s: %s being answered hold %d bytes, and with the "
                "first refused (%r, of %d bytes) they would pass the %d bytes %s",
                self._name,
                whose,
                held,
                method,
                size,
                limit,
                what,
            )
        await self._send_error(
            request_id,
            BUSY,
            f"Busy: {yours} being answered hold {held} bytes already, and this one holds "
            f"{size}, past the {limit} bytes {what}. Wait for their answers (or cancel "
            "those you no longer need), then send this again.",
        )

    def _stray_answer(self, request_id: RequestId | None) -> None:
        """Log an answer to no request of ours: the first in full, then a count at
        10, 100, 1000...: a peer sending them without end must not fill the log."""
        self._stray_answers += 1
        count = self._stray_answers
        if count == 1:
            logger.warning(
                "dropped a response to unknown request id %r from the %s (more such "
                "responses are counted, not each logged)",
                request_id,
                self._name,
            )
        elif count == self._stray_answers_logged_at * 10:
            self._stray_answers_logged_at = count
            logger.warning(
                "dropped %d responses to unknown request ids from the %s so far (the "
                "latest: %r); it answers requests this side never sent",
                count,
                self._name,
                request_id,
            )

    async def _invalid(self, request_id: RequestId | None, why: str) -> None:
        await self._send_error(request_id, INVALID_REQUEST, f"Invalid request: {why}.")

    def _resolve(self, message: JSONObject, *, local: bool) -> None:
        request_id = as_request_id(message.get("id"))
        pending = self._pending.get(request_id) if request_id is not None else None
        if pending is None:
            error = as_object(message.get("error"))
            if message.get("id") is not None or error is None:
                skipped = self._skipped
                if skipped is not None and request_id in skipped.given_up:
                    # The late answer to a request we gave up (a race the peer may lose):
                    # not a stray one, and not one of those skipped.
                    del skipped.given_up[request_id]
                    self._settle_suspects(skipped)
                else:
                    self._stray_answer(request_id)
            elif error.get("code") not in _UNREADABLE:
                # Not JSON-RPC's answer to an unreadable message: a peer answering a
                # notification it does not know, say, which must not fail our calls.
                logger.warning(
                    "the %s sent an error with no id that answers nothing of ours: %s",
                    self._name,
                    error.get("message"),
                )
            elif self._pending:
                self._fail_unread(_parse_error(error))
            else:
                logger.warning(
                    "the %s could not read a message of ours and did not say which (%s); "
                    "no request of ours was waiting for an answer",
                    self._name,
                    error.get("message"),
                )
            return
        pending.resolve(message, local=local)
        skipped = self._skipped
        if skipped is not None and skipped.count:  # an answer was skipped: whose?
            skipped.suspects.discard(request_id)
            self._settle_suspects(skipped)

    def _given_up(self, request_id: RequestId) -> None:
        """Our request ``request_id`` ends unanswered: an answer skipped later may be its
        late one, so none can be laid on another request for sure (``_settle_suspects``)."""
        skipped = self._skipped = self._skipped or _Skipped()
        skipped.given_up[request_id] = _now()
        if len(skipped.given_up) > _GIVEN_UP_KEPT:
            del skipped.given_up[next(iter(skipped.given_up))]

    def _settle_suspects(self, skipped: _Skipped) -> None:
        """Fail the suspects left once no more of them remain than answers were skipped
        (with one request waiting, at once): those answers must have been theirs. A
        request given up since (cancelled, timed out) is no suspect: its answer may
        never come. While a request given up unanswered may still be answered late
        (``GIVEN_UP_GRACE``), a skipped answer may be that one, so none is failed yet: a
        wrong call failed would drop its own answer when it came. Once the grace has
        passed they are settled, by a timer if no other answer comes first."""
        if not skipped.count:
            return
        if skipped.given_up:
            # Newest last: once it is past its grace, all are.
            left = next(reversed(skipped.given_up.values())) + GIVEN_UP_GRACE - _now()
            if left > 0:
                if not skipped.timer:
                    skipped.timer = True
                    assert self._task_group is not None
                    self._task_group.start_soon(self._settle_later, skipped, left)
                return
        suspects = {
            request_id
            for request_id in skipped.suspects
            if (pending := self._pending.get(request_id)) is not None and pending.response is None
        }
        if len(suspects) > skipped.count:
            skipped.suspects = suspects
            return
        failure: JSONObject = {"code": INTERNAL_ERROR, "message": skipped.failure}
        for request_id in suspects:
            self._pending[request_id].resolve({"error": failure})
        if skipped.given_up:  # still told from stray answers if they come late
            skipped.count = 0
            skipped.suspects = set()
        else:
            self._skipped = None

    async def _settle_later(self, skipped: _Skipped, seconds: float) -> None:
        """Settle the suspects of answers skipped once requests given up have passed
        their grace, if no answer has settled them first."""
        await _sleep(seconds)
        skipped.timer = False
        if self._skipped is skipped:
            self._settle_suspects(skipped)

    def _fail_unread(self, error: ErrorData) -> None:
        """The peer answered a message of ours it could not read (a parse error, an
        invalid request) with a null id: JSON-RPC's answer when it cannot tell the id.

        Had the message been one of our requests, that request would never be answered,
        and with no timeout its caller would wait for ever. So every request still
        waiting fails now with the peer's error (its code, its message, its data), the
        message saying why: the only one waiting is taken to be it; of several, any
        may be it and nothing says which, so all fail rather than leave one hanging.
        The others may have been read and carried out: their callers are told to send
        again those still needed, and answers that come later are dropped as unknown.
        (Over HTTP each POST carries one request, and its transport gives such an error
        that request's id, so it does not come here.)
        """
        waiting = list(self._pending.values())
        if len(waiting) == 1:
            why = (
                f"the {self._name} answered a message of ours it could not read, without "
                f"saying which; {waiting[0].method!r} was the only request waiting for an "
                "answer, so it is taken to be it"
            )
        else:
            why = (
                f"the {self._name} could not read one of the {len(waiting)} requests waiting "
                "for an answer (or another message of ours) and did not say which, so they "
                "all fail; some may have been read and carried out: send again those still "
                "needed"
            )
        logger.warning("%s: %s", why, error.message)
        message = f"{error.message.rstrip('.')} ({why})."
        failure: JSONObject = {"code": error.code, "message": message}
        if error.data is not None:
            failure["data"] = error.data
        for pending in waiting:
            pending.resolve({"error": failure})

    async def _notification(self, method: str, params: JSONObject | None, env: Envelope) -> None:
        if method == CANCELLED:
            target = as_request_id(params.get("requestId")) if params else None
            scope = self._in_flight.get(target) if target is not None else None
            if scope is not None:
                scope.cancel()
            return
        if method == PROGRESS and params is not None:
            token = as_request_id(params.get("progressToken"))
            pending = self._pending.get(token) if token is not None else None
            if pending is not None:
                pending.last_activity = time.monotonic()
                pending.callbacks_at = self._callbacks.total  # none runs: this is the reader
                if pending.on_progress is not None:
                    progress, total = params.get("progress"), params.get("total")
                    message = params.get("message")
                    if isinstance(progress, int | float):
                        started = self._callbacks.begin()
                        try:
                            await pending.on_progress(
                                float(progress),
                                float(total) if isinstance(total, int | float) else None,
                                message if isinstance(message, str) else None,
                            )
                        except BaseException as exc:
                            self._reraise_unless_failure(exc)
                            self._progress_failed(pending, exc)
                        finally:
                            self._callbacks.end(started)
                return
        started = self._callbacks.begin()
        try:
            await self._on_notification(method, params, env)
        except BaseException as exc:
            self._reraise_unless_failure(exc)
            self._notification_failed(method, exc)
        finally:
            self._callbacks.end(started)

    def _notification_failed(self, method: str, exc: BaseException) -> None:
        """Log the handler's failure on a ``method`` notification, naming the peer (a
        host has several): the first with its traceback, then a count at 10, 100,
        1000... A handler that fails on every log message must not fill the log with
        tracebacks at the peer's pace. Called inside the ``except`` that caught ``exc``."""
        failures = self._notification_failures
        counted: str | None = method
        if method not in failures and len(failures) >= _METHODS_COUNTED_APART:
            counted = None  # a peer naming a new method each time must not grow this
        count = failures.get(counted, 0) + 1
        failures[counted] = count
        named = repr(method) if counted is not None else f"{method!r} and other methods"
        if count == 1:
            logger.exception(
                "notification handler for %s from the %s failed (further failures of it "
                "on this connection are counted, not each logged)",
                named,
                self._name,
            )
        elif _is_power_of_ten(count):
            logger.warning(
                "notification handler for %s from the %s has failed %d times on this "
                "connection (the latest: %s: %s); the first failure's traceback is logged "
                "above",
                named,
                self._name,
                count,
                type(exc).__name__,
                _printable_excerpt(str(exc)),
            )

    def _progress_failed(self, pending: _Pending, exc: BaseException) -> None:
        """Log the failure of ``pending``'s progress callback: the first with its
        traceback, then a count at 10, 100, 1000..., and the total when the request ends
        (``_progress_failures_in_all``). A callback that fails on every notification of a
        long call must not fill the log with tracebacks at the peer's pace. Called inside
        the ``except`` that caught ``exc``."""
        pending.progress_failures += 1
        count = pending.progress_failures
        if count == 1:
            logger.exception(
                "progress callback for %r to the %s failed (further failures of it for "
                "this request are counted, not each logged)",
                pending.method,
                self._name,
            )
        elif _is_power_of_ten(count):
            logger.warning(
                "progress callback for %r to the %s has failed %d times for this request "
                "(the latest: %s: %s); the first failure's traceback is logged above",
                pending.method,
                self._name,
                count,
                type(exc).__name__,
                _printable_excerpt(str(exc)),
            )

    def _progress_failures_in_all(self, pending: _Pending) -> None:
        """Say, as ``pending``'s request ends, how often its progress callback failed in
        all, unless the last count said it (``_progress_failed`` counts at 10, 100...):
        20,000 failures are not left reported as 10,000."""
        count = pending.progress_failures
        if count > 1 and not _is_power_of_ten(count):
            logger.warning(
                "progress callback for %r to the %s failed %d times in all for this "
                "request; the first failure's traceback is logged above",
                pending.method,
                self._name,
                count,
            )

    def _reraise_unless_failure(self, exc: BaseException) -> None:
        """Re-raise ``exc`` if it must unwind the task (cancellation, Ctrl-C, exit)
        rather than be reported as a failure of the code that raised it."""
        if _only(exc, self._backend.cancelled) or _holds(exc, _FATAL):
            raise exc

    async def _answer(self, request: IncomingRequest, scope: CancelScope) -> None:
        """Answer one request: every way the handler can end gives the peer a response.

        Whatever escapes the handler, an ``Exception``, a ``BaseException`` subclass, or
        an exception group holding either, becomes an error response here. Only
        cancellation unwinds without one (the peer cancelled and stopped listening, or
        the endpoint is closing); Ctrl-C and ``SystemExit`` are answered and then raised
        on, since they are meant to stop the program.
        """
        self._handlers_running += 1
        response: JSONObject | None = None
        fatal: BaseException | None = None
        try:
            try:
                with scope:
                    result = await self._on_request(request)
                    response = {"jsonrpc": "2.0", "id": request.id, "result": result}
            except BaseException as exc:
                failure = _split(exc, self._backend.cancelled)[1]
                if failure is None:
                    raise
                if _holds(failure, _FATAL):
                    fatal = exc
                redact = self._redact_errors is not None and self._redact_errors(request)
                answering = f"{request.method!r} (id {request.id!r}) from the {self._name}"
                error = error_from_exception(failure, redact=redact, answering=answering).to_wire()
                response = {"jsonrpc": "2.0", "id": request.id, "error": error}
            finally:
                self._handlers_running -= 1
                callbacks = self._callbacks
                now = callbacks.handler_done = time.monotonic()
                callbacks.handler_done_total = (
                    callbacks.total if callbacks.started is None else callbacks.at(now)
                )
                del self._in_flight[request.id]
                self._request_bytes.give_back(request.envelope.size, request.envelope.holder)
            # A request the peer cancelled gets no response (the peer stopped listening).
            if response is not None and not scope.cancel_called:
                await self._send(Envelope(response, request.id))
        except ConnectionClosedError:
            logger.debug("could not answer %r: connection closed", request.method)
        finally:
            if self._all_answered is not None:
                self._tell_if_all_answered(self._all_answered)
        if fatal is not None:
            # Left for the backend to collect: the task ends with it, so it propagates.
            # Raised on a later turn, which no cancellation can take from it: a task that
            # a host's eager task factory started may still be in the step that
            # dispatched the request, and it must not leave through the sender's code.
            await anyio.lowlevel.cancel_shielded_checkpoint()
            raise fatal
        self._backend.task_done()

    def _tell_if_all_answered(self, waiter: Waiter) -> None:
        # After this handler's answer is out (or failed to go out): the reader, waiting
        # at the end of input, ends the connection once the last one is.
        if not self._in_flight and not waiter.done():
            waiter.set_result(None)

    async def _send_error(self, request_id: RequestId | None, code: int, message: str) -> None:
        error = {"code": code, "message": message}
        with contextlib.suppress(ConnectionClosedError):
            await self._send(
                Envelope({"jsonrpc": "2.0", "id": request_id, "error": error}, request_id)
            )

    def _fail_pending(self, reason: str) -> None:
        if self._closed_reason is None:
            self._closed_reason = reason
        for pending in self._pending.values():
            error = {
                "code": CONNECTION_CLOSED,
                "message": f"Connection closed before {pending.method!r} was answered: {reason}.",
            }
            pending.resolve({"error": error}, local=True)


_FATAL = (KeyboardInterrupt, SystemExit)


_METHODS_COUNTED_APART = 32
"""Notification methods whose handler failures are counted each on its own; the rest
share one count (a custom handler that raises on unknown methods would otherwise let
a peer grow the counts, and the log, with every new name)."""

_MOST_CHARS_LOGGED = 200
"""How much of a handler's exception text a count's warning quotes."""


def _printable_excerpt(text: str) -> str:
    """``text`` (which may quote the peer) cut short, with every control, bidi or
    invisible character written out as ``repr`` writes it (``\\x1b``, ``\\u202e``,
    ``\\n``), so it can neither forge log lines nor restyle the terminal showing the log.
    The project's ``clean`` lives in ``interact``, above this layer."""
    if len(text) > _MOST_CHARS_LOGGED:
        text = text[: _MOST_CHARS_LOGGED - 1] + "…"
    return repr(text)[1:-1]


def _is_power_of_ten(count: int) -> bool:
    while count > 1 and count % 10 == 0:
        count //= 10
    return count == 1


def _sole_exception(exc: BaseException) -> BaseException:
    """The one exception inside nested single-member groups, else ``exc`` itself."""
    while isinstance(exc, BaseExceptionGroup):
        inner: tuple[BaseException, ...] = cast("BaseExceptionGroup[BaseException]", exc).exceptions
        if len(inner) != 1:
            break
        exc = inner[0]
    return cast(BaseException, exc)


def _split(
    exc: BaseException, kinds: type[BaseException] | tuple[type[BaseException], ...]
) -> tuple[BaseException | None, BaseException | None]:
    """``exc`` split into the part that is ``kinds`` and the rest (``None`` if empty)."""
    if isinstance(exc, BaseExceptionGroup):
        return cast("BaseExceptionGroup[BaseException]", exc).split(kinds)
    return (exc, None) if isinstance(exc, kinds) else (None, exc)


def _only(exc: BaseException, kinds: type[BaseException]) -> bool:
    return _split(exc, kinds)[1] is None


def _holds(exc: BaseException, kinds: tuple[type[BaseException], ...]) -> bool:
    return _split(exc, kinds)[0] is not None


def as_request_id(value: object) -> RequestId | None:
    """``value`` as a request id (or progress token): a string or an integer, never a
    boolean (``true == 1`` in Python, but it is not the id 1), else ``None``."""
    # A tuple, not ``str | int``: that expression builds a union object on every call.
    if isinstance(value, (str, int)) and not isinstance(value, bool):
        return value
    return None


def as_object(value: object) -> JSONObject | None:
    """``value`` as a JSON object, or ``None`` if it is anything else."""
    # Not cast: this runs a dozen times per message, and ``cast`` is a call.
    return value if isinstance(value, dict) else None  # pyright: ignore[reportUnknownVariableType]


_UNREADABLE = (PARSE_ERROR, INVALID_REQUEST)
"""The codes of an error JSON-RPC answers with a null id: the peer could not read the
message, so could not tell its id."""


def _parse_error(raw: object) -> ErrorData:
    """The error of an answer; a malformed one reported as such, naming what is wrong."""
    error = as_object(raw)
    if error is None:
        wrong = ["it is not an object"]
    else:
        code, message = error.get("code"), error.get("message")
        integer = isinstance(code, int) and not isinstance(code, bool)
        if isinstance(code, int) and integer and isinstance(message, str):
            return ErrorData(code=code, message=message, data=error.get("data"))
        wrong: list[str] = []
        if not integer:
            wrong.append(f"its code {code!r} is not an integer" if "code" in error else "no code")
        if not isinstance(message, str):
            wrong.append(
                f"its message {message!r} is not a string" if "message" in error else "no message"
            )
    return ErrorData(
        code=INTERNAL_ERROR,
        message=f"Malformed error response ({', '.join(wrong)}): {raw!r}. The peer breaks "
        "JSON-RPC 2.0 (an error has an integer code and a string message); report it to "
        "its authors.",
    )
