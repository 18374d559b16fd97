"""The client half: ``Client``, its session, and what answers the server (responders).

``OAuth`` loads on first use (PEP 562): it brings authlib and joserfc, which a program
that logs in nowhere should not pay for.
"""

from typing import TYPE_CHECKING, Any

from answerback._public import publish
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
from answerback.client._headless import HEADLESS_META, Headless, HeadlessPolicy
from answerback.client._negotiation import Mode
from answerback.client._responder import (
    CallbackResponder,
    CheckedForms,
    FormRenderer,
    Responder,
    ResponderWrapper,
)
from answerback.client._session import (
    ClientSession,
    InputRequiredRoundsExceededError,
    InvalidServerResultError,
    ListenStream,
)
from answerback.client._url_elicitation import (
    ConsentAnswer,
    UrlCompletions,
    UrlConsent,
    UrlConsentRequest,
    UrlElicitationLoopError,
    UrlElicitations,
    open_link,
)
from answerback.transports.http import (
    AuthorizationError,
    FileTokenStore,
    InMemoryTokenStore,
    KeyringTokenStore,
    LockingTokenStore,
    TokenStore,
    TokenStoreError,
)

if TYPE_CHECKING:
    from answerback.transports.http import OAuth


def __getattr__(name: str) -> Any:
    if name != "OAuth":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from answerback.transports.http import OAuth

    globals()["OAuth"] = OAuth
    return OAuth


__all__ = [
    "HEADLESS_META",
    "AuthorizationError",
    "CallbackResponder",
    "CheckedForms",
    "Client",
    "ClientRequestContext",
    "ClientSession",
    "ConsentAnswer",
    "ElicitationCallback",
    "FileTokenStore",
    "FormRenderer",
    "Headless",
    "HeadlessPolicy",
    "InMemoryTokenStore",
    "IncomingMessage",
    "InputRequiredRoundsExceededError",
    "InvalidServerResultError",
    "KeyringTokenStore",
    "ListRootsCallback",
    "ListenStream",
    "LockingTokenStore",
    "LoggingCallback",
    "MessageHandler",
    "Mode",
    "OAuth",
    "Responder",
    "ResponderWrapper",
    "SamplingCallback",
    "TokenStore",
    "TokenStoreError",
    "UrlCompletions",
    "UrlConsent",
    "UrlConsentRequest",
    "UrlElicitationLoopError",
    "UrlElicitations",
    "open_link",
]

publish(globals())
