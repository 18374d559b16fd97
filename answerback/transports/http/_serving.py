"""What both eras of the HTTP server share: strict JSON on the way out, JSON-RPC
messages checked before anything is routed on them, error responses, and noticing a
client that hangs up while the server is still working for it."""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Awaitable, Callable
from contextlib import suppress
from typing import Any, NamedTuple, TypeVar

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from answerback.jsonrpc import JSONObject, RequestId
from answerback.jsonrpc._channel import ChannelReceiver, ChannelSender
from answerback.jsonrpc._endpoint import as_object, as_request_id
from answerback.transports._framing import StandIn, UnencodableMessage, encode, undeliverable
from answerback.types._errors import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
)

logger = logging.getLogger("answerback.http")

_LAST_WRITE_SECONDS = 1.0
"""How long a stream the server cancelled may take to write its end: a client that
stopped reading must not hold the stopping server up."""

T = TypeVar("T")

SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}
CLIENT_CLOSED_REQUEST = 499
"""The status of a response nobody will read: its client hung up (as nginx logs it)."""


class Outgoing(NamedTuple):
    """A message of the server's, ready for the wire.

    ``message`` is what the client gets (``None``: nothing) and ``data`` its JSON text;
    ``to_self`` is an error answer for the server's own side, when a request of its own
    could not be sent (its caller then fails at once instead of waiting).
    """

    message: JSONObject | None
    data: bytes
    to_self: JSONObject | None


def outgoing(message: JSONObject) -> Outgoing:
    """``message`` as strict JSON, or what to send instead when it holds NaN or Infinity:
    a result becomes an error response to the same id, a request fails on our side, a
    notification is dropped (with a warning, as each of these is a bug in the server)."""
    try:
        return Outgoing(message, encode(message), None)
    except UnencodableMessage as exc:
        to_peer, to_self = undeliverable(message, str(exc))
        logger.warning("could not send %s: %s", _describe(message), exc)
        if to_peer is None:
            return Outgoing(None, b"", to_self)
        return Outgoing(to_peer, encode(to_peer), to_self)


def _describe(message: JSONObject) -> str:
    method = message.get("method")
    if isinstance(method, str):
        return repr(method)
    return f"the answer to request {message.get('id')!r}"


def message_problem(message: JSONObject) -> tuple[int, str] | None:
    """Why ``message`` is not a JSON-RPC 2.0 request, notification or response, as an
    error code and message; ``None`` if it is one.

    Checked before a message is routed: a request the server could not answer by its id
    (a boolean, a fraction, an array...) would otherwise wait for ever, or its error
    would go nowhere.
    """
    if message.get("jsonrpc") != "2.0":
        return INVALID_REQUEST, 'Invalid request: the "jsonrpc" member must be exactly "2.0".'
    if "method" in message:
        method = message["method"]
        if not isinstance(method, str) or not method:
            return INVALID_REQUEST, 'Invalid request: "method" must be a non-empty string.'
        if "result" in message or "error" in message:
            return (
                INVALID_REQUEST,
                'Invalid request: a message with a "method" cannot also carry a "result" '
                'or an "error".',
            )
        if "id" in message and as_request_id(message["id"]) is None:
            return (
                INVALID_REQUEST,
                f'Invalid request: "id" must be a string or an integer, not '
                f"{_kind(message['id'])}.",
            )
        params = message.get("params")
        if params is not None and as_object(params) is None:
            return (
                INVALID_PARAMS,
                f"Invalid params for {method!r}: params must be an object, not {_kind(params)}.",
            )
        return None
    has_result, has_error = "result" in message, "error" in message
    if not has_result and not has_error:
        return (
            INVALID_REQUEST,
            'Invalid request: a message needs a "method" (a request or a notification), '
            'or a "result" or an "error" (a response).',
        )
    if has_result and has_error:
        return (
            INVALID_REQUEST,
            'Invalid request: a response has a "result" or an "error", not both.',
        )
    request_id = message.get("id")
    if as_request_id(request_id) is None and not (has_error and request_id is None):
        return (
            INVALID_REQUEST,
            f'Invalid request: a response\'s "id" must be the string or integer id of the '
            f"request it answers, not {_kind(request_id)}.",
        )
    if has_error:
        error = as_object(message["error"])
        code = error.get("code") if error is not None else None
        if (
            error is None
            or not isinstance(code, int)
            or isinstance(code, bool)
            or not isinstance(error.get("message"), str)
        ):
            return (
                INVALID_REQUEST,
                'Invalid request: "error" must be an object with an integer "code" and a '
                'string "message".',
            )
    return None


class AnswerFlaw(NamedTuple):
    """Why a response the client POSTed cannot be used, though its id says which
    request of the server's it answers. The question it answers fails with ``reason``
    (its tool's ``ctx.elicit`` or sampling raises) and the client gets a 400 saying
    ``reason``: one rule for every unusable answer, so neither side waits on it."""

    code: int
    reason: str
    unreadable: bool
    """Not JSON at all: when it answers no waiting question it is dropped (202), as
    an answer to nothing is."""

    def stand_in(self, request_id: RequestId) -> JSONObject:
        """The error answer the question fails with."""
        return {
            "jsonrpc": "2.0",
            "id": request_id,
            "error": {
                "code": INTERNAL_ERROR,
                "message": f"The client's answer could not be used: {self.reason}",
            },
        }

    def refusal(self, request_id: RequestId, failed: bool) -> Response:
        """The 400 the poster gets; ``failed``: the question it answers has failed."""
        told = (
            f"{self.reason} The server's request {request_id!r} it answers has failed "
            "with this reason."
            if failed
            else self.reason
        )
        return error_response(400, self.code, told, request_id)


def answer_flaw(message: JSONObject, problem: tuple[int, str] | None) -> AnswerFlaw | None:
    """Why ``message``, a response with a usable id, cannot be used (``problem``: what
    ``message_problem`` found), or ``None`` if it can. A body that is not JSON was
    decoded to an error answer standing in for it, marked as such (``StandIn``)."""
    if problem is not None:
        return AnswerFlaw(problem[0], problem[1], unreadable=False)
    if not isinstance(message, StandIn):
        return None
    error = as_object(message["error"]) or {}
    return AnswerFlaw(PARSE_ERROR, f"Parse error: {error.get('message')}", unreadable=True)


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, float):
        return "a fraction"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return f"{value!r}"


def error_response(
    status: int,
    code: int,
    message: str,
    request_id: RequestId | None = None,
    headers: dict[str, str] | None = None,
    data: JSONObject | None = None,
) -> Response:
    """An HTTP error whose body is a JSON-RPC error response saying what to fix (and,
    in ``data``, what a program reads rather than the words)."""
    error: JSONObject = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return JSONResponse(
        {"jsonrpc": "2.0", "id": request_id, "error": error},
        status_code=status,
        headers=headers,
    )


def json_response(
    data: bytes, status: int = 200, headers: dict[str, str] | None = None
) -> Response:
    """A JSON body already encoded (strictly) by ``outgoing``."""
    return _EncodedJSON(data, status, headers)


class _EncodedJSON(Response):
    """A JSON answer whose header lines are written as they go out. Starlette's
    ``Response`` renders the bytes again and normalises every header (lower case,
    encoded, searched for a length and a type given already) on each answer, for
    headers known here: about 4,000 instructions of an echo's 600,000 in the app."""

    media_type = "application/json"

    def __init__(self, data: bytes, status: int, headers: dict[str, str] | None) -> None:
        self.status_code = status
        self.background = None
        self.body = data
        self.raw_headers = [(b"content-length", b"%d" % len(data)), (b"content-type", _JSON)]
        if headers:
            self.raw_headers += [
                (name.lower().encode("latin-1"), value.encode("latin-1"))
                for name, value in headers.items()
            ]


_JSON = b"application/json"


QUICK_ANSWER_SECONDS = 0.05
"""How long ``until_ready`` waits before it starts watching for a hang-up, and a
2026-07-28 request before its SSE answer starts (so that keepalives can flow): most
answers come sooner, and the watch costs a task per request."""


UNSENT_EVENTS_HELD = 1024
"""How many of a stream's messages may wait for a client that reads them too slowly.

Past it, or past ``UNSENT_BYTES_HELD``, a call's own handler waits before it sends more
on the call's stream, as a program writing to a full pipe does: ``crowded`` and
``until_read``. A stream fed by the server's broadcasts (the GET stream, a
``subscriptions/listen`` stream) is ended instead, for one slow client must not hold up
every other's notifications: the client resumes it, or listens again. Either way a
client that does not read costs the server at most this many messages per stream, and
about ``UNSENT_BYTES_HELD``, however much its tools write."""

UNSENT_BYTES_HELD = 4 * 1024 * 1024
"""How many bytes of a stream's messages may wait for a client that reads them too
slowly (their JSON text), counted on a stream opened with ``event_bytes``: the count
bound alone let 1,024 large log messages pile up per stream. One message alone never
crowds a stream, however large: its client has had no chance to read it yet."""


def event_bytes(event: tuple[object, bytes]) -> int:
    """What a message waiting on a stream weighs (an SSE event's id and data, or a
    message and its data): its data's size, the JSON text encoded once for the wire."""
    return len(event[1])


def crowded(stream: ChannelSender[Any]) -> bool:
    """Whether a stream's client has left more than ``UNSENT_EVENTS_HELD`` messages
    unread, or more than one message weighing over ``UNSENT_BYTES_HELD`` together."""
    count = stream.buffered()
    return count > UNSENT_EVENTS_HELD or (count > 1 and stream.buffered_bytes() > UNSENT_BYTES_HELD)


async def until_read(stream: ChannelSender[Any]) -> None:
    """Wait until a crowded stream's client has read all but a quarter of each bound,
    or the stream has ended."""
    read = anyio.Event()
    stream.when_drained(UNSENT_EVENTS_HELD // 4, read.set, UNSENT_BYTES_HELD // 4)
    await read.wait()


class ClientGone(Exception):
    """The client closed its connection while the server waited to answer it."""


async def until_ready(request: Request, answers: ChannelReceiver[T]) -> T:
    """The next item of ``answers``, or raise ``ClientGone`` if the client hangs up
    first (noticed within ``QUICK_ANSWER_SECONDS`` of the wait's start at the latest)."""
    try:
        return await answers.receive_within(QUICK_ANSWER_SECONDS)
    except TimeoutError:
        return await unless_client_leaves(request, answers.receive)


async def unless_client_leaves(request: Request, wait: Callable[[], Awaitable[T]]) -> T:
    """``await wait()``, or raise ``ClientGone`` as soon as the client hangs up.

    Meant for after the request body was read: the ASGI receive channel then has
    nothing left to say but ``http.disconnect``.
    """
    receive = request.receive

    async def watch(scope: anyio.CancelScope) -> None:
        while (await receive())["type"] != "http.disconnect":
            pass
        scope.cancel()

    async with anyio.create_task_group() as tg:
        tg.start_soon(watch, tg.cancel_scope)
        result = await wait()
        tg.cancel_scope.cancel()
        return result
    raise ClientGone


class EventStreamResponse(StreamingResponse):
    """An SSE response that ends (closing its event generator) as soon as the client
    hangs up, even while it has nothing to send.

    Starlette watches for that only under ASGI before 2.4; a stream waiting on the
    server's work would otherwise notice the client has gone only at its next write.
    """

    def __init__(self, content: Any, headers: dict[str, str] | None = None) -> None:
        super().__init__(
            content, media_type="text/event-stream", headers={**SSE_HEADERS, **(headers or {})}
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def watch(cancel_scope: anyio.CancelScope) -> None:
            while (await receive())["type"] != "http.disconnect":
                pass
            cancel_scope.cancel()

        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(watch, tg.cancel_scope)
                with suppress(OSError):  # the client went away mid-write
                    await self.stream_response(send)
                tg.cancel_scope.cancel()
        except asyncio.CancelledError as exc:
            if anyio.current_effective_deadline() == -math.inf or not _ended_by_server(exc):
                raise  # a cancel scope, a timeout or a task's owner ended it: theirs to handle
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()  # handled here: the task's later awaits are not cancelled
            await _end_cut_stream(send)


_SERVER_GAVE_UP = "timeout graceful shutdown exceeded"
"""What uvicorn's cancel says (``Task.cancel(msg=...)``) when it stops waiting for the
open responses of a server that is stopping."""


def _ended_by_server(exc: asyncio.CancelledError) -> bool:
    """Whether ``exc`` is uvicorn giving up on the stream at shutdown: only that cancel
    is ended quietly, any other (``asyncio.timeout``, ``task.cancel()``) goes on to the
    code that asked for it, as asyncio's contract wants."""
    return any(isinstance(arg, str) and _SERVER_GAVE_UP in arg for arg in exc.args)


async def _end_cut_stream(send: Send) -> None:
    """The ASGI server cancelled the task of an open stream, as uvicorn does once its
    ``timeout_graceful_shutdown`` has passed (an MCP app mounted in another app, served
    by uvicorn's command line, has no one to end its sessions first): the stream ends as
    a finished response, with one line in the log, in place of the traceback uvicorn
    writes for an exception from the application. The client resumes, or learns the
    server has gone, as after any stream that ended without its answer."""
    logger.info(
        "the ASGI server cancelled an open event stream (it stopped, and its graceful "
        "shutdown timed out); the stream was ended"
    )
    with (
        anyio.CancelScope(shield=True),
        anyio.move_on_after(_LAST_WRITE_SECONDS),
        suppress(OSError, RuntimeError),  # the connection is gone, or the response never began
    ):
        await send({"type": "http.response.body", "body": b"", "more_body": False})
