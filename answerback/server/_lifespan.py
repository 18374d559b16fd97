"""``MCPServer(lifespan=...)``: what every request shares, opened once.

A server is served in several ways at once or in turn (stdio, the HTTP app, in-process
clients), and none of them owns the server: so the lifespan is entered by the first of
its users and left when the last is done, and all of them share its one value. It runs
in a task of its own (``Lifespan._hold``), since a lifespan may hold a task group or a
cancel scope, which only the task that entered it can leave, and which must not be
cancelled with the connection that happened to come first.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import AsyncGenerator, Callable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, cast

import anyio
import anyio.abc

from answerback.server._arguments import bad_value, wrong_type

if TYPE_CHECKING:
    from answerback.server._server import MCPServer


class Lifespan:
    """``MCPServer(lifespan=...)``, entered by the first of its users (connections, the
    HTTP app) and left once the last is done, so that they all share one value.

    It runs in a task of the first user's (``_hold``): a lifespan may hold a task group
    or a cancel scope, which only the task that entered it can leave, and which must not
    be cancelled with the connection that happened to come first. That task cannot
    outlive its user, so a first user done before the others waits for them (shielded:
    its client went away, but the others still use the value)."""

    def __init__(
        self,
        server: MCPServer,
        factory: Callable[[Any], AbstractAsyncContextManager[Any]] | None,
    ) -> None:
        self._server = server
        self._factory = factory
        self.value: Any = None
        """What the lifespan yielded, while it runs."""
        self.failure: Exception | None = None
        """The last error entering or leaving it (``run`` reports what uvicorn swallows)."""
        self._round: LifespanRound | None = None
        """The users of the lifespan that is running, or starting; ``None`` between."""

    @contextlib.asynccontextmanager
    async def in_use(self) -> AsyncGenerator[None, None]:
        """Hold the lifespan for the block: enter it unless another user holds it."""
        if self._factory is None:
            yield
            return
        while (current := self._round) is not None:
            if current.others == 0:
                current.idle = anyio.Event()
            current.others += 1
            try:
                await current.ready.wait()
                failure = current.failure
                if failure is None:
                    yield
                    return
                if isinstance(failure, Exception):
                    raise RuntimeError(
                        f"{failed_lifespan(failure)} (entered for another connection)"
                    ) from failure
                # The user entering it was cancelled (its client left): not a failure of
                # the lifespan's, so another user tries, this one perhaps.
            finally:
                current.others -= 1
                if current.others == 0:
                    current.idle.set()
        current = self._round = LifespanRound()
        try:
            async with anyio.create_task_group() as tg:
                try:
                    self.value = await tg.start(self._hold, current)
                except BaseException as exc:
                    self._round = None
                    current.failure = exc
                    current.ready.set()
                    raise
                current.ready.set()
                try:
                    yield
                finally:
                    with anyio.CancelScope(shield=True):
                        while current.others:  # each time one came after the others left
                            await current.idle.wait()
                    self._round = None
                    self.value = None
                    current.release.set()
        except BaseExceptionGroup as group:
            if len(group.exceptions) != 1:
                raise
            error = group.exceptions[0]
            raise error from error.__cause__  # as the lifespan raised it, not in a group

    async def _hold(
        self, current: LifespanRound, *, task_status: anyio.abc.TaskStatus[Any]
    ) -> None:
        """Enter the lifespan, hand over its value, and leave it once released: in a task
        of its own, shielded once entered, so that the connection that entered it may be
        cancelled (its client gone) while others use the value, and its cleanup runs
        all the same."""
        assert self._factory is not None
        try:
            made = cast(object, self._factory(self._server))  # a lifespan may be untyped
            if not isinstance(made, AbstractAsyncContextManager):
                raise TypeError(
                    f"MCPServer(lifespan=...) returned {type(made).__name__}, not an async "
                    "context manager: write the lifespan as an async generator decorated "
                    "with @contextlib.asynccontextmanager, which yields once."
                )
            with anyio.CancelScope() as shelter:
                async with cast("AbstractAsyncContextManager[Any]", made) as value:
                    shelter.shield = True
                    task_status.started(value)
                    await current.release.wait()
        except Exception as exc:
            self.failure = exc
            raise


class LifespanRound:
    """The users of one run of a lifespan, from its entry to its exit."""

    def __init__(self) -> None:
        self.others = 0
        """Its users besides the one that entered it: waiting for it, or using it."""
        self.ready = anyio.Event()
        """Set once it has been entered, or has failed to be (``failure``)."""
        self.idle = anyio.Event()
        """Set when the last of the others has left (made anew when one comes)."""
        self.release = anyio.Event()
        """Set when the last user has left: the lifespan is to be left."""
        self.failure: BaseException | None = None


def failed_lifespan(failure: BaseException) -> str:
    """What to say of a lifespan that failed to start or to stop."""
    return f"the server's lifespan failed: {type(failure).__name__}: {failure}"


def checked_lifespan(
    lifespan: object,
) -> Callable[[Any], AbstractAsyncContextManager[Any]] | None:
    """``MCPServer(lifespan=...)``, refused unless it is a function or ``None``: an async
    generator function is a lifespan without its ``@asynccontextmanager``."""
    advice = (
        "Pass a function taking the server and returning an async context manager: an "
        "async generator decorated with @contextlib.asynccontextmanager, which yields "
        "the value tools read as ctx.lifespan_context."
    )
    if lifespan is None:
        return None
    if not callable(lifespan):
        raise wrong_type("MCPServer()", "lifespan", "a function or None", lifespan, advice)
    if inspect.isasyncgenfunction(lifespan):
        raise bad_value(
            "MCPServer()",
            "lifespan",
            "is an async generator function, not a context manager factory",
            "Decorate it with @contextlib.asynccontextmanager.",
        )
    return cast("Callable[[Any], AbstractAsyncContextManager[Any]]", lifespan)
