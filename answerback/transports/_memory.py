"""In-process transport: client and server in one event loop, joined by memory streams.

Messages cross as dicts, never as bytes, which makes this the fastest transport and the
natural one for tests. Buffers are unbounded because each side may be sending while the
other is busy answering it; a bounded buffer could then deadlock both.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import cast

import anyio

from answerback.jsonrpc import Envelope, WriteStream
from answerback.jsonrpc._channel import open_channel
from answerback.transports._base import ConnectionServer, StreamPair


def create_stream_pairs() -> tuple[StreamPair, StreamPair]:
    """Two connected (read, write) pairs: what one side writes, the other reads."""
    to_server_send, to_server_read = open_channel[Envelope | Exception]()
    to_client_send, to_client_read = open_channel[Envelope | Exception]()
    # The write ends never carry exceptions; only transports that read bytes report them.
    return (
        (to_client_read, cast(WriteStream, to_server_send)),
        (to_server_read, cast(WriteStream, to_client_send)),
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
