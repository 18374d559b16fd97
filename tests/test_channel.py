"""The engine's channel behaves like an unbounded anyio memory object stream where the
engine and the transports rely on it: order, ends, errors, cancellation that loses
nothing, and a reader that stays fair and cancellable when flooded; a sender learns when
the reader has drained a backlog (on a weighed channel, in bytes too). Items handed over to
an idle reader's taker keep their order with those it reads. And a transport written
with anyio's streams, as the docs describe, still works."""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import cast

import anyio
import pytest

from answerback import Client
from answerback.jsonrpc import Envelope, WriteStream
from answerback.jsonrpc._channel import ChannelReceiver, ChannelSender, open_channel
from answerback.server import MCPServer
from answerback.transports import StreamPair
from answerback.types import TextContent

pytestmark = pytest.mark.anyio


def channel() -> tuple[ChannelSender[int], ChannelReceiver[int]]:
    return open_channel[int]()


async def test_items_arrive_in_order_and_the_closed_sender_ends_the_stream() -> None:
    sender, receiver = channel()
    for item in range(5):
        sender.send_nowait(item)
    await sender.send(5)
    sender.close()
    assert [item async for item in receiver] == [0, 1, 2, 3, 4, 5]
    with pytest.raises(anyio.EndOfStream):
        await receiver.receive()
    with pytest.raises(anyio.EndOfStream):
        receiver.receive_nowait()


async def test_a_waiting_reader_is_woken_by_a_send_and_by_the_end() -> None:
    sender, receiver = channel()
    got: list[int] = []
    ended = anyio.Event()

    async def read() -> None:
        async for item in receiver:
            got.append(item)
        ended.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(read)
        await anyio.wait_all_tasks_blocked()
        sender.send_nowait(1)
        await anyio.wait_all_tasks_blocked()
        assert got == [1]
        sender.close()
        await ended.wait()


async def test_errors_name_which_end_is_closed() -> None:
    sender, receiver = channel()
    with pytest.raises(anyio.WouldBlock):
        receiver.receive_nowait()
    receiver.close()
    with pytest.raises(anyio.BrokenResourceError):
        sender.send_nowait(1)
    with pytest.raises(anyio.ClosedResourceError):
        await receiver.receive()
    sender.close()
    with pytest.raises(anyio.ClosedResourceError):
        sender.send_nowait(1)


async def test_closing_the_reader_wakes_its_waiting_receive() -> None:
    _, receiver = channel()
    outcome: list[type[BaseException]] = []

    async def read() -> None:
        try:
            await receiver.receive()
        except anyio.ClosedResourceError as exc:
            outcome.append(type(exc))

    async with anyio.create_task_group() as tg:
        tg.start_soon(read)
        await anyio.wait_all_tasks_blocked()
        receiver.close()
    assert outcome == [anyio.ClosedResourceError]


async def test_a_cancelled_receive_loses_nothing() -> None:
    """Cancelled while waiting, or cancelled just as a send wakes it: every item is
    either returned by the receive or still there for the next one."""
    sender, receiver = channel()
    with anyio.move_on_after(0):
        await receiver.receive()
    received: list[int] = []

    async def read() -> None:
        received.append(await receiver.receive())

    for item in range(20):
        async with anyio.create_task_group() as tg:
            tg.start_soon(read)
            await anyio.wait_all_tasks_blocked()
            sender.send_nowait(item)  # wakes the reader ...
            tg.cancel_scope.cancel()  # ... which may be cancelled before it takes it
        with contextlib.suppress(anyio.WouldBlock):
            received.append(receiver.receive_nowait())
    assert received == list(range(20))


async def test_a_timed_receive_gives_up_and_loses_nothing() -> None:
    """``receive_within`` returns what comes in time, raises ``TimeoutError`` when
    nothing does, leaves the channel readable after that, and still ends and can be
    cancelled like ``receive``."""
    sender, receiver = channel()
    with pytest.raises(TimeoutError):
        await receiver.receive_within(0.001)
    sender.send_nowait(1)  # after the time-out: kept for the next receive
    assert await receiver.receive_within(0.001) == 1
    received: list[int] = []

    async def read() -> None:
        received.append(await receiver.receive_within(math.inf))

    async with anyio.create_task_group() as tg:
        tg.start_soon(read)
        await anyio.wait_all_tasks_blocked()
        sender.send_nowait(2)  # wakes the timed wait, which returns it
    assert received == [2]
    with anyio.move_on_after(0) as scope:
        await receiver.receive_within(math.inf)
    assert scope.cancelled_caught
    sender.send_nowait(3)  # the cancelled wait took nothing
    assert receiver.receive_nowait() == 3
    sender.close()
    with pytest.raises(anyio.EndOfStream):
        await receiver.receive_within(math.inf)


async def test_a_flooded_reader_still_checkpoints() -> None:
    """With items always waiting, each receive still yields to the loop and can be
    cancelled, as anyio's does: a flood cannot starve other tasks."""
    sender, receiver = channel()
    for item in range(100):
        sender.send_nowait(item)
    other_ran = anyio.Event()
    received = 0

    async def flood_reader() -> None:
        nonlocal received
        while not other_ran.is_set():
            await receiver.receive()
            received += 1

    async def other_task() -> None:
        other_ran.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(flood_reader)
        tg.start_soon(other_task)
    assert received < 100
    with anyio.CancelScope() as scope:
        scope.cancel()
        with pytest.raises(anyio.get_cancelled_exc_class()):
            await receiver.receive()
    assert receiver.receive_nowait() == received  # the cancelled receive took nothing


async def test_two_readers_at_once_are_refused() -> None:
    _, receiver = channel()
    async with anyio.create_task_group() as tg:
        tg.start_soon(receiver.receive)
        await anyio.wait_all_tasks_blocked()
        with pytest.raises(RuntimeError, match="one reader at a time"):
            await receiver.receive()
        tg.cancel_scope.cancel()


async def test_both_ends_close_as_context_managers() -> None:
    sender, receiver = channel()
    async with sender:
        sender.send_nowait(1)
    with receiver:
        assert await receiver.receive() == 1
        with pytest.raises(anyio.EndOfStream):
            await receiver.receive()
    with pytest.raises(anyio.ClosedResourceError):
        receiver.receive_nowait()


async def test_a_sender_learns_when_the_reader_has_drained_the_buffer() -> None:
    """A transport that stops reading while too much waits learns when to go on: once
    the reader is down to the low mark, once only, or at once if it already is; and
    when the reader closes, since nothing will wait any more."""
    sender, receiver = channel()
    for item in range(5):
        sender.send_nowait(item)
    assert sender.buffered() == 5
    drained: list[str] = []
    sender.when_drained(2, lambda: drained.append("first"))
    assert receiver.receive_nowait() == 0
    assert receiver.receive_nowait() == 1
    assert drained == []
    assert receiver.receive_nowait() == 2  # two left
    assert drained == ["first"]
    assert receiver.receive_nowait() == 3
    assert drained == ["first"]  # once only
    sender.when_drained(2, lambda: drained.append("already"))
    assert drained == ["first", "already"]
    sender.send_nowait(5)
    sender.send_nowait(6)
    sender.when_drained(0, lambda: drained.append("closed"))
    receiver.close()
    assert drained == ["first", "already", "closed"]
    assert sender.buffered() == 0


async def test_a_weighed_channel_counts_the_bytes_its_reader_has_left() -> None:
    """Opened with ``weigh``, a channel counts what waits in bytes: an item counts from
    its send to its receive (one handed over to an idle reader never does), and
    nothing once the reader closes. A sender waiting for the drain waits for both low
    marks, bytes as well as items."""
    sender, receiver = open_channel[bytes](weigh=len)
    sender.send_nowait(b"x" * 100)
    sender.send_nowait(b"y" * 10)
    sender.send_nowait(b"z" * 5)
    assert (sender.buffered(), sender.buffered_bytes()) == (3, 115)
    drained: list[str] = []
    sender.when_drained(2, lambda: drained.append("drained"), 10)
    assert receiver.receive_nowait() == b"x" * 100
    assert drained == []  # two items left, the low mark, but 15 bytes
    assert receiver.receive_nowait() == b"y" * 10
    assert drained == ["drained"]
    assert sender.buffered_bytes() == 5
    sender.when_drained(1, lambda: drained.append("already"), 5)
    assert drained == ["drained", "already"]
    assert receiver.receive_nowait() == b"z" * 5
    assert sender.buffered_bytes() == 0

    got: list[bytes] = []

    def take(item: bytes) -> bool:
        if item == b"buffered":
            return False
        got.append(item)
        return True

    async def wait_idle() -> None:
        with contextlib.suppress(anyio.ClosedResourceError):  # closed below
            await receiver.receive()

    receiver.hand_over(take)
    async with anyio.create_task_group() as tg:
        tg.start_soon(wait_idle)
        await anyio.wait_all_tasks_blocked()
        sender.send_nowait(b"handed over")
        sender.send_nowait(b"buffered")
        assert got == [b"handed over"]
        assert sender.buffered_bytes() == len(b"buffered")
        receiver.close()
    assert sender.buffered_bytes() == 0


def test_a_channel_opened_without_weigh_weighs_nothing() -> None:
    sender, _ = channel()
    sender.send_nowait(1)
    drained: list[str] = []
    sender.when_drained(1, lambda: drained.append("drained"), 0)
    assert (sender.buffered_bytes(), drained) == (0, ["drained"])


class AnyioStreamsTransport:
    """A transport written the documented way, with anyio memory object streams."""

    def __init__(self, server: MCPServer) -> None:
        self.server = server

    @asynccontextmanager
    async def connect(self) -> AsyncGenerator[StreamPair, None]:
        to_server, server_reads = anyio.create_memory_object_stream[Envelope | Exception](math.inf)
        to_client, client_reads = anyio.create_memory_object_stream[Envelope | Exception](math.inf)
        server_writes = cast(WriteStream, to_client)
        async with anyio.create_task_group() as tg:
            tg.start_soon(self.server.serve_connection, server_reads, server_writes)
            try:
                yield client_reads, cast(WriteStream, to_server)
            finally:
                tg.cancel_scope.cancel()
                for stream in (to_server, server_reads, to_client, client_reads):
                    stream.close()


async def test_an_idle_reader_hands_items_over_only_while_it_waits_with_nothing_buffered() -> None:
    sender, receiver = channel()
    taken: list[int] = []
    read: list[int] = []

    def take(item: int) -> bool:
        if item % 2:  # takes odd items, leaves even ones to the reader
            return False
        taken.append(item)
        return True

    receiver.hand_over(take)
    sender.send_nowait(0)  # nobody waits yet: buffered, not offered
    assert taken == []

    async def reader() -> None:
        async for item in receiver:
            read.append(item)

    async with anyio.create_task_group() as tg:
        tg.start_soon(reader)
        await anyio.wait_all_tasks_blocked()
        assert read == [0]
        sender.send_nowait(2)  # the reader waits, nothing buffered: taken at once
        assert taken == [2]
        sender.send_nowait(3)  # refused: buffered and the reader woken
        sender.send_nowait(4)  # something is buffered: not offered, so order holds
        assert taken == [2]
        await anyio.wait_all_tasks_blocked()
        assert read == [0, 3, 4]
        receiver.hand_over(None)
        sender.send_nowait(6)
        await anyio.wait_all_tasks_blocked()
        assert (taken, read) == ([2], [0, 3, 4, 6])
        sender.close()


async def test_a_handler_runs_in_its_endpoints_context_not_the_callers() -> None:
    """A request dispatched in its sender's step (in-process: the client's task) still
    starts its handler with the context variables of where the server's endpoint opened,
    never the client's."""
    caller = contextvars.ContextVar("caller", default="nobody")
    mcp = MCPServer("contexts")

    @mcp.tool()
    def who() -> str:
        """Which caller the tool sees."""
        return caller.get()

    async with Client(mcp) as client:
        token = caller.set("the client")
        try:
            result = await client.call_tool("who")
        finally:
            caller.reset(token)
    assert result.content == [TextContent(text="nobody")]


async def test_a_transport_made_of_anyio_memory_streams_still_works() -> None:
    mcp = MCPServer("plain streams")

    @mcp.tool()
    def double(n: int) -> int:
        return 2 * n

    async with Client(AnyioStreamsTransport(mcp)) as client:
        result = await client.call_tool("double", {"n": 21})
    assert result.structured_content == {"result": 42}
