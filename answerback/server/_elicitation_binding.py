"""URL-mode elicitation ids bound to the user they were made for.

A URL elicitation's link can be forwarded: an attacker who triggers one may send the
link to a victim, who completes it (signs in to a third party, say) believing it is
their own. So the page the link opens must check that the person there is the one the
elicitation was made for. The id carries that, sealed with the server's request-state
keys (AES-GCM): the client can neither read whom it names (no personal data in the URL)
nor change it, any replica sharing the keys can open it, and nothing is stored.
"""

from __future__ import annotations

import secrets

from answerback.server._request_state import RequestStateSealer
from answerback.transports.http._request_auth import AuthInfo
from answerback.types import InvalidParamsError

_BINDING = b"url-elicitation"


def bound_elicitation_id(sealer: RequestStateSealer, user: AuthInfo) -> str:
    """A fresh elicitation id naming ``user``'s principal."""
    return sealer.seal({"principal": user.principal, "nonce": secrets.token_urlsafe(8)}, _BINDING)


def elicitation_principal(sealer: RequestStateSealer, elicitation_id: str) -> str | None:
    """The principal ``elicitation_id`` was made for; ``None`` when it was not made by
    these keys, was altered, or has expired."""
    try:
        payload = sealer.open(elicitation_id, _BINDING)
    except InvalidParamsError:
        return None
    principal = payload.get("principal")
    return principal if isinstance(principal, str) else None
