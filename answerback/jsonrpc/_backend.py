"""The few event-loop primitives the engine's hot path needs, native to each backend.

The engine creates a waiter, a cancel scope and a task for every request. Through anyio's
portable API each of those looks the running backend up again (``anyio.Event()``,
``anyio.CancelScope()``) or pays for a task group's bookkeeping (``start_soon``), and
together that costs more than the rest of a request. So an ``Endpoint`` picks the running
backend once, on entry, and then uses that backend's own primitives directly: bare loop
futures and plain tasks on asyncio, ``trio.Event`` and a nursery on trio.

Both implementations give the engine the same guarantees: every task it starts is owned by
the endpoint and awaited when the endpoint closes, and a task's outcome is always
retrieved, so no failure can go unreported ("Task exception was never retrieved").
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable, Callable, Coroutine, Generator
from typing import Any, NamedTuple, Protocol, cast

import anyio
import anyio.lowlevel


class Waiter(Protocol):
    """Something one task awaits until another marks it done.

    The subset of ``asyncio.Future`` the engine uses, so that on asyncio the waiter *is*
    a bare loop future, with nothing wrapped around it.
    """

    def done(self) -> bool: ...

    def set_result(self, result: None, /) -> None: ...

    def __await__(self) -> Generator[Any, Any, None]: ...


class CancelScope(Protocol):
    """The part of a cancel scope the engine uses (anyio's and trio's both have it)."""

    @property
    def cancel_called(self) -> bool: ...

    def cancel(self) -> None: ...

    def __enter__(self) -> Any: ...

    def __exit__(self, *exc_info: Any) -> bool: ...


TaskFunction = Callable[..., Coroutine[Any, Any, None]]


class Backend(Protocol):
    """What an ``Endpoint`` asks of the event loop it runs on."""

    # Read-only attributes holding plain callables, so that on asyncio they can be the
    # loop's own bound methods, called with nothing in between.

    @property
    def new_waiter(self) -> Callable[[], Waiter]:
        """Makes a fresh, not yet done waiter."""
        ...

    @property
    def wait_keeping(self) -> Callable[[Waiter], Awaitable[None]]:
        """Waits for a waiter such that cancelling the wait leaves it usable."""
        ...

    @property
    def new_cancel_scope(self) -> Callable[[], CancelScope]:
        """Makes a fresh cancel scope of the backend's own kind."""
        ...

    @property
    def cancelled(self) -> type[BaseException]:
        """The exception the backend raises in a cancelled task."""
        ...

    def spawn(self, function: TaskFunction, *args: Any) -> None:
        """Run ``function(*args)`` in a new task owned by the endpoint.

        The task's context variables are a copy of those where the endpoint opened,
        whichever task (or loop callback) spawns it: a message dispatched in its sender's
        step must not hand the sender's context to the peer's handler. The function must
        not raise (the engine turns every failure into a response), and must call
        ``task_done()`` as its very last step.
        """
        ...

    def task_done(self) -> None:
        """Called by a spawned task as it ends."""
        ...

    async def open(self) -> None:
        """Start owning tasks (called from the endpoint's ``__aenter__``)."""
        ...

    async def join(self) -> None:
        """Wait, shielded from cancellation, until every spawned task has ended."""
        ...


class AsyncioBackend:
    """Bare loop futures and plain tasks, kept alive in a set until they end.

    A plain task rather than a task group's: the group's bookkeeping per task costs more
    than everything else the engine does for a request. The set holds a strong reference
    (the loop keeps only weak ones) and lets ``join`` await every task still running.
    Tasks come from the loop's own factory: a host may have set one that starts tasks
    eagerly (Python 3.12+), and such a task may have ended before it is added.
    """

    cancelled = asyncio.CancelledError

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.new_waiter: Callable[[], Waiter] = cast(Callable[[], Waiter], loop.create_future)
        # anyio's scope class for asyncio, looked up once (``anyio.CancelScope()`` looks
        # the backend up on every call); it is what keeps a handler's shields working.
        self.new_cancel_scope: Callable[[], CancelScope] = cast(
            Callable[[], CancelScope], type(anyio.CancelScope())
        )
        self._loop = loop
        self._create_task = loop.create_task
        self._tasks: set[asyncio.Task[None]] = set()
        self._context = contextvars.copy_context()

    @staticmethod
    def wait_keeping(waiter: Waiter, /) -> Awaitable[None]:
        return asyncio.shield(cast("asyncio.Future[None]", waiter))

    def spawn(self, function: TaskFunction, *args: Any) -> None:
        task = self._create_task(function(*args), context=self._context.copy())
        if not task.done():  # else a host's eager task factory ran it to its end
            self._tasks.add(task)

    def task_done(self) -> None:
        # Here rather than in a done callback, which costs a loop callback per task.
        # Given the loop, ``current_task`` skips looking the running loop up (on 3.11,
        # a ``getpid`` system call each time).
        task = asyncio.current_task(self._loop)
        if task is not None:
            self._tasks.discard(task)

    async def open(self) -> None:
        return None

    async def join(self) -> None:
        with anyio.CancelScope(shield=True):
            # Bounded: the engine spawns no task while closing, so one round normally
            # suffices. gather retrieves every outcome, so none goes unreported; the set
            # is cleared here because a task cancelled before it ran never reports done.
            while self._tasks:
                tasks = tuple(self._tasks)
                self._tasks.difference_update(tasks)
                await asyncio.gather(*tasks, return_exceptions=True)


class Primitives(NamedTuple):
    """What a channel needs of the running loop: a waiter, a checkpoint, and a wait
    for a waiter that gives up after some seconds (``False`` then)."""

    new_waiter: Callable[[], Waiter]
    checkpoint: Callable[[], Awaitable[None]]
    wait_within: Callable[[Waiter, float], Awaitable[bool]]


def _asyncio_checkpoint() -> Awaitable[None]:
    # What anyio's checkpoint does on asyncio, without looking the backend up.
    return asyncio.sleep(0)


async def _asyncio_wait_within(waiter: Waiter, seconds: float) -> bool:
    # A loop timer rather than a cancel scope with a deadline: a third of the cost.
    future = cast("asyncio.Future[None]", waiter)
    expired = False

    def expire() -> None:
        nonlocal expired
        if not future.done():
            expired = True
            future.set_result(None)

    timer = future.get_loop().call_later(seconds, expire)
    try:
        await future
    finally:
        timer.cancel()
    return not expired


def native_primitives() -> Primitives:
    """The running loop's own waiter, checkpoint and timed wait (see ``_channel``)."""
    native = anyio.lowlevel.current_token().native_token
    if isinstance(native, asyncio.AbstractEventLoop):
        return Primitives(
            cast(Callable[[], Waiter], native.create_future),
            _asyncio_checkpoint,
            _asyncio_wait_within,
        )
    import trio.lowlevel

    from answerback.jsonrpc._trio_backend import EventWaiter, wait_within

    return Primitives(EventWaiter, trio.lowlevel.checkpoint, wait_within)


def current_backend() -> Backend:
    """The backend of the running event loop."""
    native = anyio.lowlevel.current_token().native_token
    if isinstance(native, asyncio.AbstractEventLoop):
        return AsyncioBackend(native)
    # Only imported when trio runs, so asyncio programs never load it.
    from answerback.jsonrpc._trio_backend import TrioBackend

    return TrioBackend()
