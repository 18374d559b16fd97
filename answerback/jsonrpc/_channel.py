"""The unbounded one-reader channel that carries envelopes between an engine and its
transport.

Why not anyio's memory object streams: every message through one looks up the async
backend twice, makes an ``anyio.Event`` and a receiver record, and spends a whole loop
turn on a checkpoint before looking at a buffer that, in the ping-pong of a call, is
always empty. With two such hops per call that was a quarter of an in-process call.
Here a send appends to a deque and wakes the reader's native waiter (a loop future on
asyncio, a ``trio.Event`` on trio, looked up once per channel); a receive that finds
the buffer empty just waits, which is its checkpoint. A receive that finds an item
checkpoints first, so a reader flooded with messages still lets other tasks run and can
be cancelled, as with anyio.

A reader may also ``hand_over`` items: while it waits with nothing buffered, a send
offers the item to a function of the reader's first, which may take it there and then.
The engine dispatches a well-formed message that way, in the sender's own step, rather
than waking its reader task for it: a loop turn fewer per message on each side. Order is
kept, since only an idle reader with an empty buffer is bypassed.

The ends behave like anyio's where the engine and transports use them (the same
``send``/``send_nowait``/``receive``/``receive_nowait``/``close``, async iteration and
exceptions), so a transport written with memory object streams works unchanged. What is
left out is what they never need: a bound (every such buffer is unbounded, see
``transports/_memory.py``), clones, and several tasks receiving at once. An item is
never lost to cancellation: it leaves the buffer only when a receive returns it.

A channel opened with ``weigh`` also counts what its buffer holds in bytes, for a sender
that must bound a slow reader's backlog by size as well as by number (an HTTP stream of
large messages). Its ends are subclasses, so the other channels pay nothing for it.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable
from types import TracebackType
from typing import Generic, Self, TypeVar

import anyio

from answerback.jsonrpc._backend import Primitives, Waiter, native_primitives

T = TypeVar("T")


class _State(Generic[T]):
    __slots__ = (
        "buffer",
        "drained",
        "low_mark",
        "primitives",
        "receiver_closed",
        "sender_closed",
        "taker",
        "waiter",
    )

    def __init__(self) -> None:
        self.buffer: deque[T] = deque()
        self.waiter: Waiter | None = None
        self.primitives: Primitives | None = None
        self.sender_closed = False
        self.receiver_closed = False
        self.taker: Callable[[T], bool] | None = None
        self.low_mark = 0
        self.drained: list[Callable[[], None]] | None = None
        """Who waits for the buffer to drain (made on the first: most channels never)."""

    def call_drained(self) -> None:
        callbacks, self.drained = self.drained, None
        for callback in callbacks or ():
            callback()

    def wake(self) -> None:
        waiter = self.waiter
        if waiter is not None:
            self.waiter = None
            if not waiter.done():
                waiter.set_result(None)

    def native(self) -> Primitives:
        if self.primitives is None:
            self.primitives = native_primitives()
        return self.primitives


class _End(ABC):
    """What both ends share: closing, also as a (sync or async) context manager."""

    __slots__ = ()

    @abstractmethod
    def close(self) -> None:
        """Close this end."""

    async def aclose(self) -> None:
        self.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


class ChannelSender(_End, Generic[T]):
    """The sending end: never waits, since the buffer has no bound."""

    __slots__ = ("_closed", "_state")

    def __init__(self, state: _State[T]) -> None:
        self._state = state
        self._closed = False

    def send_nowait(self, item: T) -> None:
        """Buffer ``item`` for the reader; raises ``ClosedResourceError`` if this end is
        closed and ``BrokenResourceError`` if the reader's is."""
        if self._closed:
            raise anyio.ClosedResourceError
        state = self._state
        if state.receiver_closed:
            raise anyio.BrokenResourceError
        taker = state.taker
        if taker is not None and state.waiter is not None and not state.buffer and taker(item):
            return
        state.buffer.append(item)
        state.wake()

    async def send(self, item: T) -> None:
        """``send_nowait`` after a checkpoint, as anyio's ``send`` is one."""
        await self._state.native().checkpoint()
        self.send_nowait(item)

    def buffered(self) -> int:
        """How many items wait for the reader."""
        return len(self._state.buffer)

    def buffered_bytes(self) -> int:
        """What the items waiting for the reader weigh: 0 unless the channel was opened
        with ``weigh``."""
        return 0

    def when_drained(self, low_mark: int, callback: Callable[[], None], low_bytes: int = 0) -> None:
        """Call ``callback`` once when the reader has taken all but ``low_mark`` items (at
        once if it has), or has closed its end: a sender that stops sending while too
        much waits learns when to go on. One low mark at a time. On a channel opened
        with ``weigh``, what is left must also weigh ``low_bytes`` at most."""
        state = self._state
        if len(state.buffer) <= low_mark or state.receiver_closed:
            callback()
        else:
            state.low_mark = low_mark
            if state.drained is None:
                state.drained = []
            state.drained.append(callback)

    def close(self) -> None:
        """End the channel: the reader gets what is buffered, then ``EndOfStream``."""
        if not self._closed:
            self._closed = True
            self._state.sender_closed = True
            self._state.wake()


class ChannelReceiver(_End, Generic[T]):
    """The receiving end, read by one task at a time."""

    __slots__ = ("_state",)

    def __init__(self, state: _State[T]) -> None:
        self._state = state

    def receive_nowait(self) -> T:
        """The next item if one is buffered; ``WouldBlock`` if none is yet,
        ``EndOfStream`` if none will come, ``ClosedResourceError`` if this end is closed."""
        state = self._state
        if state.receiver_closed:
            raise anyio.ClosedResourceError
        if state.buffer:
            item = state.buffer.popleft()
            if state.drained and len(state.buffer) <= state.low_mark:
                state.call_drained()
            return item
        if state.sender_closed:
            raise anyio.EndOfStream
        raise anyio.WouldBlock

    async def receive(self) -> T:
        """The next item, waiting for it if need be."""
        return await self._receive(None)

    async def receive_within(self, seconds: float) -> T:
        """``receive``, but raise ``TimeoutError`` if nothing came within ``seconds``
        (nothing is lost: an item sent later waits in the buffer). Cheaper than
        ``receive`` in a cancel scope with a deadline, for a wait that is usually short."""
        return await self._receive(seconds)

    async def _receive(self, seconds: float | None) -> T:
        state = self._state
        if state.buffer:
            await state.native().checkpoint()
        while True:
            try:
                return self.receive_nowait()
            except anyio.WouldBlock:
                if state.waiter is not None:
                    raise RuntimeError(
                        "this channel is already being read by another task; it has "
                        "one reader at a time"
                    ) from None
                waiter = state.waiter = state.native().new_waiter()
                try:
                    if seconds is None:
                        await waiter
                    elif not await state.native().wait_within(waiter, seconds):
                        raise TimeoutError
                finally:
                    if state.waiter is waiter:
                        state.waiter = None

    def hand_over(self, taker: Callable[[T], bool] | None) -> None:
        """While this end's reader waits and nothing is buffered, offer each item sent to
        ``taker`` first; it returns whether it took the item (else it is buffered as
        usual). ``taker`` runs in the sender's step, so it must not block or raise;
        ``None`` stops offering."""
        self._state.taker = taker

    def close(self) -> None:
        """Stop reading: buffered items are dropped and the sender's next send raises
        ``BrokenResourceError``."""
        state = self._state
        if not state.receiver_closed:
            state.receiver_closed = True
            state.buffer.clear()
            state.wake()
            state.call_drained()

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> T:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None


class _WeighedState(_State[T]):
    __slots__ = ("held", "low_bytes", "weigh")

    def __init__(self, weigh: Callable[[T], int]) -> None:
        super().__init__()
        self.weigh = weigh
        self.held = 0
        """What the buffered items weigh."""
        self.low_bytes = 0


class _WeighedSender(ChannelSender[T]):
    __slots__ = ("_weighed",)

    def __init__(self, state: _WeighedState[T]) -> None:
        super().__init__(state)
        self._weighed = state

    def send_nowait(self, item: T) -> None:
        state = self._weighed
        if self._closed or state.receiver_closed or state.taker is not None:
            count = len(state.buffer)
            super().send_nowait(item)  # raises, or may hand the item over
            if len(state.buffer) == count:
                return
        else:  # the usual case, without super()'s cost on the path of every item
            state.buffer.append(item)
            state.wake()
        state.held += state.weigh(item)

    def buffered_bytes(self) -> int:
        return self._weighed.held

    def when_drained(self, low_mark: int, callback: Callable[[], None], low_bytes: int = 0) -> None:
        state = self._weighed
        state.low_bytes = low_bytes
        if state.held <= low_bytes or state.receiver_closed:
            super().when_drained(low_mark, callback)
        else:
            state.low_mark = low_mark
            if state.drained is None:
                state.drained = []
            state.drained.append(callback)


class _WeighedReceiver(ChannelReceiver[T]):
    __slots__ = ("_weighed",)

    def __init__(self, state: _WeighedState[T]) -> None:
        super().__init__(state)
        self._weighed = state

    def receive_nowait(self) -> T:
        # The base's, with the weighing: not through super(), whose frame would cost a
        # WouldBlock (raised each time the reader catches up) another traceback entry.
        state = self._weighed
        if state.receiver_closed:
            raise anyio.ClosedResourceError
        if state.buffer:
            item = state.buffer.popleft()
            state.held -= state.weigh(item)
            if (
                state.drained
                and len(state.buffer) <= state.low_mark
                and state.held <= state.low_bytes
            ):
                state.call_drained()
            return item
        if state.sender_closed:
            raise anyio.EndOfStream
        raise anyio.WouldBlock

    def close(self) -> None:
        self._weighed.held = 0
        super().close()


class open_channel(tuple[ChannelSender[T], ChannelReceiver[T]]):
    """A connected (sender, receiver) pair: ``open_channel[Item]()``.

    A class only so that the item type can be given in brackets, as with anyio's
    ``create_memory_object_stream[Item]()``; what it makes is a plain pair.
    """

    def __new__(  # type: ignore[misc]
        cls, primitives: Primitives | None = None, weigh: Callable[[T], int] | None = None
    ) -> tuple[ChannelSender[T], ChannelReceiver[T]]:
        """``primitives``: the running loop's (``native_primitives()``), from a caller
        that opens many channels; otherwise they are looked up at the first wait.
        ``weigh``: an item's size in bytes (the same each time it is asked), to count
        what the buffer holds (``ChannelSender.buffered_bytes``)."""
        if weigh is not None:
            weighed: _WeighedState[T] = _WeighedState(weigh)
            weighed.primitives = primitives
            return (_WeighedSender(weighed), _WeighedReceiver(weighed))
        state: _State[T] = _State()  # not _State[T](): subscripting costs a microsecond
        state.primitives = primitives
        return (ChannelSender(state), ChannelReceiver(state))
