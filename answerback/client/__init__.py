"""The client half: ``Client``, its session, and what callbacks receive."""

from answerback.client._callbacks import (
    ClientRequestContext,
    ElicitationCallback,
    IncomingMessage,
    ListRootsCallback,
    LoggingCallback,
    MessageHandler,
    SamplingCallback,
)
from answerback.client._client import Client
from answerback.client._session import (
    ClientSession,
    InputRequiredRoundsExceededError,
    InvalidServerResultError,
)
from answerback.client._url_elicitation import (
    UrlConsent,
    UrlConsentRequest,
    UrlElicitationLoopError,
    UrlElicitations,
)

__all__ = [
    "Client",
    "ClientRequestContext",
    "ClientSession",
    "ElicitationCallback",
    "IncomingMessage",
    "InputRequiredRoundsExceededError",
    "InvalidServerResultError",
    "ListRootsCallback",
    "LoggingCallback",
    "MessageHandler",
    "SamplingCallback",
    "UrlConsent",
    "UrlConsentRequest",
    "UrlElicitationLoopError",
    "UrlElicitations",
]
