"""The client half: ``Client``, its session, and what answers the server (responders)."""

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
)
from answerback.client._url_elicitation import (
    ConsentAnswer,
    UrlConsent,
    UrlConsentRequest,
    UrlElicitationLoopError,
    UrlElicitations,
)
from answerback.transports.http import (
    AuthorizationError,
    FileTokenStore,
    InMemoryTokenStore,
    KeyringTokenStore,
    OAuth,
    TokenStore,
    TokenStoreError,
)

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
    "LoggingCallback",
    "MessageHandler",
    "OAuth",
    "Responder",
    "ResponderWrapper",
    "SamplingCallback",
    "TokenStore",
    "TokenStoreError",
    "UrlConsent",
    "UrlConsentRequest",
    "UrlElicitationLoopError",
    "UrlElicitations",
]

publish(globals())
