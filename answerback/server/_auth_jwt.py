"""``JWTVerifier``: checks JWT access tokens locally against the issuer's published keys.

No call to the authorization server per request: the JWKS is fetched once and cached.
An authorization server rotates its keys by publishing a new one and signing with it, so
a token whose key id is unknown makes the verifier fetch the JWKS again, at most once per
``min_refresh_seconds`` (a stream of tokens with made-up key ids must not turn into a
stream of requests to the authorization server). The signature is checked by joserfc,
with the algorithms this verifier allows (never ``none``, never a symmetric one, which
would let the public key serve as an HMAC secret).

Without ``jwks_url``, the keys' address is read once from the issuer's metadata (RFC 8414
or OpenID discovery, at the well-known URLs the MCP specification lists), whose
``issuer`` must be the one configured.

A JWT stays valid until it expires even if revoked; use ``IntrospectionVerifier`` where
revocation must take effect at once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any, cast
from urllib.parse import urlsplit

import anyio
import httpx2
from joserfc import jws, jwt
from joserfc.errors import JoseError
from joserfc.jwk import KeySet

from answerback._options import (
    flag,
    http_url,
    non_empty_text,
    positive_seconds,
    seconds,
    strings,
)
from answerback.server._auth_verifier import (
    DEFAULT_LEEWAY_SECONDS,
    InvalidTokenError,
    VerifierUnavailableError,
    audiences,
    checked_audience,
    checked_info,
)
from answerback.transports.http._request_auth import AuthInfo

logger = logging.getLogger("answerback.server.auth")

SUPPORTED_ALGORITHMS = tuple(
    name for name, algorithm in jws.JWSRegistry.algorithms.items() if algorithm.key_type != "oct"
)
"""The asymmetric JWS algorithms joserfc verifies (asked of it, so a joserfc that adds
one adds it here): ``algorithms`` may name these only."""

_OPT_OUT = "JWTVerifier(..., allow_insecure_http=True)"

DEFAULT_ALGORITHMS = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
)


class JWTVerifier:
    """Verifies JWT access tokens with the keys at ``jwks_url`` (default: the
    ``jwks_uri`` of ``issuer``'s metadata).

    ``issuer`` is the authorization server's issuer identifier, exactly as its tokens'
    ``iss`` says it. ``audience`` is what the tokens' ``aud`` must contain: by default the
    resource server's ``resource`` URL (RFC 8707); give it where the authorization server
    uses its own identifier for the API (Auth0's API identifier, Entra's application ID URI).

    ``algorithms`` may name only asymmetric JWS algorithms joserfc knows
    (the error lists them): ``none``, ``HS256`` and the like, and an unknown or
    misspelt name (``"rs256"``), are refused here, not when the first token comes.

    A token's ``typ`` header, when it names a type, must be ``at+jwt`` (RFC 9068 §4)
    or the generic ``JWT``: another type (a DPoP proof, a logout token) signed by the
    same keys is no access token. Many authorization servers (Keycloak, Entra ID,
    Auth0 by default) write ``JWT`` or nothing; ``require_at_jwt=True`` accepts only
    ``at+jwt``, for one that types its access tokens, so that no other JWT it signs
    (an ID token) can pass for one. ``issuer``, ``jwks_url`` and the ``jwks_uri`` of
    the metadata must be https (plain http only on this machine): whoever can replace
    the keys on the way can forge any token. ``allow_insecure_http=True`` accepts plain
    http for these fetches anyway, for an authorization server reached over a private
    network the operator trusts (a cluster's internal service, a docker-compose network);
    the addresses clients are told (``ResourceServer.authorization_servers``) stay https.
    """

    def __init__(
        self,
        *,
        issuer: str,
        jwks_url: str | None = None,
        audience: str | Sequence[str] | None = None,
        algorithms: Sequence[str] = DEFAULT_ALGORITHMS,
        leeway_seconds: float = DEFAULT_LEEWAY_SECONDS,
        cache_seconds: float = 3600.0,
        min_refresh_seconds: float = 10.0,
        timeout_seconds: float = 10.0,
        require_at_jwt: bool = False,
        allow_insecure_http: bool = False,
    ) -> None:
        non_empty_text("issuer", issuer, "the issuer identifier, exactly as the tokens' iss says")
        self.allow_insecure_http = flag("allow_insecure_http", allow_insecure_http)
        if jwks_url is None:
            http_url(
                "issuer",
                issuer,
                "the authorization server (its metadata names the keys)",
                secure=not self.allow_insecure_http,
                opt_out=_OPT_OUT,
            )
        else:
            http_url(
                "jwks_url",
                jwks_url,
                "the authorization server's signing keys (JWKS)",
                secure=not self.allow_insecure_http,
                opt_out=_OPT_OUT,
            )
        audience = checked_audience(audience)
        algorithms = strings(
            "algorithms", algorithms, "the JWS algorithms accepted", example="['RS256', 'ES256']"
        )
        if not algorithms:
            raise ValueError(
                "algorithms must name at least one JWS algorithm, such as ['RS256'], got []"
            )
        leeway_seconds = seconds("leeway_seconds", leeway_seconds, "no clock skew allowed")
        cache_seconds = positive_seconds("cache_seconds", cache_seconds)
        min_refresh_seconds = seconds(
            "min_refresh_seconds", min_refresh_seconds, "fetch the keys again at every unknown kid"
        )
        timeout_seconds = positive_seconds("timeout_seconds", timeout_seconds)
        self.require_at_jwt = flag("require_at_jwt", require_at_jwt)
        unsafe = [name for name in algorithms if name == "none" or name.startswith("HS")]
        if unsafe:
            raise ValueError(
                f"JWTVerifier refuses the algorithms {unsafe}: 'none' accepts unsigned tokens and "
                "HMAC ones would take the public key for a shared secret. Use asymmetric ones."
            )
        unknown = [name for name in algorithms if name not in SUPPORTED_ALGORITHMS]
        if unknown:
            raise ValueError(
                f"algorithms names JWS algorithms this verifier does not know: {unknown}; "
                f"the supported ones are {', '.join(SUPPORTED_ALGORITHMS)} (the names are "
                "case-sensitive, as in a token's alg header)"
            )
        self.jwks_url = jwks_url
        self.issuer = issuer
        self.audience = audience
        self.algorithms = tuple(algorithms)
        self.leeway_seconds = leeway_seconds
        self.cache_seconds = cache_seconds
        self.min_refresh_seconds = min_refresh_seconds
        self.timeout_seconds = timeout_seconds
        self._keys: KeySet | None = None
        self._fetched_at = float("-inf")
        self._attempted_at = float("-inf")
        self._lock: anyio.Lock | None = None
        """Made on first use, in the event loop that serves (the verifier may be built
        before it, or in another one, as a test's is)."""

    async def verify(self, token: str, *, resource: str) -> AuthInfo:
        """Check signature, issuer, expiry and audience: ``InvalidTokenError`` when any
        fails; ``VerifierUnavailableError`` when the signing keys cannot be fetched."""
        try:
            header = jws.extract_compact(token.encode()).protected
        except (JoseError, ValueError, UnicodeError):
            raise InvalidTokenError("the token is not a JWT") from None
        self._check_type(header.get("typ"))
        algorithm = header.get("alg")
        if algorithm not in self.algorithms:
            raise InvalidTokenError(f"the token's algorithm {algorithm!r} is not accepted")
        kid = header.get("kid")
        keys = await self._keys_for(kid if isinstance(kid, str) else None)
        try:
            decoded = jwt.decode(token, keys, algorithms=[cast(str, algorithm)])
        except JoseError:
            raise InvalidTokenError("the token's signature does not verify") from None
        return checked_info(
            decoded.claims,
            issuer=self.issuer,
            accepted_audiences=audiences(self.audience, resource),
            leeway_seconds=self.leeway_seconds,
        )

    def _check_type(self, typ: object) -> None:
        """Refuse a token typed as something other than an access token (media types
        compare without regard to case, RFC 7515 §4.1.9)."""
        kind = typ.lower().removeprefix("application/") if isinstance(typ, str) else typ
        if kind == "at+jwt" or (not self.require_at_jwt and kind in (None, "jwt")):
            return
        raise InvalidTokenError(
            f"the token's type (typ) is {typ!r}, not at+jwt: it is not an access token"
        )

    async def _keys_for(self, kid: str | None) -> KeySet:
        """The cached keys, fetched again when stale or missing ``kid``, but at most once
        per ``min_refresh_seconds`` (an unreachable JWKS is not asked on every request;
        keys fetched before stay in use meanwhile)."""
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            now = time.monotonic()
            stale = self._keys is None or now - self._fetched_at >= self.cache_seconds
            unknown = kid is not None and not _has_kid(self._keys, kid)
            if (stale or unknown) and now - self._attempted_at >= self.min_refresh_seconds:
                self._attempted_at = now
                try:
                    self._keys = await self._fetch()
                    self._fetched_at = time.monotonic()
                except VerifierUnavailableError as exc:
                    if self._keys is None:
                        raise
                    logger.warning("%s; still using the keys fetched before", exc)
            if self._keys is None:
                raise VerifierUnavailableError(
                    f"the signing keys of {self.issuer} could not be fetched; the next try is "
                    f"at most {self.min_refresh_seconds:g} s after the last"
                )
            if kid is not None and not _has_kid(self._keys, kid):
                raise InvalidTokenError(f"the token's signing key {kid!r} is not published")
            return self._keys

    async def _fetch(self) -> KeySet:
        async with httpx2.AsyncClient(timeout=self.timeout_seconds) as http:
            jwks_url = self.jwks_url or await self._discover(http)
            try:
                response = await http.get(jwks_url, headers={"accept": "application/json"})
                response.raise_for_status()
                document: Any = response.json()
                return KeySet.import_key_set(document)
            except (httpx2.HTTPError, ValueError, JoseError) as exc:
                raise VerifierUnavailableError(
                    f"could not fetch the signing keys from {jwks_url}: {exc}"
                ) from exc

    async def _discover(self, http: httpx2.AsyncClient) -> str:
        """The issuer's ``jwks_uri``, from the first metadata document found."""
        tried: list[str] = []
        for url in metadata_urls(self.issuer):
            tried.append(url)
            try:
                response = await http.get(url, headers={"accept": "application/json"})
                document: Any = response.json() if response.status_code == 200 else None
            except (httpx2.HTTPError, ValueError):
                continue
            if not isinstance(document, dict):
                continue
            metadata = cast(dict[str, Any], document)
            if metadata.get("issuer") != self.issuer:
                raise VerifierUnavailableError(
                    f"{url} names the issuer {metadata.get('issuer')!r}, not {self.issuer!r}: "
                    "give JWTVerifier the issuer exactly as its tokens' iss says it"
                )
            jwks_uri = metadata.get("jwks_uri")
            if isinstance(jwks_uri, str):
                try:
                    http_url(
                        "jwks_uri",
                        jwks_uri,
                        f"the signing keys named in {url}",
                        secure=not self.allow_insecure_http,
                        opt_out=_OPT_OUT,
                    )
                except ValueError as exc:
                    raise VerifierUnavailableError(
                        f"{exc} Otherwise ask the authorization server's operator to publish "
                        "it over https, or pass JWTVerifier an https jwks_url="
                    ) from None
                self.jwks_url = jwks_uri
                return jwks_uri
        raise VerifierUnavailableError(
            f"found no jwks_uri in the metadata of {self.issuer} (tried {', '.join(tried)}); "
            "pass jwks_url="
        )


def metadata_urls(issuer: str) -> list[str]:
    """Where an issuer's metadata may be: RFC 8414's path-inserted form first, then
    OpenID discovery's inserted and appended forms."""
    parts = urlsplit(issuer)
    origin = f"{parts.scheme}://{parts.netloc}"
    path = parts.path.rstrip("/")
    if not path:
        return [
            f"{origin}/.well-known/oauth-authorization-server",
            f"{origin}/.well-known/openid-configuration",
        ]
    return [
        f"{origin}/.well-known/oauth-authorization-server{path}",
        f"{origin}/.well-known/openid-configuration{path}",
        f"{origin}{path}/.well-known/openid-configuration",
    ]


def _has_kid(keys: KeySet | None, kid: str) -> bool:
    return keys is not None and any(key.kid == kid for key in keys.keys)
