"""Streamable HTTP for 2026-07-28 requests: stateless, one POST per request.

There are no sessions: everything a request needs travels with it, so any server
instance can answer any request (inside one process they all share one stateless
connection to the server). The answer is a single JSON object, or an SSE stream when the
server has notifications (progress, log messages) to send first or takes longer than a
moment (its keepalives keep proxies from timing it out). A client that hangs up (closing
the stream, or the connection that waits for the JSON body) cancels the request.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncGenerator
from dataclasses import InitVar, dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any

import anyio
from anyio.abc import TaskStatus
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from answerback.jsonrpc import Envelope, JSONObject, RequestId
from answerback.jsonrpc._backend import Primitives
from answerback.jsonrpc._budget import RequestBytes
from answerback.jsonrpc._channel import ChannelReceiver, ChannelSender, open_channel
from answerback.jsonrpc._endpoint import CANCELLED, as_object, as_request_id
from answerback.transports._framing import encode
from answerback.transports._headers import (
    METHOD_HEADER,
    NAME_HEADER,
    PARAM_HEADER_PREFIX,
    VERSION_HEADER,
    acceptance,
    argument_at,
    decode_value,
    header_parameters,
    header_text,
    mirrors,
    named_value,
    plain_value,
)
from answerback.transports.http._request_auth import principal_of
from answerback.transports.http._security import EndpointHeaders, fields_of
from answerback.transports.http._serving import (
    CLIENT_CLOSED_REQUEST,
    QUICK_ANSWER_SECONDS,
    UNSENT_BYTES_HELD,
    UNSENT_EVENTS_HELD,
    AnswerFlaw,
    ClientGone,
    EventStreamResponse,
    Outgoing,
    crowded,
    error_response,
    event_bytes,
    json_response,
    outgoing,
    unless_client_leaves,
    until_read,
)
from answerback.transports.http._sse import KEEPALIVE, encode_event
from answerback.types import META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION, META_SUBSCRIPTION_ID
from answerback.types._errors import (
    CONNECTION_CLOSED,
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    SERVER_CLOSED,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from answerback.types._versions import LEGACY_VERSIONS, MODERN_VERSIONS, per_request_refusal

logger = logging.getLogger("answerback.http")

if TYPE_CHECKING:
    from answerback.transports.http._server import HTTPConnectionServer, StreamableHTTPApp


LISTEN = "subscriptions/listen"
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
MAX_LISTEN_BYTES = 64 * 1024
"""The most a ``subscriptions/listen`` request may hold. Its stream keeps the parsed
request for as long as it is open, yet gives its bytes back to the app's budget once
acknowledged (it waits on no work, so it must not hold everyone else's room): this
bounds what each open stream keeps instead."""

_STATUS_BY_CODE = {
    HEADER_MISMATCH: 400,
    MISSING_REQUIRED_CLIENT_CAPABILITY: 400,
    UNSUPPORTED_PROTOCOL_VERSION: 400,
    METHOD_NOT_FOUND: 404,
}


def is_modern_request(message: JSONObject, version: str | None) -> bool:
    """Whether a sessionless POST belongs to the 2026-07-28 era: it carries per-request
    ``_meta`` with a protocol version, or a version header that is not a legacy one."""
    if version is not None and version not in LEGACY_VERSIONS:
        return True
    params = as_object(message.get("params")) or {}
    meta = as_object(params.get("_meta")) or {}
    return META_PROTOCOL_VERSION in meta


Problem = tuple[int, int, str, Any]
"""Why a 2026-07-28 POST is refused: ``(status, code, message, data)``."""


def validate(request: Request, message: JSONObject, param_headers: ParamHeaders) -> Problem | None:
    """Check a 2026-07-28 request in the order the specification gives: required
    ``_meta`` (-32602), header against body (-32020), supported version (-32022), the
    mirrored method, name and parameter headers (-32020). ``None`` if it passes."""
    params = as_object(message.get("params")) or {}
    meta = as_object(params.get("_meta"))
    for key in (META_PROTOCOL_VERSION, META_CLIENT_CAPABILITIES):
        if meta is None or key not in meta:
            return 400, INVALID_PARAMS, f"Invalid params: _meta must carry {key!r}.", None
    assert meta is not None
    headers = fields_of(request)
    problem = _version_problem(headers, meta[META_PROTOCOL_VERSION])
    if problem is not None:
        return problem
    method = message.get("method")
    text = _standard_header_problem(headers, method, params) or _param_header_problem(
        headers, method, params, param_headers
    )
    return None if text is None else (400, HEADER_MISMATCH, text, None)


def validate_notification(request: Request, message: JSONObject) -> Problem | None:
    """Check a 2026-07-28 notification before it is accepted (202). The specification
    sets no header requirements for notification POSTs (a 2026-07-28 client sends none
    over HTTP), so a missing ``Mcp-Method`` passes; but the headers it does carry must
    agree with the body (a proxy may act on them), and its version must be one this
    server speaks. A version in the header alone is the notification's version (its
    ``_meta`` need not carry one)."""
    headers = fields_of(request)
    params = as_object(message.get("params")) or {}
    meta = as_object(params.get("_meta")) or {}
    version = meta.get(META_PROTOCOL_VERSION, headers.get(VERSION_HEADER))
    problem = _version_problem(headers, version)
    if problem is not None:
        return problem
    if METHOD_HEADER not in headers:
        return None
    text = _method_header_problem(headers, message.get("method"))
    return None if text is None else (400, HEADER_MISMATCH, text, None)


def _version_problem(headers: EndpointHeaders, body_version: object) -> Problem | None:
    """``MCP-Protocol-Version`` against the body's version (-32020), then whether this
    server speaks that version this way (-32022)."""
    if VERSION_HEADER in headers.repeated:
        return 400, HEADER_MISMATCH, _repeated("MCP-Protocol-Version"), None
    header_version = headers.get(VERSION_HEADER)
    if header_version != body_version:
        return (
            400,
            HEADER_MISMATCH,
            f"Header mismatch: MCP-Protocol-Version {header_version!r} does not match "
            f"_meta {body_version!r}.",
            None,
        )
    if body_version in MODERN_VERSIONS:
        return None
    text, supported = per_request_refusal(body_version)
    data = {"supported": supported, "requested": body_version}
    return 400, UNSUPPORTED_PROTOCOL_VERSION, text, data


def _repeated(header: str) -> str:
    return (
        f"Malformed header: {header} was sent more than once; send it once (a proxy "
        "may read one copy and the server another)."
    )


def _unplain(header: str) -> str:
    return (
        f"Malformed header: {header} holds characters other than visible ASCII and "
        "spaces; send such a value as =?base64?{its UTF-8 in base64}?=."
    )


def _method_header_problem(headers: EndpointHeaders, method: object) -> str | None:
    if METHOD_HEADER in headers.repeated:
        return _repeated("Mcp-Method")
    header_method = headers.get(METHOD_HEADER)
    if header_method is None:
        return (
            "Missing header: a 2026-07-28 request over HTTP must carry the Mcp-Method "
            "header, mirroring the body's method."
        )
    plain = plain_value(header_method)
    if plain is None:
        return _unplain("Mcp-Method")
    if plain != method:
        return f"Header mismatch: Mcp-Method {header_method!r} does not match body {method!r}."
    return None


def _standard_header_problem(
    headers: EndpointHeaders, method: object, params: JSONObject
) -> str | None:
    problem = _method_header_problem(headers, method)
    if problem is not None:
        return problem
    if NAME_HEADER in headers.repeated:
        return _repeated("Mcp-Name")
    expected_name = named_value(method, params)
    if expected_name is None:
        return None
    raw = headers.get(NAME_HEADER)
    if raw is None:
        return f"Missing header: {method} requires the Mcp-Name header, mirroring the body's name."
    plain = plain_value(raw)
    if plain is None:
        return _unplain("Mcp-Name")
    if decode_value(plain) != expected_name:
        return f"Header mismatch: Mcp-Name {raw!r} does not match body value {expected_name!r}."
    return None


class ParamHeaders:
    """Which arguments each of a server's tools mirrors in ``Mcp-Param-*`` headers, worked
    out once per input schema: walking the schema on every call cost as much as all the
    other checks of a 2026-07-28 request together."""

    def __init__(self, server: HTTPConnectionServer) -> None:
        self._server = server
        self._known: dict[str, tuple[JSONObject, dict[str, tuple[str, ...]]]] = {}

    def of(self, tool: str) -> dict[str, tuple[str, ...]]:
        """Header name → argument path for ``tool`` (empty for an unknown tool, or one
        whose schema breaks the rules: nothing a client could mirror)."""
        schema = self._server.tool_input_schema(tool)
        if schema is None:
            return {}
        known = self._known.get(tool)
        if known is None or known[0] is not schema:  # new, or the tool was replaced
            try:
                designated = header_parameters(schema)
            except ValueError:
                designated = {}
            known = self._known[tool] = (schema, designated)
        return known[1]


def _param_header_problem(
    headers: EndpointHeaders, method: object, params: JSONObject, param_headers: ParamHeaders
) -> str | None:
    """``Mcp-Param-*`` headers must mirror the arguments the tool's schema designates."""
    if method != "tools/call":
        return None
    name = params.get("name")
    designated = param_headers.of(name) if isinstance(name, str) else None
    if not designated:
        return None
    arguments = as_object(params.get("arguments"))
    for header, path in designated.items():
        key = PARAM_HEADER_PREFIX + header
        if key.lower() in headers.repeated:
            return _repeated(f"Mcp-Param-{header}")
        sent = headers.get(key)
        value = argument_at(arguments, path)
        carried = header_text(value) is not None
        if sent is None and not carried:
            continue
        argument = ".".join(path)
        if sent is None:
            return (
                f"Missing header: tool {name!r} mirrors its argument {argument!r} in the "
                f"Mcp-Param-{header} header, which the request lacks. Send the header with "
                "the argument's value (answerback's Client does; list the tools first)."
            )
        if not carried:
            return (
                f"Header mismatch: Mcp-Param-{header} was sent, but the arguments hold no "
                f"value for {argument!r}; send the header only with the argument."
            )
        plain = plain_value(sent)
        if plain is None:
            return _unplain(f"Mcp-Param-{header}")
        decoded = decode_value(plain)
        if decoded is None or not mirrors(decoded, value):
            return f"Header mismatch: Mcp-Param-{header} {sent!r} does not match the body."
    return None


class StatelessConnection:
    """One long-lived connection to the server that carries every 2026-07-28 request.

    Modern requests are independent (each carries its own ``_meta``), so they can share
    a connection; this avoids building one per request. Clients choose their own ids,
    which may collide, so each request gets an internal id on the way in and its own id
    back on everything that names it on the way out.
    """

    def __init__(self) -> None:
        self._to_server: ChannelSender[Envelope | Exception] | None = None
        self._routes: dict[int, _Route] = {}
        self._next_id = 0
        self._primitives: Primitives | None = None
        """The loop's, for the channel of each request's route."""
        self._request_bytes: RequestBytes | None = None
        """The app's budget, which an acknowledged listen gives its bytes back to."""
        self._closed_because: str | None = None
        """Why every request is answered "Server closed" at once (``close``)."""

    async def run(
        self,
        server: HTTPConnectionServer,
        primitives: Primitives,
        request_bytes: RequestBytes,
        max_body_bytes: int,
        *,
        task_status: TaskStatus[None],
    ) -> None:
        """Serve the connection; ``primitives`` are the running loop's (the app looks
        them up once), ``request_bytes`` the app's budget, which these requests share
        with every session's, and ``max_body_bytes`` the largest request the app
        accepts (a round whose retry would be larger fails at once)."""
        self._primitives = primitives
        self._request_bytes = request_bytes
        to_server, server_reads = open_channel[Envelope | Exception](self._primitives)
        outbox = _Outbox(self)
        self._to_server = to_server
        try:
            async with anyio.create_task_group() as tg:
                # Unbounded in number: each request is bounded by its own POST, which
                # cancels it on hanging up, and a bound here would be one for every
                # client at once. Their bytes count against the app's budget.
                serve = partial(
                    server.serve_connection,
                    max_requests_in_flight=None,
                    request_bytes=request_bytes,
                    max_request_bytes=max_body_bytes,
                )
                tg.start_soon(serve, server_reads, outbox)
                task_status.started()
        finally:
            for channel in (to_server, server_reads, outbox):
                channel.close()
            for route in self._routes.values():
                route.close()  # their requests wait no more
            self._routes.clear()

    def submit(
        self, message: JSONObject, transport_context: Any, size: int, holder: str | None
    ) -> _Route:
        """Send one request in (``size``: its body's, ``holder``: its caller's, see
        ``Envelope``); its messages come out of the returned route."""
        assert self._to_server is not None
        internal = self._next_id
        self._next_id += 1
        broadcasts = message.get("method") == LISTEN
        route = _Route(internal, message["id"], broadcasts, self._primitives)
        if self._closed_because is not None:  # its body was read while the server closed
            route.deliver(outgoing(_server_closed(route.client_id, self._closed_because)))
            route.close()
            return route
        self._routes[internal] = route
        envelope = Envelope({**message, "id": internal}, None, transport_context, size, holder)
        if broadcasts:
            route.listen = envelope
        self._to_server.send_nowait(envelope)
        return route

    def cancel(self, route: _Route) -> None:
        """The client went away: cancel the request (closing the stream means that)."""
        if self._routes.pop(route.internal_id, None) is not None:
            self._stop_work(route, "the client disconnected")
        route.close()
        route.receive.close()

    def close(self, reason: str) -> None:
        """Answer every request in flight with "Server closed: <reason>." at once, and
        every request submitted from now on, and cancel their work.

        An ASGI server stopping waits for open responses first (uvicorn for
        ``timeout_graceful_shutdown``, then it cancels them and logs a traceback): a
        call still running, or a listen stream, would hold it up. This is what
        ``close_sessions`` does to the legacy sessions' requests."""
        self._closed_because = reason
        routes = list(self._routes.values())
        self._routes.clear()
        for route in routes:
            route.deliver(outgoing(_server_closed(route.client_id, reason)))
            route.close()
            self._stop_work(route, reason)

    def _stop_work(self, route: _Route, reason: str) -> None:
        """Cancel the server's handler of a request whose route is gone."""
        if self._to_server is not None:
            notice = {"requestId": route.internal_id, "reason": reason}
            with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                self._to_server.send_nowait(
                    Envelope({"jsonrpc": "2.0", "method": CANCELLED, "params": notice})
                )

    def crowded_route(self, envelope: Envelope) -> _Route | None:
        """The route of the call ``envelope`` is about, if its client has left more
        than ``UNSENT_EVENTS_HELD`` of its messages unread."""
        if not envelope.paced:  # an answer, above all: the one message of most requests
            return None
        related = envelope.related_request_id
        route = self._routes.get(related) if isinstance(related, int) else None
        if route is None or route.broadcasts or not crowded(route.send):
            return None
        return route

    def route(self, envelope: Envelope) -> None:
        """Pass one of the server's messages on to the route of its request."""
        message = as_object(envelope.message)
        if message is None:
            return
        if "method" not in message:  # a response: the last message of its request
            internal = message.get("id")
            route = self._routes.pop(internal, None) if isinstance(internal, int) else None
            if route is not None:
                route.deliver(outgoing({**message, "id": route.client_id}))
                route.close()
            return
        related = envelope.related_request_id
        route = self._routes.get(related) if isinstance(related, int) else None
        if route is not None:
            if route.listen is not None and message.get("method") == ACKNOWLEDGED:
                self._acknowledged(route.listen)
                route.listen = None
            route.deliver(outgoing(_with_subscription_id(message, route)))

    def _acknowledged(self, listen: Envelope) -> None:
        """A listen was acknowledged: from now on it waits for broadcasts, never for
        work, so its bytes go back to the app's budget, where they would keep every
        other request out for as long as its stream stays open (``MAX_LISTEN_BYTES``
        bounds what it keeps instead). Its size becomes 0, so the endpoint gives back
        nothing more when it ends."""
        if self._request_bytes is not None:
            self._request_bytes.give_back(listen.size, listen.holder)
        listen.size = 0


class _Outbox:
    """The server's write end of the stateless connection: each message goes to its
    request's route as the server writes it. (A task reading the messages from a
    channel, as a transport does, cost two loop turns per request.) What a call sends
    waits while its client leaves its stream unread (``crowded_route``): only that
    call's handler waits."""

    def __init__(self, connection: StatelessConnection) -> None:
        self._connection = connection
        self._closed = False

    def send_nowait(self, envelope: Envelope) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        if self._connection.crowded_route(envelope) is not None:
            raise anyio.WouldBlock
        self._connection.route(envelope)

    async def send(self, envelope: Envelope) -> None:
        await anyio.lowlevel.checkpoint()
        while (route := self._connection.crowded_route(envelope)) is not None:
            await until_read(route.send)
        if self._closed:
            raise anyio.ClosedResourceError
        self._connection.route(envelope)  # no await since the check: room is still there

    def close(self) -> None:
        self._closed = True


@dataclass(eq=False, slots=True)
class _Route:
    """Where one request's outgoing messages go (as strict JSON), and the id the client
    gave it."""

    internal_id: int
    client_id: RequestId
    broadcasts: bool
    """A ``subscriptions/listen`` stream: fed by the task broadcasting to every
    listener, so it is ended, not waited for, when its client does not read it."""
    primitives: InitVar[Primitives | None]
    send: ChannelSender[tuple[JSONObject, bytes]] = field(init=False)
    receive: ChannelReceiver[tuple[JSONObject, bytes]] = field(init=False)
    unread: tuple[int, int] | None = None
    """Ended because its client left too much unread: how many messages, and bytes."""
    listen: Envelope | None = None
    """A listen not yet acknowledged: its request, whose bytes the budget holds."""

    def __post_init__(self, primitives: Primitives | None) -> None:
        # Only a listen stream is weighed: it lives long and its client may leave it
        # unread, while weighing would cost every other request's messages.
        weigh = event_bytes if self.broadcasts else None
        self.send, self.receive = open_channel[tuple[JSONObject, bytes]](primitives, weigh)

    def deliver(self, wire: Outgoing) -> None:
        """Pass a message on; one that cannot be sent as JSON was already replaced by an
        error answer, or dropped if it was a notification (2026-07-28 servers send no
        requests, so nothing is owed to our own side)."""
        if wire.message is None:
            return
        try:  # not contextlib.suppress: this runs for every message, and it is 3 calls
            self.send.send_nowait((wire.message, wire.data))  # a call's writes are paced
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return
        if self.broadcasts and crowded(self.send):
            self.unread = (self.send.buffered(), self.send.buffered_bytes())
            logger.warning(
                "ended a subscriptions/listen stream: its client left %d notifications "
                "(%d bytes) unread, more than the %d notifications or %d bytes a stream "
                "holds",
                *self.unread,
                UNSENT_EVENTS_HELD,
                UNSENT_BYTES_HELD,
            )
            self.send.close()

    def close(self) -> None:
        self.send.close()


def _with_subscription_id(message: JSONObject, route: _Route) -> JSONObject:
    """A listen stream's notifications name the client's request id, not ours."""
    params = as_object(message.get("params"))
    meta = as_object(params.get("_meta")) if params is not None else None
    if meta is None or meta.get(META_SUBSCRIPTION_ID) != route.internal_id:
        return message
    assert params is not None
    meta = {**meta, META_SUBSCRIPTION_ID: route.client_id}
    return {**message, "params": {**params, "_meta": meta}}


async def answer_modern(
    app: StreamableHTTPApp,
    request: Request,
    message: JSONObject,
    wants_sse: bool,
    size: int,
    flaw: AnswerFlaw | None,
) -> Response:
    """Answer one 2026-07-28 request through the app's stateless connection.

    An answer with nothing before it goes back as one JSON body when the client lists
    ``application/json`` first in ``Accept`` (cheapest for both ends); otherwise, and
    whenever notifications come first, as an SSE stream. So does an answer that takes
    longer than ``QUICK_ANSWER_SECONDS`` when the client accepts SSE: its stream starts
    then, and keepalives keep a proxy from ending it as silent; a client that accepts
    only JSON waits for its body. A client that hangs up, whether it was reading a
    stream or waiting for a JSON body, cancels the request: that is how a 2026-07-28
    client cancels over HTTP. ``flaw``: what is wrong with a response-shaped message
    (``message`` is then an error answer standing in for it).
    """
    request_id = as_request_id(message.get("id"))
    if flaw is not None:  # say what is wrong with it first, as to a legacy client
        return error_response(400, flaw.code, flaw.reason, request_id)
    if "method" not in message:
        return error_response(
            400,
            INVALID_REQUEST,
            "Invalid request: a 2026-07-28 client sends no responses (its server sends it no "
            "requests; questions come back in an InputRequiredResult).",
            request_id,
        )
    if request_id is None:
        refused = validate_notification(request, message)
        # Accepted, it needs no answer on HTTP, and nothing here acts on one.
        return Response(status_code=202) if refused is None else _refusal(refused, None)
    problem = validate(request, message, app.param_headers)
    if problem is not None:
        return _refusal(problem, request_id)
    if message.get("method") == LISTEN:
        if not wants_sse:
            return error_response(
                406,
                INVALID_REQUEST,
                "Not Acceptable: subscriptions/listen is answered only as an event stream "
                "that stays open; its Accept must include text/event-stream.",
                request_id,
            )
        if size > MAX_LISTEN_BYTES:
            return error_response(
                413,
                INVALID_REQUEST,
                f"Payload Too Large: a subscriptions/listen request may hold at most "
                f"{MAX_LISTEN_BYTES} bytes, and this one holds {size}. Its stream keeps it "
                "for as long as it is open; a filter fits in far less.",
                request_id,
            )
    route = app.stateless.submit(message, request, size, principal_of(request.scope))
    incoming = route.receive
    try:
        try:
            first = await incoming.receive_within(QUICK_ANSWER_SECONDS)
        except TimeoutError:
            if wants_sse:  # a slow call: its stream starts now, and keepalives keep it
                return EventStreamResponse(_events(app, route, request_id, None))
            first = await unless_client_leaves(request, incoming.receive)
    except anyio.EndOfStream:
        app.stateless.cancel(route)
        return _json_error(request_id, "The server stopped before answering.")
    except ClientGone:
        app.stateless.cancel(route)
        return Response(status_code=CLIENT_CLOSED_REQUEST)
    except BaseException:
        app.stateless.cancel(route)
        raise
    if _is_response(first[0], request_id) and (
        not wants_sse
        or "error" in first[0]
        or acceptance(fields_of(request).joined("accept")).prefers_json
    ):
        incoming.close()
        return _json(*first)
    if not wants_sse:

        async def the_answer() -> tuple[JSONObject, bytes] | None:
            async for message_out in incoming:
                if _is_response(message_out[0], request_id):
                    return message_out
            return None

        try:
            answer = await unless_client_leaves(request, the_answer)
        except ClientGone:
            answer = None
        finally:
            app.stateless.cancel(route)
        if answer is None:
            return _json_error(request_id, "The server stopped before answering.")
        return _json(*answer)
    return EventStreamResponse(_events(app, route, request_id, first))


async def _events(
    app: StreamableHTTPApp,
    route: _Route,
    request_id: RequestId,
    first: tuple[JSONObject, bytes] | None,
) -> AsyncGenerator[bytes, None]:
    """A request's SSE answer: ``first`` (what came before the stream started, if
    anything), then each message as it comes, with a keepalive comment after every
    ``keepalive_seconds`` of silence (a proxy would end a silent response), until
    the answer."""
    incoming = route.receive
    try:
        if first is not None:
            yield encode_event(first[1].decode())
            if _is_response(first[0], request_id):
                return
        while True:
            item: tuple[JSONObject, bytes] | None = None
            with anyio.move_on_after(app.keepalive_seconds):
                item = await incoming.receive()
            if item is None:
                yield KEEPALIVE
                continue
            yield encode_event(item[1].decode())
            if _is_response(item[0], request_id):
                return
    except anyio.EndOfStream:
        if route.unread is not None:
            yield encode_event(_unread_error(request_id, *route.unread).decode())
    finally:
        app.stateless.cancel(route)  # a closed stream cancels the request


def _refusal(problem: Problem, request_id: RequestId | None) -> Response:
    status, code, text, data = problem
    error: JSONObject = {"code": code, "message": text}
    if data is not None:
        error["data"] = data
    return JSONResponse({"jsonrpc": "2.0", "id": request_id, "error": error}, status_code=status)


def _is_response(message: JSONObject, request_id: object) -> bool:
    return "method" not in message and message.get("id") == request_id


def _json(message: JSONObject, data: bytes) -> Response:
    error = as_object(message.get("error"))
    code = error.get("code") if error is not None else None
    status = _STATUS_BY_CODE.get(code, 200) if isinstance(code, int) else 200
    return json_response(data, status)


def _unread_error(request_id: RequestId, messages: int, size: int) -> bytes:
    """The answer ending a listen stream its client left ``messages`` notifications
    (``size`` bytes) of unread (see ``_Route``)."""
    reason = (
        f"Ended: the client left {messages} notifications ({size} bytes) of this stream "
        f"unread, more than the {UNSENT_EVENTS_HELD} notifications or {UNSENT_BYTES_HELD} "
        "bytes a stream holds. Read a listen stream as it comes, then listen again."
    )
    error = {"code": INTERNAL_ERROR, "message": reason}
    return encode({"jsonrpc": "2.0", "id": request_id, "error": error})


def _server_closed(request_id: RequestId, reason: str) -> JSONObject:
    """The answer to a request the server will not finish because it is closing: the
    error a legacy session's open requests get (the client raises
    ``ConnectionClosedError``)."""
    error: JSONObject = {
        "code": CONNECTION_CLOSED,
        "message": f"Server closed: {reason}.",
        "data": {"reason": SERVER_CLOSED},
    }
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def _json_error(request_id: RequestId, reason: str) -> Response:
    return error_response(500, INTERNAL_ERROR, reason, request_id)
