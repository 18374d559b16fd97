"""Client callbacks: their signatures, the context they get, and what they declare.

Registering a callback *is* the capability declaration, so the capability object is
computed here from the callbacks given and nowhere else. A missing callback is answered
with a fixed refusal, which fails the server's call with a clear ``MCPError``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

from answerback.jsonrpc import RequestId
from answerback.types import (
    ClientCapabilities,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitationCapability,
    ElicitRequestParams,
    ElicitResult,
    ErrorData,
    ListRootsResult,
    LoggingMessageNotificationParams,
    RootsCapability,
    SamplingCapability,
    ServerNotification,
)
from answerback.types._errors import METHOD_NOT_FOUND

if TYPE_CHECKING:
    from answerback.client._session import ClientSession
    from answerback.urls import UrlVerdict


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


def refusal(what: str) -> ErrorData:
    """The answer when no callback handles a server request: ``"<what> not supported"``."""
    return ErrorData(code=METHOD_NOT_FOUND, message=f"{what} not supported")


def declared_capabilities(
    *,
    elicitation: bool,
    sampling: bool,
    sampling_capabilities: SamplingCapability | None,
    roots: bool,
) -> ClientCapabilities:
    """The capabilities a client with these callbacks declares."""
    return ClientCapabilities(
        elicitation=ElicitationCapability(form={}, url={}) if elicitation else None,
        sampling=(sampling_capabilities or SamplingCapability()) if sampling else None,
        roots=RootsCapability(list_changed=True) if roots else None,
    )
