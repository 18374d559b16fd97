"""In-process transport: client and server in one event loop, joined by memory streams.

Messages cross as dicts, never as bytes, which makes this the fastest transport and the
natural one for tests. Buffers are unbounded because each side may be sending while the
other is busy answering it; a bounded buffer could then deadlock both. Only a request's
handler waits (``Envelope.paced``) while more than ``UNTAKEN_MESSAGES_HELD`` of its
side's messages wait for the other: a tool writing log messages faster than the
client's callback takes them would otherwise grow both without limit.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager

import anyio
import anyio.lowlevel

from answerback.jsonrpc import Envelope
from answerback.jsonrpc._channel import ChannelSender, open_channel
from answerback.transports._base import ConnectionServer, StreamPair
from answerback.transports._pipes import UntakenMessages, until_drained


class _PacedSender:
    """A write end whose handlers' messages wait while the reader is behind. It also
    takes exceptions, which a test playing a peer sends to stand for unreadable input."""

    __slots__ = ("_sender", "_untaken")

    def __init__(self, sender: ChannelSender[Envelope | Exception]) -> None:
        self._sender = sender
        self._untaken = UntakenMessages(sender)

    def _waits(self, item: Envelope | Exception) -> bool:
        # The reader is rarely behind: asked first, it spares the rest on every message.
        return self._untaken.backed_up() and isinstance(item, Envelope) and item.paced

    def send_nowait(self, item: Envelope | Exception) -> None:
        if self._waits(item):
            raise anyio.WouldBlock
        self._sender.send_nowait(item)

    async def send(self, item: Envelope | Exception) -> None:
        await anyio.lowlevel.checkpoint()
        while self._waits(item):  # checked again after each wait: others may send
            await until_drained(self._untaken)
        self._sender.send_nowait(item)

    def close(self) -> None:
        self._sender.close()


def create_stream_pairs() -> tuple[StreamPair, StreamPair]:
    """Two connected (read, write) pairs: what one side writes, the other reads."""
    to_server_send, to_server_read = open_channel[Envelope | Exception]()
    to_client_send, to_client_read = open_channel[Envelope | Exception]()
    return (
        (to_client_read, _PacedSender(to_server_send)),
        (to_server_read, _PacedSender(to_client_send)),
    )


class InProcessTransport:
    """Connects a client to a server object running in the same event loop."""

    def __init__(self, server: ConnectionServer) -> None:
        self.server = server

    @asynccontextmanager
    async def connect(self) -> AsyncGenerator[StreamPair, None]:
        """Serve one connection of ``server`` in a task of its own until the block ends."""
        client_side, server_side = create_stream_pairs()
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(self.server.serve_connection, *server_side)
                try:
                    yield client_side
                finally:
                    client_side[1].close()
                    tg.cancel_scope.cancel()
        finally:
            # Every end, even those of a server cancelled before it started: an unclosed
            # memory stream is a ResourceWarning when it is collected.
            for stream in (*client_side, *server_side):
                stream.close()
