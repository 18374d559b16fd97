"""Stdio transport, server side: this process's stdin and stdout carry the connection.

Under asyncio, pipes (and sockets, and a terminal's input) are read and written without
threads, and without a task per message (see ``_pipes``). Anything else (trio, a
terminal's output, or a regular file such as ``server > log.jsonl``) is read or written
in worker threads; each direction is chosen on its own. Nothing but protocol messages
may go to stdout, so the library never prints.

The client may close our stdin and go on reading: requests read by then are still
answered. Once it closes its end of our stdout (it has gone), serving stops (asyncio pipes;
elsewhere a closed stdout is noticed at the next write). Stdout failing for any other
reason (a full disk, an I/O error) stops serving too, but is an error: answers were lost,
and whoever runs the server must hear why (``StdioFailedError``, an ``OSError``, which
``MCPServer.run`` turns into one line on stderr and exit status 1). Stdin failing to read
(``server 0>file`` opens it for writing only) ends input as its end would, so what was
read is answered, and then is the same kind of error.

Serving this process's own stdout, the protocol takes a private copy of it, and while the
server runs both ``sys.stdout`` and file descriptor 1 lead to stderr: a ``print`` left in
a tool, a C library's output or a child process that inherits stdout then shows up in the
server's log instead of corrupting the client's stream (a stray line there is skipped by
a lenient client and can break a strict one). Both are put back when the block ends.
"""

from __future__ import annotations

import asyncio
import errno
import functools
import io
import os
import shlex
import stat
import sys
import threading
from collections.abc import AsyncGenerator, Awaitable, Callable, Generator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import BinaryIO, cast

import anyio
import anyio.abc
import anyio.lowlevel
import anyio.to_thread

from answerback.jsonrpc import Envelope
from answerback.jsonrpc._channel import ChannelReceiver, ChannelSender, open_channel
from answerback.transports._base import StreamPair
from answerback.transports._framing import (
    DEFAULT_MAX_MESSAGE_BYTES,
    LineReader,
    checked_message_limit,
    deliver,
    line_for,
)
from answerback.transports._loop import STOPPING_SIGNALS
from answerback.transports._pipes import (
    UNREAD_BYTES_HELD,
    Backlog,
    Drained,
    Held,
    PipeInput,
    PipeOutput,
    Take,
    UntakenMessages,
    until_drained,
)

_CHUNK_BYTES = 65536
_RAISED_WITH = "mcp.run(max_message_bytes=...)"
"""Where a server's message limit is raised, as its over-the-limit errors say."""
_FLUSH_SECONDS = 2.0
"""How long the messages still queued when the connection ends may take to go out (a
client that stopped reading would otherwise hold the server up for ever)."""

ReadAll = Callable[[Take, Backlog], Awaitable[OSError | None]]
"""Hands each chunk of input to ``take`` until the input ends, or ``take`` returns false,
reading nothing while the ``Backlog`` is backed up; returns the error that ended input,
if a read failed."""
Close = Callable[[], Awaitable[None]]


@asynccontextmanager
async def stdio_server_streams(
    stdin: BinaryIO | None = None,
    stdout: BinaryIO | None = None,
    *,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
) -> AsyncGenerator[StreamPair, None]:
    """Streams over this process's stdin/stdout (or the given binary files).

    ``max_message_bytes`` caps one message either way: a larger request gets an error
    response, and a larger answer of ours is replaced by one; it must be a positive
    ``int`` (else ``TypeError`` or ``ValueError``, before anything is read). Messages
    queued when the block ends are still written; the files themselves are left open. On
    this process's own stdout, anything else written to stdout goes to stderr while the
    block runs.
    Once the client closes its end of stdout (it has gone), the block's body is
    cancelled, and the block ends quietly; if writing fails for another reason, the body
    is cancelled and the block raises ``StdioFailedError`` (the answers are lost). If
    reading stdin fails, input ends there and the block raises ``StdioFailedError`` as it
    ends.
    """
    checked_message_limit(max_message_bytes)
    _require_standard_streams(stdin, stdout)
    if stdout is not None:
        async with _streams(stdin, stdout, max_message_bytes) as streams:
            yield streams
        return
    with _stdout_kept_for_protocol() as protocol_stdout:
        async with _streams(stdin, protocol_stdout, max_message_bytes) as streams:
            yield streams


class StdioFailedError(OSError):
    """This process's stdin or stdout cannot carry the connection: it was started without
    one, stdin could not be read, or stdout could not be written (a full disk) and answers
    were lost. Its message is one line for whoever runs the server."""


def greet_a_person_at_a_terminal(server_name: str) -> None:
    """One line on stderr when stdin is a terminal: a person who runs a stdio server by
    hand sees a program that waits and says nothing, and cannot tell it works. The line
    says what it waits for and gives the command that talks to it."""
    try:
        at_a_terminal = sys.stdin is not None and sys.stdin.isatty()
    except (AttributeError, ValueError):  # a stand-in without isatty, or a closed file
        at_a_terminal = False
    if not at_a_terminal or sys.stderr is None:  # print(file=None) would use stdout
        return
    command = shlex.join(sys.orig_argv)
    print(
        f"answerback: {server_name} speaks MCP on stdin and stdout, and waits for a client. "
        f"To use it yourself: answerback connect {shlex.quote(command)}. Ctrl-C stops it.",
        file=sys.stderr,
        flush=True,
    )


async def serve_until_stopped(serve: Callable[[], Awaitable[None]]) -> None:
    """``await serve()``, cancelled by SIGTERM or SIGHUP, and then returns.

    Their default action ends the process on the spot: a tool still running had its
    ``finally`` blocks and context managers skipped (a temporary file left behind, a
    child process orphaned). Cancelled instead, each request in flight unwinds as for a
    client that went away. Signals are caught only where the loop can (the main thread,
    outside Windows); elsewhere they keep their default action.
    """
    try:
        async with anyio.create_task_group() as group:
            if threading.current_thread() is threading.main_thread():
                await group.start(_cancel_on_signal, group.cancel_scope)
            await serve()
            group.cancel_scope.cancel()
    except BaseExceptionGroup as raised:
        # Only ``serve`` can fail: its error is raised as it came, for ``MCPServer.run``.
        if len(raised.exceptions) != 1:
            raise
        error = raised.exceptions[0]
        raise error from error.__cause__  # its own cause kept, the group left out


async def _cancel_on_signal(
    scope: anyio.CancelScope, *, task_status: anyio.abc.TaskStatus[None]
) -> None:
    try:
        with anyio.open_signal_receiver(*STOPPING_SIGNALS) as signals:
            task_status.started()
            async for _ in signals:
                scope.cancel()
                return
    except NotImplementedError:  # asyncio on Windows has no signal handlers
        task_status.started()


def _require_standard_streams(stdin: BinaryIO | None, stdout: BinaryIO | None) -> None:
    """Raise a clear ``OSError`` if this process has no stdin or stdout to serve (it was
    started with them closed, ``server <&-``), where Python leaves ``None``."""
    closed = [
        name
        for name, given, own in (("stdin", stdin, sys.stdin), ("stdout", stdout, sys.stdout))
        if given is None and own is None
    ]
    if closed:
        raise StdioFailedError(
            errno.EBADF,
            f"cannot serve stdio: this process was started with {' and '.join(closed)} "
            "closed. Start the server from an MCP client, which connects both to it",
        )


@contextmanager
def _stdout_kept_for_protocol() -> Generator[BinaryIO, None, None]:
    """This process's stdout, for protocol messages alone: a duplicate of its descriptor,
    while descriptor 1 and ``sys.stdout`` lead to stderr (see the module's docstring).

    Where that cannot be done (stdout or stderr is not a real file, as under some test
    runners or ``pythonw``), stdout is used as it is.
    """
    original = sys.stdout
    try:
        stdout_fd = original.fileno()
        stderr_fd = sys.stderr.fileno()
        original.flush()
        protocol_fd = os.dup(stdout_fd)
    except (AttributeError, OSError, ValueError):  # io.UnsupportedOperation is both
        yield original.buffer
        return
    try:
        os.dup2(stderr_fd, stdout_fd)
    except OSError:
        os.close(protocol_fd)
        yield original.buffer
        return
    # Unbuffered: closing it never waits on a lock held by a write stuck in a thread.
    protocol = cast(BinaryIO, os.fdopen(protocol_fd, "wb", buffering=0))
    sys.stdout = sys.stderr
    try:
        yield protocol
    finally:
        if sys.stdout is sys.stderr:  # unless someone else has replaced it since
            sys.stdout = original
        os.dup2(protocol_fd, stdout_fd)
        protocol.close()


@asynccontextmanager
async def _streams(
    stdin: BinaryIO | None, stdout: BinaryIO, max_message_bytes: int
) -> AsyncGenerator[StreamPair, None]:
    incoming_send, incoming_read = open_channel[Envelope | Exception]()
    read_all, close_reader = await _reader(stdin or sys.stdin.buffer)
    read_error: OSError | None = None

    async def read_messages(outgoing: PipeOutput | _ThreadOutput) -> None:
        nonlocal read_error
        lines = LineReader(max_message_bytes, setting=_RAISED_WITH)
        read_error = await _read_messages(read_all, lines, incoming_send, outgoing)

    try:
        async with (
            _writer(stdout, max_message_bytes, incoming_send) as outgoing,
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(read_messages, outgoing)
            if isinstance(outgoing, PipeOutput):
                tg.start_soon(_stop_once_unread, outgoing, tg.cancel_scope)
            try:
                yield incoming_read, outgoing
            finally:
                incoming_read.close()
                tg.cancel_scope.cancel()
    finally:
        with anyio.move_on_after(_FLUSH_SECONDS, shield=True):
            await close_reader()
    _raise_if_failed(read_error, "read stdin", "the server stopped after answering what it read")


async def _read_messages(
    read_all: ReadAll,
    lines: LineReader,
    incoming: ChannelSender[Envelope | Exception],
    outgoing: PipeOutput | _ThreadOutput,
) -> OSError | None:
    """The client's messages to ``incoming`` (and errors for what cannot be read, to the
    client), until its input ends or the engine stops reading; returns the error that
    ended input, if a read failed. The client has written all it will once its input
    ends, so a last line with no newline is a whole message (the client side instead
    drops a server's last half line: that server died writing)."""

    def pass_on(messages: list[Envelope | Exception]) -> bool:
        try:
            # Straight into the unbounded buffer: a checkpoint per message would cost a
            # loop turn for nothing.
            for item in messages:
                incoming.send_nowait(item)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            return False  # the connection is over
        return True

    def take(chunk: bytes) -> bool:
        messages, replies = lines.feed(chunk)
        for reply in replies:
            deliver(outgoing, Envelope(reply))
        return pass_on(messages)

    async with incoming:
        read_error = await read_all(take, Held(UntakenMessages(incoming), outgoing))
        pass_on(lines.finish())
    return read_error


async def _stop_once_unread(output: PipeOutput, serving: anyio.CancelScope) -> None:
    """Stop serving (the block's body is cancelled) once the client has closed its end
    of our stdout, or writing to it has failed: nobody will read an answer now, so a tool
    still running for a client that died must not keep this process alive. (A client
    that closed only our stdin still reads, and gets its answers.) The pipe transport
    notices a closed pipe without a write."""
    await output.wait_closed()
    serving.cancel()


async def _reader(stdin: BinaryIO) -> tuple[ReadAll, Close]:
    pipe = _own_copy(stdin, "rb")
    if pipe is not None:
        loop = asyncio.get_running_loop()
        protocol = PipeInput(loop)
        try:
            transport, _ = await loop.connect_read_pipe(lambda: protocol, pipe)
        except (ValueError, OSError):  # a descriptor the loop cannot watch
            pipe.close()
        else:

            async def close_transport() -> None:
                transport.close()

            return protocol.read_all, close_transport

    # The descriptor itself where there is one: a thread abandoned in a buffered read
    # holds the file's lock, and Python aborts at exit ("could not acquire lock") when
    # Ctrl-C ends the server. Otherwise ``read1``, which returns what one read gives, as
    # a pipe needs (``read(n)`` would wait for ``n`` bytes; a raw file's ``read`` already
    # behaves like ``read1``).
    try:
        read_some: Callable[[int], bytes] = functools.partial(os.read, stdin.fileno())
    except (OSError, ValueError, io.UnsupportedOperation):
        read_some = cast(Callable[[int], bytes], getattr(stdin, "read1", stdin.read))

    async def read_all_in_threads(take: Take, backlog: Backlog) -> OSError | None:
        # A thread blocked in a read cannot be interrupted: a cancelled read abandons it
        # (it ends when input comes or the process exits) instead of holding up the
        # server's shutdown until the client writes again.
        try:
            while True:
                await until_drained(backlog)
                chunk = await anyio.to_thread.run_sync(
                    read_some, _CHUNK_BYTES, abandon_on_cancel=True
                )
                if not chunk or not take(chunk):
                    return None
        except OSError as exc:
            return exc

    return read_all_in_threads, _nothing


class _ThreadOutput:
    """The write stream (a ``WriteStream``) where stdout is written in worker threads:
    each message's line is made as it is sent and waits, in order, for the task that
    writes them; a ``Backlog`` of the bytes waiting."""

    def __init__(self, limit: int, incoming: ChannelSender[Envelope | Exception]) -> None:
        self._lines, self.lines = open_channel[bytes]()
        self._limit = limit
        self._incoming = incoming
        self._closed = False
        self._waiting_bytes = 0
        self._drained = Drained()

    def send_nowait(self, item: Envelope) -> None:
        if self._closed:
            raise anyio.ClosedResourceError
        if self.backed_up() and item.paced:
            raise anyio.WouldBlock  # a request's handler waits (see ``PipeOutput``)
        if line := line_for(item, self._limit, self._incoming, _RAISED_WITH):
            self._lines.send_nowait(line)
            self._waiting_bytes += len(line)

    async def send(self, item: Envelope) -> None:
        await anyio.lowlevel.checkpoint()
        while self.backed_up() and item.paced:  # checked again: others may write first
            await until_drained(self)
        self.send_nowait(item)

    def close(self) -> None:
        self._closed = True
        self._lines.close()

    def backed_up(self) -> bool:
        return self._waiting_bytes > UNREAD_BYTES_HELD

    def when_drained(self, callback: Callable[[], None]) -> None:
        if self.backed_up():
            self._drained.add(callback)
        else:
            callback()

    def written(self, size: int) -> None:
        """The writing task has written ``size`` bytes."""
        self._waiting_bytes -= size
        if self._waiting_bytes <= UNREAD_BYTES_HELD // 4:
            self._drained.call()

    def stopped(self) -> None:
        """The writing task has stopped: nothing will drain, so nobody may wait."""
        self._drained.call()


@asynccontextmanager
async def _writer(
    stdout: BinaryIO, limit: int, incoming: ChannelSender[Envelope | Exception]
) -> AsyncGenerator[PipeOutput | _ThreadOutput, None]:
    """The write stream to ``stdout``. Leaving the block closes it once what was sent
    has gone out, or after ``_FLUSH_SECONDS``; ``stdout`` itself is left open."""
    pipe = _own_copy(stdout, "wb")
    if pipe is not None:
        try:
            output = await PipeOutput.open(pipe, limit, incoming, _RAISED_WITH)
        except (ValueError, OSError):  # a descriptor the loop cannot watch
            pipe.close()
        else:
            try:
                yield output
            finally:
                output.close()
                with anyio.move_on_after(_FLUSH_SECONDS, shield=True):
                    await output.wait_closed()
                output.abort()
            _raise_if_failed(output.write_error(), "write to stdout", _ANSWERS_LOST)
            return

    # Not a pipe on asyncio: each line is written in a worker thread, by one task in turn.
    def write_all(data: bytes) -> None:
        view = memoryview(data)
        while view:  # an unbuffered file may take only part of it
            view = view[stdout.write(view) :]
        stdout.flush()

    output = _ThreadOutput(limit, incoming)
    written = anyio.Event()
    write_error: OSError | None = None

    async def write_loop(serving: anyio.CancelScope) -> None:
        nonlocal write_error
        try:
            async with output.lines:
                async for line in output.lines:
                    # With every line waiting behind it: one thread's write for many.
                    data = b"".join([line, *_waiting(output.lines)])
                    await anyio.to_thread.run_sync(write_all, data, abandon_on_cancel=True)
                    output.written(len(data))
        except OSError as exc:
            write_error = exc
            serving.cancel()  # nobody can read an answer: stop (see _stop_once_unread)
        finally:
            output.stopped()
            written.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(write_loop, tg.cancel_scope)
        try:
            yield output
        finally:
            output.close()
            with anyio.move_on_after(_FLUSH_SECONDS, shield=True):
                await written.wait()
            tg.cancel_scope.cancel()
    _raise_if_failed(write_error, "write to stdout", _ANSWERS_LOST)


_ANSWERS_LOST = "the server stopped, its answers lost"


def _waiting(lines: ChannelReceiver[bytes]) -> Iterator[bytes]:
    """The lines in ``lines``' buffer, taken without waiting."""
    while True:
        try:
            yield lines.receive_nowait()
        except (anyio.WouldBlock, anyio.EndOfStream):
            return


def _raise_if_failed(error: Exception | None, doing: str, outcome: str) -> None:
    """Raise, as one clear ``StdioFailedError``, a failure to read stdin or write stdout.
    A broken pipe or a reset is not one: the client has gone, and nobody is left to
    answer (serving just stops)."""
    if isinstance(error, OSError) and not isinstance(error, ConnectionError):
        reason = error.strerror or str(error)
        raise StdioFailedError(error.errno, f"cannot {doing} ({reason}): {outcome}") from error


def _own_copy(file: BinaryIO, mode: str) -> BinaryIO | None:
    """A duplicate of ``file``'s descriptor for an asyncio pipe transport, which closes
    what it is given; ``None`` when not on asyncio, or when ``file`` is no pipe or
    socket (or, to read from, a terminal). asyncio's loop refuses a regular file or
    ``/dev/null``, and uvloop's aborts the whole process on one (``transports/_loop.py``).
    uvloop's write transport reads its descriptor to notice a close: at a terminal,
    where stdout is stdin's device, it would swallow what the person types."""
    try:
        asyncio.get_running_loop()
        descriptor = file.fileno()
        kind = os.fstat(descriptor).st_mode
        reads_a_terminal = mode == "rb" and os.isatty(descriptor)
        if not (stat.S_ISFIFO(kind) or stat.S_ISSOCK(kind) or reads_a_terminal):
            return None
        return cast(BinaryIO, os.fdopen(os.dup(descriptor), mode, buffering=0))
    except (RuntimeError, OSError, ValueError, io.UnsupportedOperation):
        return None


async def _nothing() -> None:
    """Closing a thread-backed direction: the caller's files stay open."""
