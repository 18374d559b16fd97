"""Helpers for the streamable HTTP tests: real uvicorn servers on loopback, raw SSE.

``serve(app)`` runs an ASGI app under uvicorn on a port the OS picks, so nothing races
for a "free" port: inside the test's own event loop on asyncio, and in a thread with an
asyncio loop of its own on trio (uvicorn runs only on asyncio). ``serve_process(argv)`` starts a
server program (ours, the official SDK's, or the TypeScript reference server) on a free
port and waits until it accepts connections. ``read_events`` parses a raw SSE response.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
import os
import queue
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Generator,
    Mapping,
    Sequence,
)
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
import httpx2
import uvicorn
from anyio.abc import Process
from support import ReportingEventLoop, server_object

from answerback import StdioServer
from answerback.server import MCPServer
from answerback.transports.http import StreamableHTTPApp, StreamableHTTPTransport
from answerback.transports.http._sse import EventParser
from answerback.transports.http._uvicorn import uvicorn_server

REPO = Path(__file__).resolve().parents[2]
INTEROP = REPO / "tests" / "interop"
LIBRARY_SERVER = REPO / "examples" / "library_server.py"
EVERYTHING_DIR = REPO / "interop" / "node_modules" / "@modelcontextprotocol" / "server-everything"
EVERYTHING_ENTRY = EVERYTHING_DIR / "dist" / "index.js"

# A safety net so a broken test fails instead of hanging; never a claim about speed.
PATIENCE_SECONDS = 30.0

# What a well-behaved client sends with every POST.
POST_HEADERS = {
    "accept": "application/json, text/event-stream",
    "content-type": "application/json",
}


@dataclass(slots=True)
class RunningServer:
    """A uvicorn server running for a test, in its event loop or in a thread of its own."""

    server: uvicorn.Server
    port: int
    path: str = "/mcp"
    loop: asyncio.AbstractEventLoop | None = None
    """The server's own loop when it runs in a thread (on trio), else ``None``."""

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.path}"

    async def call(self, function: Callable[[], Awaitable[Any]]) -> Any:
        """Run ``await function()`` where the server runs: a test reaching into the
        server's state (``app.close_sessions``...) must do it on the server's loop."""
        loop = self.loop
        if loop is None:
            return await function()

        async def on_server_loop() -> Any:
            return await function()

        # In a fresh context: the caller's says "trio" to anyio, and the coroutine's
        # task would inherit it on the server's asyncio loop.
        future = contextvars.Context().run(asyncio.run_coroutine_threadsafe, on_server_loop(), loop)
        return await anyio.to_thread.run_sync(future.result)


_thread_loops: set[asyncio.AbstractEventLoop] = set()
"""The loops of the servers running in threads right now (for ``running_tasks``)."""


def _on_asyncio() -> bool:
    return isinstance(anyio.lowlevel.current_token().native_token, asyncio.AbstractEventLoop)


@asynccontextmanager
async def serve(
    app: Any, *, path: str = "/mcp", graceful_seconds: float | None = 3.0
) -> AsyncGenerator[RunningServer, None]:
    """Serve ``app`` on 127.0.0.1 (an OS-chosen port) until the block ends.

    A ``StreamableHTTPApp`` runs under answerback's own uvicorn server (which ends MCP
    sessions before waiting on open responses); ``graceful_seconds`` is uvicorn's
    ``timeout_graceful_shutdown``, a safety net (``None`` waits for ever).
    """
    options: dict[str, Any] = {"timeout_graceful_shutdown": graceful_seconds}
    if isinstance(app, StreamableHTTPApp):
        server: uvicorn.Server = uvicorn_server(app, host="127.0.0.1", port=0, **options)
    else:
        config = uvicorn.Config(
            app, host="127.0.0.1", port=0, log_level="warning", lifespan="on", **options
        )
        server = uvicorn.Server(config)
    # The test runner, not uvicorn, owns SIGINT/SIGTERM.
    server.capture_signals = contextlib.nullcontext  # type: ignore[method-assign]
    ready = anyio.Event()
    token = anyio.lowlevel.current_token()
    loops: list[asyncio.AbstractEventLoop] = []
    in_thread = not _on_asyncio()

    async def serve_then_report() -> None:
        # uvicorn's startup either sets ``started`` or gives up (``serve`` returns);
        # either way the test stops waiting, and is woken, not polling.
        startup = server.startup

        async def startup_then_report(sockets: Any = None) -> None:
            await startup(sockets=sockets)
            report()

        server.startup = startup_then_report  # type: ignore[method-assign]
        try:
            # Shielded: a failing test stops the server with ``should_exit`` like a
            # passing one, so uvicorn closes its sockets (cancelled, it would leak them).
            with anyio.CancelScope(shield=True):
                await server.serve()
        finally:
            report()

    def report() -> None:
        if in_thread:
            anyio.from_thread.run_sync(ready.set, token=token)
        else:
            ready.set()

    def serve_in_thread() -> None:
        with asyncio.Runner(loop_factory=ReportingEventLoop) as runner:
            loop = runner.get_loop()
            loops.append(loop)
            _thread_loops.add(loop)
            try:
                runner.run(serve_then_report())
            finally:
                _thread_loops.discard(loop)

    async with anyio.create_task_group() as tg:
        if in_thread:
            tg.start_soon(anyio.to_thread.run_sync, serve_in_thread)
        else:
            tg.start_soon(serve_then_report)
        try:
            with anyio.fail_after(PATIENCE_SECONDS):
                await ready.wait()
            if not server.started:
                raise RuntimeError("uvicorn failed to start")
            port = server.servers[0].sockets[0].getsockname()[1]
            yield RunningServer(server, port, path, loops[0] if in_thread else None)
        finally:
            server.should_exit = True


def free_port() -> int:
    """A port that was free a moment ago (for servers started as subprocesses)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _wait_for_port(port: int, process: subprocess.Popen[bytes], deadline: float) -> None:
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited early with code {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise TimeoutError(f"nothing listens on 127.0.0.1:{port}")


@contextmanager
def serve_process(
    argv: Sequence[str], port: int, *, env: Mapping[str, str] | None = None
) -> Generator[subprocess.Popen[bytes], None, None]:
    """Run a server program that listens on ``port``; stop it when the block ends."""
    process = subprocess.Popen(
        list(argv),
        env={**os.environ, **(env or {})},
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for_port(port, process, time.monotonic() + PATIENCE_SECONDS)
        yield process
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def served_by_answerback(script: Path) -> Generator[str, None, None]:
    """``answerback run SCRIPT --http 0`` in a process of its own, until the block ends:
    the URL it serves, once it listens. A client given the URL waits for no process to
    start, so a short ``--timeout`` measures the server's answers, not Python's start
    (which, on a busy machine, takes longer than one such timeout). Its stderr is read
    to the end by a thread, so a server that logs much never blocks on it."""
    argv = [sys.executable, "-m", "answerback", "run", str(script), "--http", "0"]
    lines: queue.Queue[str] = queue.Queue()
    with subprocess.Popen(
        argv, cwd=REPO, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE, text=True,
    ) as process:  # fmt: skip
        stderr = process.stderr
        assert stderr is not None

        def drain() -> None:
            for line in stderr:
                lines.put(line)
            lines.put("")  # the end: the process closed its stderr

        reader = threading.Thread(target=drain, daemon=True)
        reader.start()
        try:
            said: list[str] = []
            deadline = time.monotonic() + PATIENCE_SECONDS
            while True:
                try:
                    line = lines.get(timeout=max(deadline - time.monotonic(), 0.0))
                except queue.Empty:
                    raise AssertionError(f"{script} did not start: {''.join(said)}") from None
                found = re.search(r"serving MCP at (http://\S+) \(Ctrl-C to stop\)", line)
                if found is not None:
                    break
                said.append(line)
                if not line:  # its stderr ended: it exited
                    raise AssertionError(f"{script} did not start: {''.join(said)}")
            yield found[1]
        finally:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
            reader.join(PATIENCE_SECONDS)  # done reading before the pipe is closed


class Listening(StreamableHTTPTransport):
    """A transport that sends the session id each GET stream listener starts with."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.starts, self.started = anyio.create_memory_object_stream[str | None](10)

    async def _listen_standalone(self, *args: Any) -> None:  # pyright: ignore[reportIncompatibleMethodOverride]
        self.starts.send_nowait(self.session_id)
        await super()._listen_standalone(*args)


def python_server(script: Path, *args: str) -> list[str]:
    return [sys.executable, str(script), *args]


async def read_request_body(receive: Callable[[], Awaitable[Any]]) -> bytes:
    """The whole body of an ASGI request, for a wrapper that looks at it first."""
    body = b""
    while True:
        event = await receive()
        body += event.get("body", b"")
        if not event.get("more_body"):
            return body


async def posted_message(scope: Any, receive: Any, send: Any) -> dict[str, Any] | None:
    """The JSON a hand-written server's POST carries; ``None`` for anything else (a GET
    stream is refused with 405, a lifespan event ignored), already answered."""
    if scope["type"] != "http":
        return None
    if scope["method"] != "POST":
        await send({"type": "http.response.start", "status": 405, "headers": []})
        await send({"type": "http.response.body", "body": b""})
        return None
    return cast(dict[str, Any], json.loads(await read_request_body(receive)))


def replaying(body: bytes, receive: Callable[[], Awaitable[Any]]) -> Callable[[], Awaitable[Any]]:
    """An ASGI ``receive`` that gives the app ``body`` (which a wrapper already read)
    first, then whatever the connection brings."""
    replayed = False

    async def replay() -> Any:
        nonlocal replayed
        if replayed:
            return await receive()
        replayed = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


def rpc(method: str, params: dict[str, Any] | None = None, id: int | None = 1) -> dict[str, Any]:
    """A JSON-RPC message (a notification when ``id`` is None)."""
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if id is not None:
        message["id"] = id
    if params is not None:
        message["params"] = params
    return message


def initialize_params(version: str = "2025-11-25", **capabilities: Any) -> dict[str, Any]:
    return {
        "protocolVersion": version,
        "capabilities": capabilities,
        "clientInfo": {"name": "raw-test", "version": "0"},
    }


@dataclass(slots=True)
class RawEvent:
    event_id: str | None
    retry_ms: int | None
    message: dict[str, Any] | None
    """The decoded JSON-RPC message; ``None`` for a priming event (no data)."""


def read_events(response: httpx2.Response) -> AsyncIterator[RawEvent]:
    """The events of an SSE response, as they arrive (``async for`` them)."""
    return _EventReader(response)


class _EventReader:
    """An iterator object, not an async generator: a test may stop reading at any event
    without closing it, which trio reports for an async generator left unfinished."""

    def __init__(self, response: httpx2.Response) -> None:
        self._chunks = response.aiter_bytes()
        self._parser = EventParser()
        self._ready: list[RawEvent] = []

    def __aiter__(self) -> _EventReader:
        return self

    async def __anext__(self) -> RawEvent:
        while not self._ready:  # ends with the stream (StopAsyncIteration)
            chunk = await anext(self._chunks)
            for event in self._parser.feed(chunk):
                message = json.loads(event.data) if event.data.strip() else None
                self._ready.append(RawEvent(event.event_id, event.retry_ms, message))
        return self._ready.pop(0)


async def first_result(response: httpx2.Response) -> dict[str, Any]:
    """The first JSON-RPC response in a POST's answer, JSON or SSE."""
    if response.headers.get("content-type", "").startswith("application/json"):
        return json.loads(await response.aread())
    async for event in read_events(response):
        if event.message is not None and "method" not in event.message:
            return event.message
    raise AssertionError("the SSE stream ended without a response")


async def raw_initialize(
    http: httpx2.AsyncClient, url: str, **capabilities: Any
) -> tuple[str, dict[str, Any]]:
    """Open a session by hand; returns its id and the initialize result."""
    async with http.stream(
        "POST",
        url,
        json=rpc("initialize", initialize_params(**capabilities), id=0),
        headers=POST_HEADERS,
    ) as response:
        assert response.status_code == 200, await response.aread()
        session_id = response.headers["mcp-session-id"]
        result = await first_result(response)
    headers = {**POST_HEADERS, "mcp-session-id": session_id, "mcp-protocol-version": "2025-11-25"}
    done = await http.post(url, json=rpc("notifications/initialized", id=None), headers=headers)
    assert done.status_code == 202, done.text
    return session_id, result


def session_headers(session_id: str, version: str = "2025-11-25") -> dict[str, str]:
    return {**POST_HEADERS, "mcp-session-id": session_id, "mcp-protocol-version": version}


async def forget_session(url: str, session_id: str) -> None:
    """End a session on the server, as an expiry would, by a DELETE from outside the
    client under test: that client still holds the id and meets a 404 next."""
    async with httpx2.AsyncClient(timeout=PATIENCE_SECONDS) as http:
        response = await http.delete(url, headers={"mcp-session-id": session_id})
    assert response.status_code == 200, response.text


def running_tasks() -> int:
    """How many tasks exist right now (the leak check's measure): the test's own event
    loop's, asyncio or trio, plus those of every server ``serve`` runs in a thread."""
    in_threads = sum(len(asyncio.all_tasks(loop)) for loop in list(_thread_loops))
    if _on_asyncio():
        return len(asyncio.all_tasks()) + in_threads
    return _trio_tasks() + in_threads


def _trio_tasks() -> int:
    import trio

    count = 0
    tasks = [trio.lowlevel.current_root_task()]
    while tasks:  # bounded: a task tree is finite and each task is visited once
        task = tasks.pop()
        if task is None:
            continue
        count += 1
        tasks.extend(child for nursery in task.child_nurseries for child in nursery.child_tasks)
    return count


async def settle(until: Any, seconds: float = 10.0, step: float = 0.05) -> bool:
    """Wait (bounded) until ``until()`` is true; returns whether it became true."""
    with anyio.move_on_after(seconds):
        while not until():  # noqa: ASYNC110 (polls state that has no event)
            await anyio.sleep(step)
        return True
    return bool(until())


LOAD_SERVER = REPO / "tests" / "servers" / "load_server.py"


def load_server() -> MCPServer:
    """The load tests' server object (``tests/servers/load_server.py``), for in-process
    use; the module's ``running_calls`` counts the calls inside a tool."""
    return server_object(LOAD_SERVER)


@asynccontextmanager
async def reach_load_server(transport: str) -> AsyncGenerator[Any, None]:
    """What to hand to ``Client`` to reach the load server over ``transport``: the
    object in-process, a subprocess over stdio, or a URL served on loopback."""
    if transport == "memory":
        yield load_server()
    elif transport == "stdio":
        yield StdioServer(sys.executable, [str(LOAD_SERVER)])
    else:
        async with serve(load_server().http_app()) as running:
            yield running.url


class Flag:
    """An event set on the server's loop and awaited on the test's: under trio the
    server runs an asyncio loop in a thread of its own, so this is a thread-safe one."""

    def __init__(self) -> None:
        self._flag = threading.Event()

    def set(self) -> None:
        self._flag.set()

    async def wait(self) -> None:
        if not await anyio.to_thread.run_sync(self._flag.wait, PATIENCE_SECONDS):
            raise TimeoutError("the flag was never set")


async def read_line(process: Process, buffer: bytearray, *, stdout: bool = False) -> str:
    """The next line of the process's stderr (or stdout), waiting for it as it comes."""
    stream = process.stdout if stdout else process.stderr
    assert stream is not None
    with anyio.fail_after(PATIENCE_SECONDS):
        while b"\n" not in buffer:
            buffer += await stream.receive()
    line, _, rest = bytes(buffer).partition(b"\n")
    buffer[:] = rest
    return line.decode() + "\n"
