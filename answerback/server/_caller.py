"""Who sent a request, as the transport's authenticator established it.

Over HTTP with a ``ResourceServer``, the verified token's ``AuthInfo`` sits in the ASGI
scope of the HTTP request that carried the message; the message's envelope carries that
request (or the SSE stream answering it, which holds the request), in both eras. Other
transports have no token, so no caller.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from answerback.jsonrpc import IncomingRequest
from answerback.transports.http._request_auth import AuthInfo, auth_of


def caller_of(request: IncomingRequest) -> AuthInfo | None:
    """The authenticated caller of ``request``, or ``None`` (no authenticator, stdio,
    in-process, or a message relayed from another replica)."""
    context: object = request.envelope.transport_context
    carried: object = getattr(context, "request", context)  # an SSE stream holds its request
    scope: object = getattr(carried, "scope", None)  # a starlette Request's ASGI scope
    if scope is None:  # before the ABC check, which costs more: no HTTP request carried it
        return None
    return auth_of(cast(Mapping[str, Any], scope)) if isinstance(scope, Mapping) else None
