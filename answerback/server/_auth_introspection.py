"""``IntrospectionVerifier``: asks the authorization server about each token (RFC 7662).

One request to the authorization server per MCP request, and in exchange the answer is
current: a revoked token is refused at once, and opaque (non-JWT) tokens work. The
resource server authenticates to the introspection endpoint as a confidential client
(authlib's client authentication: ``client_secret_basic`` or ``client_secret_post``).
Nothing is cached, so that revocation takes effect on the next request.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, cast
from urllib.parse import urlencode

import httpx2
from authlib.oauth2.auth import ClientAuth

from answerback._options import (
    flag,
    http_url,
    one_of,
    positive_seconds,
    seconds,
    text,
    text_or_none,
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


class IntrospectionVerifier:
    """Verifies tokens at the authorization server's introspection endpoint ``url``,
    authenticating as ``client_id``/``client_secret``.

    The answer must say ``active``, name one of the accepted audiences (by default the
    resource server's ``resource``; see ``JWTVerifier`` for when to give ``audience``)
    and, with ``issuer``, not name another issuer. An ``exp`` it gives must not have
    passed; without one, the token is good for as long as the server calls it active
    (RFC 7662 makes ``exp`` and ``iss`` optional). ``url`` must be https (plain http
    only on this machine): the secret and every token are sent there.
    ``allow_insecure_http=True`` accepts plain http anyway, for an endpoint reached over a
    private network the operator trusts (Ory Hydra's internal admin port, a cluster's
    internal service): anyone else who can see that traffic gets the secret and the tokens.
    """

    def __init__(
        self,
        url: str,
        client_id: str,
        client_secret: str,
        *,
        issuer: str | None = None,
        audience: str | Sequence[str] | None = None,
        auth_method: Literal["client_secret_basic", "client_secret_post"] = ("client_secret_basic"),
        leeway_seconds: float = DEFAULT_LEEWAY_SECONDS,
        timeout_seconds: float = 10.0,
        allow_insecure_http: bool = False,
    ) -> None:
        self.url = http_url(
            "url",
            url,
            "the authorization server's introspection endpoint",
            secure=not flag("allow_insecure_http", allow_insecure_http),
            opt_out="IntrospectionVerifier(..., allow_insecure_http=True)",
        )
        text("client_id", client_id, "the resource server's client ID at the authorization server")
        text("client_secret", client_secret, "that client's secret", secret=True)
        one_of("auth_method", auth_method, ("client_secret_basic", "client_secret_post"))
        self.issuer = text_or_none("issuer", issuer, "the issuer the answers must name")
        self.audience = checked_audience(audience)
        self.leeway_seconds = seconds("leeway_seconds", leeway_seconds, "no clock skew allowed")
        self.timeout_seconds = positive_seconds("timeout_seconds", timeout_seconds)
        # typed Any: authlib's stubs leave ``prepare``'s types unknown
        self._client_auth: Any = ClientAuth(client_id, client_secret, auth_method)

    async def verify(self, token: str, *, resource: str) -> AuthInfo:
        """Ask the introspection endpoint: ``InvalidTokenError`` when the token is inactive,
        expired or for another audience; ``VerifierUnavailableError`` when it cannot answer."""
        body = urlencode({"token": token, "token_type_hint": "access_token"})
        headers = {
            "content-type": "application/x-www-form-urlencoded",
            "accept": "application/json",
        }
        url, headers, body = self._client_auth.prepare("POST", self.url, headers, body)
        try:
            async with httpx2.AsyncClient(timeout=self.timeout_seconds) as http:
                response = await http.post(url, content=body, headers=headers)
        except httpx2.HTTPError as exc:
            raise VerifierUnavailableError(f"could not reach {self.url}: {exc}") from exc
        if response.status_code != 200:
            raise VerifierUnavailableError(
                f"the introspection endpoint {self.url} answered {response.status_code} "
                f"(check the resource server's client id and secret): {response.text[:200]}"
            )
        try:
            found: Any = response.json()
        except ValueError as exc:
            raise VerifierUnavailableError(f"{self.url} answered with no JSON object") from exc
        if not isinstance(found, dict):
            raise VerifierUnavailableError(f"{self.url} answered with no JSON object")
        claims = cast(dict[str, Any], found)
        if claims.get("active") is not True:
            raise InvalidTokenError("the token is not active (revoked, expired or unknown)")
        if claims.get("token_type") == "refresh_token":
            raise InvalidTokenError("a refresh token is no access token")
        return checked_info(
            claims,
            issuer=self.issuer,
            accepted_audiences=audiences(self.audience, resource),
            leeway_seconds=self.leeway_seconds,
            introspected=True,
        )
