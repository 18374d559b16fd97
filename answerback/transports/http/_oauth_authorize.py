"""The front channel: the authorization URL a person opens, and checking the answer.

An authorization code grant is only as safe as this step. PKCE (S256) binds the code
to this client's secret verifier, ``state`` binds the answer to this request, and the
``iss`` parameter (RFC 9207) proves which authorization server answered: a code from a
mixed-up server must never reach another server's token endpoint. The expected issuer
is recorded with the verifier before the person is sent anywhere, and compared by
plain string equality, as the specification requires.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import cast

import httpx2
from authlib.common.security import generate_token
from authlib.oauth2.rfc7636 import (
    create_s256_code_challenge,  # pyright: ignore[reportUnknownVariableType]
)

from answerback.transports.http._oauth_discovery import ServerMetadata
from answerback.types import AuthorizationError


@dataclass(frozen=True)
class AuthorizationRequest:
    """One authorization request, and what checking its answer needs."""

    url: str
    state: str
    code_verifier: str
    issuer: str
    iss_required: bool
    redirect_uri: str


def authorization_request(
    metadata: ServerMetadata,
    *,
    client_id: str,
    redirect_uri: str,
    scopes: list[str] | None,
    resource: str,
) -> AuthorizationRequest:
    """The URL to send the person to, with a fresh PKCE verifier and state."""
    if metadata.authorization_endpoint is None:
        raise AuthorizationError(
            f"the authorization server {metadata.issuer} has no authorization_endpoint in "
            "its metadata, so no one can log in there; use grant='client_credentials' if "
            "this client acts on its own behalf"
        )
    if not metadata.supports("code_challenge_methods_supported", "S256"):
        raise AuthorizationError(
            f"the authorization server {metadata.issuer} does not advertise PKCE with S256 "
            "(code_challenge_methods_supported), which MCP requires to protect the "
            "authorization code; ask its operator to enable it"
        )
    verifier = generate_token(64)
    state = generate_token(32)
    params: dict[str, str] = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": redirect_uri,
        "state": state,
        "code_challenge": cast(str, create_s256_code_challenge(verifier)),
        "code_challenge_method": "S256",
        "resource": resource,
    }
    if scopes:
        params["scope"] = " ".join(scopes)
    url = httpx2.URL(metadata.authorization_endpoint)
    url = url.copy_merge_params(params)
    return AuthorizationRequest(
        url=str(url),
        state=state,
        code_verifier=verifier,
        issuer=metadata.issuer,
        iss_required=metadata.document.get("authorization_response_iss_parameter_supported")
        is True,
        redirect_uri=redirect_uri,
    )


def authorization_code(request: AuthorizationRequest, answer: Mapping[str, str]) -> str:
    """The code in the redirect's query parameters, once the answer is proven to come
    from the expected authorization server for this very request.

    The issuer is checked first: an answer from the wrong server is not acted on at
    all, not even its error is shown (it could be an attacker's text).
    """
    iss = answer.get("iss")
    if iss is None and request.iss_required:
        raise AuthorizationError(
            f"the authorization response has no iss parameter, though {request.issuer} "
            "says it always sends one; the response may not come from it, so it was "
            "rejected. Log in again"
        )
    if iss is not None and iss != request.issuer:
        raise AuthorizationError(
            f"the authorization response names the issuer {iss!r}, not {request.issuer!r}; "
            "it may come from another server (a mix-up attack), so it was rejected and "
            "its code not used. Log in again"
        )
    if answer.get("state") != request.state:
        raise AuthorizationError(
            "the authorization response does not carry this request's state; it answers "
            "another login (or was forged), so it was rejected. Log in again"
        )
    error = answer.get("error")
    if error is not None:
        description = answer.get("error_description")
        raise AuthorizationError(
            f"the authorization server refused: {error}"
            + (f" ({description})" if description else "")
            + (
                "; the login was declined or cancelled in the browser"
                if error == "access_denied"
                else ""
            ),
            error=error,
        )
    code = answer.get("code")
    if not code:
        raise AuthorizationError(
            "the authorization response carries no code; pass the redirect's query "
            "parameters from the authorize callback as they are"
        )
    return code
