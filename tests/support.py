"""Helpers for the tests: where things are, and a hand-driven JSON-RPC peer.

``RawPeer`` is one end of a memory connection that a test drives message by message, so
the other end (an ``Endpoint`` or a whole ``Client``) can be shown exactly what arrives
and what it answers. ``HandDrivenServer`` is a client transport whose server is such a
peer: the test plays the server by hand.
"""

from __future__ import annotations

import asyncio
import importlib.util
import re
import sys
import traceback
from collections.abc import AsyncGenerator, Callable, Generator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any, cast

import anyio
from jsonschema import Draft202012Validator, ValidationError

from answerback import Client, StdioServer
from answerback.interact import Answer, Question
from answerback.jsonrpc import Envelope, JSONObject, ReadStream, RequestId, WriteStream
from answerback.server import MCPServer
from answerback.transports import StreamPair, create_stream_pairs
from answerback.types import ElicitResult

REPO = Path(__file__).resolve().parent.parent
TESTS = REPO / "tests"


def stable_id(value: object) -> str:
    """``repr(value)`` without a memory address, as a test id: pytest-xdist's workers
    must each collect the same ids, and ``<object object at 0x7f...>`` differs in each."""
    return re.sub(r" at 0x[0-9a-fA-F]+", "", repr(value))


SERVERS = TESTS / "servers"
LIBRARY_SERVER = REPO / "examples" / "library_server.py"

# A safety net so a broken test fails instead of hanging; never a claim about speed.
PATIENCE_SECONDS = 20.0

_unreported: list[str] = []


def ended(pid: int) -> bool:
    """The process is gone, or a zombie waiting for whoever adopted it to reap it
    (reads ``/proc``: Linux only)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


_DefaultLoop = asyncio.ProactorEventLoop if sys.platform == "win32" else asyncio.SelectorEventLoop


class ReportingEventLoop(_DefaultLoop):
    """asyncio's default event loop, which also records everything that reaches its
    exception handler: a task's exception nobody retrieved, a failing callback.

    Those are only logged by asyncio, so a test would pass in spite of them; the
    ``no_unreported_failures`` fixture (conftest.py) fails it instead.
    """

    def call_exception_handler(self, context: dict[str, Any]) -> None:
        what = str(context.get("message", "unhandled failure"))
        exc = context.get("exception")
        if isinstance(exc, BaseException):
            what += "\n" + "".join(traceback.format_exception(exc)).rstrip()
        for key in ("task", "future", "handle"):
            if key in context:
                what += f"\n{key}: {context[key]!r}"
        _unreported.append(what)
        super().call_exception_handler(context)


def take_unreported_failures() -> list[str]:
    """What asyncio loops reported since the last call (and forget it)."""
    found = list(_unreported)
    del _unreported[: len(found)]
    return found


def load_module(path: Path) -> ModuleType:
    """Import a script by path (each path is imported once per test run)."""
    name = f"_answerback_test_{path.stem}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def schema_errors(validator: Draft202012Validator, instance: object) -> list[ValidationError]:
    """Every way ``instance`` breaks ``validator``'s schema.

    jsonschema's stubs leave an ``iter_errors`` overload partly untyped and accept only
    JSON values, while tests check whatever they were given; hence the ``Any``.
    """
    found: list[ValidationError] = list(cast(Any, validator).iter_errors(instance))
    return found


def server_object(path: Path) -> MCPServer:
    """The ``mcp`` object a server script defines, for in-process use."""
    server = load_module(path).mcp
    assert isinstance(server, MCPServer)
    return server


def target(transport: str, path: Path) -> MCPServer | StdioServer:
    """What to hand to ``Client`` to reach the server script ``path`` over ``transport``."""
    if transport == "memory":
        return server_object(path)
    assert transport == "stdio", transport
    return StdioServer(sys.executable, [str(path)])


class RawPeer:
    """One end of a connection, driven by hand with plain JSON-RPC dicts."""

    def __init__(self, read_stream: ReadStream, write_stream: WriteStream) -> None:
        self.read_stream = read_stream
        self.write_stream = write_stream

    async def send(self, message: Any) -> None:
        """Send one decoded JSON value (normally a dict) as it is."""
        await self.write_stream.send(Envelope(message))

    async def cancel(self, request_id: RequestId, reason: str) -> None:
        """Tell the other end we gave up on our request ``request_id``."""
        await self.send(
            {
                "jsonrpc": "2.0",
                "method": "notifications/cancelled",
                "params": {"requestId": request_id, "reason": reason},
            }
        )

    async def send_raw(self, item: Envelope | Exception) -> None:
        """Put anything on the wire, even what a byte transport reports as an error."""
        await cast(Any, self.write_stream).send(item)

    async def receive(self) -> JSONObject:
        """The next message from the other end."""
        with anyio.fail_after(PATIENCE_SECONDS):
            item = await self.read_stream.receive()
        assert isinstance(item, Envelope), item
        message: object = item.message
        assert isinstance(message, dict), message
        return cast(JSONObject, message)

    async def receive_until(self, wanted: Callable[[JSONObject], bool]) -> JSONObject:
        """Skip messages until one matches ``wanted``."""
        while True:
            message = await self.receive()
            if wanted(message):
                return message

    async def answer_initialize(self, capabilities: JSONObject | None = None) -> JSONObject:
        """Play a server's side of the handshake; returns the client's initialize params."""
        request = await self.receive()
        assert request["method"] == "initialize", request
        params = cast(JSONObject, request["params"])
        await self.send(
            {
                "jsonrpc": "2.0",
                "id": request["id"],
                "result": {
                    "protocolVersion": params["protocolVersion"],
                    "capabilities": capabilities or {},
                    "serverInfo": {"name": "hand-driven", "version": "0"},
                },
            }
        )
        initialized = await self.receive()
        assert initialized == {"jsonrpc": "2.0", "method": "notifications/initialized"}
        return params


@contextmanager
def peer_pair() -> Generator[tuple[StreamPair, RawPeer], None, None]:
    """Streams for the side under test, and a ``RawPeer`` on the other end; every
    stream is closed when the block ends (an unclosed one is a ResourceWarning)."""
    under_test, other_end = create_stream_pairs()
    try:
        yield under_test, RawPeer(*other_end)
    finally:
        for stream in (*under_test, *other_end):
            stream.close()


class HandDrivenServer:
    """A client transport whose "server" is a ``RawPeer`` the test drives (``.peer``)."""

    def __init__(self) -> None:
        self._client_side, other_end = create_stream_pairs()
        self.peer = RawPeer(*other_end)

    @asynccontextmanager
    async def connect(self) -> AsyncGenerator[StreamPair, None]:
        try:
            yield self._client_side
        finally:
            for stream in (*self._client_side, self.peer.read_stream, self.peer.write_stream):
                stream.close()


@asynccontextmanager
async def client_with_hand_driven_server(
    **options: Any,
) -> AsyncGenerator[tuple[Client, RawPeer, JSONObject], None]:
    """A connected legacy ``Client`` whose server the test plays by hand.

    Yields the client, the server's ``RawPeer`` (the handshake already answered) and
    the params of the client's ``initialize`` request.
    """
    transport = HandDrivenServer()
    handshake_done = anyio.Event()
    initialize_params: JSONObject = {}

    async def handshake() -> None:
        initialize_params.update(await transport.peer.answer_initialize())
        handshake_done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(handshake)
        async with Client(transport, mode="legacy", **options) as client:
            await handshake_done.wait()
            yield client, transport.peer, initialize_params


class ScreenPerson:
    """A person at a broker's screen: answers every form at once with a name, except the
    hand-driven server's ("frozen"), which stay on screen until withdrawn; records what
    was shown and withdrawn, and wakes ``until`` on each (also the broker's
    ``on_change``)."""

    def __init__(self) -> None:
        self.shown: list[Question] = []
        self.withdrawals: list[tuple[Question, str]] = []
        self._changed = anyio.Event()

    async def present(self, question: Question) -> Answer:
        self.shown.append(question)
        self.changed()
        if question.server == "frozen":
            await anyio.Event().wait()  # only a withdrawal ends this screen
        return ElicitResult(action="accept", content={"name": f"Ada for {question.server}"})

    async def withdrawn(self, question: Question, reason: str) -> None:
        self.withdrawals.append((question, reason))
        self.changed()

    def changed(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def until(self, done: Callable[[], bool]) -> None:
        with anyio.fail_after(PATIENCE_SECONDS):
            while not done():
                await self._changed.wait()
