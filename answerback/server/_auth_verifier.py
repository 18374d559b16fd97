"""What a resource server asks of a token verifier, and the claim checks every verifier shares.

A verifier turns a bearer token into an ``AuthInfo`` or says why it will not: the
signature (or the authorization server's word, for introspection) makes the claims
trustworthy, and these checks make them *ours*: issued by the expected issuer, still
valid, and meant for this resource (RFC 8707 audience; a token for another service must
never be accepted here, or any service the user signed in to could replay it).
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, cast

from answerback._options import strings
from answerback.transports.http._request_auth import AuthInfo

DEFAULT_LEEWAY_SECONDS = 30.0
"""Clock difference tolerated between the authorization server and this one."""


class InvalidTokenError(Exception):
    """The token is not acceptable here; the message says why (sent to the client as the
    challenge's ``error_description``, so it names no secret)."""


class VerifierUnavailableError(Exception):
    """The verifier could not reach what it needs (the JWKS, the introspection endpoint):
    the token may well be good, so the client is told to try again, not to log in again."""


class TokenVerifier(Protocol):
    """Turns a bearer token presented to ``resource`` into who presented it."""

    async def verify(self, token: str, *, resource: str) -> AuthInfo:
        """The caller, or ``InvalidTokenError`` (or ``VerifierUnavailableError``)."""
        ...


def checked_audience(value: object) -> str | Sequence[str] | None:
    """A verifier's ``audience`` option if it is one: ``None``, a string or a list of them."""
    if value is None or isinstance(value, str):
        return value
    return strings(
        "audience",
        value,
        "what the tokens' aud must hold; or one string, or None for the resource's URL",
        example="['https://api.example.com']",
    )


def audiences(value: str | Sequence[str] | None, resource: str) -> tuple[str, ...]:
    """The audiences a verifier accepts: those configured, else the resource itself."""
    if value is None:
        return (resource,)
    return (value,) if isinstance(value, str) else tuple(value)


def checked_info(
    claims: Mapping[str, Any],
    *,
    issuer: str | None,
    accepted_audiences: Sequence[str],
    leeway_seconds: float,
    introspected: bool = False,
) -> AuthInfo:
    """The ``AuthInfo`` for claims whose authenticity is established, once they pass the
    issuer, time and audience checks.

    A JWT must name its issuer and expiry (RFC 9068 §2.2). An introspection answer
    (``introspected``) may leave either out (RFC 7662 §2.2): it is the authorization
    server's word about the token now, so a token without ``exp`` stays valid for as
    long as the server says it is active. A value that is there is checked either way."""
    now = time.time()
    found_issuer = claims.get("iss")
    if (
        issuer is not None
        and found_issuer != issuer
        and not (introspected and found_issuer is None)
    ):
        raise InvalidTokenError(f"the token was issued by {found_issuer!r}, not by {issuer!r}")
    expires = _seconds(claims, "exp")
    if expires is None and not introspected:
        raise InvalidTokenError("the token has no expiry (exp)")
    if expires is not None and expires + leeway_seconds <= now:
        raise InvalidTokenError("the token has expired")
    not_before = _seconds(claims, "nbf")
    if not_before is not None and not_before - leeway_seconds > now:
        raise InvalidTokenError("the token is not valid yet (nbf)")
    raw_audience = claims.get("aud")
    if isinstance(raw_audience, str):
        audience: tuple[str, ...] = (raw_audience,)
    elif isinstance(raw_audience, list):
        audience = tuple(str(each) for each in cast(list[object], raw_audience))
    else:
        audience = ()
    if not set(audience) & set(accepted_audiences):
        raise InvalidTokenError(
            f"the token is not meant for this resource (its audience is {list(audience)}; "
            f"this server accepts {list(accepted_audiences)})"
        )
    subject = claims.get("sub")
    client_id = claims.get("client_id", claims.get("azp", claims.get("appid")))
    client_only = not isinstance(subject, str) or not subject
    if client_only:
        if not isinstance(client_id, str) or not client_id:
            raise InvalidTokenError("the token names no subject (sub)")
        subject = client_id  # a client acting for itself (client credentials)
    return AuthInfo(
        subject=cast(str, subject),
        issuer=found_issuer if isinstance(found_issuer, str) else None,
        client_id=client_id if isinstance(client_id, str) else None,
        scopes=scopes_of(claims),
        audience=audience,
        expires_at=expires,
        claims=dict(claims),
        client_only=client_only,
    )


def _seconds(claims: Mapping[str, Any], name: str) -> float | None:
    """The NumericDate claim ``name`` (``None`` if absent); ``InvalidTokenError`` for
    anything else there (RFC 7519 §2), which must not be taken as "no limit"."""
    value = claims.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidTokenError(f"the token's {name} is not a number of seconds")
    return float(value)


def scopes_of(claims: Mapping[str, Any]) -> frozenset[str]:
    """Granted scopes: ``scope`` (space-separated, RFC 9068 and RFC 7662) and ``scp``
    (a list or a string, as Entra ID and Okta write it)."""
    found: set[str] = set()
    for name in ("scope", "scp"):
        value = claims.get(name)
        if isinstance(value, str):
            found.update(value.split())
        elif isinstance(value, list):
            found.update(str(each) for each in cast(list[object], value))
    return frozenset(found)
