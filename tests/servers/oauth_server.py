"""A real OAuth 2.1 authorization server on loopback, for the authorization tests.

The client and the resource server must be tested against an authorization server that
behaves like the ones they will meet, not against canned responses: this one is built on
authlib's server framework (grants, PKCE, client authentication, DCR, revocation,
introspection) with a thin Starlette binding, and signs JWT access tokens (RFC 9068 style)
with a key of its own through joserfc.

What it serves, under the issuer URL (``--issuer-path`` puts the issuer below the root,
for the path-aware discovery variants):

- ``/.well-known/oauth-authorization-server`` and ``/.well-known/openid-configuration``
  (RFC 8414 and OpenID discovery; with an issuer path, both the RFC 8414 path-inserted
  form and the OpenID appended form);
- ``/authorize``: authorization code with PKCE (S256 only, required). There is no login
  page to click through: the user is named by a ``user`` query (or form) parameter, or is
  the ``--default-user``; ``deny=1`` refuses. The redirect carries ``iss`` (RFC 9207);
- ``/token``: authorization_code, refresh_token (rotated: the old one stops working) and
  client_credentials; clients authenticate with none, client_secret_basic,
  client_secret_post or private_key_jwt (their registered ``jwks``), as they registered;
- ``/register`` (RFC 7591), ``/revoke`` (RFC 7009), ``/introspect`` (RFC 7662), ``/jwks``;
- for tests only: ``POST /testing/mint`` signs a token with whatever claims a test needs
  (expired, another audience, another issuer) and ``POST /testing/rotate-keys`` replaces
  the signing key (the old one leaves the JWKS unless ``{"keep_old": true}``).

An access token's ``aud`` is the ``resource`` the client asked for (RFC 8707); without
one, the token has no audience, and a resource server that checks audience refuses it.

It binds a free port on 127.0.0.1, prints ``listening at ISSUER`` once it accepts
connections, and serves until killed (Ctrl-C ends it quietly, exit 130). Run:
``python tests/servers/oauth_server.py --help``.
"""

from __future__ import annotations

import argparse
import json
import secrets
import socket
import sys
import time
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from html import escape
from typing import Any, cast
from urllib.parse import parse_qsl, urlsplit, urlunsplit

import uvicorn
from authlib.common.urls import add_params_to_uri
from authlib.oauth2 import AuthorizationServer as _AuthorizationServer
from authlib.oauth2.rfc6749 import (
    AuthorizationCodeMixin,
    ClientMixin,
    JsonPayload,
    JsonRequest,
    OAuth2Payload,
    OAuth2Request,
    TokenMixin,
    grants,
)
from authlib.oauth2.rfc6749.errors import InvalidClientError, InvalidRequestError, OAuth2Error
from authlib.oauth2.rfc7009 import RevocationEndpoint
from authlib.oauth2.rfc7523 import JWTBearerClientAssertion
from authlib.oauth2.rfc7591 import ClientRegistrationEndpoint
from authlib.oauth2.rfc7636 import CodeChallenge
from authlib.oauth2.rfc7662 import IntrospectionEndpoint
from joserfc import jwt
from joserfc.jwk import KeySet, RSAKey
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

SCOPES = ("mcp", "read", "write", "admin", "offline_access")
AUTH_METHODS = ("none", "client_secret_basic", "client_secret_post", "private_key_jwt")


# -- what the server remembers (in memory: one test's server lives as long as the test) --


@dataclass
class Client(ClientMixin):
    client_id: str
    client_secret: str | None = None
    redirect_uris: list[str] = field(default_factory=list[str])
    grant_types: list[str] = field(default_factory=lambda: ["authorization_code"])
    token_endpoint_auth_method: str = "client_secret_basic"
    scope: str | None = None
    jwks: dict[str, Any] | None = None
    """The public keys of a ``private_key_jwt`` client."""

    def get_client_id(self) -> str:
        return self.client_id

    def get_default_redirect_uri(self) -> str:
        return self.redirect_uris[0] if self.redirect_uris else ""

    def get_allowed_scope(self, scope: Collection[str] | str | None) -> str:
        if not scope:
            return ""
        asked = scope.split() if isinstance(scope, str) else list(scope)
        if self.scope is None:
            return " ".join(asked)
        allowed = set(self.scope.split())
        return " ".join(name for name in asked if name in allowed)

    def check_redirect_uri(self, redirect_uri: str) -> bool:
        """Exactly as registered, except that a loopback IP redirect's port may differ
        (RFC 8252 §7.3, OAuth 2.1: a native app listens on whatever port is free)."""
        return redirect_uri in self.redirect_uris or any(
            _without_loopback_port(redirect_uri) == _without_loopback_port(registered)
            for registered in self.redirect_uris
            if _without_loopback_port(registered) is not None
        )

    def check_client_secret(self, client_secret: str) -> bool:
        return self.client_secret is not None and secrets.compare_digest(
            client_secret, self.client_secret
        )

    def check_endpoint_auth_method(self, method: str, endpoint: str) -> bool:
        if endpoint == "token":
            return method == self.token_endpoint_auth_method
        # introspection and revocation: a confidential client with its secret either way,
        # a public client by its id alone
        if self.client_secret is None:
            return method == "none"
        return method in ("client_secret_basic", "client_secret_post")

    def check_response_type(self, response_type: str) -> bool:
        return response_type == "code"

    def check_grant_type(self, grant_type: str) -> bool:
        return grant_type in self.grant_types


def _without_loopback_port(uri: str) -> str | None:
    """``uri`` without its port if it is an http URI on a loopback IP literal, else None."""
    parts = urlsplit(uri)
    if parts.scheme != "http" or parts.hostname not in ("127.0.0.1", "::1"):
        return None
    return urlunsplit(parts._replace(netloc=parts.hostname))


@dataclass
class Code(AuthorizationCodeMixin):
    code: str
    client_id: str
    redirect_uri: str
    scope: str
    user: str
    resource: list[str]
    code_challenge: str
    code_challenge_method: str
    expires_at: float

    def get_redirect_uri(self) -> str:
        return self.redirect_uri

    def get_scope(self) -> str:
        return self.scope


@dataclass
class Grant:
    """One token response: an access token and perhaps a refresh token, revoked apart."""

    client_id: str
    subject: str
    scope: str
    audience: list[str]
    issued_at: float
    expires_at: float
    claims: dict[str, Any]
    access_revoked: bool = False
    refresh_revoked: bool = False


@dataclass
class Token(TokenMixin):
    """A token string as authlib's revocation and introspection endpoints see it."""

    grant: Grant
    kind: str  # "access_token" or "refresh_token"

    def check_client(self, client: ClientMixin) -> bool:
        return cast(Client, client).client_id == self.grant.client_id

    def get_scope(self) -> str:
        return self.grant.scope

    def get_expires_in(self) -> int:
        return int(self.grant.expires_at - self.grant.issued_at)

    def is_expired(self) -> bool:
        return self.kind == "access_token" and time.time() >= self.grant.expires_at

    def is_revoked(self) -> bool:
        if self.kind == "access_token":
            return self.grant.access_revoked
        return self.grant.refresh_revoked

    def get_user(self) -> str:
        return self.grant.subject

    def get_client(self) -> ClientMixin:
        raise NotImplementedError("not used by the endpoints this server registers")


@dataclass
class State:
    issuer: str
    token_lifetime: int
    default_user: str | None
    keys: list[RSAKey] = field(default_factory=lambda: [new_key()])
    clients: dict[str, Client] = field(default_factory=dict[str, Client])
    codes: dict[str, Code] = field(default_factory=dict[str, Code])
    tokens: dict[str, Token] = field(default_factory=dict[str, Token])

    def sign(self, claims: Mapping[str, Any]) -> str:
        key = self.keys[-1]
        return jwt.encode({"alg": "RS256", "typ": "at+jwt", "kid": key.kid}, dict(claims), key)

    def jwks(self) -> dict[str, Any]:
        return dict(KeySet(list(self.keys)).as_dict(private=False))


def new_key() -> RSAKey:
    return RSAKey.generate_key(2048, parameters={"use": "sig", "alg": "RS256"}, auto_kid=True)


# -- authlib's server, bound to Starlette requests that were read beforehand --


class FormPayload(OAuth2Payload):
    def __init__(self, values: dict[str, str], lists: dict[str, list[str]]) -> None:
        self._values = values
        self._lists = lists

    @property
    def data(self) -> dict[str, str]:
        return self._values

    @property
    def datalist(self) -> Any:
        return self._lists


class ReadRequest(OAuth2Request):
    """A Starlette request whose query and form were read (authlib's calls are sync)."""

    def __init__(self, request: Request, form: list[tuple[str, str]]) -> None:
        base: Any = super()  # the stubs' second overload leaves ``body`` unknown
        base.__init__(request.method, str(request.url), headers=request.headers)
        query = list(request.query_params.multi_items())
        lists: dict[str, list[str]] = {}
        for name, value in query + form:
            lists.setdefault(name, []).append(value)
        self._query = dict(query)
        self._form = dict(form)
        self.payload = FormPayload({**self._query, **self._form}, lists)

    @property
    def args(self) -> dict[str, str | None]:
        return dict(self._query)

    @property
    def form(self) -> dict[str, str]:
        return self._form


class ReadJsonPayload(JsonPayload):
    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    @property
    def data(self) -> dict[str, Any]:
        return self._data


class ReadJsonRequest(JsonRequest):
    def __init__(self, request: Request, data: dict[str, Any]) -> None:
        super().__init__(request.method, str(request.url), request.headers)
        self.payload = ReadJsonPayload(data)
        self.json = data


class Server(_AuthorizationServer):
    def __init__(self, state: State) -> None:
        super().__init__(scopes_supported=list(SCOPES))
        self.state = state

    # authlib's stubs say a client is always found; the code expects None when it is not
    def query_client(self, client_id: str) -> Client | None:  # pyright: ignore[reportIncompatibleMethodOverride]
        return self.state.clients.get(client_id)

    def save_token(self, token: dict[str, Any], request: OAuth2Request) -> None:
        """Tokens are recorded when minted (``mint``), where the grant is known."""

    def create_oauth2_request(self, request: Any) -> OAuth2Request:
        return cast(OAuth2Request, request)

    def create_json_request(self, request: Any) -> JsonRequest:
        return cast(JsonRequest, request)

    def handle_response(self, status: int, body: Any, headers: Any) -> Response:
        pairs = cast(list[tuple[str, str]], list(headers or []))
        if isinstance(body, dict):
            response: Response = JSONResponse(body, status_code=status)
            for name, value in pairs:
                if name.lower() != "content-type":
                    response.headers[name] = value
            return response
        return Response(cast(str, body), status_code=status, headers=dict(pairs))

    def send_signal(self, name: str, *args: Any, **kwargs: Any) -> None:
        """No one listens for authlib's signals here."""

    def mint(
        self,
        *,
        client_id: str,
        subject: str,
        scope: str,
        audience: list[str],
        refresh: bool,
    ) -> dict[str, Any]:
        """Sign an access token (and make a refresh token) for one grant, and remember both."""
        now = time.time()
        grant = Grant(
            client_id=client_id,
            subject=subject,
            scope=scope,
            audience=audience,
            issued_at=now,
            expires_at=now + self.state.token_lifetime,
            claims={},
        )
        claims: dict[str, Any] = {
            "iss": self.state.issuer,
            "sub": subject,
            "client_id": client_id,
            "iat": int(now),
            "exp": int(grant.expires_at),
            "jti": secrets.token_urlsafe(16),
        }
        if scope:
            claims["scope"] = scope
        if audience:
            claims["aud"] = audience[0] if len(audience) == 1 else audience
        grant.claims = claims
        access_token = self.state.sign(claims)
        self.state.tokens[access_token] = Token(grant, "access_token")
        token: dict[str, Any] = {
            "token_type": "Bearer",
            "access_token": access_token,
            "expires_in": self.state.token_lifetime,
        }
        if scope:
            token["scope"] = scope
        if refresh:
            refresh_token = secrets.token_urlsafe(32)
            self.state.tokens[refresh_token] = Token(grant, "refresh_token")
            token["refresh_token"] = refresh_token
        return token


class InvalidTarget(OAuth2Error):
    """RFC 8707: a ``resource`` the grant does not cover."""

    error = "invalid_target"


def resources_of(request: OAuth2Request) -> list[str]:
    payload = cast(FormPayload, request.payload)
    return list(payload.datalist.get("resource", []))


class MintingGrant:
    """Tokens from ``Server.mint``, with the audience each grant type decides."""

    request: OAuth2Request
    server: Server

    def audience(self) -> list[str]:
        return resources_of(self.request)

    def generate_token(
        self,
        user: str | None = None,
        scope: str | None = None,
        grant_type: str | None = None,
        expires_in: int | None = None,
        include_refresh_token: bool = True,
    ) -> dict[str, Any]:
        client = cast(Client, self.request.client)
        return self.server.mint(
            client_id=client.client_id,
            subject=user or client.client_id,
            scope=scope or "",
            audience=self.audience(),
            refresh=include_refresh_token and client.check_grant_type("refresh_token"),
        )


class AuthorizationCodeGrant(MintingGrant, grants.AuthorizationCodeGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = list(AUTH_METHODS)

    def validate_authorization_request(self) -> str:
        redirect_uri = super().validate_authorization_request()
        data = cast(FormPayload, self.request.payload).data
        if not data.get("code_challenge") or data.get("code_challenge_method") != "S256":
            raise InvalidRequestError(
                "PKCE is required: send code_challenge with code_challenge_method=S256",
                redirect_uri=redirect_uri,
            )
        return redirect_uri

    def save_authorization_code(self, code: str, request: OAuth2Request) -> None:
        data = cast(FormPayload, request.payload).data
        self.server.state.codes[code] = Code(
            code=code,
            client_id=cast(Client, request.client).client_id,
            redirect_uri=data.get("redirect_uri", ""),
            scope=cast(Client, request.client).get_allowed_scope(data.get("scope", "")),
            user=cast(str, request.user),
            resource=resources_of(request),
            code_challenge=data["code_challenge"],
            code_challenge_method=data["code_challenge_method"],
            expires_at=time.time() + 600,
        )

    def query_authorization_code(self, code: str, client: ClientMixin) -> Code | None:
        found = self.server.state.codes.get(code)
        if found is None or found.client_id != cast(Client, client).client_id:
            return None
        if time.time() >= found.expires_at:
            return None
        return found

    def delete_authorization_code(self, authorization_code: Code) -> None:
        self.server.state.codes.pop(authorization_code.code, None)

    def authenticate_user(self, authorization_code: Code) -> str:
        return authorization_code.user

    def audience(self) -> list[str]:
        granted = cast(Code, self.request.authorization_code).resource
        asked = resources_of(self.request)
        if any(resource not in granted for resource in asked):
            raise InvalidTarget("the resource was not part of the authorization request")
        return asked or granted


class RefreshTokenGrant(MintingGrant, grants.RefreshTokenGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = list(AUTH_METHODS)
    INCLUDE_NEW_REFRESH_TOKEN = True

    # authlib's stubs say a token is always found; the code expects None when it is not
    def authenticate_refresh_token(self, refresh_token: str) -> Token | None:  # pyright: ignore[reportIncompatibleMethodOverride]
        found = self.server.state.tokens.get(refresh_token)
        if found is None or found.kind != "refresh_token" or found.is_revoked():
            return None
        return found

    def authenticate_user(self, refresh_token: TokenMixin) -> str:
        return cast(Token, refresh_token).grant.subject

    def revoke_old_credential(self, refresh_token: TokenMixin) -> None:
        cast(Token, refresh_token).grant.refresh_revoked = True

    def audience(self) -> list[str]:
        granted = cast(Token, self.request.refresh_token).grant.audience
        asked = resources_of(self.request)
        if any(resource not in granted for resource in asked):
            raise InvalidTarget("the resource was not part of the original grant")
        return asked or granted


class ClientCredentialsGrant(MintingGrant, grants.ClientCredentialsGrant):
    TOKEN_ENDPOINT_AUTH_METHODS = ["client_secret_basic", "client_secret_post", "private_key_jwt"]


class PrivateKeyJWT(JWTBearerClientAssertion):
    """``private_key_jwt`` (RFC 7523 §2.2): a JWT signed with a key the client registered."""

    def __init__(self, state: State) -> None:
        # token_url=None: audiences come from get_audiences (the stubs predate that)
        super().__init__(None, validate_jti=True)  # pyright: ignore[reportArgumentType]
        self.state = state
        self.seen: set[tuple[str, str]] = set()
        """(client, jti) of every assertion accepted: each is good once."""

    def get_audiences(self) -> list[str]:
        return [f"{self.state.issuer}/token", self.state.issuer]

    def authenticate_client(self, client: Any) -> Any:
        if cast(Client, client).check_endpoint_auth_method("private_key_jwt", "token"):
            return client
        raise InvalidClientError(description="the client did not register private_key_jwt")

    def validate_jti(self, claims: Any, jti: str) -> bool:
        used = (str(claims["iss"]), jti)
        if used in self.seen:
            return False
        self.seen.add(used)
        return True

    def resolve_client_public_key(self, client: Any, headers: Any = None) -> Any:
        return KeySet.import_key_set(cast(Any, cast(Client, client).jwks or {"keys": []}))


class Revocation(RevocationEndpoint):
    CLIENT_AUTH_METHODS = list(AUTH_METHODS[:3])

    def query_token(self, token_string: str, token_type_hint: str | None) -> Token | None:
        return cast(Server, self.server).state.tokens.get(token_string)

    def revoke_token(self, token: Token, request: OAuth2Request) -> None:
        """Revoking either token of a grant ends both (RFC 7009 allows it; it is safer)."""
        token.grant.access_revoked = True
        token.grant.refresh_revoked = True


class Introspection(IntrospectionEndpoint):
    CLIENT_AUTH_METHODS = ["client_secret_basic", "client_secret_post"]

    def query_token(self, token_string: str, token_type_hint: str | None) -> Token | None:
        return cast(Server, self.server).state.tokens.get(token_string)

    def check_permission(self, token: Token, client: ClientMixin, request: OAuth2Request) -> bool:
        return True

    def introspect_token(self, token: Token) -> dict[str, Any]:
        claims = token.grant.claims
        found: dict[str, Any] = {
            "active": True,
            "token_type": "Bearer" if token.kind == "access_token" else "refresh_token",
            "client_id": token.grant.client_id,
            "sub": claims.get("sub", token.grant.subject),
            "iss": claims.get("iss"),
            "iat": claims.get("iat"),
            "exp": claims.get("exp"),
        }
        if token.grant.scope:
            found["scope"] = token.grant.scope
        if "aud" in claims:
            found["aud"] = claims["aud"]
        return {name: value for name, value in found.items() if value is not None}


class Registration(ClientRegistrationEndpoint):
    def authenticate_token(self, request: Any) -> bool:
        return True  # open registration, as MCP clients expect

    def get_server_metadata(self) -> dict[str, Any]:
        return metadata(cast(Server, self.server).state)

    def generate_client_info(self, request: Any) -> dict[str, Any]:
        untyped: Any = super()  # the stubs leave the request's type unknown
        info: dict[str, Any] = untyped.generate_client_info(request)
        if cast(ReadJsonRequest, request).json.get("token_endpoint_auth_method") == "none":
            del info["client_secret"], info["client_secret_expires_at"]
        return info

    def save_client(
        self, client_info: dict[str, Any], client_metadata: dict[str, Any], request: Any
    ) -> Client:
        client = Client(
            client_id=client_info["client_id"],
            client_secret=client_info.get("client_secret"),
            redirect_uris=list(client_metadata.get("redirect_uris", [])),
            grant_types=list(client_metadata.get("grant_types", ["authorization_code"])),
            token_endpoint_auth_method=client_metadata.get(
                "token_endpoint_auth_method", "client_secret_basic"
            ),
            scope=client_metadata.get("scope"),
            jwks=client_metadata.get("jwks"),
        )
        cast(Server, self.server).state.clients[client.client_id] = client
        return client


def metadata(state: State) -> dict[str, Any]:
    issuer = state.issuer
    return {
        "issuer": issuer,
        "authorization_endpoint": f"{issuer}/authorize",
        "token_endpoint": f"{issuer}/token",
        "registration_endpoint": f"{issuer}/register",
        "revocation_endpoint": f"{issuer}/revoke",
        "introspection_endpoint": f"{issuer}/introspect",
        "jwks_uri": f"{issuer}/jwks",
        "scopes_supported": list(SCOPES),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": list(AUTH_METHODS),
        "revocation_endpoint_auth_methods_supported": list(AUTH_METHODS[:3]),
        "introspection_endpoint_auth_methods_supported": list(AUTH_METHODS[1:3]),
        "token_endpoint_auth_signing_alg_values_supported": ["RS256", "ES256"],
        "authorization_response_iss_parameter_supported": True,
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
    }


# -- the Starlette application --


async def read(request: Request) -> ReadRequest:
    form: list[tuple[str, str]] = []
    if request.method == "POST":
        body = (await request.body()).decode()
        form = parse_qsl(body, keep_blank_values=True)
    return ReadRequest(request, form)


def login_page(request: Request) -> HTMLResponse:
    """Without a user named, a person (or a browser stand-in) says who they are."""
    fields = "".join(
        f'<input type="hidden" name="{escape(name)}" value="{escape(value)}">'
        for name, value in request.query_params.multi_items()
    )
    return HTMLResponse(
        f'<form method="post" action="authorize">{fields}'
        '<label>User <input name="user"></label><button>Approve</button></form>'
    )


def build_app(state: State, base_path: str) -> Starlette:
    server = Server(state)
    # authlib's stubs leave these entry points' request and result types unknown
    engine: Any = server
    server.register_grant(AuthorizationCodeGrant, [CodeChallenge(required=True)])
    server.register_grant(RefreshTokenGrant)
    server.register_grant(ClientCredentialsGrant)
    engine.register_client_auth_method("private_key_jwt", PrivateKeyJWT(state))
    engine.register_endpoint(Revocation)
    engine.register_endpoint(Introspection)
    engine.register_endpoint(Registration(claims_classes=None))

    async def authorize(request: Request) -> Response:
        oauth_request = await read(request)
        data = cast(FormPayload, oauth_request.payload).data
        user = data.get("user") or state.default_user
        if user is None and "deny" not in data:
            return login_page(request)
        try:
            grant = engine.get_consent_grant(oauth_request, end_user=user)
        except OAuth2Error as error:
            if not error.redirect_uri:
                # no trustworthy redirect (unknown client or redirect URI): say so here
                return JSONResponse(dict(error.get_body()), status_code=400)
            response = cast(Response, engine.handle_error_response(oauth_request, error))
        else:
            approved = None if data.get("deny") else user
            response = cast(
                Response,
                engine.create_authorization_response(
                    oauth_request, grant_user=approved, grant=grant
                ),
            )
        location = response.headers.get("location")
        if location is not None:
            response.headers["location"] = add_params_to_uri(location, [("iss", state.issuer)])
        return response

    async def token(request: Request) -> Response:
        return cast(Response, engine.create_token_response(await read(request)))

    async def revoke(request: Request) -> Response:
        return cast(Response, engine.create_endpoint_response("revocation", await read(request)))

    async def introspect(request: Request) -> Response:
        return cast(Response, engine.create_endpoint_response("introspection", await read(request)))

    async def register(request: Request) -> Response:
        try:
            data: Any = await request.json()
        except ValueError:
            data = None
        if not isinstance(data, dict):
            return JSONResponse(
                {"error": "invalid_client_metadata", "error_description": "send a JSON object"},
                status_code=400,
            )
        json_request = ReadJsonRequest(request, cast(dict[str, Any], data))
        return cast(Response, engine.create_endpoint_response("client_registration", json_request))

    async def well_known(_: Request) -> JSONResponse:
        return JSONResponse(metadata(state))

    async def jwks(_: Request) -> JSONResponse:
        return JSONResponse(state.jwks())

    async def mint(request: Request) -> JSONResponse:
        """Sign a token with exactly the claims a test asks for (defaults: a valid one)."""
        asked: dict[str, Any] = await request.json()
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": state.issuer,
            "sub": "alice",
            "client_id": "minted",
            "iat": now,
            "exp": now + state.token_lifetime,
            "jti": secrets.token_urlsafe(16),
        }
        claims.update(asked)
        claims = {name: value for name, value in claims.items() if value is not None}
        access_token = state.sign(claims)
        aud = claims.get("aud")
        state.tokens[access_token] = Token(
            Grant(
                client_id=str(claims.get("client_id", "minted")),
                subject=str(claims.get("sub", "")),
                scope=str(claims.get("scope", "")),
                audience=[aud] if isinstance(aud, str) else list(aud or []),
                issued_at=float(claims.get("iat", now)),
                expires_at=float(claims.get("exp", now + state.token_lifetime)),
                claims=claims,
            ),
            "access_token",
        )
        return JSONResponse({"access_token": access_token})

    async def rotate_keys(request: Request) -> JSONResponse:
        asked: dict[str, Any] = await request.json() if await request.body() else {}
        state.keys = [*state.keys, new_key()] if asked.get("keep_old") else [new_key()]
        return JSONResponse({"kid": state.keys[-1].kid})

    base = base_path.rstrip("/")
    routes = [
        Route(f"{base}/authorize", authorize, methods=["GET", "POST"]),
        Route(f"{base}/token", token, methods=["POST"]),
        Route(f"{base}/revoke", revoke, methods=["POST"]),
        Route(f"{base}/introspect", introspect, methods=["POST"]),
        Route(f"{base}/register", register, methods=["POST"]),
        Route(f"{base}/jwks", jwks),
        Route(f"{base}/testing/mint", mint, methods=["POST"]),
        Route(f"{base}/testing/rotate-keys", rotate_keys, methods=["POST"]),
        Route(f"/.well-known/oauth-authorization-server{base}", well_known),
        Route(f"/.well-known/openid-configuration{base}", well_known),
        Route(f"{base}/.well-known/openid-configuration", well_known),
    ]
    return Starlette(routes=routes)


class AnnouncingServer(uvicorn.Server):
    """Says where it listens once it does, so a test waits on the line, not a timer."""

    def __init__(self, config: uvicorn.Config, issuer: str) -> None:
        super().__init__(config)
        self.issuer = issuer

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets)
        print(f"listening at {self.issuer}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description="A real OAuth 2.1 AS on loopback, for tests.")
    parser.add_argument("--issuer-path", default="", help="e.g. /tenant1: the issuer's path")
    parser.add_argument("--default-user", help="the user approved when none is named")
    parser.add_argument("--token-lifetime", type=int, default=3600, help="seconds")
    parser.add_argument(
        "--client",
        action="append",
        default=[],
        help='a pre-registered client as JSON, e.g. {"client_id": "rs", "client_secret": "s"}',
    )
    options = parser.parse_args()
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    base_path = "/" + options.issuer_path.strip("/") if options.issuer_path.strip("/") else ""
    state = State(
        issuer=f"http://127.0.0.1:{port}{base_path}",
        token_lifetime=options.token_lifetime,
        default_user=options.default_user,
    )
    for text in options.client:
        client = Client(**json.loads(text))
        state.clients[client.client_id] = client
    config = uvicorn.Config(build_app(state, base_path), log_level="warning", lifespan="off")
    AnnouncingServer(config, state.issuer).run(sockets=[listener])


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:  # uvicorn raises Ctrl-C again once it has stopped serving
        sys.exit(130)  # as answerback's servers end on Ctrl-C: no traceback
