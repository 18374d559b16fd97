"""The engine's primitives on trio: ``trio.Event`` waiters and a nursery per endpoint.

Imported only when an endpoint starts under trio (see ``_backend.current_backend``).
"""

from __future__ import annotations

import contextvars
from collections.abc import Awaitable, Generator
from typing import Any, cast

import trio

from answerback.jsonrpc._backend import CancelScope, TaskFunction, Waiter


class EventWaiter:
    """A waiter made of a ``trio.Event``, which stays usable after a cancelled wait."""

    __slots__ = ("_event",)

    def __init__(self) -> None:
        self._event = trio.Event()

    def done(self) -> bool:
        return self._event.is_set()

    def set_result(self, result: None, /) -> None:
        self._event.set()

    def __await__(self) -> Generator[Any, Any, None]:
        return self._event.wait().__await__()


async def wait_within(waiter: Waiter, seconds: float) -> bool:
    """Wait for ``waiter`` at most ``seconds``; whether it was done in time."""
    with trio.move_on_after(seconds):
        await waiter
        return True
    return False


class TrioBackend:
    """Tasks run in a nursery the endpoint opens on entry and joins on exit."""

    __slots__ = ("_context", "_manager", "_nursery")

    cancelled = trio.Cancelled

    @staticmethod
    def new_waiter() -> Waiter:
        return EventWaiter()

    @staticmethod
    def wait_keeping(waiter: Waiter, /) -> Awaitable[None]:
        return waiter

    @staticmethod
    def new_cancel_scope() -> CancelScope:
        return cast(CancelScope, trio.CancelScope())

    def __init__(self) -> None:
        self._manager = trio.open_nursery()
        self._nursery: trio.Nursery | None = None
        self._context = contextvars.copy_context()

    def spawn(self, function: TaskFunction, *args: Any) -> None:
        assert self._nursery is not None
        # trio gives a new task a copy of the spawning task's context: spawn from ours.
        self._context.run(self._nursery.start_soon, function, *args)

    def task_done(self) -> None:
        return None

    async def open(self) -> None:
        self._nursery = await self._manager.__aenter__()

    async def join(self) -> None:
        assert self._nursery is not None
        # The nursery's own scope, not a new one around it: trio scopes must nest.
        self._nursery.cancel_scope.shield = True
        try:
            await self._manager.__aexit__(None, None, None)
        except BaseExceptionGroup as group:
            # Tasks cancelled from outside the endpoint (the host's scope was cancelled):
            # the host unwinds from that same cancellation at its next checkpoint.
            if group.split(trio.Cancelled)[1] is not None:
                raise
