"""``MCPServer(lifespan=...)``: what every request shares, opened once.

A server is served in several ways at once or in turn (stdio, the HTTP app, in-process
clients), and none of them owns the server: so the lifespan is entered for the first of
its users and left when the last is done, and all of them share its one value. It runs
in a task that none of them owns (``Lifespan._hold``), since a lifespan may hold a task
group or a cancel scope, which only the task that entered it can leave, and any user's
task would keep that user from leaving before the others.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import inspect
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, cast

import anyio
import anyio.lowlevel

from answerback.server._arguments import bad_value, wrong_type

if TYPE_CHECKING:
    from answerback.server._server import MCPServer


class Lifespan:
    """``MCPServer(lifespan=...)``, entered for the first of its users (connections, the
    HTTP app) and left once the last is done, so that they all share one value.

    It runs in a task no user owns (``_hold``, see ``start_detached``): a lifespan may
    hold a task group or a cancel scope, which only the task that entered it can leave,
    and a task of the first user's would hold that user, closing, until the others were
    done. So each user leaves when it is done; the last waits for the lifespan's exit
    (and raises its error)."""

    def __init__(
        self,
        server: MCPServer,
        factory: Callable[[Any], AbstractAsyncContextManager[Any]] | None,
    ) -> None:
        self._server = server
        self._factory = factory
        self.failure: BaseException | None = None
        """The last error entering or leaving it (``run`` reports what uvicorn swallows)."""
        self._round: LifespanRound | None = None
        """The users of the lifespan that is running, or starting; ``None`` between."""

    @property
    def value(self) -> Any:
        """What the lifespan yielded, while it runs: the current round's (an old round
        may still be leaving while a new one runs)."""
        current = self._round
        return None if current is None else current.value

    @contextlib.asynccontextmanager
    async def in_use(self) -> AsyncGenerator[None, None]:
        """Hold the lifespan for the block: enter it unless another user holds it."""
        if self._factory is None:
            yield
            return
        current = await self._join()
        try:
            yield
        finally:
            with anyio.CancelScope(shield=True):
                await self._leave(current)

    async def _join(self) -> LifespanRound:
        """Become a user of the lifespan, once it has been entered (entering it first
        if no one has); raises what entering it raised."""
        while True:
            current = self._round
            starter = current is None
            if current is None:
                current = self._round = LifespanRound()
                current.task = start_detached(functools.partial(self._hold, current))
            current.users += 1
            try:
                await current.ready.wait()
            except BaseException:
                # This user went away (its client left) while the lifespan was entered:
                # no failure of the lifespan's. The entry goes on for the others waiting
                # (it runs in no user's task); the last to go calls it off (``_leave``).
                with anyio.CancelScope(shield=True):
                    await self._leave(current)
                raise
            if current.called_off:
                current.users -= 1
                await current.exited.wait()  # then try again
                continue
            failure = current.failure
            if failure is None:
                return current
            current.users -= 1
            if starter or not isinstance(failure, Exception):
                raise _as_raised(failure)  # a SystemExit or a KeyboardInterrupt ends every user
            raise RuntimeError(
                f"{failed_lifespan(failure)} (entered for another connection)"
            ) from failure

    async def _leave(self, current: LifespanRound) -> None:
        """Stop using the lifespan; the last user (of one that was entered) waits for
        its exit, and raises its error."""
        current.users -= 1
        if current.users:
            return
        if not current.ready.is_set():
            self._call_off(current)  # no one is left to want it
        if current.called_off or current.failure is not None:
            await current.exited.wait()
            return
        if self._round is current:
            self._round = None
        current.release.set()
        await current.exited.wait()
        if current.failure is not None:
            raise _as_raised(current.failure)

    def _call_off(self, current: LifespanRound) -> None:
        """Cancel an entry not finished (its user left), so that no one waits for it."""
        current.called_off = True
        current.entering.cancel()
        if self._round is current:
            self._round = None

    async def _hold(self, current: LifespanRound) -> None:
        """Enter the lifespan, hand over its value, and leave it once released."""
        assert self._factory is not None
        try:
            with current.entering:
                made = cast(object, self._factory(self._server))  # a lifespan may be untyped
                if not isinstance(made, AbstractAsyncContextManager):
                    raise TypeError(
                        f"MCPServer(lifespan=...) returned {type(made).__name__}, not an "
                        "async context manager: write the lifespan as an async generator "
                        "decorated with @contextlib.asynccontextmanager, which yields once."
                    )
                async with cast("AbstractAsyncContextManager[Any]", made) as value:
                    if not current.called_off:
                        current.value = value
                        current.ready.set()
                        await current.release.wait()
        except anyio.get_cancelled_exc_class():
            # The event loop is ending: it cancels every task left, this one too. Not
            # entered, the lifespan is called off, so that no user takes it as entered.
            if not current.ready.is_set():
                self._call_off(current)
        except BaseException as exc:  # nothing above this task would hear of it: its users
            # do, as raised (a SystemExit stays one); on trio, a system task raising
            # would end the run with TrioInternalError.
            current.failure = exc
            if not isinstance(exc, KeyboardInterrupt):  # ``run`` exits with 130 for that
                self.failure = exc  # for ``run``: uvicorn swallows it, a task group wraps it
            if self._round is current:
                self._round = None
        finally:
            if self._round is current:  # ended with its loop: a later loop enters anew
                self._round = None
            current.ready.set()
            current.exited.set()


class LifespanRound:
    """The users of one run of a lifespan, from its entry to its exit."""

    def __init__(self) -> None:
        self.users = 0
        """Those waiting for it or using it."""
        self.ready = anyio.Event()
        """Set once it has been entered, or has failed to be (``failure``), or called off."""
        self.release = anyio.Event()
        """Set when the last user has left: the lifespan is to be left."""
        self.exited = anyio.Event()
        """Set once its task has ended."""
        self.entering = anyio.CancelScope()
        """Around the entry and the lifespan's whole run; cancelled to call the entry off."""
        self.called_off = False
        """Its entry was cancelled: every user left before it was entered."""
        self.value: Any = None
        """What the lifespan yielded, once entered."""
        self.failure: BaseException | None = None
        """What entering or leaving it raised."""
        self.task: object = None
        """The task that holds it (see ``start_detached``)."""


def start_detached(function: Callable[[], Awaitable[None]]) -> object:
    """Run ``function`` in a task of its own, which no caller waits for (anyio has no
    such task: trio's system tasks, and a plain asyncio task); returns what to keep a
    reference to while it runs (asyncio keeps only a weak one). ``function`` must not
    raise, not even a ``BaseException``: on trio that would end the whole run with
    TrioInternalError, on asyncio stop the loop."""
    native = anyio.lowlevel.current_token().native_token
    if isinstance(native, asyncio.AbstractEventLoop):
        return native.create_task(_coroutine(function))
    import trio

    # With the caller's context variables, as an asyncio task gets them.
    return trio.lowlevel.spawn_system_task(function, context=contextvars.copy_context())


async def _coroutine(function: Callable[[], Awaitable[None]]) -> None:
    await function()


def _as_raised(failure: BaseException) -> BaseException:
    """``failure`` as a user's task raises it. On asyncio, a child task raising
    ``SystemExit`` or ``KeyboardInterrupt`` stops the loop at once, the tasks above it
    (an in-process ``Client``'s host) left to be cancelled as the loop closes, and the
    error raised again there unheard ("Task exception was never retrieved"). In a
    one-member group it travels up the task groups as any error, and the ``Client``
    raises it bare. Only in a task anyio started as a child: the first task raises it
    as it is, and of a task asyncio started nothing is known. (Trio carries either as
    any error.)"""
    if isinstance(failure, Exception):
        return failure
    if not isinstance(anyio.lowlevel.current_token().native_token, asyncio.AbstractEventLoop):
        return failure
    if anyio.get_current_task().parent_id is None:
        return failure
    return BaseExceptionGroup(failed_lifespan(failure), [failure])


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
