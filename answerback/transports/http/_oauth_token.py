"""The back channel: asking the token endpoint for tokens, and proving who asks.

Every grant (authorization code, refresh, client credentials, JWT bearer) is one form
POST that differs only in its fields, so they share this module, as do the ways a
client authenticates there: not at all (a public client names itself), with its
secret (HTTP Basic or in the form), or with a JWT signed by its private key
(RFC 7523, the audience being the issuer as RFC 7523bis asks). authlib and joserfc do
the encoding and signing; nothing here builds a signature by hand.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any, cast

import httpx2
from authlib.oauth2.auth import ClientAuth
from authlib.oauth2.rfc7523.assertion import (
    sign_jwt_bearer_assertion,  # pyright: ignore[reportUnknownVariableType]
)
from joserfc.jwk import ECKey, OKPKey, RSAKey, import_key

from answerback.transports.http._oauth_discovery import ServerMetadata
from answerback.transports.http._oauth_dpop import DPoPKey
from answerback.transports.http._oauth_http import Answer, OAuthHTTP, hiding_secrets
from answerback.transports.http._oauth_registration import ClientInfo
from answerback.transports.http._token_store_file import TokenStoreError
from answerback.types import AuthorizationError

CLIENT_ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
JWT_BEARER_GRANT = "urn:ietf:params:oauth:grant-type:jwt-bearer"
_ASSERTION_SECONDS = 300
_CURVE_ALGORITHMS = {"P-256": "ES256", "P-384": "ES384", "P-521": "ES512", "Ed25519": "EdDSA"}

_B64TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
"""What an ``Authorization`` header can carry as a token (RFC 6750 §2.1)."""

PrivateKey = ECKey | RSAKey | OKPKey


@dataclass(frozen=True)
class Tokens:
    """What a token endpoint granted, and for whom: kept per resource in the store."""

    access_token: str
    token_type: str
    issuer: str
    client_id: str
    refresh_token: str | None = None
    expires_at: float | None = None
    scopes: tuple[str, ...] | None = None
    requested_scopes: tuple[str, ...] | None = None
    """What was asked for: the base of a step-up's union when the grant names no scope."""
    dpop_jwk: dict[str, Any] | None = None
    """The private key a DPoP token is bound to (it is useless without it)."""

    def __repr__(self) -> str:
        return hiding_secrets(self, ("access_token", "refresh_token", "dpop_jwk"))

    def expired(self, now: float, leeway: float = 30.0) -> bool:
        return self.expires_at is not None and now >= self.expires_at - leeway

    def as_record(self) -> dict[str, Any]:
        record = asdict(self)
        for key in ("scopes", "requested_scopes"):
            if record[key] is not None:
                record[key] = list(record[key])
        return record

    @classmethod
    def from_record(cls, record: Mapping[str, Any], key: str) -> Tokens:
        """The tokens in the store's record under ``key``; fields this version does not
        know are ignored. A record that cannot be used as it is (a field of the wrong
        type, a token no header can carry, a key that does not import) raises
        ``TokenStoreError``: sending it would fail on every run, and silently logging in
        again would hide a store that something else writes to."""
        problem = _tokens_problem(record)
        if problem is not None:
            raise TokenStoreError(
                f"The stored record {key!r} is not usable tokens ({problem}), so it was not "
                "used. Remove it (OAuth.forget(server_url), or answerback logout URL) and "
                "log in again."
            )
        scopes, requested = record.get("scopes"), record.get("requested_scopes")
        return cls(
            access_token=record["access_token"],
            token_type=record["token_type"],
            issuer=record["issuer"],
            client_id=record["client_id"],
            refresh_token=record.get("refresh_token"),
            expires_at=record.get("expires_at"),
            scopes=tuple(scopes) if scopes is not None else None,
            requested_scopes=tuple(requested) if requested is not None else None,
            dpop_jwk=record.get("dpop_jwk"),
        )


def _tokens_problem(record: Mapping[str, Any]) -> str | None:
    """What makes ``record`` unusable as ``Tokens``, or ``None`` if nothing does."""
    for name in ("access_token", "token_type", "issuer", "client_id"):
        if not isinstance(record.get(name), str):
            return f"{name} is not a string"
    if not _B64TOKEN.fullmatch(record["access_token"]):
        return "its access_token cannot be sent in an Authorization header"
    if record["token_type"] not in ("Bearer", "DPoP"):
        return f"token_type is {record['token_type']!r}, not Bearer or DPoP"
    if not isinstance(record.get("refresh_token"), str | None):
        return "refresh_token is not a string"
    expires_at = record.get("expires_at")
    if expires_at is not None and _finite_seconds(expires_at) is None:
        return "expires_at is not a number of seconds"
    for name in ("scopes", "requested_scopes"):
        listed = record.get(name)
        if listed is not None and not (
            isinstance(listed, list)
            and all(isinstance(scope, str) for scope in cast(list[Any], listed))
        ):
            return f"{name} is not a list of strings"
    jwk = record.get("dpop_jwk")
    if jwk is not None:
        try:
            key = DPoPKey.from_jwk(jwk)
        except Exception:  # joserfc raises several types for a key it cannot import
            return "dpop_jwk is not an EC key"
        if not key.key.is_private:
            return "dpop_jwk has no private part"
    return None


def _finite_seconds(value: object) -> float | None:
    """``value`` as a number of seconds if it is one: a finite JSON number (not a
    boolean, which Python counts as an int)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        seconds = float(value)
    except OverflowError:  # an integer of hundreds of digits
        return None
    return seconds if math.isfinite(seconds) else None


def _expiry(expires_in: object, now: float) -> float | None:
    """When a token granted at ``now`` expires, from the response's ``expires_in``:
    ``None`` (unknown) unless it is a finite, non-negative number of seconds. A token of
    unknown lifetime is used until the server refuses it, then refreshed, which is also
    what an answer that cannot be trusted to mean anything deserves."""
    seconds = _finite_seconds(expires_in)
    return now + seconds if seconds is not None and seconds >= 0 else None


def load_private_key(key: str | bytes | Mapping[str, Any]) -> PrivateKey:
    """A signing key from PEM (str or bytes) or a JWK dict."""
    if isinstance(key, Mapping):
        imported = import_key(dict(key))
        if isinstance(imported, ECKey | RSAKey | OKPKey):
            return imported
        raise ValueError("private_key must be an EC, RSA or OKP key, not a symmetric one")
    errors: list[str] = []
    for kind in (ECKey, RSAKey, OKPKey):
        try:
            return kind.import_key(key)
        except Exception as exc:  # joserfc raises several types for "not this kind"
            errors.append(f"{kind.key_type}: {exc}")
    raise ValueError(
        "private_key is neither a PEM private key (EC, RSA, Ed25519) nor a JWK dict: "
        + "; ".join(errors)
    )


def signing_algorithm(key: PrivateKey) -> str:
    if isinstance(key, RSAKey):
        return "RS256"
    return _CURVE_ALGORITHMS.get(key.curve_name, "ES256")


async def request_token(
    http: OAuthHTTP,
    metadata: ServerMetadata,
    client: ClientInfo | None,
    form: dict[str, str],
    *,
    private_key: PrivateKey | None = None,
    dpop: DPoPKey | None = None,
    requested_scopes: list[str] | None = None,
) -> Tokens:
    """POST ``form`` to the token endpoint with the client's authentication; the
    granted tokens, or an ``AuthorizationError`` naming what the server said."""
    endpoint = metadata.token_endpoint
    headers = {"accept": "application/json"}
    body = dict(form)
    if client is not None:
        body, headers = _authenticate(client, metadata, body, headers, private_key)
    answer = await _post(http, endpoint, body, headers, dpop, nonce=None)
    if dpop is not None and answer.status_code in (400, 401):
        nonce = answer.headers.get("dpop-nonce")
        if nonce and (answer.json_object() or {}).get("error") == "use_dpop_nonce":
            answer = await _post(http, endpoint, body, headers, dpop, nonce=nonce)
    document = answer.json_object() or {}
    if answer.status_code != 200 or not isinstance(document.get("access_token"), str):
        error = document.get("error")
        description = document.get("error_description")
        what = form.get("grant_type", "token")
        raise AuthorizationError(
            f"the token endpoint {endpoint} refused the {what} request "
            f"(HTTP {answer.status_code}"
            + (f": {error}" if isinstance(error, str) else "")
            + (f", {description}" if isinstance(description, str) else "")
            + ")"
            + _advice(error if isinstance(error, str) else None),
            error=error if isinstance(error, str) else None,
        )
    if not _B64TOKEN.fullmatch(document["access_token"]):
        raise AuthorizationError(
            f"the token endpoint {endpoint} issued an access token that cannot be sent in "
            "an Authorization header (RFC 6750 §2.1 allows letters, digits, -._~+/ and "
            "trailing =), so it was not kept; tell the authorization server's operator"
        )
    token_type = str(document.get("token_type", "Bearer"))
    if token_type.lower() not in ("bearer", "dpop"):
        raise AuthorizationError(
            f"the token endpoint {endpoint} issued a {token_type!r} token, which this "
            "client cannot present (it knows Bearer and DPoP)"
        )
    expires_in = document.get("expires_in")
    scope = document.get("scope")
    refresh = document.get("refresh_token")
    return Tokens(
        access_token=cast(str, document["access_token"]),
        token_type="DPoP" if token_type.lower() == "dpop" else "Bearer",
        issuer=metadata.issuer,
        client_id=client.client_id if client is not None else "",
        refresh_token=refresh if isinstance(refresh, str) else form.get("refresh_token"),
        expires_at=_expiry(expires_in, time.time()),
        scopes=tuple(scope.split()) if isinstance(scope, str) else None,
        requested_scopes=tuple(requested_scopes) if requested_scopes is not None else None,
    )


def _authenticate(
    client: ClientInfo,
    metadata: ServerMetadata,
    body: dict[str, str],
    headers: dict[str, str],
    private_key: PrivateKey | None,
) -> tuple[dict[str, str], dict[str, str]]:
    """The form and headers with the client's authentication added."""
    if client.auth_method == "private_key_jwt":
        if private_key is None:
            raise AuthorizationError(
                "the client authenticates with private_key_jwt but has no key: pass "
                "OAuth(private_key=...)"
            )
        assertion: object = sign_jwt_bearer_assertion(
            private_key,
            issuer=client.client_id,
            audience=metadata.issuer,
            subject=client.client_id,
            alg=signing_algorithm(private_key),
            expires_in=_ASSERTION_SECONDS,
        )
        return {
            **body,
            "client_id": client.client_id,
            "client_assertion_type": CLIENT_ASSERTION_TYPE,
            "client_assertion": _text(assertion),
        }, headers
    if client.auth_method in ("client_secret_basic", "client_secret_post") and (
        client.client_secret is None
    ):
        raise AuthorizationError(
            f"the client {client.client_id} authenticates with {client.auth_method} "
            "but has no secret: pass OAuth(client_secret=...)"
        )
    method = client.auth_method if client.auth_method != "private_key_jwt" else "none"
    auth = ClientAuth(client.client_id, client.client_secret, method)
    encoded = str(httpx2.QueryParams(body))
    prepared = cast(
        tuple[str, dict[str, str], str],
        auth.prepare("POST", metadata.token_endpoint, dict(headers), encoded),  # pyright: ignore[reportUnknownMemberType]
    )
    return dict(httpx2.QueryParams(prepared[2])), prepared[1]


async def _post(
    http: OAuthHTTP,
    endpoint: str,
    body: dict[str, str],
    headers: dict[str, str],
    dpop: DPoPKey | None,
    *,
    nonce: str | None,
) -> Answer:
    sent = dict(headers)
    if dpop is not None:
        sent["DPoP"] = dpop.proof("POST", endpoint, nonce=nonce)
    return await http.exchange("POST", endpoint, what="the token endpoint", data=body, headers=sent)


def _text(value: object) -> str:
    """A compact JWT as text (joserfc returns ``str``; older authlib said ``bytes``)."""
    return value.decode("ascii") if isinstance(value, bytes) else str(value)


def _advice(error: str | None) -> str:
    return {
        "invalid_client": "; the client's credentials were not accepted: check client_id, "
        "client_secret or private_key",
        "invalid_grant": "; the code, refresh token or assertion is no longer valid: log in again",
        "invalid_scope": "; ask for scopes the server offers (OAuth(scopes=...))",
        "unauthorized_client": "; this client may not use that grant: check its registration",
        "unsupported_grant_type": "; the server does not offer this grant: choose another "
        "(OAuth(grant=...))",
    }.get(error or "", "")
