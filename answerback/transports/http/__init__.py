"""Streamable HTTP: the client transport and the ASGI server application.

Each side's code is heavy and the other never uses it: the server needs starlette and
uvicorn (and ``OAuth`` authlib and joserfc), the client httpx2. So nothing is imported
here but what both share, and every name loads on first use (PEP 562):
``from answerback.transports.http import StreamableHTTPApp`` still works.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from answerback._public import lazy_exports
from answerback.types import AuthorizationError

if TYPE_CHECKING:
    from answerback.transports.http._client import StreamableHTTPTransport
    from answerback.transports.http._event_store import (
        EventStore,
        InMemoryEventStore,
        TimedEventStore,
    )
    from answerback.transports.http._notification_bus import (
        InMemoryNotificationBus,
        Notice,
        NoticesSince,
        NotificationBus,
        ReplayingNotificationBus,
    )
    from answerback.transports.http._oauth import OAuth
    from answerback.transports.http._redis_notification_bus import RedisNotificationBus
    from answerback.transports.http._redis_state import RedisState
    from answerback.transports.http._redis_used_states import RedisUsedStates
    from answerback.transports.http._request_auth import AuthInfo, RequestAuthenticator
    from answerback.transports.http._security import HostPolicy
    from answerback.transports.http._server import StreamableHTTPApp
    from answerback.transports.http._state import InMemoryState, ServerState
    from answerback.transports.http._token_store import (
        InMemoryTokenStore,
        LockingTokenStore,
        TokenStore,
    )
    from answerback.transports.http._token_store_file import FileTokenStore, TokenStoreError
    from answerback.transports.http._token_store_keyring import KeyringTokenStore
    from answerback.transports.http._used_states import InMemoryUsedStates, UsedStates
    from answerback.transports.http._uvicorn import run_uvicorn, serve_uvicorn, uvicorn_server

_LAZY = {
    "StreamableHTTPTransport": "_client",
    "TokenStore": "_token_store",
    "InMemoryTokenStore": "_token_store",
    "LockingTokenStore": "_token_store",
    "FileTokenStore": "_token_store_file",
    "TokenStoreError": "_token_store_file",
    "KeyringTokenStore": "_token_store_keyring",
    "OAuth": "_oauth",
    "AuthInfo": "_request_auth",
    "RequestAuthenticator": "_request_auth",
    "EventStore": "_event_store",
    "InMemoryEventStore": "_event_store",
    "HostPolicy": "_security",
    "InMemoryNotificationBus": "_notification_bus",
    "InMemoryState": "_state",
    "InMemoryUsedStates": "_used_states",
    "Notice": "_notification_bus",
    "NoticesSince": "_notification_bus",
    "NotificationBus": "_notification_bus",
    "RedisNotificationBus": "_redis_notification_bus",
    "RedisState": "_redis_state",
    "RedisUsedStates": "_redis_used_states",
    "ReplayingNotificationBus": "_notification_bus",
    "ServerState": "_state",
    "StreamableHTTPApp": "_server",
    "TimedEventStore": "_event_store",
    "UsedStates": "_used_states",
    "run_uvicorn": "_uvicorn",
    "serve_uvicorn": "_uvicorn",
    "uvicorn_server": "_uvicorn",
}


__getattr__, __dir__ = lazy_exports(globals(), _LAZY)


__all__ = [
    "AuthInfo",
    "AuthorizationError",
    "EventStore",
    "FileTokenStore",
    "HostPolicy",
    "InMemoryEventStore",
    "InMemoryNotificationBus",
    "InMemoryState",
    "InMemoryTokenStore",
    "InMemoryUsedStates",
    "KeyringTokenStore",
    "LockingTokenStore",
    "Notice",
    "NoticesSince",
    "NotificationBus",
    "OAuth",
    "RedisNotificationBus",
    "RedisState",
    "RedisUsedStates",
    "ReplayingNotificationBus",
    "RequestAuthenticator",
    "ServerState",
    "StreamableHTTPApp",
    "StreamableHTTPTransport",
    "TimedEventStore",
    "TokenStore",
    "TokenStoreError",
    "UsedStates",
    "run_uvicorn",
    "serve_uvicorn",
    "uvicorn_server",
]
