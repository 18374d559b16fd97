"""The seam between the HTTP server and whoever decides who a request comes from.

The streamable HTTP application knows nothing of OAuth: it asks a ``RequestAuthenticator``
about every request to the MCP endpoint before routing it (and, once a POST's message is
read, whether the caller may send it), serves the extra routes it
brings (protected resource metadata), and keeps the answer, an ``AuthInfo``, in the
request's ASGI scope under ``AUTH_SCOPE_KEY``. From there a session remembers whose it
is (a session id presented by someone else is not found) and a tool reads it as
``ctx.auth``. Keeping the decision behind this protocol lets the resource server (layer 5)
plug in without the transport importing it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:  # the server's ``ctx.auth`` reads ``AuthInfo`` without loading starlette
    from starlette.requests import Request
    from starlette.responses import Response
    from starlette.routing import BaseRoute

AUTH_SCOPE_KEY = "answerback.auth"
"""Where an authenticated request's ``AuthInfo`` lives in its ASGI scope."""


@dataclass(frozen=True, slots=True)
class AuthInfo:
    """Who made a request, as a verified access token says.

    ``principal`` identifies the user for binding state to them (a session, URL-mode
    elicitation, ``requestState``): the token's issuer and subject together, since a
    subject is unique only within its issuer. ``client_only``: the token names no user
    (no ``sub``), only a client acting for itself (client credentials); its
    ``subject`` is then the client ID, and its principal is kept apart from the users'
    (a client registered as ``alice`` must not share user ``alice``'s sessions).
    """

    subject: str
    issuer: str | None = None
    client_id: str | None = None
    scopes: frozenset[str] = frozenset()
    audience: Sequence[str] = ()
    expires_at: float | None = None
    claims: Mapping[str, Any] = field(default_factory=dict[str, Any])
    client_only: bool = False

    @property
    def principal(self) -> str:
        """The user's key for binding state to them: issuer and subject together
        (``client:`` first for a client acting for itself: an issuer is a URL, so no
        user's principal starts so)."""
        prefix = "client:" if self.client_only else ""
        return f"{prefix}{self.issuer or ''} {self.subject}"


class RequestAuthenticator(Protocol):
    """Decides who a request to the MCP endpoint comes from, or refuses it."""

    @property
    def routes(self) -> Sequence[BaseRoute]:
        """Routes served beside the MCP endpoint, without authentication (metadata)."""
        ...

    async def authenticate(self, request: Request) -> AuthInfo | Response:
        """The caller, or the response refusing them (401 or 403 with its
        ``WWW-Authenticate`` header)."""
        ...

    async def authorize(self, info: AuthInfo, message: Mapping[str, Any]) -> Response | None:
        """Whether the caller may send this JSON-RPC message (per-tool scopes): ``None``,
        or the response refusing it (403 ``insufficient_scope``, which invites step-up)."""
        ...


def auth_of(scope: Mapping[str, Any]) -> AuthInfo | None:
    """The ``AuthInfo`` an authenticator left in ``scope``, if any."""
    info = scope.get(AUTH_SCOPE_KEY)
    return info if isinstance(info, AuthInfo) else None


def principal_of(scope: Mapping[str, Any]) -> str | None:
    """Who the authenticator says a request comes from (``None``: no authenticator)."""
    info = auth_of(scope)
    return info.principal if info is not None else None
