"""Stdio transport, client side: run the server as a child process and talk over its pipes.

The child gets a small, predictable environment (not the parent's secrets), its stderr
goes straight to ours so its logs stay visible, and it is always reaped: on a clean exit
we close its stdin and give it a moment, then terminate, then kill. If the child dies
while requests are waiting, they fail with a ``ConnectionClosedError`` naming its exit
code instead of hanging.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, Process
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from answerback.jsonrpc import Envelope
from answerback.transports._base import StreamPair
from answerback.transports._framing import (
    DEFAULT_MAX_MESSAGE_BYTES,
    LineReader,
    deliver,
    line_for,
)
from answerback.types._errors import ConnectionClosedError

_INHERITED_ENV = (
    (
        "APPDATA",
        "HOMEDRIVE",
        "HOMEPATH",
        "LOCALAPPDATA",
        "PATH",
        "PATHEXT",
        "PROCESSOR_ARCHITECTURE",
        "SYSTEMDRIVE",
        "SYSTEMROOT",
        "TEMP",
        "USERNAME",
        "USERPROFILE",
        "PROGRAMFILES",
    )
    if sys.platform == "win32"
    else ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR")
)
_SHUTDOWN_GRACE_SECONDS = 2.0


def default_environment() -> dict[str, str]:
    """The parent variables a child server inherits: enough to run, nothing secret."""
    return {key: value for key in _INHERITED_ENV if (value := os.environ.get(key)) is not None}


class StdioServer:
    """A server program to start as a subprocess and speak MCP with over stdin/stdout.

    ``env`` is added to a minimal inherited environment (``PATH``, ``HOME``, locale...),
    so API keys and tokens in the parent's environment are not handed to every server.
    ``max_message_bytes`` caps one message either way: a call whose request or answer is
    larger fails with an error instead of waiting for ever.
    """

    def __init__(
        self,
        command: str,
        args: Sequence[str] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        *,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ) -> None:
        self.command = command
        self.args = list(args)
        self.env = dict(env or {})
        self.cwd = cwd
        self.max_message_bytes = max_message_bytes

    def __repr__(self) -> str:
        return f"StdioServer({self.command!r}, args={self.args!r})"

    @asynccontextmanager
    async def connect(self) -> AsyncGenerator[StreamPair, None]:
        try:
            process = await anyio.open_process(
                [self.command, *self.args],
                env={**default_environment(), **self.env},
                cwd=self.cwd,
                stderr=None,
            )
        except OSError as exc:
            raise ConnectionClosedError(
                f"Could not start the server {self.command!r}: {exc}. Check the command "
                "and that it is installed and executable."
            ) from exc
        assert process.stdin is not None
        assert process.stdout is not None
        incoming_send, incoming_read = anyio.create_memory_object_stream[Envelope | Exception](
            math.inf
        )
        outgoing_send, outgoing_read = anyio.create_memory_object_stream[Envelope](math.inf)
        limit = self.max_message_bytes
        async with anyio.create_task_group() as tg:
            tg.start_soon(_read_lines, process.stdout, incoming_send, outgoing_send, process, limit)
            tg.start_soon(_write_lines, outgoing_read, process.stdin, incoming_send, limit)
            try:
                yield incoming_read, outgoing_send
            finally:
                outgoing_send.close()
                with anyio.CancelScope(shield=True):
                    await _stop(process)
                tg.cancel_scope.cancel()


async def _read_lines(
    stdout: ByteReceiveStream,
    sink: MemoryObjectSendStream[Envelope | Exception],
    to_server: MemoryObjectSendStream[Envelope],
    process: Process,
    limit: int,
) -> None:
    lines = LineReader(limit)
    async with sink:
        try:
            async for chunk in stdout:
                incoming, replies = lines.feed(chunk)
                for reply in replies:
                    deliver(to_server, Envelope(reply))
                for item in incoming:
                    await sink.send(item)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return
        with anyio.move_on_after(_SHUTDOWN_GRACE_SECONDS):
            await process.wait()
        code = process.returncode
        how = f"exited with code {code}" if code is not None else "closed its stdout"
        await sink.send(ConnectionClosedError(f"the server process {how}"))


async def _write_lines(
    source: MemoryObjectReceiveStream[Envelope],
    stdin: ByteSendStream,
    incoming: MemoryObjectSendStream[Envelope | Exception],
    limit: int,
) -> None:
    async with source:
        try:
            async for envelope in source:
                if line := line_for(envelope, limit, incoming):
                    await stdin.send(line)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return
        finally:
            with anyio.CancelScope(shield=True):
                await stdin.aclose()


async def _stop(process: Process) -> None:
    """Close stdin, wait a moment, then terminate and finally kill; always reap."""
    if process.returncode is None:
        with anyio.move_on_after(_SHUTDOWN_GRACE_SECONDS):
            if process.stdin is not None:
                await process.stdin.aclose()
            await process.wait()
    if process.returncode is None:
        process.terminate()
        with anyio.move_on_after(_SHUTDOWN_GRACE_SECONDS):
            await process.wait()
    if process.returncode is None:
        process.kill()
        await process.wait()
