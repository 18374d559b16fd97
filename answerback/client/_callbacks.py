"""Client callbacks: their signatures, the context they get, and the fixed refusals.

The seed's keyword callbacks (``elicitation_callback=`` and friends) are sugar for a
``CallbackResponder`` (see ``_responder.py``); this module holds what both share: the
context a callback or responder receives, and how an answer that is missing or of the
wrong type is refused.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar

from pydantic import BaseModel

from answerback.jsonrpc import RequestId
from answerback.types import (
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    ErrorData,
    ListRootsResult,
    LoggingMessageNotificationParams,
    ServerNotification,
)
from answerback.types._errors import METHOD_NOT_FOUND

if TYPE_CHECKING:
    from answerback.client._session import ClientSession
    from answerback.urls import UrlVerdict

ResultT = TypeVar("ResultT", bound=BaseModel)


@dataclass(frozen=True, slots=True)
class ClientRequestContext:
    """What a callback knows about the server request it answers."""

    session: ClientSession
    """The live session: a callback may call the server back through it."""
    request_id: RequestId
    """The server's id for this request (in 2026-07-28, the input request's key)."""
    meta: dict[str, Any] | None
    """The ``_meta`` the server attached to the request, if any."""
    url_verdict: UrlVerdict | None = None
    """For a URL-mode elicitation, the client's verdict on its link (a blocked link never
    reaches a callback): show ``url_verdict.display`` and its reasons when asking."""


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


def refusal(what: str, capability: str) -> ErrorData:
    """The answer to a server request the client did not declare: ``"<what> not
    supported"`` (the official SDK's words, which programs match on), with the missing
    capability in ``data`` for the server's author."""
    return ErrorData(
        code=METHOD_NOT_FOUND,
        message=f"{what} not supported",
        data={"reason": f"the client did not declare the {capability!r} capability"},
    )


def checked_answer(answer: object, expected: type[ResultT], source: str) -> ResultT | ErrorData:
    """``answer`` if it is ``expected`` or ``ErrorData``; a ``TypeError`` naming
    ``source`` (the callback or responder method) otherwise, so the author learns which
    function returned what, instead of the server getting a malformed answer."""
    if isinstance(answer, expected | ErrorData):
        return answer
    raise TypeError(
        f"{source} returned {type(answer).__name__}; it must return "
        f"{expected.__name__} or ErrorData."
    )
