"""The worst load balancer a scaled-out server can meet, inside the client.

``ReplicaRouter`` is an httpx2 transport for answerback's own ``StreamableHTTPTransport``
(``http_client=httpx2.AsyncClient(transport=router)``) that sends every HTTP request to a
replica of its choosing, so that nothing a replica keeps in its own memory can help:

- requests rotate over the live replicas (so ``initialize`` lands on A, the next call on
  B, the one after on C);
- the owner of a call is the replica that received the call's POST, for as long as the
  call has no answer on any stream; answers to the server's questions, cancellations
  and the ``Last-Event-ID`` GET that resumes a broken stream never go to an owner of a
  call in flight in that session (answers to the first other replica, resumes to the
  last, so with three replicas they go to different ones);
- a 2026-07-28 retry (a ``tools/call`` carrying ``requestState``) goes to another
  replica than the round before it, or to ``retry_to`` when a test sets it;
- with ``drop_after_question`` a legacy ``tools/call`` response stream breaks right
  after it has delivered a question, so the client must resume it elsewhere.

Every decision is recorded in ``routes`` for the test to check.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Self, cast

import anyio
import httpx2

from answerback.transports.http import StreamableHTTPTransport

Kind = Literal[
    "initialize", "request", "retry", "notification", "answer", "listen", "resume", "delete"
]
AVOIDS_OWNERS: frozenset[Kind] = frozenset({"answer", "resume"})
SESSION_HEADER = "mcp-session-id"


@dataclass(frozen=True, slots=True)
class Route:
    """Where one HTTP request went, and which replicas owned calls of its session then."""

    kind: Kind
    replica: int
    method: str | None
    session: str | None
    owners: frozenset[int]


class ReplicaRouter(httpx2.AsyncBaseTransport):
    """Picks the replica for each request (see the module docstring)."""

    def __init__(self, ports: Sequence[int], *, drop_after_question: bool = False) -> None:
        self.ports = list(ports)
        self.drop_after_question = drop_after_question
        self.down: set[int] = set()
        """Replicas a test has killed: nothing more is sent there."""
        self.retry_to: int | None = None
        self.requests_to: int | None = None
        """Send every request (but retries) here instead of rotating."""
        self.listen_on: int | None = None
        """Open the standalone GET stream here instead of rotating."""
        self.listening = anyio.Event()
        """Set once the standalone GET stream has its response headers."""
        self.routes: list[Route] = []
        self._inner = httpx2.AsyncHTTPTransport(limits=httpx2.Limits(max_connections=None))
        self._turn = 0
        self._other_turn = 0
        self._owners: dict[tuple[str | None, Any], int] = {}
        """(session, request id) -> the replica that got the request's POST, until its
        answer has been seen on some stream."""
        self._last_modern_call: int | None = None

    def live(self) -> list[int]:
        return [index for index in range(len(self.ports)) if index not in self.down]

    def routed(self, kind: Kind) -> list[Route]:
        return [route for route in self.routes if route.kind == kind]

    def to_owners(self) -> list[Route]:
        """Answers and resumes that reached a replica owning a call of their session
        (the router only does that when every live replica owns one)."""
        return [r for r in self.routes if r.kind in AVOIDS_OWNERS and r.replica in r.owners]

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        message = _message_of(request)
        kind = _kind_of(request, message)
        session = request.headers.get(SESSION_HEADER)
        owners = frozenset(r for (s, _), r in self._owners.items() if s == session)
        replica = self._choose(kind, owners)
        method = message.get("method") if message else None
        self.routes.append(Route(kind, replica, cast(str | None, method), session, owners))
        port = self.ports[replica]
        request.url = request.url.copy_with(port=port)
        request.headers["host"] = f"127.0.0.1:{port}"
        request_id = message.get("id") if message else None
        if kind in ("initialize", "request", "retry") and request_id is not None:
            self._owners[(session, request_id)] = replica
        if method == "tools/call" and _is_modern(request):
            self._last_modern_call = replica
        response = await self._inner.handle_async_request(request)
        if kind == "listen":
            self.listening.set()
        drop = self.drop_after_question and method == "tools/call" and not _is_modern(request)
        assert isinstance(response.stream, httpx2.AsyncByteStream)
        response.stream = _Watched(response.stream, self._watcher(session, drop))
        return response

    def _choose(self, kind: Kind, owners: frozenset[int]) -> int:
        live = self.live()
        if not live:
            raise httpx2.ConnectError("every replica is down")
        if kind in AVOIDS_OWNERS:
            others = [index for index in live if index not in owners] or live
            return others[0] if kind == "answer" else others[-1]
        if kind == "retry":
            if self.retry_to is not None:
                return self.retry_to
            others = [index for index in live if index != self._last_modern_call] or live
            return others[0]
        if kind in ("initialize", "request"):
            if self.requests_to is not None:
                return self.requests_to
            choice = live[self._turn % len(live)]
            self._turn += 1
            return choice
        if kind == "listen" and self.listen_on is not None:
            return self.listen_on
        choice = live[self._other_turn % len(live)]
        self._other_turn += 1
        return choice

    def _watcher(self, session: str | None, drop: bool) -> Callable[[dict[str, Any]], bool]:
        """What to do with each message a response carries: an answer ends its call's
        ownership; a question breaks the stream when ``drop`` says so (once)."""
        dropped = False

        def watch(message: dict[str, Any]) -> bool:
            nonlocal dropped
            if "method" not in message and ("result" in message or "error" in message):
                self._owners.pop((session, message.get("id")), None)
                return False
            if drop and not dropped and "method" in message and "id" in message:
                dropped = True
                return True
            return False

        return watch

    async def aclose(self) -> None:
        await self._inner.aclose()


class _Watched(httpx2.AsyncByteStream):
    """A response body passed through unchanged while its SSE messages are watched; a
    ``ReadError`` right after a message the watcher wants the stream broken at."""

    def __init__(
        self, inner: httpx2.AsyncByteStream, watch: Callable[[dict[str, Any]], bool]
    ) -> None:
        self._inner = inner
        self._watch = watch
        self._chunks: Any = None
        self._buffer = b""
        self._broken = False

    def __aiter__(self) -> Self:
        self._chunks = self._inner.__aiter__()
        return self

    async def __anext__(self) -> bytes:
        if self._broken:
            raise httpx2.ReadError("the test router dropped this stream after a question")
        chunk = cast(bytes, await self._chunks.__anext__())
        self._buffer = (self._buffer + chunk).replace(b"\r\n", b"\n")
        *events, self._buffer = self._buffer.split(b"\n\n")
        for event in events:
            message = _event_message(event)
            if message is not None and self._watch(message):
                self._broken = True
        return chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


def _event_message(event: bytes) -> dict[str, Any] | None:
    data = [line[5:].lstrip() for line in event.split(b"\n") if line.startswith(b"data:")]
    if not data:
        return None
    try:
        value = json.loads(b"\n".join(data))
    except ValueError:
        return None
    return cast(dict[str, Any], value) if isinstance(value, dict) else None


def _message_of(request: httpx2.Request) -> dict[str, Any] | None:
    if request.method != "POST":
        return None
    try:
        value = json.loads(request.content)
    except ValueError:
        return None
    return cast(dict[str, Any], value) if isinstance(value, dict) else None


def _is_modern(request: httpx2.Request) -> bool:
    return request.headers.get("mcp-protocol-version", "") >= "2026"


def _kind_of(request: httpx2.Request, message: dict[str, Any] | None) -> Kind:
    if request.method == "GET":
        return "resume" if "last-event-id" in request.headers else "listen"
    if request.method == "DELETE":
        return "delete"
    message = message or {}
    method = message.get("method")
    if method is None:
        return "answer"
    if "id" not in message:
        # A cancellation travels to the call's owner through the message bus, like an answer.
        return "answer" if method == "notifications/cancelled" else "notification"
    if method == "initialize":
        return "initialize"
    params = message.get("params")
    if isinstance(params, dict) and "requestState" in params:
        return "retry"
    return "request"


def routed_transport(
    router: ReplicaRouter, http: httpx2.AsyncClient, replica: int = 0
) -> StreamableHTTPTransport:
    """answerback's own HTTP transport, its requests placed by ``router`` (the URL's
    port is replaced per request; ``replica`` only names the first address)."""
    return StreamableHTTPTransport(
        f"http://127.0.0.1:{router.ports[replica]}/mcp", http_client=http
    )
