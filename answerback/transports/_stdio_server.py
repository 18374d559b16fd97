"""Stdio transport, server side: this process's stdin and stdout carry the connection.

Under asyncio the pipes are read and written without threads. Anything else (trio, or a
stdin that is a regular file) falls back to reading and writing in worker threads.
Nothing but protocol messages may go to stdout, so the library never prints.
"""

from __future__ import annotations

import asyncio
import math
import sys
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import BinaryIO, cast

import anyio
import anyio.to_thread

from answerback.jsonrpc import Envelope
from answerback.transports._base import StreamPair
from answerback.transports._framing import (
    DEFAULT_MAX_MESSAGE_BYTES,
    LineReader,
    deliver,
    line_for,
)

_CHUNK_BYTES = 65536


@asynccontextmanager
async def stdio_server_streams(
    stdin: BinaryIO | None = None,
    stdout: BinaryIO | None = None,
    *,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
) -> AsyncGenerator[StreamPair, None]:
    """Streams over this process's stdin/stdout (or the given binary files).

    ``max_message_bytes`` caps one message either way: a larger request gets an error
    response, and a larger answer of ours is replaced by one.
    """
    incoming_send, incoming_read = anyio.create_memory_object_stream[Envelope | Exception](math.inf)
    outgoing_send, outgoing_read = anyio.create_memory_object_stream[Envelope](math.inf)
    reader, writer = await _open_pipes(stdin or sys.stdin.buffer, stdout or sys.stdout.buffer)

    async def read_loop() -> None:
        lines = LineReader(max_message_bytes)
        async with incoming_send:
            while chunk := await reader(_CHUNK_BYTES):
                incoming, replies = lines.feed(chunk)
                for reply in replies:
                    deliver(outgoing_send, Envelope(reply))
                for item in incoming:
                    await incoming_send.send(item)

    async def write_loop() -> None:
        async with outgoing_read:
            async for envelope in outgoing_read:
                if line := line_for(envelope, max_message_bytes, incoming_send):
                    await writer(line)

    async with anyio.create_task_group() as tg:
        tg.start_soon(read_loop)
        tg.start_soon(write_loop)
        try:
            yield incoming_read, outgoing_send
        finally:
            outgoing_send.close()
            tg.cancel_scope.cancel()


ReadBytes = Callable[[int], Awaitable[bytes]]
WriteBytes = Callable[[bytes], Awaitable[None]]


async def _open_pipes(stdin: BinaryIO, stdout: BinaryIO) -> tuple[ReadBytes, WriteBytes]:
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # not asyncio (trio): use the thread-backed fallback
        loop = None
    if loop is not None:
        try:
            stream_reader = asyncio.StreamReader(limit=_CHUNK_BYTES)
            await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stream_reader), stdin)
            transport, protocol = await loop.connect_write_pipe(
                asyncio.streams.FlowControlMixin, stdout
            )
            stream_writer = asyncio.StreamWriter(transport, protocol, None, loop)

            async def write(data: bytes) -> None:
                stream_writer.write(data)
                await stream_writer.drain()

            return stream_reader.read, write
        except (ValueError, OSError):
            pass
    return _threaded_pipes(stdin, stdout)


def _threaded_pipes(stdin: BinaryIO, stdout: BinaryIO) -> tuple[ReadBytes, WriteBytes]:
    """Blocking reads and writes in worker threads, for any backend and any file.

    A thread blocked in a read cannot be interrupted, so a cancelled read abandons its
    thread (it ends when input arrives or the process exits) rather than holding up the
    server's shutdown until the client writes again.
    """
    # ``read1`` returns what one read gives, as a pipe needs; ``read(n)`` would wait
    # for ``n`` bytes. A raw file's ``read`` already behaves like ``read1``.
    read_some = cast(Callable[[int], bytes], getattr(stdin, "read1", stdin.read))

    async def read(size: int) -> bytes:
        return await anyio.to_thread.run_sync(read_some, size, abandon_on_cancel=True)

    def write_all(data: bytes) -> None:
        stdout.write(data)
        stdout.flush()

    async def write(data: bytes) -> None:
        await anyio.to_thread.run_sync(write_all, data, abandon_on_cancel=True)

    return read, write
