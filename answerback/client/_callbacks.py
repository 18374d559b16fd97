"""Client callbacks: their signatures, the context they get, and the fixed refusals.

The seed's keyword callbacks (``elicitation_callback=`` and friends) are sugar for a
``CallbackResponder`` (see ``_responder.py``); this module holds what both share: the
context a callback or responder receives, and how an answer that is missing or of the
wrong type is refused.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar, cast

from pydantic import BaseModel

from answerback._options import callable_or_none
from answerback.jsonrpc import RequestId
from answerback.jsonrpc._endpoint import as_object
from answerback.types import (
    ClientCapabilities,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    ErrorData,
    ListRootsResult,
    LoggingMessageNotificationParams,
    MCPError,
    ServerNotification,
)
from answerback.types._errors import METHOD_NOT_FOUND, MISSING_REQUIRED_CLIENT_CAPABILITY

if TYPE_CHECKING:
    from answerback.client._session import ClientSession
    from answerback.forms import Form
    from answerback.urls import UrlVerdict

ResultT = TypeVar("ResultT", bound=BaseModel)
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class ClientRequestContext:
    """What a callback knows about the server request it answers."""

    session: ClientSession
    """The live session: a callback may call the server back through it."""
    request_id: RequestId
    """The server's name for this question: legacy, its request's JSON-RPC id; 2026-07-28,
    the input request's key, which is the same for every call asking the same question
    at once (keys are content digests). So it is not unique: a host keeping pending
    prompts keys them by a counter of its own (contexts compare by value, too)."""
    meta: dict[str, Any] | None
    """The ``_meta`` the server attached to the request, if any."""
    url_verdict: UrlVerdict | None = None
    """For a URL-mode elicitation, the client's verdict on its link (a blocked link never
    reaches a callback): show ``url_verdict.display`` and its reasons when asking."""
    form: Form | None = None
    """For a form-mode elicitation, its form as the client parsed and checked it (typed
    fields, ``answerback.forms``): render this rather than parse the schema again."""


ElicitationCallback: TypeAlias = Callable[
    [ClientRequestContext, ElicitRequestParams], Awaitable[ElicitResult | ErrorData]
]
SamplingCallback: TypeAlias = Callable[
    [ClientRequestContext, CreateMessageRequestParams], Awaitable[CreateMessageResult | ErrorData]
]
ListRootsCallback: TypeAlias = Callable[
    [ClientRequestContext], Awaitable[ListRootsResult | ErrorData]
]
LoggingCallback: TypeAlias = Callable[[LoggingMessageNotificationParams], Awaitable[None]]
IncomingMessage: TypeAlias = ServerNotification | Exception
MessageHandler: TypeAlias = Callable[[IncomingMessage], Awaitable[None]]


def refusal(what: str, capability: str, fix: str | None = None) -> ErrorData:
    """The answer to a server request the client did not declare: ``"<what> not
    supported"`` (the official SDK's words, which programs match on), with the missing
    capability and what provides it in ``data`` (servers pass it on to the caller):
    ``fix``, a host's own words, else ``CAPABILITY_FIXES``' advice to a developer."""
    return ErrorData(
        code=METHOD_NOT_FOUND,
        message=f"{what} not supported",
        data={
            "reason": f"the client did not declare the {capability!r} capability: "
            f"{fix or CAPABILITY_FIXES[capability]}"
        },
    )


REFUSABLE = ("elicitation", "sampling", "roots")
"""The capabilities a server may ask for whatever the client declared (its request is
then refused with ``refusal``): the keys ``Client(refusal_reasons=...)`` takes."""


_ANSWERS = "or a Responder that declares it in capabilities() and answers in"
CAPABILITY_FIXES = {
    "elicitation": f"pass elicitation_callback= to Client, {_ANSWERS} elicit()",
    "elicitation.form": f"pass elicitation_callback= to Client (both modes), {_ANSWERS} elicit()",
    "elicitation.url": f"pass elicitation_callback= to Client (both modes), {_ANSWERS} elicit()",
    "sampling": f"pass sampling_callback= to Client, {_ANSWERS} sample()",
    "sampling.tools": (
        "pass sampling_capabilities=SamplingCapability(tools=SamplingToolsCapability()) "
        f"with sampling_callback= to Client, {_ANSWERS} sample()"
    ),
    "sampling.context": (
        "pass sampling_capabilities=SamplingCapability(context=SamplingContextCapability()) "
        f"with sampling_callback= to Client, {_ANSWERS} sample()"
    ),
    "roots": f"pass list_roots_callback= to Client, {_ANSWERS} list_roots()",
}
"""What gives answerback's client each capability: told to the client's developer."""

_REFUSED = (
    ("Form elicitation", "elicitation.form"),
    ("URL elicitation", "elicitation.url"),
    ("Elicitation", "elicitation"),
    ("Sampling with tools", "sampling.tools"),
    ("Sampling with context", "sampling.context"),
    ("Sampling", "sampling"),
    ("List roots", "roots"),
)
"""The refusals' wire words (answerback's and the official SDKs'), by capability."""


def explain_refusal(exc: MCPError, declared: ClientCapabilities, *, modern: bool) -> MCPError:
    """``exc`` made to say which callback to register, if it refuses a question this
    client could not answer because it did not declare the capability.

    On a legacy connection the message is the peer's (programs match on "Elicitation
    not supported"), so the fix goes in a note, which tracebacks show. On 2026-07-28
    the refusal was raised here, or comes from the server without answerback's advice,
    so the fix is added to the message itself.
    """
    capability = refused_capability(exc, declared)
    if capability is None or "_callback" in exc.message:
        return exc
    advice = (
        f"the server asked for {capability!r}, which this client did not declare; "
        f"{CAPABILITY_FIXES[capability]}"
    )
    if not modern:
        exc.add_note(f"answerback: {advice}.")
        return exc
    return MCPError.from_error_data(
        ErrorData(code=exc.code, message=f"{exc.message.rstrip('.')}: {advice}.", data=exc.data)
    )


def refused_capability(exc: MCPError, declared: ClientCapabilities) -> str | None:
    """The undeclared capability ``exc`` refuses for, if it is such a refusal."""
    if exc.code == METHOD_NOT_FOUND:
        for what, capability in _REFUSED:
            if exc.message.startswith(f"{what} not supported"):
                return None if _declares(declared, capability) else capability
        return None
    data = as_object(exc.data)
    if exc.code != MISSING_REQUIRED_CLIENT_CAPABILITY or data is None:
        return None
    required = as_object(data.get("requiredCapabilities"))
    if required is None:
        return None
    for name, parts in required.items():
        subparts = as_object(parts) or {}
        for capability in (name, *(f"{name}.{part}" for part in subparts)):
            if capability in CAPABILITY_FIXES and not _declares(declared, capability):
                return capability
    return None


def _declares(declared: ClientCapabilities, capability: str) -> bool:
    node: object = declared
    for part in capability.split("."):
        node = getattr(node, part, None)
        if node is None:
            return False
    return True


class WrongAnswerType(TypeError):
    """A callback or responder method returned something other than its result model or
    ``ErrorData``. The message is answerback's own, naming only the function and the
    types, so unlike other exceptions from the host's code it is told to the server as
    it is: the developer sees what to fix in the call's error, not only in the log."""


def checked_answer(
    answer: object, expected: type[ResultT], source: str | Callable[[], str]
) -> ResultT | ErrorData:
    """``answer`` if it is ``expected`` or ``ErrorData``; a ``WrongAnswerType`` naming
    ``source`` (the callback or responder method) otherwise, so the author learns which
    function returned what, instead of the server getting a malformed answer. A callable
    ``source`` is asked for the name only then (``answerer`` walks the responder's
    wrappers, work every answer would otherwise pay for)."""
    if isinstance(answer, expected | ErrorData):
        return answer
    if not isinstance(source, str):
        source = source()
    raise WrongAnswerType(
        f"{source} returned {type(answer).__name__}; it must return "
        f"{expected.__name__} or ErrorData."
    )


def async_callable_or_none(
    name: str, value: T | None, what: str, *, takes: tuple[str, ...] | None = None
) -> T | None:
    """``value`` if it is ``None`` or can be called and awaited (``what`` says what it is
    called with); a ``TypeError`` for a plain ``def``, which would otherwise be accepted
    and fail every request with "can't be used in 'await' expression". With ``takes``
    (the names of the positional arguments it is called with), also one for a callable
    that cannot take them (see ``check_arguments``)."""
    callable_or_none(name, value, what)
    if value is not None and is_plain_function(value):
        raise TypeError(
            f"{name} must be {what}, got the plain function {_name_of(value)}: write it as "
            "`async def`."
        )
    if value is not None and takes is not None:
        check_arguments(name, value, takes)
    return value


def check_arguments(name: str, value: object, takes: tuple[str, ...]) -> None:
    """A ``TypeError`` naming the signature expected if ``value`` cannot be called with
    ``len(takes)`` positional arguments: found now, not when the server first asks (and
    then only as Python's own "takes 1 positional argument but 2 were given").

    Judged by binding to ``inspect.signature``, which sees through bound methods,
    ``functools.partial`` and ``__call__`` (not a decorator's ``__wrapped__``), and
    accepts ``*args``. What it cannot read (a
    class, some callables written in C) is let through: a callback that would work is
    never refused."""
    if isinstance(value, type):
        return
    try:
        # Not through ``__wrapped__``: a decorator's wrapper is what the client calls, and
        # it may take other arguments than the function it wraps.
        signature = inspect.signature(cast("Callable[..., object]", value), follow_wrapped=False)
    except (TypeError, ValueError):
        return
    try:
        signature.bind(*takes)
    except TypeError:
        written = signature.replace(
            parameters=[
                parameter.replace(annotation=inspect.Parameter.empty)
                for parameter in signature.parameters.values()
            ],
            return_annotation=inspect.Signature.empty,
        )
        raise TypeError(
            f"{name} must accept ({', '.join(takes)}); got {_shown(value)}, which takes {written}."
        ) from None


def _shown(value: object) -> str:
    """A callable as an error names it: its qualified name, through partials."""
    if isinstance(value, functools.partial):
        inner = cast("functools.partial[object]", value).func
        return f"functools.partial({_shown(inner)}, ...)"
    name = getattr(value, "__qualname__", None)
    return name if isinstance(name, str) else f"{type(value).__qualname__} object"


def is_plain_function(value: object) -> bool:
    """Whether ``value`` is a function (or method, or a ``functools.partial`` of one, or
    an object whose ``__call__`` is one) that is not ``async def``. What is async but no
    coroutine function (an object with ``async def __call__``, a partial of an async
    function) is not plain; nor is what cannot be told (a class, an ``AsyncMock``)."""
    while isinstance(value, functools.partial):
        value = cast("functools.partial[object]", value).func
    if inspect.iscoroutinefunction(value) or isinstance(value, type):
        return False
    if inspect.isfunction(value) or inspect.ismethod(value) or inspect.isbuiltin(value):
        return True
    call = inspect.getattr_static(type(value), "__call__", None)
    return inspect.isfunction(call) and not inspect.iscoroutinefunction(call)


def _name_of(value: object) -> str:
    name = getattr(value, "__qualname__", None)
    return f"{name}()" if isinstance(name, str) else repr(value)
