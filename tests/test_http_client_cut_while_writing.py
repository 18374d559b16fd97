"""The HTTP client when a connection is cut while a tool call is being written, or once
it was read: the first is sent again (the server cannot have handled it), the second is
not (whether the tool ran is unknown, and its error says so). A front written here with
plain sockets stands between client and server, so the cuts are real TCP resets."""

from __future__ import annotations

import contextlib
import re
import socket
import struct
import threading
from pathlib import Path
from typing import Self

import anyio
import pytest
from http_support import PATIENCE_SECONDS, serve
from http_support.apps import http_app

from answerback import Client
from answerback.server import MCPServer
from answerback.types import ConnectionClosedError

pytestmark = pytest.mark.anyio

ERAS = ["legacy", "2026-07-28"]
TOOL_CALL = b'"method":"tools/call"'
_SMALL_BUFFER = 16 * 1024


def _unsent_at_most() -> int:
    """The most of a request the client's kernel can hold unsent (its largest send
    buffer), so a larger one cannot be written whole to a server that stops reading."""
    wmem = Path("/proc/sys/net/ipv4/tcp_wmem")
    return int(wmem.read_text().split()[2]) if wmem.exists() else 4 * 1024 * 1024


READ_BEFORE_CUTTING = 1024 * 1024
"""How much of a large body the front reads before it cuts the connection: the client
is then surely writing it. (Cut at once, the reset can reach an asyncio client before
its first write of the body, which the event loop then drops while anyio reports it
written: the client cannot tell that case from a cut after the request was read.)"""
LARGE = 2 * _unsent_at_most() + READ_BEFORE_CUTTING
"""A tool call argument larger than the client can have written when its connection is
cut after the front read ``READ_BEFORE_CUTTING`` of it: its writing fails, as a real
upload's would."""


def _shut(sock: socket.socket) -> None:
    """Close, waking a thread blocked on the socket (``close()`` alone does not)."""
    with contextlib.suppress(OSError):  # not connected, or already closed
        sock.shutdown(socket.SHUT_RDWR)
    sock.close()


def _reset(sock: socket.socket) -> None:
    """Close with a TCP reset (RST), as a crashing server or a balancer does."""
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    sock.close()


class CuttingFront:
    """A TCP front before the server at ``upstream`` that reads each request before it
    passes it on. It resets the connection of the first ``partway`` requests of at least
    ``LARGE`` bytes after reading ``READ_BEFORE_CUTTING`` of them (it reads little at a
    time, so the client is still writing), and, if ``after_reading``, of the first tool call
    once it has read it whole (the tool then never runs). ``read_whole`` counts the tool
    calls it read whole; ``cut_partway`` those it cut while they were being written."""

    def __init__(self, upstream: int, *, partway: int = 0, after_reading: bool = False) -> None:
        self.upstream = upstream
        self.partway = partway
        self.after_reading = after_reading
        self.read_whole = 0
        self.cut_partway = 0
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._listener = socket.socket()
        # Before listen(): accepted sockets inherit a small receive buffer.
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, _SMALL_BUFFER)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen()
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}/mcp"

    def __enter__(self) -> Self:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *_: object) -> None:
        with self._lock:
            sockets = [self._listener, *self._sockets]
        for sock in sockets:
            _shut(sock)

    def _track(self, sock: socket.socket) -> None:
        with self._lock:
            self._sockets.append(sock)

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # the front is closing
            self._track(client)
            threading.Thread(target=self._relay, args=(client,), daemon=True).start()

    def _relay(self, client: socket.socket) -> None:
        server = socket.create_connection(("127.0.0.1", self.upstream))
        self._track(server)
        threading.Thread(target=self._pipe, args=(server, client), daemon=True).start()
        try:
            self._requests(client, server)
        except OSError:
            pass  # either side closed: the test is ending, or the client went
        finally:
            _shut(server)

    def _requests(self, client: socket.socket, server: socket.socket) -> None:
        """Read each request the client sends on this connection, and pass it on or cut
        the connection."""
        pending = bytearray()
        while True:
            while b"\r\n\r\n" not in pending:
                if not self._read(client, pending):
                    return
            end = pending.index(b"\r\n\r\n") + 4
            head = bytes(pending[:end])
            del pending[:end]
            found = re.search(rb"(?i)\r\ncontent-length: *(\d+)", head)
            length = int(found[1]) if found else 0
            with self._lock:
                cut = length >= LARGE and self.cut_partway < self.partway
                self.cut_partway += cut
            if cut:
                while len(pending) < READ_BEFORE_CUTTING:
                    if not self._read(client, pending):
                        return
                _reset(client)
                return
            while len(pending) < length:
                if not self._read(client, pending):
                    return
            body = bytes(pending[:length])
            del pending[:length]
            if TOOL_CALL in body:
                with self._lock:
                    self.read_whole += 1
                    cut = self.after_reading and self.read_whole == 1
                if cut:
                    _reset(client)
                    return
            server.sendall(head + body)

    @staticmethod
    def _read(sock: socket.socket, into: bytearray) -> bool:
        data = sock.recv(_SMALL_BUFFER)
        into += data
        return bool(data)

    @staticmethod
    def _pipe(source: socket.socket, target: socket.socket) -> None:
        """The server's responses, as they come, to the client."""
        try:
            while data := source.recv(64 * 1024):
                target.sendall(data)
        except OSError:
            pass  # the connection was cut, or the test is ending


def uploads() -> tuple[MCPServer, list[int]]:
    """A server with a tool taking a large argument, and the sizes it received."""
    mcp = MCPServer("Uploads")
    received: list[int] = []

    @mcp.tool()
    async def store(data: str) -> str:
        received.append(len(data))
        return f"stored {len(data)} characters"

    return mcp, received


@pytest.mark.parametrize("mode", ERAS)
async def test_a_tool_call_cut_while_being_written_is_sent_again_and_runs_once(
    mode: str,
) -> None:
    """The front resets the connection after reading part of a call too large to be
    written yet: httpcore2 hides the failed write and reports the failed read after it
    (a ``ReadError`` on asyncio, a ``RemoteProtocolError`` on trio), just as after a
    request read whole, but the server cannot have had this one, so it goes again,
    and the tool runs once."""
    mcp, received = uploads()
    async with serve(http_app(mcp, max_body_bytes=4 * LARGE)) as running:
        with CuttingFront(running.port, partway=1) as front:
            async with Client(front.url, mode=mode) as client:
                with anyio.fail_after(PATIENCE_SECONDS):
                    result = await client.call_tool("store", {"data": "x" * LARGE})
    assert not result.is_error
    assert received == [LARGE]
    assert front.cut_partway == 1
    assert front.read_whole == 1


@pytest.mark.parametrize("mode", ERAS)
async def test_a_tool_call_cut_after_it_was_read_is_not_sent_again(mode: str) -> None:
    """The front reads the whole call, then resets: the server may have run it, so it
    is not sent again and its error says whether it did its work is unknown."""
    mcp, received = uploads()
    async with serve(http_app(mcp)) as running:
        with CuttingFront(running.port, after_reading=True) as front:
            async with Client(front.url, mode=mode) as client:
                with anyio.fail_after(PATIENCE_SECONDS):
                    with pytest.raises(ConnectionClosedError) as caught:
                        await client.call_tool("store", {"data": "small"})
                    again = await client.call_tool("store", {"data": "again"})
    assert "Whether the request did its work is unknown" in caught.value.error.message
    assert front.read_whole == 2  # the cut call once, then the next one
    assert received == [len("again")]
    assert not again.is_error


async def test_a_call_cut_each_time_while_being_written_says_it_was_not_handled() -> None:
    """Two tries in a row cut while being written (a second cut is more likely a limit on
    size than a broken connection, so no third upload): the call fails, saying the server
    did not handle it (so sending it again is safe), not that the outcome is unknown."""
    mcp, received = uploads()
    async with serve(http_app(mcp, max_body_bytes=4 * LARGE)) as running:
        with CuttingFront(running.port, partway=100) as front:
            async with Client(front.url, mode="legacy") as client:
                with anyio.fail_after(PATIENCE_SECONDS):
                    with pytest.raises(ConnectionClosedError) as caught:
                        await client.call_tool("store", {"data": "x" * LARGE})
    message = caught.value.error.message
    assert re.search(
        r"the connection closed before the whole request \(\d+ bytes\) was sent, 2 times in a "
        r"row \(the last: .*\): a server or proxy may cut off requests this large",
        message,
    )
    assert "the server did not handle it, so sending it again is safe" in message
    assert "unknown" not in message
    # What cut the last try: a reset on asyncio, the end of the connection on trio.
    assert "Connection reset by peer" in message or "Server disconnected" in message
    assert front.cut_partway == 2
    assert front.read_whole == 0
    assert received == []
