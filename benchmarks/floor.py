"""Floors: a minimal hand-written MCP client and server over each transport.

The same ``tools/call`` requests and results as the MCP scenarios (``echo``, and ``ask``
with its question and answer), with nothing but ``json`` and the transport in between,
so the table shows how close to the limit an MCP implementation gets. The servers are in
``benchmarks/servers`` (``floor_protocol.py`` says what they answer); this module is the
client side, plus the in-process server's loop.

A sequential caller reads the replies in the order they must come, in its own task. For
many calls at once on one connection (in-process, stdio) a reader task answers the
server's questions as they come and hands each result to the call waiting on its id.
Over HTTP every call is its own POST, so calls are independent anyway.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import secrets
import sys
from collections.abc import AsyncGenerator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Literal, Protocol

import anyio
import httpx2
from anyio.abc import ByteReceiveStream, ByteSendStream
from anyio.streams.buffered import BufferedByteReceiveStream
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from benchmarks.clients import ANSWER_NAME, ECHO_TEXT, GREETING, Mode, Transport
from benchmarks.measure import Call
from benchmarks.procs import ROOT, server_script
from benchmarks.servers.floor_protocol import (
    MODERN,
    VERSION_META,
    FloorServer,
    Message,
    dumps,
    response,
)

CallKind = Literal["echo", "elicit"]

_CLIENT_META: Message = {
    VERSION_META: MODERN,
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    "io.modelcontextprotocol/clientInfo": {"name": "floor", "version": "0"},
}
"""What every 2026-07-28 request carries in ``_meta`` (version and capabilities are required)."""
_ANSWER: Message = {"action": "accept", "content": {"name": ANSWER_NAME}}
_LEGACY_VERSION = "2025-11-25"


def _tool(call: CallKind) -> str:
    return "echo" if call == "echo" else "ask"


def _expected(call: CallKind) -> str:
    return ECHO_TEXT if call == "echo" else GREETING


def _call_request(request_id: int, call: CallKind, *, modern: bool) -> Message:
    params: Message = {
        "name": _tool(call),
        "arguments": {"text": ECHO_TEXT} if call == "echo" else {},
    }
    if modern:
        params["_meta"] = _CLIENT_META
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def _retry_request(request_id: int, first: Message, reply: Message) -> Message:
    """The 2026-07-28 retry of ``first``: an answer to every input request, the state back."""
    result = reply.get("result", {})
    if reply.get("id") != first["id"] or result.get("resultType") != "input_required":
        raise RuntimeError(f"floor: expected an InputRequiredResult, got {reply!r}")
    params = {
        **first["params"],
        "inputResponses": dict.fromkeys(result["inputRequests"], _ANSWER),
        "requestState": result["requestState"],
    }
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def _answer(question: Message) -> Message:
    """The client's reply to the server's ``elicitation/create``: accept, with a name."""
    if question.get("method") != "elicitation/create":
        raise RuntimeError(f"floor: expected an elicitation/create request, got {question!r}")
    return response(question["id"], _ANSWER)


def _check(reply: Message, request_id: int, expected: str) -> None:
    if reply.get("id") != request_id or reply["result"]["content"][0]["text"] != expected:
        raise RuntimeError(f"floor: call {request_id} answered {reply!r}, expected {expected!r}")


class _Channel(Protocol):
    """One connection's JSON-RPC messages, in each direction."""

    async def send(self, message: Message) -> None: ...

    async def receive(self) -> Message: ...


class _MemoryChannel:
    """Dicts over anyio memory streams: in-process, both libraries pass message objects too."""

    def __init__(
        self,
        outgoing: MemoryObjectSendStream[Message],
        incoming: MemoryObjectReceiveStream[Message],
    ) -> None:
        self._outgoing = outgoing
        self._incoming = incoming

    async def send(self, message: Message) -> None:
        await self._outgoing.send(message)

    async def receive(self) -> Message:
        return await self._incoming.receive()


class _LineChannel:
    """JSON lines over a subprocess's stdin and stdout."""

    def __init__(self, stdin: ByteSendStream, stdout: ByteReceiveStream) -> None:
        self._stdin = stdin
        self._stdout = BufferedByteReceiveStream(stdout)

    async def send(self, message: Message) -> None:
        await self._stdin.send(dumps(message).encode() + b"\n")

    async def receive(self) -> Message:
        return json.loads(await self._stdout.receive_until(b"\n", 1 << 20))


def _sequential(channel: _Channel, call: CallKind, *, modern: bool) -> Call:
    """One caller at a time: send, then read each reply in the order it must come."""
    ids = itertools.count(1)
    expected = _expected(call)

    async def one_call() -> None:
        request = _call_request(next(ids), call, modern=modern)
        await channel.send(request)
        reply = await channel.receive()
        if call == "elicit":
            if modern:
                request = _retry_request(next(ids), request, reply)
                await channel.send(request)
            else:
                await channel.send(_answer(reply))
            reply = await channel.receive()
        _check(reply, request["id"], expected)

    return one_call


class _Reply:
    def __init__(self) -> None:
        self.arrived = anyio.Event()
        self.message: Message = {}


class _Router:
    """Many calls in flight on one channel: the reader answers each question at once and
    hands every response to the call waiting on its id."""

    def __init__(self, channel: _Channel) -> None:
        self._channel = channel
        self._waiting: dict[int, _Reply] = {}
        self._writing = anyio.Lock(fast_acquire=True)
        """One message at a time on the channel: the reader answers while calls send."""

    async def read(self) -> None:
        """Until the channel ends (or the task is cancelled)."""
        while True:
            message = await self._channel.receive()
            if "method" in message:
                await self._send(_answer(message))
                continue
            reply = self._waiting.pop(message["id"])
            reply.message = message
            reply.arrived.set()

    async def request(self, message: Message) -> Message:
        reply = self._waiting[message["id"]] = _Reply()
        await self._send(message)
        await reply.arrived.wait()
        return reply.message

    async def _send(self, message: Message) -> None:
        async with self._writing:
            await self._channel.send(message)

    def call(self, call: CallKind, *, modern: bool) -> Call:
        ids = itertools.count(1)
        expected = _expected(call)

        async def one_call() -> None:
            request = _call_request(next(ids), call, modern=modern)
            reply = await self.request(request)
            if call == "elicit" and modern:
                request = _retry_request(next(ids), request, reply)
                reply = await self.request(request)
            _check(reply, request["id"], expected)

        return one_call


@asynccontextmanager
async def _over(
    channel: _Channel, call: CallKind, mode: Mode, routed: bool
) -> AsyncGenerator[Call, None]:
    """The ``Call`` for ``channel``: sequential, or routed by a reader task."""
    modern = mode != "legacy"
    if not routed:
        yield _sequential(channel, call, modern=modern)
        return
    router = _Router(channel)
    async with anyio.create_task_group() as tg:
        tg.start_soon(router.read)
        yield router.call(call, modern=modern)
        tg.cancel_scope.cancel()


@asynccontextmanager
async def inproc_floor(
    call: CallKind, mode: Mode, *, routed: bool = False
) -> AsyncGenerator[Call, None]:
    """A client and a ``FloorServer`` task joined by anyio memory streams of dicts.

    Each side awaits ``send()`` and ``receive()`` on its stream (see the README's note on
    what that costs). The buffers are unbounded so that many calls in flight never block
    the reader that would drain them.
    """
    to_server_send, to_server = anyio.create_memory_object_stream[Message](math.inf)
    to_client, to_client_receive = anyio.create_memory_object_stream[Message](math.inf)
    server = FloorServer(secrets.token_bytes(32))

    async def serve() -> None:
        async for message in to_server:
            await to_client.send(server.handle(message))

    async with anyio.create_task_group() as tg:
        tg.start_soon(serve)
        async with _over(
            _MemoryChannel(to_server_send, to_client_receive), call, mode, routed
        ) as c:
            yield c
        to_server_send.close()


@asynccontextmanager
async def stdio_floor(
    call: CallKind, mode: Mode, *, routed: bool = False
) -> AsyncGenerator[Call, None]:
    """A client writing JSON lines to ``floor_stdio.py``'s stdin, reading its stdout."""
    async with await anyio.open_process(
        [sys.executable, server_script("floor_stdio")], cwd=ROOT, env=dict(os.environ), stderr=None
    ) as process:
        assert process.stdin is not None
        assert process.stdout is not None
        async with _over(_LineChannel(process.stdin, process.stdout), call, mode, routed) as c:
            yield c
        await process.stdin.aclose()


_CALLS_PER_POOL = 64
"""Calls one httpx2 connection pool carries at once: httpcore looks at every connection
of a pool for each request it places, so a burst is spread over several small pools (as
answerback's client does) rather than slowed by one big one."""
_ATTEMPTS = 3


class _Http:
    """POSTs to the floor server over a round robin of small httpx2 pools.

    No connection limit: each legacy ask holds its stream open while its answer is POSTed
    on another connection. A POST that meets a kept-alive connection the server has just
    closed (uvicorn closes one idle for 5 s, and a client busy with a thousand calls may
    pick it up that late) is sent again on another, as browsers do.
    """

    def __init__(self, url: str, pools: list[httpx2.AsyncClient]) -> None:
        self.url = url
        self._next_pool = itertools.cycle(pools).__next__

    async def post(self, body: str, headers: dict[str, str]) -> httpx2.Response:
        return await self._send(body, headers, stream=False)

    @asynccontextmanager
    async def stream(
        self, body: str, headers: dict[str, str]
    ) -> AsyncGenerator[httpx2.Response, None]:
        response = await self._send(body, headers, stream=True)
        try:
            yield response
        finally:
            await response.aclose()

    async def _send(self, body: str, headers: dict[str, str], *, stream: bool) -> httpx2.Response:
        for _ in range(_ATTEMPTS - 1):
            http = self._next_pool()
            request = http.build_request("POST", self.url, content=body, headers=headers)
            try:
                return await http.send(request, stream=stream)
            except (httpx2.NetworkError, httpx2.RemoteProtocolError):
                continue
        http = self._next_pool()
        request = http.build_request("POST", self.url, content=body, headers=headers)
        return await http.send(request, stream=stream)


@asynccontextmanager
async def http_floor(
    url: str,
    call: CallKind,
    mode: Mode,
    clients: int = 1,
    *,
    calls_at_once: int = 1,
) -> AsyncGenerator[list[Call], None]:
    """``clients`` clients calling ``floor_http.py``: each its own legacy session, or
    stateless 2026-07-28 requests, and enough httpx2 pools for ``calls_at_once``."""
    limits = httpx2.Limits(max_connections=None)
    async with AsyncExitStack() as stack:
        calls: list[Call] = []
        for _ in range(clients):
            pools = [
                await stack.enter_async_context(httpx2.AsyncClient(limits=limits, timeout=60.0))
                for _ in range(-(-calls_at_once // _CALLS_PER_POOL))
            ]
            http = _Http(url, pools)
            if mode == "legacy":
                headers = await stack.enter_async_context(_legacy_session(pools[0], url))
                calls.append(_legacy_http_call(http, headers, call))
            else:
                calls.append(_modern_http_call(http, call))
        yield calls


@asynccontextmanager
async def _legacy_session(
    http: httpx2.AsyncClient, url: str
) -> AsyncGenerator[dict[str, str], None]:
    """``initialize`` and ``notifications/initialized``; yields the session's headers;
    ends the session with a DELETE."""
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    initialize: Message = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": _LEGACY_VERSION,
            "capabilities": {"elicitation": {"form": {}}},
            "clientInfo": {"name": "floor", "version": "0"},
        },
    }
    opened = await http.post(url, content=dumps(initialize), headers=headers)
    opened.raise_for_status()
    headers = {
        **headers,
        "mcp-session-id": opened.headers["mcp-session-id"],
        "mcp-protocol-version": _LEGACY_VERSION,
    }
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    (await http.post(url, content=dumps(initialized), headers=headers)).raise_for_status()
    try:
        yield headers
    finally:
        await http.delete(url, headers=headers)


def _legacy_http_call(http: _Http, headers: dict[str, str], call: CallKind) -> Call:
    """``echo`` is one POST answered with JSON; ``ask`` reads its SSE stream, POSTs the
    answer to the question it carries, and ends with the result on that stream."""
    ids = itertools.count(1)
    expected = _expected(call)

    async def echo() -> None:
        request = _call_request(next(ids), call, modern=False)
        reply = await http.post(dumps(request), headers)
        _check(json.loads(reply.content), request["id"], expected)

    async def ask() -> None:
        request = _call_request(next(ids), call, modern=False)
        result: Message = {}
        async with http.stream(dumps(request), headers) as stream:
            # Read on to the end of the stream (the server ends it after the result), so
            # its connection goes back to the pool instead of being closed.
            async for line in stream.aiter_lines():
                if not line.startswith("data:"):
                    continue
                message = json.loads(line[5:])
                if "method" not in message:
                    result = message
                    continue
                answered = await http.post(dumps(_answer(message)), headers)
                if answered.status_code != 202:
                    raise RuntimeError(f"floor: answer refused with {answered.status_code}")
        _check(result, request["id"], expected)

    return echo if call == "echo" else ask


def _modern_http_call(http: _Http, call: CallKind) -> Call:
    """2026-07-28: each round a JSON POST with the ``Mcp-*`` headers; ``ask`` takes two."""
    ids = itertools.count(1)
    expected = _expected(call)
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": MODERN,
        "mcp-method": "tools/call",
        "mcp-name": _tool(call),
    }

    async def post(request: Message) -> Message:
        return json.loads((await http.post(dumps(request), headers)).content)

    async def one_call() -> None:
        request = _call_request(next(ids), call, modern=True)
        reply = await post(request)
        if call == "elicit":
            request = _retry_request(next(ids), request, reply)
            reply = await post(request)
        _check(reply, request["id"], expected)

    return one_call


@asynccontextmanager
async def floor_calls(
    transport: Transport,
    call: CallKind,
    mode: Mode,
    *,
    url: str | None = None,
    clients: int = 1,
    calls_at_once: int = 1,
) -> AsyncGenerator[list[Call], None]:
    """The floor's ``Call``s for a scenario: one per client (several only over HTTP),
    each ready for ``calls_at_once`` calls at a time."""
    routed = calls_at_once > 1
    if transport == "inproc":
        async with inproc_floor(call, mode, routed=routed) as one:
            yield [one]
    elif transport == "stdio":
        async with stdio_floor(call, mode, routed=routed) as one:
            yield [one]
    else:
        assert url is not None
        async with http_floor(url, call, mode, clients, calls_at_once=calls_at_once) as calls:
            yield calls
