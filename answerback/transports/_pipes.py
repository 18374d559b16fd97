"""Pipes under asyncio, carrying the engine's messages with no task in between.

Read through a stream and written by a writer task, each message a pipe carries costs
a task's wake-up, a loop turn each way. Both stdio sides use what asyncio offers under
its streams instead: a protocol whose callback hands each chunk read straight to the
engine's channel, and a write stream that puts each line straight into the pipe
transport, which writes at once what the pipe takes and keeps the rest, in order.
On trio (and where a pipe cannot be driven this way) the stdio modules use tasks as
before.

Both stdio sides bound what they hold for a peer (a ``Backlog``, which every reader of
theirs honours, with tasks or without): no more input is read while more than
``UNTAKEN_MESSAGES_HELD`` messages wait for the engine (a peer that writes faster than
it is answered), or more than ``UNREAD_BYTES_HELD`` of this side's messages wait for
the peer to read them (one that asks and never reads the answers); ``Held`` is the
two. The peer's messages wait in the pipe instead, and its writes block, as they would
against any program. Past the latter, a request's handler waits before it writes more
(``Envelope.paced``); an answer never waits, so nothing that ends a connection does.
The HTTP client and the in-process transport bound what waits for their engine with the
same ``UntakenMessages``.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from typing import Any, BinaryIO, Protocol, cast

import anyio
import anyio.lowlevel

from answerback.jsonrpc import Envelope
from answerback.jsonrpc._channel import ChannelSender
from answerback.transports._framing import line_for

Take = Callable[[bytes], bool]
"""Takes a chunk of input; false once nothing more is wanted (the connection is over)."""

UNTAKEN_MESSAGES_HELD = 1024
"""The peer's messages read but not yet taken by the engine before input is no longer
read (again once a quarter are left): a burst of a thousand calls fits, a flood waits in
the pipe."""
UNREAD_BYTES_HELD = 4 * 1024 * 1024
"""Answers that may wait for the peer to read them before input is no longer read (it is
read again once they are down to a quarter of this). Generous, so that a simple client
that writes a batch of requests before reading gets its answers, yet a bound."""


class Backlog(Protocol):
    """What a stdio side holds for its peer (messages the engine has yet to take,
    answers the peer has yet to read), as its reader sees it: while it is backed up, no
    more input is read."""

    def backed_up(self) -> bool:
        """Whether more than its bound waits."""
        ...

    def when_drained(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` once when no longer backed up (or the output has closed)."""
        ...


def pipes_by_protocol() -> bool:
    """Whether pipes can be driven by ``PipeInput`` and ``PipeOutput`` here: on asyncio,
    except on Windows, whose loop takes only pipes opened for overlapped I/O."""
    if sys.platform == "win32":
        return False
    native = anyio.lowlevel.current_token().native_token
    return isinstance(native, asyncio.AbstractEventLoop)


class Drained:
    """The callbacks waiting for a backlog to drain (``Backlog.when_drained``), each
    called once."""

    __slots__ = ("_callbacks",)

    def __init__(self) -> None:
        self._callbacks: list[Callable[[], None]] = []

    def add(self, callback: Callable[[], None]) -> None:
        self._callbacks.append(callback)

    def call(self) -> None:
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()


class UntakenMessages:
    """The ``Backlog`` of messages a channel holds that its reader has yet to take: the
    peer's, waiting for the engine (``incoming``), or the engine's, waiting for a task
    that writes them."""

    def __init__(self, incoming: ChannelSender[Any]) -> None:
        self._incoming = incoming

    def backed_up(self) -> bool:
        return self._incoming.buffered() > UNTAKEN_MESSAGES_HELD

    def when_drained(self, callback: Callable[[], None]) -> None:
        self._incoming.when_drained(UNTAKEN_MESSAGES_HELD // 4, callback)


class Held:
    """What one side holds for its peer, as its reader sees it (a ``Backlog``): the
    peer's messages the engine has yet to take, and what the peer has yet to read of
    this side's. Input is not read while either is past its bound, so a peer that
    writes faster than it is answered, or asks and never reads the answers, cannot grow
    this side without limit: its own writes block instead."""

    def __init__(self, untaken: Backlog, unread: Backlog) -> None:
        self._untaken = untaken
        self._unread = unread

    def backed_up(self) -> bool:
        return self._untaken.backed_up() or self._unread.backed_up()

    def when_drained(self, callback: Callable[[], None]) -> None:
        def again() -> None:
            self.when_drained(callback)

        if self._untaken.backed_up():
            self._untaken.when_drained(again)
        elif self._unread.backed_up():
            self._unread.when_drained(again)
        else:
            callback()


async def until_drained(backlog: Backlog) -> None:
    """Wait, if ``backlog`` is backed up, until it is not: a task's read, before it reads."""
    if backlog.backed_up():
        drained = anyio.Event()
        backlog.when_drained(drained.set)
        await drained.wait()


class PipeInput(asyncio.Protocol):
    """Hands each chunk read from a pipe to ``take`` in the loop's own callback, so no
    task wakes up per message just to pass it on (``asyncio.StreamReader`` would)."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._ended: asyncio.Future[None] = loop.create_future()
        self._take: Take | None = None
        self._early: list[bytes] = []
        """What came before ``read_all`` started."""
        self._transport: asyncio.ReadTransport | None = None
        self._error: OSError | None = None
        """The error a read failed with, which ended input."""
        self._backlog: Backlog | None = None

    async def read_all(self, take: Take, backlog: Backlog | None = None) -> OSError | None:
        """Hand every chunk to ``take`` until end of input, or until it returns false;
        return the error that ended input, if a read failed. While ``backlog`` is backed
        up, reading pauses."""
        self._backlog = backlog
        early, self._early = self._early, []
        if all(take(chunk) for chunk in early):
            self._take = take
            self._pause_if_backed_up()
            await self._ended
        self._end()
        return self._error

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = cast(asyncio.ReadTransport, transport)

    def data_received(self, data: bytes) -> None:
        if self._take is None:
            self._early.append(data)
        elif not self._take(data):
            self._end()
        else:
            self._pause_if_backed_up()

    def _pause_if_backed_up(self) -> None:
        if self._backlog is not None and self._backlog.backed_up():
            assert self._transport is not None
            self._transport.pause_reading()
            self._backlog.when_drained(self._resume)

    def _resume(self) -> None:
        if self._take is not None and self._transport is not None:
            self._transport.resume_reading()

    def eof_received(self) -> None:
        self._end()

    def connection_lost(self, exc: Exception | None) -> None:
        if isinstance(exc, OSError):
            self._error = exc
        self._end()

    def _end(self) -> None:
        self._take = None
        if not self._ended.done():
            self._ended.set_result(None)
            if self._transport is not None and not self._transport.is_closing():
                self._transport.pause_reading()


class _Closing(asyncio.Protocol):
    """A write pipe's protocol: says when the pipe is closed, its last bytes written, and
    what closed it if a write failed; and whether more than the transport's high-water
    mark waits to be written (``backed_up``)."""

    def __init__(self) -> None:
        self.closed = asyncio.get_running_loop().create_future()
        self.error: Exception | None = None
        self.backed_up = False
        self.drained = Drained()

    def pause_writing(self) -> None:
        self.backed_up = True

    def resume_writing(self) -> None:
        self.backed_up = False
        self.drained.call()

    def connection_lost(self, exc: Exception | None) -> None:
        self.error = self.error or exc
        if not self.closed.done():
            self.closed.set_result(None)
        self.backed_up = False
        self.drained.call()


class PipeOutput:
    """The engine's write stream (a ``WriteStream``) over an asyncio write pipe:
    ``send_nowait`` writes the message's line into the pipe transport at once.

    There is no buffer and no reader behind it: the transport keeps, in order, what the
    pipe does not take at once. It is a ``Backlog``: past ``UNREAD_BYTES_HELD`` the read
    side stops reading, and a request's handler waits before it writes more. A line that
    cannot go is replaced, failed or dropped by ``line_for``, which puts a failed
    request's answer on ``incoming`` (``setting``: where this side's ``limit`` is
    raised, for its message). Closing lets what is written go out, then closes the
    pipe; ``wait_closed`` waits for that.
    """

    __slots__ = ("_closed", "_incoming", "_limit", "_protocol", "_setting", "_transport")

    def __init__(
        self,
        transport: asyncio.WriteTransport,
        protocol: _Closing,
        limit: int,
        incoming: ChannelSender[Envelope | Exception],
        setting: str,
    ) -> None:
        self._closed = False
        self._transport = transport
        self._protocol = protocol
        self._limit = limit
        self._incoming = incoming
        self._setting = setting

    @classmethod
    async def open(
        cls,
        pipe: BinaryIO,
        limit: int,
        incoming: ChannelSender[Envelope | Exception],
        setting: str,
    ) -> PipeOutput:
        """Writes to ``pipe`` (a file object the transport takes over and closes)."""
        loop = asyncio.get_running_loop()
        transport, protocol = await loop.connect_write_pipe(_Closing, pipe)
        transport.set_write_buffer_limits(high=UNREAD_BYTES_HELD)
        return cls(transport, protocol, limit, incoming, setting)

    def send_nowait(self, item: Envelope) -> None:
        """Write ``item``'s line; raises ``ClosedResourceError`` if this end is closed,
        ``BrokenResourceError`` if the pipe is (its reader has gone), and ``WouldBlock``
        for a handler's message (``Envelope.paced``) while the pipe is backed up."""
        if self._closed:
            raise anyio.ClosedResourceError
        if self._transport.is_closing():
            raise anyio.BrokenResourceError
        if self.backed_up() and item.paced:  # rarely backed up: asked first
            raise anyio.WouldBlock
        if line := line_for(item, self._limit, self._incoming, self._setting):
            self._transport.write(line)

    async def send(self, item: Envelope) -> None:
        await anyio.lowlevel.checkpoint()
        while self.backed_up() and item.paced:  # checked again: others may write first
            await until_drained(self)
        self.send_nowait(item)

    def close(self) -> None:
        """Write no more: what is written still goes out, then the pipe is closed."""
        self._closed = True
        self._transport.close()

    async def wait_closed(self) -> None:
        """Wait until the pipe is closed (after ``close``, once its last bytes are out, or
        when its reader has gone). A cancelled wait leaves the others waiting."""
        await asyncio.shield(self._protocol.closed)

    def backed_up(self) -> bool:
        return self._protocol.backed_up

    def when_drained(self, callback: Callable[[], None]) -> None:
        if self._protocol.backed_up:
            self._protocol.drained.add(callback)
        else:
            callback()

    def write_error(self) -> Exception | None:
        """The error that closed the pipe, if a write failed (its reader gone, a full
        disk); ``None`` if it closed normally."""
        return self._protocol.error

    def abort(self) -> None:
        """Close the pipe now, dropping what has not gone out (a reader that stopped
        reading must not hold us up for ever). Safe whatever state the pipe is in."""
        self._closed = True
        if self._transport.get_write_buffer_size():
            self._transport.abort()
        else:
            self._transport.close()  # nothing if it is closing already
