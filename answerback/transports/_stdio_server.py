"""Stdio transport, server side: this process's stdin and stdout carry the connection.

Under asyncio the pipes are read and written without threads. Anything else (trio, or a
stdin that is a regular file) falls back to anyio's thread-backed file wrappers.
Nothing but protocol messages may go to stdout, so the library never prints.
"""

from __future__ import annotations

import asyncio
import math
import sys
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import BinaryIO

import anyio

from answerback.jsonrpc import Envelope, MalformedMessage
from answerback.transports._base import StreamPair
from answerback.transports._framing import decode, encode

_MAX_LINE_BYTES = 64 * 1024 * 1024


@asynccontextmanager
async def stdio_server_streams(
    stdin: BinaryIO | None = None, stdout: BinaryIO | None = None
) -> AsyncGenerator[StreamPair, None]:
    """Streams over this process's stdin/stdout (or the given binary files)."""
    incoming_send, incoming_read = anyio.create_memory_object_stream[Envelope | Exception](math.inf)
    outgoing_send, outgoing_read = anyio.create_memory_object_stream[Envelope](math.inf)
    reader, writer = await _open_pipes(stdin or sys.stdin.buffer, stdout or sys.stdout.buffer)

    async def read_loop() -> None:
        async with incoming_send:
            buffer = bytearray()
            while chunk := await reader(65536):
                buffer += chunk
                while (end := buffer.find(b"\n")) >= 0:
                    line = bytes(buffer[:end]).strip()
                    del buffer[: end + 1]
                    if line:
                        await incoming_send.send(decode(line))
                if len(buffer) > _MAX_LINE_BYTES:
                    await incoming_send.send(MalformedMessage("message larger than 64 MiB"))
                    buffer.clear()

    async def write_loop() -> None:
        async with outgoing_read:
            async for envelope in outgoing_read:
                await writer(encode(envelope.message) + b"\n")

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
            stream_reader = asyncio.StreamReader(limit=_MAX_LINE_BYTES)
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
    in_file = anyio.wrap_file(stdin)
    out_file = anyio.wrap_file(stdout)

    async def read(size: int) -> bytes:
        return await in_file.read1(size)

    async def write_file(data: bytes) -> None:
        await out_file.write(data)
        await out_file.flush()

    return read, write_file
