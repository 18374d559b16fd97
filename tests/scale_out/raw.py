"""A legacy session driven by hand, one HTTP request at a time, to any replica.

The refusal cases (a duplicate, forged or late answer; an answer under another
session's id) need what no well-behaved client sends, so they are written here as
plain JSON-RPC over httpx2: ``RawSession`` knows the session id and version headers and
reads an SSE response message by message.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Sequence
from contextlib import asynccontextmanager
from typing import Any, cast

import httpx2

LEGACY_VERSION = "2025-11-25"
POST_HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
}


def answer(question_id: Any, name: str = "Ada") -> dict[str, Any]:
    """An accepting answer to the ``ask_name`` question ``question_id``."""
    result = {"action": "accept", "content": {"name": name}}
    return {"jsonrpc": "2.0", "id": question_id, "result": result}


class MessageStream:
    """The JSON-RPC messages of one SSE response, in order."""

    def __init__(self, response: httpx2.Response) -> None:
        self._chunks = response.aiter_bytes()
        self._buffer = b""
        self._ready: list[dict[str, Any]] = []
        self._json = response.headers.get("content-type", "").startswith("application/json")
        """A server may answer a request as one JSON body instead of a stream."""

    async def next(self) -> dict[str, Any]:
        """The next message (priming events without data are skipped)."""
        if self._json:
            self._json = False
            return cast(dict[str, Any], json.loads(b"".join([c async for c in self._chunks])))
        while not self._ready:
            chunk = await self._chunks.__anext__()
            self._buffer = (self._buffer + chunk).replace(b"\r\n", b"\n")
            *events, self._buffer = self._buffer.split(b"\n\n")
            for event in events:
                data = [
                    line[5:].lstrip() for line in event.split(b"\n") if line.startswith(b"data:")
                ]
                if data and any(data):
                    self._ready.append(cast(dict[str, Any], json.loads(b"\n".join(data))))
        return self._ready.pop(0)

    async def question(self) -> dict[str, Any]:
        """The next server request on the stream (skipping notifications)."""
        for _ in range(100):
            message = await self.next()
            if "method" in message and "id" in message:
                return message
        raise AssertionError("no server request among the first 100 messages")

    async def answer_to(self, request_id: Any) -> dict[str, Any]:
        """The response to our request ``request_id`` (skipping anything before it)."""
        for _ in range(100):
            message = await self.next()
            if "method" not in message and message.get("id") == request_id:
                return message
        raise AssertionError(f"no answer to {request_id!r} among the first 100 messages")


class RawSession:
    """One legacy session, each request sent to the replica URL the test names."""

    def __init__(self, http: httpx2.AsyncClient, urls: Sequence[str]) -> None:
        self.http = http
        self.urls = list(urls)
        self.session_id: str | None = None
        self.extra_headers: dict[str, str] = {}
        """Sent with every request (credentials)."""
        self._next_id = 0

    def headers(self, session_id: str | None = None) -> dict[str, str]:
        """POST headers; ``session_id`` overrides this session's own id."""
        headers = {**POST_HEADERS, "mcp-protocol-version": LEGACY_VERSION, **self.extra_headers}
        chosen = session_id or self.session_id
        if chosen is not None:
            headers["mcp-session-id"] = chosen
        return headers

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self._next_id, "method": method}
        if params is not None:
            message["params"] = params
        return message

    async def post(
        self, replica: int, message: dict[str, Any], *, session_id: str | None = None
    ) -> httpx2.Response:
        """POST ``message`` to ``replica`` and read the whole response."""
        return await self.http.post(
            self.urls[replica], content=json.dumps(message), headers=self.headers(session_id)
        )

    async def initialize(self, replica: int) -> dict[str, Any]:
        """Open the session on ``replica`` (declaring form elicitation), as a client does."""
        params: dict[str, Any] = {
            "protocolVersion": LEGACY_VERSION,
            "capabilities": {"elicitation": {"form": {}}},
            "clientInfo": {"name": "raw-scale-out-test", "version": "1"},
        }
        message = self.request("initialize", params)
        async with self.http.stream(
            "POST", self.urls[replica], content=json.dumps(message), headers=self.headers()
        ) as response:
            assert response.status_code == 200, await response.aread()
            self.session_id = response.headers["mcp-session-id"]
            if response.headers.get("content-type", "").startswith("text/event-stream"):
                result = await MessageStream(response).answer_to(message["id"])
            else:
                result = cast(dict[str, Any], json.loads(await response.aread()))
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        sent = await self.post((replica + 1) % len(self.urls), initialized)
        assert sent.status_code == 202, sent.text
        return result

    @asynccontextmanager
    async def call(
        self, replica: int, tool: str, arguments: dict[str, Any] | None = None
    ) -> AsyncGenerator[tuple[dict[str, Any], MessageStream], None]:
        """POST a ``tools/call`` to ``replica``; yield the request and its message stream."""
        message = self.request("tools/call", {"name": tool, "arguments": arguments or {}})
        async with self.http.stream(
            "POST", self.urls[replica], content=json.dumps(message), headers=self.headers()
        ) as response:
            assert response.status_code == 200, await response.aread()
            yield message, MessageStream(response)


def error_of(response: httpx2.Response) -> dict[str, Any]:
    """The JSON-RPC error a refused POST carries (fails the test if there is none)."""
    body = cast(dict[str, Any], response.json())
    assert "error" in body, body
    return cast(dict[str, Any], body["error"])
