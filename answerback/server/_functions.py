"""What tools, prompts and resources share: reading a function's signature, calling it.

The parameter annotated with ``Context`` (or a subclass, or ``Context | None``) is
injected by the server and never exposed to the client; every other parameter is an
input, and one without an annotation accepts any JSON value. A signature that cannot
mean what it says is refused here, when the function is registered: an unannotated
``ctx`` or ``context`` would otherwise become an input every client must send, and a
``Context`` from another library could not be built from JSON, both failures that would
only show when a call fails. So is a generator function: a result is sent once, whole,
so nothing it yields would stream, and its caller would get the generator object (or,
from a sync one, whatever iterating it gave) in place of an answer.

A plain ``def`` runs in a worker thread, an ``async def`` on the event loop, as
Starlette, FastAPI and the official SDK run theirs: a sync function is where blocking
code goes (a database driver, ``requests``, ``time.sleep``), and on the loop it would
stall every other request and session of the server. Code that must stay on the loop's
thread (tkinter, COM) is written ``async def``.
"""

from __future__ import annotations

import contextlib
import inspect
import math
import os
import threading
import types
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Union, get_args, get_origin, get_type_hints

import anyio
import anyio.from_thread
import anyio.to_thread
import pydantic
from anyio.lowlevel import RunVar
from pydantic import TypeAdapter
from pydantic.fields import FieldInfo

from answerback.types import (
    AudioContent,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    UnknownContent,
)

USER_THREADS = 40
"""How many plain ``def`` tools, resources and prompts run at once (the rest wait)."""


class UserThreads:
    """The worker threads of user functions in one event loop: how many may run at once
    (``limiter``), and which functions run in them now (``running``).

    A thread holds its slot of the limiter until its function returns, even when the
    call that started it was cancelled and went on without it (see ``call``): so a
    client cancelling in a loop cannot start more threads than the limit."""

    def __init__(self) -> None:
        self.limiter = anyio.CapacityLimiter(USER_THREADS)
        self.running: dict[object, str] = {}
        """Each slot taken, by the name of the function running in its thread."""
        self.unlimited = anyio.CapacityLimiter(math.inf)
        """What anyio's ``run_sync`` is given: ``limiter`` is taken here, for as long as
        the thread runs, rather than for as long as the call waits."""

    def release(self, slot: object) -> None:
        del self.running[slot]
        self.limiter.release_on_behalf_of(slot)


_user_threads: RunVar[UserThreads] = RunVar("answerback_user_threads")


def user_threads() -> UserThreads:
    """The user functions' worker threads, one set per event loop. Not anyio's default
    limiter: answerback's own blocking work (reading and writing stdio that is not a
    pipe, resolving paths, token files) takes its threads from that, and forty sync
    tools waiting on something must not stall the transport that would bring it."""
    try:
        return _user_threads.get()
    except LookupError:
        threads = UserThreads()
        _user_threads.set(threads)
        return threads


def running_in_threads() -> list[str]:
    """The user functions still running in worker threads of this event loop (by
    ``module.name``), their calls over or not; a server stopping with some tells so,
    since nothing can stop a thread."""
    return sorted(user_threads().running.values())


_CONTEXT_NAMES = ("ctx", "context")
"""Parameter names that, left without an annotation, are meant to receive the context."""


NAN_KEPT = pydantic.ConfigDict(ser_json_inf_nan="constants")
"""Dump NaN and Infinity as the floats they are: pydantic's default writes them as
``None`` for values it only infers (typed ``Any``), which would send ``null`` in their
place without a word. Kept, they reach ``json.dumps(allow_nan=False)``, which refuses
them, and the function's author hears of it."""

ANY_VALUE: TypeAdapter[Any] = TypeAdapter(Any, config=NAN_KEPT)
"""Turns whatever a function returned into JSON-ready data; one for every call, since
building an adapter costs more than the call it serves."""


@dataclass(frozen=True, slots=True)
class Signature:
    """A registered function's inputs, as the server needs them."""

    parameters: dict[str, tuple[Any, Any]]
    """name → (annotation, default; ``...`` when required)."""
    context_parameter: str | None
    returns: Any
    on_loop: bool
    """An ``async def``, awaited on the event loop (see ``call``); decided here, once,
    rather than by ``inspect`` on every call."""


def read_signature(function: Callable[..., Any], context_type: type) -> Signature:
    """The inputs of ``function`` and which parameter receives the context.

    Raises ``TypeError`` naming the function (and parameter) for a generator function,
    ``*args``/``**kwargs``, a second context parameter, an unannotated ``ctx``/``context``,
    or an annotation that mentions a ``Context`` the server cannot pass.
    """
    where = f"{getattr(function, '__qualname__', function)!r}"
    if inspect.isasyncgenfunction(function) or inspect.isgeneratorfunction(function):
        raise TypeError(
            f"{where} is a generator function, but an MCP result is sent once, whole: "
            "nothing it yields would stream. Return a list instead (`return [...]`); a "
            "tool that shows progress while it works calls `await ctx.report_progress(...)`."
        )
    signature = inspect.signature(function)
    hints = get_type_hints(function, include_extras=True)
    parameters: dict[str, tuple[Any, Any]] = {}
    context_parameter: str | None = None
    for parameter in signature.parameters.values():
        name = parameter.name
        if name not in hints and name in _CONTEXT_NAMES:
            raise TypeError(
                f"{where}: parameter {name!r} has no annotation, so it would be an input "
                f"every client must send. To receive the request context, annotate it: "
                f"`{name}: Context` (from answerback.server import Context)."
            )
        annotation = hints.get(name, Any)
        if _is_context(annotation, context_type):
            if context_parameter is not None:
                raise TypeError(
                    f"{where}: parameters {context_parameter!r} and {name!r} both take the "
                    "Context; keep one."
                )
            context_parameter = name
            continue
        if (foreign := _foreign_context(annotation, context_type)) is not None:
            raise TypeError(
                f"{where}: parameter {name!r} is annotated {foreign}, which this server "
                f"cannot pass in. Annotate it `{name}: Context` with "
                "`from answerback.server import Context`."
            )
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise TypeError(f"{where}: *args and **kwargs cannot be MCP inputs")
        default = ... if parameter.default is parameter.empty else parameter.default
        parameters[name] = (annotation, default)
    returns = hints.get("return", signature.return_annotation)
    return Signature(parameters, context_parameter, returns, inspect.iscoroutinefunction(function))


def _is_context(annotation: Any, context_type: type) -> bool:
    """``Context``, a subclass, or either of those ``| None`` (the server always passes one),
    with its lifespan's type or without (``Context[Pool]``)."""
    annotation = _unannotated(annotation)
    if get_origin(annotation) in (Union, types.UnionType):
        members = [member for member in get_args(annotation) if member is not type(None)]
        if len(members) != 1:
            return False
        annotation = _unannotated(members[0])
    annotation = get_origin(annotation) or annotation
    return isinstance(annotation, type) and issubclass(annotation, context_type)


def _foreign_context(annotation: Any, context_type: type) -> str | None:
    """How ``annotation`` is written when it holds a context the server cannot pass: ours
    inside another type (``list[Context]``), or another library's class named ``Context``
    (code moved from another MCP SDK); else ``None``."""
    annotation = _unannotated(annotation)
    if isinstance(annotation, type):
        if annotation.__name__ == "Context" and not issubclass(annotation, context_type):
            return f"{annotation.__module__}.Context"
        return None
    if any(
        _is_context(member, context_type) or _foreign_context(member, context_type)
        for member in get_args(annotation)
    ):
        return repr(annotation)
    return None


def _unannotated(annotation: Any) -> Any:
    """``T`` from ``Annotated[T, ...]``; anything else unchanged."""
    return get_args(annotation)[0] if get_origin(annotation) is Annotated else annotation


def unreadable_parameters(parameters: dict[str, tuple[Any, Any]]) -> list[str]:
    """Each of ``parameters`` whose annotation pydantic cannot read a value of (a plain
    class of the user's own, a callable), as ``name (Type)``, for a registration error."""
    unreadable: list[str] = []
    for name, (annotation, _) in parameters.items():
        try:
            TypeAdapter[Any](annotation).json_schema()
        except pydantic.PydanticUserError:
            unreadable.append(f"{name} ({type_name(annotation)})")
    return unreadable


def unknown_arguments(unknown: list[str]) -> str:
    """The problem of arguments a tool or prompt has no parameter for, by name."""
    plural = "s" if len(unknown) > 1 else ""
    return f"unknown argument{plural} {', '.join(map(repr, unknown))}"


def wire_name(name: str, field: FieldInfo) -> str:
    """The name a client sends for parameter ``name``: its alias
    (``from_: Annotated[str, Field(alias="from")]`` is sent as ``from``), else the name."""
    if isinstance(field.validation_alias, str):
        return field.validation_alias
    return field.alias or name


def accepted_arguments(fields: Mapping[str, FieldInfo]) -> str:
    """What to send instead of an unknown argument: the arguments there are, as a client
    sends them (``wire_name``), the required ones marked, so a misspelt name can be
    corrected in one go."""
    if not fields:
        return "It takes no arguments."
    listed = [
        f"{wire_name(name, field)!r} (required)"
        if field.is_required()
        else repr(wire_name(name, field))
        for name, field in fields.items()
    ]
    return f"Its arguments are {', '.join(listed)}."


KNOWN_CONTENT = (
    "build each content block as one of the types MCP defines ("
    + ", ".join(
        block.model_fields["type"].default
        for block in (TextContent, ImageContent, AudioContent, ResourceLink, EmbeddedResource)
    )
    + ")"
)
"""The advice for a tool or prompt that built content of an unknown type."""


def unknown_content_type(blocks: Iterable[object]) -> str | None:
    """The ``type`` of the first of ``blocks`` that is no kind of content MCP defines
    (``{"type": "txt", ...}`` read into ``UnknownContent``), else ``None``. The wire
    model keeps such blocks so that a client can read a newer server's content; a
    server sending one it built itself is a mistake no client can show, so tools and
    prompts refuse it rather than send it."""
    for block in blocks:
        if isinstance(block, UnknownContent):
            return block.type
    return None


def written_at(function: Callable[..., Any]) -> str | None:
    """Where ``function`` was written, for a registration error: ``server.py, line 12``
    (``None`` for a callable with no code of its own)."""
    code = getattr(inspect.unwrap(getattr(function, "__func__", function)), "__code__", None)
    if code is None:
        return None
    return f"{os.path.basename(code.co_filename)}, line {code.co_firstlineno}"


def type_name(annotation: Any) -> str:
    """An annotation as an error shows it: a class by its name, anything else as written."""
    return annotation.__qualname__ if isinstance(annotation, type) else repr(annotation)


async def call(function: Callable[..., Any], kwargs: dict[str, Any], on_loop: bool) -> Any:
    """Call a user's function: an ``async def`` (``on_loop``, from its ``Signature``) on
    the event loop, any other in a worker thread (see the module's docstring), whose
    awaitable result, if it returns one (a callable object with an ``async __call__``),
    is awaited on the loop."""
    if on_loop:
        value = await function(**kwargs)
    else:
        value = await _in_thread(function, kwargs)
    if inspect.isawaitable(value):
        value = await value
    return value


async def _in_thread(function: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    """``function(**kwargs)`` in a worker thread, holding a slot of ``user_threads()``
    until it returns.

    A cancelled call returns at once, without a result, and leaves the function to
    finish in its thread (anyio's ``abandon_on_cancel=True``): no thread can be stopped,
    and waiting for it would let one stuck function (a lock never released, a socket
    without a timeout) hold up the end of its connection and the server's shutdown for
    ever. The thread keeps its slot until the function returns, so a client cancelling
    in a loop cannot start more threads than the limit, and a server that stops with
    such threads running names their functions (``running_in_threads``)."""
    threads = user_threads()
    slot = _Slot(threads)
    await threads.limiter.acquire_on_behalf_of(slot)
    threads.running[slot] = _dotted_name(function)

    def run() -> Any:
        if not slot.start():
            return None
        try:
            return function(**kwargs)
        finally:
            slot.end()

    try:
        return await anyio.to_thread.run_sync(
            run, abandon_on_cancel=True, limiter=threads.unlimited
        )
    finally:
        slot.leave()


def _dotted_name(function: Callable[..., Any]) -> str:
    """``module.qualname``, as a warning names a function (a callable object by its class)."""
    named = function if hasattr(function, "__qualname__") else type(function)
    return f"{named.__module__}.{named.__qualname__}"


class _Slot:
    """One call's slot of ``UserThreads.limiter``, freed once, by whichever of the call
    and its thread is last: the call if the function has returned, or never started
    (cancelled first, it never will); else the thread, once the function returns."""

    def __init__(self, threads: UserThreads) -> None:
        self._threads = threads
        self._lock = threading.Lock()
        self._state = "waiting"
        """"running" once the thread starts the function, "done" once it has returned;
        "dropped" if the call was cancelled before the thread started it, "abandoned" if
        while it ran."""

    def start(self) -> bool:
        """In the thread: whether to run the function (not if the call was dropped)."""
        with self._lock:
            if self._state == "dropped":
                return False
            self._state = "running"
            return True

    def end(self) -> None:
        """In the thread: the function has returned."""
        with self._lock:
            abandoned = self._state == "abandoned"
            self._state = "done"
        if abandoned:
            # The loop may have ended meanwhile (RunFinishedError is a RuntimeError):
            # then nothing is left to give the slot to.
            with contextlib.suppress(RuntimeError):
                anyio.from_thread.run_sync(self._threads.release, self)

    def leave(self) -> None:
        """On the loop: the call is over, with the function's result or cancelled."""
        with self._lock:
            if self._state == "running":
                self._state = "abandoned"
                return
            if self._state == "waiting":
                self._state = "dropped"
        self._threads.release(self)
