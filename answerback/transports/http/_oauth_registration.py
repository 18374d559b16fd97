"""Who the client is to an authorization server: its client ID and how it proves it.

The MCP specification's order: credentials registered beforehand, else a client ID
metadata document (an HTTPS URL as the client ID, when the server supports them),
else dynamic client registration (RFC 7591), else nothing can be done without the
person registering a client by hand. A client ID belongs to the authorization server
that issued it: registrations are stored by issuer and never offered to another one.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import httpx2

from answerback.transports.http._oauth_discovery import ServerMetadata
from answerback.transports.http._oauth_http import OAuthHTTP, hiding_secrets, is_loopback
from answerback.transports.http._token_store_file import TokenStoreError
from answerback.types import AuthorizationError

AUTH_METHODS = ("none", "client_secret_basic", "client_secret_post", "private_key_jwt")
"""The token endpoint authentication methods this client can use."""


@dataclass(frozen=True)
class ClientInfo:
    """A client ID at one authorization server, and how to authenticate with it."""

    client_id: str
    issuer: str
    auth_method: str
    client_secret: str | None = None
    redirect_uri: str | None = None

    def __repr__(self) -> str:
        return hiding_secrets(self, ("client_secret",))

    def as_record(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_record(cls, record: dict[str, Any], key: str) -> ClientInfo:
        """The registration in the store's record under ``key`` (fields this version
        does not know are ignored); ``TokenStoreError`` if it cannot be used as it is."""
        wrong = [name for name in _REQUIRED if not isinstance(record.get(name), str)]
        wrong += [name for name in _OPTIONAL if not isinstance(record.get(name), str | None)]
        problem = f"{wrong[0]} is not a string" if wrong else None
        if problem is None and record["auth_method"] not in AUTH_METHODS:
            problem = f"auth_method {record['auth_method']!r} is not one this client knows"
        if problem is not None:
            raise TokenStoreError(
                f"The stored record {key!r} is not a usable client registration ({problem}), "
                "so it was not used. Remove it from the token store (or start a new store) "
                "and log in again."
            )
        return cls(
            client_id=record["client_id"],
            issuer=record["issuer"],
            auth_method=record["auth_method"],
            client_secret=record.get("client_secret"),
            redirect_uri=record.get("redirect_uri"),
        )


_REQUIRED = ("client_id", "issuer", "auth_method")
_OPTIONAL = ("client_secret", "redirect_uri")


def choose_auth_method(
    metadata: ServerMetadata, *, secret: bool, private_key: bool, preferred: str | None
) -> str:
    """The token endpoint authentication method to use with what the client holds.

    An explicit choice (checked by ``OAuth``) wins. Otherwise a private key means
    ``private_key_jwt`` and a secret the first secret method the server lists
    (``client_secret_basic`` when it lists none: the OAuth default); a client with
    neither is public (``none``).
    """
    if preferred is not None:
        return preferred
    if private_key:
        return "private_key_jwt"
    if not secret:
        return "none"
    listed = metadata.listed("token_endpoint_auth_methods_supported") or []
    for method in listed:
        if method in ("client_secret_basic", "client_secret_post"):
            return method
    return "client_secret_basic"


def registration_method(metadata: ServerMetadata) -> str:
    """The method to ask for when registering: a public client (``none``) when the
    server allows it, else the first secret method it lists."""
    listed = metadata.listed("token_endpoint_auth_methods_supported")
    if not listed or "none" in listed:
        return "none"
    for method in listed:
        if method in ("client_secret_basic", "client_secret_post"):
            return method
    return listed[0]


def application_type(redirect_uri: str) -> str:
    """``native`` for a redirect to this machine (a CLI or desktop app), else ``web``."""
    url = httpx2.URL(redirect_uri)
    if url.scheme not in ("http", "https"):
        return "native"  # a private-use scheme (com.example.app:/callback)
    return "native" if is_loopback(url.host) else "web"


async def register(
    http: OAuthHTTP,
    metadata: ServerMetadata,
    *,
    client_name: str,
    redirect_uri: str | None,
    grant_types: list[str],
) -> ClientInfo:
    """Register a new client with dynamic client registration (RFC 7591).

    No ``scope`` is registered: servers take it as the most the client may ever ask
    for, and a later step-up for more would be refused.
    """
    endpoint = metadata.registration_endpoint
    if endpoint is None:
        raise AuthorizationError(
            f"the authorization server {metadata.issuer} offers no dynamic client "
            "registration and no client ID metadata documents: register a client with it "
            "yourself and pass OAuth(client_id=..., client_secret=...)"
        )
    method = registration_method(metadata)
    body: dict[str, Any] = {
        "client_name": client_name,
        "redirect_uris": [redirect_uri] if redirect_uri else [],
        "grant_types": grant_types,
        "response_types": ["code"] if "authorization_code" in grant_types else [],
        "token_endpoint_auth_method": method,
    }
    if redirect_uri:
        body["application_type"] = application_type(redirect_uri)
    answer = await http.exchange("POST", endpoint, what="dynamic client registration", json=body)
    document = answer.json_object() or {}
    client_id = document.get("client_id")
    if answer.status_code not in (200, 201) or not isinstance(client_id, str):
        error = document.get("error")
        reason = document.get("error_description") or error
        raise AuthorizationError(
            f"the authorization server {metadata.issuer} refused to register this client "
            f"(HTTP {answer.status_code}{f': {reason}' if reason else ''}); register one "
            "yourself and pass OAuth(client_id=...), or adjust redirect_uri",
            error=error if isinstance(error, str) else None,
        )
    secret = document.get("client_secret")
    granted = document.get("token_endpoint_auth_method")
    if not isinstance(granted, str) or granted not in AUTH_METHODS:
        granted = method if isinstance(secret, str) or method == "none" else "none"
    return ClientInfo(
        client_id=client_id,
        issuer=metadata.issuer,
        auth_method=granted,
        client_secret=secret if isinstance(secret, str) else None,
        redirect_uri=redirect_uri,
    )
