"""Streamable HTTP, client side, over httpx2.

Why httpx2: it is the maintained continuation of httpx (same API, current releases),
async-native, and what the official SDK uses, so users can share one configured client.

Every outgoing message is POSTed from its own task, so many requests are in flight at
once and a server request arriving on one response stream is answered while others
wait. SSE responses are read with no read timeout: a stream may be silent for as long
as a person takes to fill in a form, and the JSON-RPC layer owns request timeouts. A
stream that breaks before its answer arrived is resumed with ``Last-Event-ID`` after
the server's ``retry`` delay.
"""

from __future__ import annotations

import logging
import math
from collections.abc import AsyncGenerator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, cast

import anyio
import httpx2
from anyio.abc import ObjectSendStream, TaskGroup

from answerback.jsonrpc import Envelope, JSONObject
from answerback.jsonrpc._endpoint import as_object
from answerback.transports._base import StreamPair
from answerback.transports._framing import decode, encode
from answerback.transports._headers import (
    METHOD_HEADER,
    NAME_HEADER,
    SESSION_HEADER,
    VERSION_HEADER,
    encode_value,
    name_of,
)
from answerback.transports.http._sse import EventParser
from answerback.types import META_PROTOCOL_VERSION
from answerback.types._errors import CONNECTION_CLOSED, ConnectionClosedError
from answerback.types._versions import is_modern

logger = logging.getLogger("answerback.http")

_MAX_RECONNECTS = 5
_DEFAULT_RETRY_SECONDS = 1.0
SESSION_EXPIRED = "session_expired"


class StreamableHTTPTransport:
    """Connects a ``Client`` to an MCP server's streamable HTTP endpoint.

    Pass ``http_client`` to control TLS, proxies, auth and timeouts (it is not closed
    for you); ``headers`` are added to every request.
    """

    mirrors_parameters = True
    """2026-07-28 tool arguments marked ``x-mcp-header`` travel as headers here, so the
    client must check those marks and compute the headers (other transports ignore them)."""

    def __init__(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        http_client: httpx2.AsyncClient | None = None,
        timeout: float = 30.0,
    ) -> None:
        self.url = url
        self.headers = dict(headers or {})
        self._http_client = http_client
        self.timeout = timeout
        self.session_id: str | None = None
        self.protocol_version: str | None = None

    def __repr__(self) -> str:
        return f"StreamableHTTPTransport({self.url!r})"

    @asynccontextmanager
    async def connect(self) -> AsyncGenerator[StreamPair, None]:
        incoming, incoming_read = anyio.create_memory_object_stream[Envelope | Exception](math.inf)
        outgoing, outgoing_read = anyio.create_memory_object_stream[Envelope](math.inf)
        client = self._http_client or httpx2.AsyncClient(
            timeout=httpx2.Timeout(self.timeout), follow_redirects=True
        )
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._post_loop, client, outgoing_read, incoming, tg)
                try:
                    yield incoming_read, outgoing
                finally:
                    outgoing.close()
                    with anyio.CancelScope(shield=True):
                        await self._terminate(client)
                    tg.cancel_scope.cancel()
        finally:
            if self._http_client is None:
                with anyio.CancelScope(shield=True):
                    await client.aclose()

    def _stream_timeout(self) -> httpx2.Timeout:
        """No read timeout: a response stream may wait on a person for minutes."""
        return httpx2.Timeout(self.timeout, read=None)

    def _headers(self, *, accept: str = "application/json, text/event-stream") -> dict[str, str]:
        """Legacy-era headers: session and negotiated version once known (no body type:
        GET and DELETE carry no body; POSTs add it)."""
        headers = {"accept": accept, **self.headers}
        if self.session_id is not None:
            headers[SESSION_HEADER] = self.session_id
        if self.protocol_version is not None:
            headers[VERSION_HEADER] = self.protocol_version
        return headers

    async def _post_loop(
        self,
        client: httpx2.AsyncClient,
        outgoing: anyio.abc.ObjectReceiveStream[Envelope],
        incoming: ObjectSendStream[Envelope | Exception],
        tg: TaskGroup,
    ) -> None:
        async with outgoing:
            async for envelope in outgoing:
                message = as_object(envelope.message) or {}
                headers = self._headers_for(message, envelope.transport_context)
                if message.get("method") == "initialize":
                    # Later messages need the session id this answer brings: wait for it.
                    await self._post(client, message, headers, incoming, tg)
                else:
                    tg.start_soon(self._post, client, message, headers, incoming, tg)

    def _headers_for(self, message: JSONObject, extra: object) -> dict[str, str]:
        """The headers of one POST. A 2026-07-28 message mirrors its version, method and
        name (and the ``Mcp-Param-*`` the caller computed) and has no session."""
        params = as_object(message.get("params")) or {}
        version = (as_object(params.get("_meta")) or {}).get(META_PROTOCOL_VERSION)
        if not isinstance(version, str) or not is_modern(version):
            return {**self._headers(), "content-type": "application/json"}
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
        return headers

    async def _post(
        self,
        client: httpx2.AsyncClient,
        message: JSONObject,
        headers: dict[str, str],
        incoming: ObjectSendStream[Envelope | Exception],
        tg: TaskGroup,
    ) -> None:
        request_id = message.get("id") if "method" in message else None
        body = encode(message)
        cursor = _Cursor()
        sent_session = self.session_id
        try:
            async with client.stream(
                "POST",
                self.url,
                content=body,
                headers=headers,
                timeout=self._stream_timeout(),
            ) as response:
                if response.status_code == 202:
                    return
                if response.status_code == 404 and sent_session is not None:
                    if request_id is None:
                        # A notification or an answer: nothing waits for it, and the
                        # connection is not lost. The next request meets the same 404
                        # and the session is set up again then.
                        logger.info(
                            "session expired; dropped %s", message.get("method") or "an answer"
                        )
                        return
                    if self.session_id == sent_session:
                        self.session_id = None
                    await self._fail(
                        incoming,
                        request_id,
                        "the server ended the session (HTTP 404)",
                        {"reason": SESSION_EXPIRED},
                    )
                    return
                content_type = response.headers.get("content-type", "")
                new_session = response.headers.get(SESSION_HEADER)
                if new_session is not None and response.is_success:
                    self.session_id = new_session
                opens_session = message.get("method") == "initialize" and response.is_success
                if content_type.startswith("text/event-stream") and response.is_success:
                    answered = await self._read_sse(response, request_id, incoming, cursor)
                    if not answered and request_id is not None:
                        tg.start_soon(self._resume, client, request_id, incoming, cursor)
                    elif opens_session:
                        # Now the version is known, so the GET stream can carry it too.
                        tg.start_soon(self._listen_standalone, client, incoming)
                    return
                raw = await response.aread()
                if not raw:
                    if request_id is not None:
                        await self._fail(incoming, request_id, f"HTTP {response.status_code}")
                    return
                envelope = decode(raw)
                answer = as_object(envelope.message) if isinstance(envelope, Envelope) else None
                if answer is not None and request_id is not None and answer.get("id") is None:
                    answer = {**answer, "id": request_id}  # an HTTP-level error for this request
                if answer is None:
                    reason = f"HTTP {response.status_code} with a body that is not JSON-RPC"
                    await self._fail(incoming, request_id, reason)
                    return
                self._note_version(answer)
                await incoming.send(Envelope(answer))
                if opens_session:
                    tg.start_soon(self._listen_standalone, client, incoming)
        except httpx2.HTTPError as exc:
            await self._fail(incoming, request_id, f"HTTP request failed: {exc!r}")
            await incoming.send(exc)

    def _note_version(self, message: JSONObject) -> None:
        result = as_object(message.get("result"))
        if result is not None and isinstance(result.get("protocolVersion"), str):
            self.protocol_version = result["protocolVersion"]

    async def _read_sse(
        self,
        response: httpx2.Response,
        request_id: object,
        incoming: ObjectSendStream[Envelope | Exception],
        cursor: _Cursor,
    ) -> bool:
        """Forward a stream's messages; return whether the answer to ``request_id`` came.

        The stream is read to its end even after the answer (the server closes it right
        then), so the connection goes back to the pool instead of being thrown away.
        """
        parser = EventParser()
        answered = False
        try:
            async for line in response.aiter_lines():
                event = parser.feed(line.rstrip("\r"))
                if event is None:
                    continue
                if event.event_id is not None:
                    cursor.last_event_id = event.event_id
                if event.retry_ms is not None:
                    cursor.retry_seconds = event.retry_ms / 1000
                if not event.data:
                    continue
                envelope = decode(event.data)
                await incoming.send(envelope)
                if isinstance(envelope, Envelope):
                    message = as_object(envelope.message) or {}
                    self._note_version(message)
                    if (
                        request_id is not None
                        and message.get("id") == request_id
                        and ("result" in message or "error" in message)
                    ):
                        answered = True
        except httpx2.HTTPError as exc:
            if not answered:
                logger.info("SSE stream broke (%r); will resume if possible", exc)
        return answered

    async def _resume(
        self,
        client: httpx2.AsyncClient,
        request_id: object,
        incoming: ObjectSendStream[Envelope | Exception],
        cursor: _Cursor,
    ) -> None:
        """Reconnect a broken response stream with ``Last-Event-ID`` until it answers."""
        for _ in range(_MAX_RECONNECTS):
            last_event_id = cursor.last_event_id
            if last_event_id is None:
                break
            await anyio.sleep(cursor.retry_seconds)
            headers = {**self._headers(accept="text/event-stream"), "last-event-id": last_event_id}
            try:
                async with client.stream(
                    "GET",
                    self.url,
                    headers=headers,
                    timeout=httpx2.Timeout(self.timeout, read=None),
                ) as response:
                    if not response.is_success:
                        break
                    if await self._read_sse(response, request_id, incoming, cursor):
                        return
            except httpx2.HTTPError:
                continue
        await self._fail(incoming, request_id, "the response stream broke and could not be resumed")

    async def _listen_standalone(
        self, client: httpx2.AsyncClient, incoming: ObjectSendStream[Envelope | Exception]
    ) -> None:
        """The GET stream: server messages not tied to a request. Optional for servers."""
        headers = self._headers(accept="text/event-stream")
        try:
            async with client.stream(
                "GET", self.url, headers=headers, timeout=self._stream_timeout()
            ) as response:
                if response.is_success:
                    await self._read_sse(response, None, incoming, _Cursor())
        except httpx2.HTTPError as exc:
            logger.debug("standalone SSE stream ended: %r", exc)

    async def _fail(
        self,
        incoming: ObjectSendStream[Envelope | Exception],
        request_id: object,
        reason: str,
        data: Any = None,
    ) -> None:
        if request_id is None:
            await incoming.send(ConnectionClosedError(reason, data))
            return
        error: JSONObject = {"code": CONNECTION_CLOSED, "message": f"Connection failed: {reason}."}
        if data is not None:
            error["data"] = data
        await incoming.send(Envelope({"jsonrpc": "2.0", "id": request_id, "error": error}))

    async def _terminate(self, client: httpx2.AsyncClient) -> None:
        """End the session on the server (DELETE); a server may refuse with 405."""
        if self.session_id is None:
            return
        with anyio.move_on_after(5):
            try:
                await client.delete(self.url, headers=self._headers())
            except httpx2.HTTPError as exc:
                logger.debug("DELETE of the session failed: %r", exc)
        self.session_id = None


@dataclass(slots=True)
class _Cursor:
    """Where one SSE stream got to, for resuming it."""

    last_event_id: str | None = None
    retry_seconds: float = _DEFAULT_RETRY_SECONDS
