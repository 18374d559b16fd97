"""Floors: a minimal hand-written JSON-RPC echo over each transport.

The same ``tools/call`` request and result shapes as the MCP scenarios, with nothing but
``json`` and the transport in between, so the table shows how close to the limit an MCP
implementation gets. Each ``*_floor`` yields a list of ``Call``s (one per client).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncGenerator
from contextlib import AsyncExitStack, asynccontextmanager
from typing import Any

import anyio
from anyio.streams.buffered import BufferedByteReceiveStream

from benchmarks.clients import ECHO_TEXT
from benchmarks.measure import Call
from benchmarks.procs import ROOT, server_script

_SEPARATORS = (",", ":")


def _message(request_id: int) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": ECHO_TEXT}},
    }


def _request(request_id: int) -> str:
    return json.dumps(_message(request_id), separators=_SEPARATORS)


def _check_message(message: dict[str, Any], request_id: int) -> None:
    if message["id"] != request_id or message["result"]["content"][0]["text"] != ECHO_TEXT:
        raise RuntimeError(f"floor echo answered {message!r}")


def _check(raw: str | bytes, request_id: int) -> None:
    _check_message(json.loads(raw), request_id)


@asynccontextmanager
async def inproc_floor() -> AsyncGenerator[Call, None]:
    """A client and an echo server task joined by anyio memory streams of JSON-RPC dicts.

    Dicts, not JSON text: in-process, both implementations pass message objects too.
    """
    to_server = anyio.create_memory_object_stream[dict[str, Any]](16)
    to_client = anyio.create_memory_object_stream[dict[str, Any]](16)

    async def serve() -> None:
        async for request in to_server[1]:
            text = request["params"]["arguments"]["text"]
            await to_client[0].send(
                {
                    "jsonrpc": "2.0",
                    "id": request["id"],
                    "result": {"content": [{"type": "text", "text": text}], "isError": False},
                }
            )

    next_id = 0

    async def call() -> None:
        nonlocal next_id
        next_id += 1
        await to_server[0].send(_message(next_id))
        _check_message(await to_client[1].receive(), next_id)

    async with anyio.create_task_group() as tg:
        tg.start_soon(serve)
        yield call
        to_server[0].close()


@asynccontextmanager
async def stdio_floor() -> AsyncGenerator[Call, None]:
    """A client writing JSON lines to ``floor_stdio.py``'s stdin, reading its stdout."""
    async with await anyio.open_process(
        [sys.executable, server_script("floor_stdio")], cwd=ROOT, env=dict(os.environ), stderr=None
    ) as process:
        assert process.stdin is not None
        assert process.stdout is not None
        stdin = process.stdin
        reader = BufferedByteReceiveStream(process.stdout)
        next_id = 0

        async def call() -> None:
            nonlocal next_id
            next_id += 1
            await stdin.send(_request(next_id).encode() + b"\n")
            _check(await reader.receive_until(b"\n", 1 << 20), next_id)

        yield call
        await stdin.aclose()


@asynccontextmanager
async def http_floor(url: str, clients: int = 1) -> AsyncGenerator[list[Call], None]:
    """``clients`` httpx2 clients POSTing JSON-RPC to ``floor_http.py``."""
    import httpx2

    async with AsyncExitStack() as stack:
        calls: list[Call] = []
        for _ in range(clients):
            http = await stack.enter_async_context(httpx2.AsyncClient())
            calls.append(_http_call(http, url))
        yield calls


def _http_call(http: Any, url: str) -> Call:
    next_id = 0
    headers = {"content-type": "application/json", "accept": "application/json"}

    async def call() -> None:
        nonlocal next_id
        next_id += 1
        response = await http.post(url, content=_request(next_id), headers=headers)
        _check(response.content, next_id)

    return call
