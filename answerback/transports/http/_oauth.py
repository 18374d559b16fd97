"""``OAuth``: the MCP authorization flow as an httpx2 auth, for the HTTP transport.

The transport sends each request through this auth. A stored token is attached (and
refreshed first when it has expired). A 401 starts the flow: find the authorization
server (discovery), be known to it (registration), get a token (a person's login with
PKCE, client credentials, or a JWT assertion), then send the request again. A 403
``insufficient_scope`` asks again for the union of the scopes held and the scopes the
server names (step-up), a bounded number of times per request, so a server that will
never be satisfied ends in an error, not a loop of logins.

One flow runs at a time: requests that meet a 401 together wait for the first one's
new token instead of each sending the person to log in. Tokens are kept per MCP
server URL and registrations per issuer in the ``TokenStore``; a token from one
authorization server is never refreshed at another after the server moves.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Generator, Mapping
from contextlib import ExitStack, asynccontextmanager, contextmanager
from dataclasses import dataclass, replace
from typing import Any, Literal, cast

import anyio
import anyio.lowlevel
import httpx2

from answerback._options import (
    callable_or_none,
    instance_or_none,
    one_of,
    positive_seconds,
    strings,
    text,
    text_or_none,
    whole_number,
)
from answerback.jsonrpc._attention import Attention
from answerback.transports.http._oauth_authorize import authorization_code, authorization_request
from answerback.transports.http._oauth_discovery import (
    Challenge,
    ResourceMetadata,
    ServerMetadata,
    fallback_metadata,
    fetch_resource_metadata,
    fetch_server_metadata,
    origin_of,
)
from answerback.transports.http._oauth_dpop import DPOP_ALGORITHM, DPoPKey
from answerback.transports.http._oauth_http import OAuthHTTP, is_loopback
from answerback.transports.http._oauth_registration import (
    AUTH_METHODS,
    ClientInfo,
    choose_auth_method,
    register,
)
from answerback.transports.http._oauth_token import (
    JWT_BEARER_GRANT,
    PrivateKey,
    Tokens,
    load_private_key,
    request_token,
)
from answerback.transports.http._token_store import (
    InMemoryTokenStore,
    LockingTokenStore,
    TokenStore,
)
from answerback.types import AuthorizationError

logger = logging.getLogger("answerback.oauth")

MAX_AUTHORIZATION_SERVERS = 3
"""How many of the authorization servers a resource lists are tried, in its order: each
may cost a timeout, and a server lists more than one only as alternatives."""

Authorize = Callable[[str], Awaitable[Mapping[str, str]]]
"""Shows the person the authorization URL; returns the query parameters of the redirect
that came back (``code``, ``state``, ``iss``, or ``error``)."""
Assertion = str | Callable[[str, str], Awaitable[str]]
"""A JWT for the JWT bearer grant, or an async function of the authorization server's
issuer and the resource that returns one (fresh for each token request: workload
identity tokens are short-lived, and an enterprise identity provider issues an
identity assertion grant per audience and resource)."""
Grant = Literal["authorization_code", "client_credentials", "jwt_bearer"]

_GRANT_TYPES: dict[str, list[str]] = {
    "authorization_code": ["authorization_code", "refresh_token"],
    "client_credentials": ["client_credentials"],
    "jwt_bearer": [JWT_BEARER_GRANT],
}


@dataclass(frozen=True)
class _Discovered:
    """Where a server's tokens come from, as found by the latest discovery."""

    resource: str
    metadata: ServerMetadata
    prm: ResourceMetadata | None


class OAuth(httpx2.Auth):
    """Authorization for a protected MCP server (the MCP authorization specification).

    ``grant="authorization_code"`` (a person logs in) needs ``redirect_uri`` and
    ``authorize``, the async function that shows the person the URL and returns the
    redirect's query parameters (``answerback.interact.BrowserLogin`` is one).
    ``grant="client_credentials"`` acts as the client itself and needs ``client_id``
    with ``client_secret`` or ``private_key``; ``grant="jwt_bearer"`` trades
    ``assertion`` for a token (RFC 7523): a workload identity JWT, or an async function
    ``(issuer, resource) -> JWT`` (e.g. one that asks an enterprise identity provider
    for an identity assertion grant).

    ``scopes`` (``None``: what the server's challenge names, else its metadata's
    ``scopes_supported``, else none). ``client_id`` (with ``client_secret`` or
    ``private_key``) is a client registered beforehand; else ``client_metadata_url``
    is used as the client ID where the authorization server accepts client ID metadata
    documents; else the client registers itself as ``client_name``. ``dpop``: bind
    tokens to a key (RFC 9449); ``None`` does so when the server offers the DPoP
    scheme and its authorization server supports it. ``store`` keeps tokens and
    registrations (default: in memory). ``max_step_ups`` bounds re-authorizations
    for more scope per request. ``http_client`` is used as it is (and not closed) for
    the requests to the server's metadata and to the authorization server: give it
    the TLS settings or proxy they need; by default a client with ``timeout`` is made
    for each flow. Either way ``timeout`` bounds each of those exchanges as a whole (a
    server trickling its answer cannot hold a request for ever); the person's login is
    bounded by the ``authorize`` function (``BrowserLogin(timeout=...)``).
    """

    requires_request_body = True

    def __init__(
        self,
        *,
        redirect_uri: str | None = None,
        authorize: Authorize | None = None,
        scopes: list[str] | None = None,
        client_id: str | None = None,
        client_secret: str | None = None,
        token_endpoint_auth_method: str | None = None,
        client_metadata_url: str | None = None,
        client_name: str = "answerback",
        grant: Grant = "authorization_code",
        private_key: str | bytes | Mapping[str, Any] | None = None,
        assertion: Assertion | None = None,
        dpop: bool | None = None,
        store: TokenStore | None = None,
        max_step_ups: int = 2,
        timeout: float = 30.0,
        http_client: httpx2.AsyncClient | None = None,
    ) -> None:
        one_of("grant", grant, _GRANT_TYPES)
        text_or_none(
            "redirect_uri", redirect_uri, "where the authorization server sends the person back"
        )
        callable_or_none(
            "authorize",
            authorize,
            "an async function (url) returning the redirect's query parameters",
        )
        if scopes is not None:
            scopes = strings("scopes", scopes, "the scopes to ask for", example="['read']")
        text_or_none("client_id", client_id, "a client registered beforehand")
        text_or_none("client_secret", client_secret, "that client's secret", secret=True)
        text_or_none(
            "token_endpoint_auth_method", token_endpoint_auth_method, ", ".join(AUTH_METHODS)
        )
        text_or_none("client_metadata_url", client_metadata_url, "an https URL")
        text("client_name", client_name, "the name the client registers as")
        if assertion is not None and not isinstance(assertion, str) and not callable(assertion):
            raise TypeError(
                "assertion must be a JWT (a string) or an async function (issuer, resource) "
                f"-> JWT, got a {type(assertion).__name__}"
            )
        if private_key is not None and not isinstance(
            cast(object, private_key), str | bytes | Mapping
        ):
            raise TypeError(
                "private_key must be a PEM private key (str or bytes) or a JWK dict, or None, "
                f"got a {type(private_key).__name__} (not shown: it may be a secret)"
            )
        if dpop is not None and not isinstance(cast(object, dpop), bool):
            raise TypeError(
                f"dpop must be True, False or None (when the server offers it), got {dpop!r}"
            )
        instance_or_none(
            "store", store, TokenStore, "a TokenStore (InMemoryTokenStore(), FileTokenStore(path))"
        )
        whole_number("max_step_ups", max_step_ups, "re-authorizations per request", "never step up")
        positive_seconds("timeout", timeout)
        instance_or_none("http_client", http_client, httpx2.AsyncClient, "an httpx2.AsyncClient")
        if grant == "authorization_code" and (redirect_uri is None or authorize is None):
            raise ValueError(
                "grant='authorization_code' needs redirect_uri and authorize (e.g. "
                "answerback.interact.BrowserLogin); a program without a person uses "
                "grant='client_credentials' or a token in headers"
            )
        if grant == "client_credentials" and (
            client_id is None or (client_secret is None and private_key is None)
        ):
            raise ValueError(
                "grant='client_credentials' needs client_id and client_secret or private_key"
            )
        if grant == "jwt_bearer" and assertion is None:
            raise ValueError("grant='jwt_bearer' needs assertion (a JWT, or a function giving one)")
        if client_metadata_url is not None:
            url = httpx2.URL(client_metadata_url)
            if url.scheme != "https" or url.path in ("", "/"):
                raise ValueError(
                    "client_metadata_url must be an https URL with a path (where the client "
                    f"ID metadata document is served), not {client_metadata_url!r}"
                )
        if (
            token_endpoint_auth_method is not None
            and token_endpoint_auth_method not in AUTH_METHODS
        ):
            raise ValueError(
                f"token_endpoint_auth_method {token_endpoint_auth_method!r} is not supported; "
                "use one of " + ", ".join(AUTH_METHODS)
            )
        self.redirect_uri = redirect_uri
        self.authorize = authorize
        self.scopes = list(scopes) if scopes is not None else None
        self.client_id = client_id
        self.client_secret = client_secret
        self.token_endpoint_auth_method = token_endpoint_auth_method
        self.client_metadata_url = client_metadata_url
        self.client_name = client_name
        self.grant: Grant = grant
        self.private_key: PrivateKey | None = (
            load_private_key(private_key) if private_key is not None else None
        )
        self.assertion = assertion
        self.dpop = dpop
        self.store: TokenStore = store if store is not None else InMemoryTokenStore()
        self.max_step_ups = max_step_ups
        self.timeout = timeout
        self._http_client = http_client
        self._tokens: dict[str, Tokens | None] = {}
        self._dpop_keys: dict[str, DPoPKey] = {}
        self._nonces: dict[str, str] = {}
        self._preregistered_issuer: str | None = None
        self._lock: tuple[object, anyio.Lock] | None = None
        self._attentions: list[Attention] = []

    def __repr__(self) -> str:
        return f"OAuth(grant={self.grant!r}, client_id={self.client_id!r})"

    @contextmanager
    def sharing_attention(self, attention: Attention) -> Generator[None]:
        """Until the block ends, hold ``attention`` while a person logs in through this
        object, so the request timers of the endpoint that shares it stand still: the
        login runs inside a request, and a person may take minutes. ``Client`` does
        this for its connection; requests of every connection sharing this object wait
        for one login (see the module docstring), so each connection's is held."""
        self._attentions.append(attention)
        try:
            yield
        finally:
            self._attentions.remove(attention)

    async def forget(self, server_url: str) -> None:
        """Drop the tokens kept for ``server_url`` (a logout on this side)."""
        resource = _resource_key(httpx2.URL(server_url))
        self._tokens[resource] = None
        await self.store.delete(_token_key(resource))

    # -- the httpx2 auth flow -------------------------------------------------------------

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        resource = _resource_key(request.url)
        tokens = await self._usable_tokens(resource)
        self._sign(request, tokens)
        response = yield request
        step_ups = 0
        renewed = nonce_retried = False
        while True:
            self._note_nonce(request.url, response)
            challenge = Challenge.parse(response.headers.get("www-authenticate"))
            if response.status_code == 401:
                if (
                    challenge.error == "use_dpop_nonce"
                    and tokens is not None
                    and tokens.token_type == "DPoP"
                    and not nonce_retried
                ):
                    nonce_retried = True
                elif renewed:
                    raise AuthorizationError(
                        f"{resource} refused the token just issued for it (HTTP 401"
                        + (f": {challenge.error}" if challenge.error else "")
                        + "); its authorization server and it disagree about the token "
                        "(audience, issuer or key): tell the server's operator"
                    )
                else:
                    await response.aread()
                    tokens = await self._renew(resource, challenge, tokens, step_up=False)
                    renewed = True
            elif response.status_code == 403 and challenge.error == "insufficient_scope":
                step_ups += 1
                if step_ups > self.max_step_ups:
                    wanted = " ".join(challenge.scopes or ()) or "more scope"
                    raise AuthorizationError(
                        f"{resource} still answers insufficient_scope (wants {wanted}) after "
                        f"{self.max_step_ups} re-authorizations for this request; the account "
                        "may not be allowed that scope: ask the server's operator"
                    )
                await response.aread()
                tokens = await self._renew(resource, challenge, tokens, step_up=True)
            else:
                return
            self._sign(request, tokens)
            response = yield request

    # -- tokens ---------------------------------------------------------------------------

    async def _usable_tokens(self, resource: str) -> Tokens | None:
        """The tokens to send: the stored ones, refreshed first if they have expired.

        Another program sharing the store (a second ``answerback`` command, another
        window) may be refreshing them too, and with a rotating refresh token a second
        refresh of the old one is refused: so the refresh runs inside the store's lock on
        the record where it offers one, the record is read again first, and tokens stored
        meanwhile are used as they are."""
        tokens = await self._load(resource)
        if tokens is None or not tokens.expired(time.time()) or tokens.refresh_token is None:
            return tokens
        async with self._locked(), self._holding(resource):
            current = await self._reload(resource)
            if current is None or _replaced(current, tokens):
                return current  # forgotten, or renewed by another task or program
            try:
                async with self._http() as http:
                    metadata = await fetch_server_metadata(http, tokens.issuer)
                    client = (
                        await self._known_client(metadata, refreshing=tokens.client_id)
                        if metadata is not None
                        else None
                    )
                    if metadata is None or client is None:
                        return tokens
                    refreshed = await self._refresh(http, metadata, client, tokens, resource)
            except AuthorizationError as exc:
                if not _refused(exc):
                    raise  # the tokens may still be good: kept for the next try
                logger.info("refreshing the token for %s failed: %s", resource, exc)
                newer = await self._reload(resource)
                if newer is not None and _replaced(newer, tokens):
                    return newer  # another program refreshed first: its tokens are good
                await self._save(resource, None)  # only the refused tokens are forgotten
                return None
            await self._save(resource, refreshed)
            return refreshed

    async def _renew(
        self, resource: str, challenge: Challenge, sent: Tokens | None, *, step_up: bool
    ) -> Tokens:
        """New tokens after a 401 or 403: unless another request already got them,
        discover, then refresh (a 401 at the same issuer) or authorize anew."""
        async with self._locked():
            current = await self._reload(resource)
            if current is not None and (sent is None or _replaced(current, sent)):
                return current
            async with self._http() as http:
                found = await self._discover(http, resource, challenge)
                metadata = found.metadata
                if (
                    not step_up
                    and sent is not None
                    and sent.refresh_token is not None
                    and sent.issuer == metadata.issuer
                ):
                    client = await self._known_client(metadata, refreshing=sent.client_id)
                    if client is not None:
                        async with self._holding(resource):
                            newer = await self._reload(resource)
                            if newer is not None and _replaced(newer, sent):
                                return newer  # refreshed by another program meanwhile
                            try:
                                tokens = await self._refresh(
                                    http, metadata, client, sent, found.resource
                                )
                            except AuthorizationError as exc:
                                if not _refused(exc):
                                    raise  # a login would meet the same server
                                newer = await self._reload(resource)
                                if newer is not None and _replaced(newer, sent):
                                    return newer  # a program that held no lock refreshed
                                logger.info("refresh failed, authorizing anew: %s", exc)
                            else:
                                await self._save(resource, tokens)
                                return tokens
                previous = sent if sent is not None and sent.issuer == metadata.issuer else None
                scopes = self._scopes(found, challenge, previous)
                tokens = await self._obtain(http, found, challenge, scopes)
            await self._save(resource, tokens)
            return tokens

    def _scopes(
        self, found: _Discovered, challenge: Challenge, previous: Tokens | None
    ) -> list[str] | None:
        """The scopes to ask for: the union of what was asked before and what the
        challenge names (SEP-2350), starting from the configured scopes, else the
        challenge's, else the resource's ``scopes_supported``."""
        if self.scopes is not None:
            base: list[str] | None = list(self.scopes)
        elif challenge.scopes is not None:
            base = list(challenge.scopes)
        elif found.prm is not None and found.prm.scopes_supported is not None:
            base = list(found.prm.scopes_supported)
        else:
            base = None
        if previous is not None:
            before = previous.requested_scopes or previous.scopes or ()
            base = list(dict.fromkeys([*before, *(base or []), *(challenge.scopes or ())]))
        if (
            base
            and self.grant == "authorization_code"
            and "offline_access" not in base
            and found.metadata.supports("scopes_supported", "offline_access")
        ):
            base.append("offline_access")
        return base or None

    async def _obtain(
        self,
        http: OAuthHTTP,
        found: _Discovered,
        challenge: Challenge,
        scopes: list[str] | None,
    ) -> Tokens:
        """Tokens from the grant this client uses."""
        metadata = found.metadata
        client = await self._client_for(http, metadata)
        dpop = self._dpop_for(found, challenge)
        form: dict[str, str]
        if self.grant == "authorization_code":
            assert self.redirect_uri is not None
            assert self.authorize is not None
            request = authorization_request(
                metadata,
                client_id=client.client_id,
                redirect_uri=self.redirect_uri,
                scopes=scopes,
                resource=found.resource,
            )
            with ExitStack() as person_busy:
                for attention in self._attentions:
                    person_busy.enter_context(attention.holding())
                answer = await self.authorize(request.url)
            code = authorization_code(request, answer)
            form = {
                "grant_type": "authorization_code",
                "code": code,
                "redirect_uri": request.redirect_uri,
                "code_verifier": request.code_verifier,
                "resource": found.resource,
            }
        elif self.grant == "client_credentials":
            form = {"grant_type": "client_credentials", "resource": found.resource}
        else:
            assert self.assertion is not None
            if isinstance(self.assertion, str):
                assertion = self.assertion
            else:
                assertion = await self.assertion(metadata.issuer, found.resource)
            form = {
                "grant_type": JWT_BEARER_GRANT,
                "assertion": assertion,
                "resource": found.resource,
            }
        if scopes and self.grant != "authorization_code":
            form["scope"] = " ".join(scopes)
        tokens = await request_token(
            http,
            metadata,
            client,
            form,
            private_key=self.private_key,
            dpop=dpop,
            requested_scopes=scopes,
        )
        if tokens.token_type == "DPoP" and dpop is not None:
            self._dpop_keys[tokens.access_token] = dpop
            tokens = _with_key(tokens, dpop)
        return tokens

    async def _refresh(
        self,
        http: OAuthHTTP,
        metadata: ServerMetadata,
        client: ClientInfo,
        tokens: Tokens,
        resource: str,
    ) -> Tokens:
        assert tokens.refresh_token is not None
        dpop = self._key_of(tokens)
        form = {
            "grant_type": "refresh_token",
            "refresh_token": tokens.refresh_token,
            "resource": resource,
        }
        refreshed = await request_token(
            http,
            metadata,
            client,
            form,
            private_key=self.private_key,
            dpop=dpop,
            requested_scopes=list(tokens.requested_scopes) if tokens.requested_scopes else None,
        )
        return _with_key(refreshed, dpop) if dpop is not None else refreshed

    # -- discovery and registration -------------------------------------------------------

    async def _discover(self, http: OAuthHTTP, resource: str, challenge: Challenge) -> _Discovered:
        prm = await fetch_resource_metadata(http, resource, challenge.resource_metadata)
        if prm is None:
            # A 2025-03-26 server: its origin is the authorization server.
            issuer = origin_of(resource)
            metadata = await fetch_server_metadata(http, issuer) or fallback_metadata(issuer)
            return _Discovered(resource, metadata, None)
        problems: list[str] = []
        tried = prm.authorization_servers[:MAX_AUTHORIZATION_SERVERS]
        for issuer in tried:
            try:
                metadata = await fetch_server_metadata(http, issuer)
            except AuthorizationError as exc:
                problems.append(str(exc))
                continue
            if metadata is not None:
                return _Discovered(prm.resource, metadata, prm)
            problems.append(f"{issuer} publishes no authorization server metadata")
        if len(prm.authorization_servers) > len(tried):
            untried = len(prm.authorization_servers) - len(tried)
            problems.append(f"{untried} more listed in {prm.url} were not tried")
        raise AuthorizationError(
            f"no usable authorization server for {resource}: " + "; ".join(problems)
        )

    async def _client_for(self, http: OAuthHTTP, metadata: ServerMetadata) -> ClientInfo:
        """This client's identity at ``metadata``'s server: pre-registered, a client ID
        metadata document, a stored registration, or a new one."""
        known = await self._known_client(metadata)
        if known is not None:
            return known
        client = await register(
            http,
            metadata,
            client_name=self.client_name,
            redirect_uri=self.redirect_uri,
            grant_types=_GRANT_TYPES[self.grant],
        )
        await self.store.set(_client_key(metadata.issuer), client.as_record())
        return client

    async def _known_client(
        self, metadata: ServerMetadata, *, refreshing: str | None = None
    ) -> ClientInfo | None:
        """The client already known at ``metadata``'s server, if any: to log in, or,
        with ``refreshing``, the client ID a token to refresh was issued to."""
        issuer = metadata.issuer
        if self.client_id is not None:
            if self._preregistered_issuer is None:
                self._preregistered_issuer = issuer
            elif self._preregistered_issuer != issuer:
                raise AuthorizationError(
                    f"the server now sends logins to {issuer}, but client_id "
                    f"{self.client_id!r} was used with {self._preregistered_issuer}; a client "
                    "ID belongs to one authorization server: register this client there and "
                    "pass its client_id"
                )
            method = choose_auth_method(
                metadata,
                secret=self.client_secret is not None,
                private_key=self.private_key is not None,
                preferred=self.token_endpoint_auth_method,
            )
            return ClientInfo(
                client_id=self.client_id,
                issuer=issuer,
                auth_method=method,
                client_secret=self.client_secret,
                redirect_uri=self.redirect_uri,
            )
        if self.client_metadata_url is not None and (
            refreshing == self.client_metadata_url
            if refreshing is not None
            else metadata.document.get("client_id_metadata_document_supported") is True
        ):
            return ClientInfo(
                client_id=self.client_metadata_url,
                issuer=issuer,
                auth_method="private_key_jwt" if self.private_key is not None else "none",
                redirect_uri=self.redirect_uri,
            )
        key = _client_key(issuer)
        record = await self.store.get(key)
        client = ClientInfo.from_record(record, key) if record is not None else None
        if client is None or client.issuer != issuer:
            return None
        if refreshing is not None:
            # A refresh needs the client the tokens were issued to, whatever its redirect.
            return client if client.client_id == refreshing else None
        # A login redirects: a registration for another redirect URI would be refused,
        # so register anew, unless only a loopback port differs, which authorization
        # servers must accept (RFC 8252 7.3): a listener gets a new port on each run.
        if client.redirect_uri == self.redirect_uri or _same_but_loopback_port(
            client.redirect_uri, self.redirect_uri
        ):
            return client
        return None

    # -- requests -------------------------------------------------------------------------

    def _sign(self, request: httpx2.Request, tokens: Tokens | None) -> None:
        """Put the token (and, for a DPoP token, a fresh proof) on the request."""
        if tokens is None:
            return
        key = self._key_of(tokens)
        if tokens.token_type == "DPoP" and key is not None:
            request.headers["Authorization"] = f"DPoP {tokens.access_token}"
            request.headers["DPoP"] = key.proof(
                request.method,
                str(request.url),
                nonce=self._nonces.get(origin_of(str(request.url))),
                access_token=tokens.access_token,
            )
        else:
            request.headers["Authorization"] = f"Bearer {tokens.access_token}"

    def _note_nonce(self, url: httpx2.URL, response: httpx2.Response) -> None:
        nonce = response.headers.get("dpop-nonce")
        if nonce:
            self._nonces[origin_of(str(url))] = nonce

    def _dpop_for(self, found: _Discovered, challenge: Challenge) -> DPoPKey | None:
        """A new key when tokens should be DPoP-bound: asked for, or offered by both
        the server (its challenge's scheme) and its authorization server."""
        supported = found.metadata.supports("dpop_signing_alg_values_supported", DPOP_ALGORITHM)
        if self.dpop is False:
            return None
        if self.dpop is None and not (supported and (challenge.scheme or "").lower() == "dpop"):
            return None
        if not supported:
            raise AuthorizationError(
                f"dpop=True, but the authorization server {found.metadata.issuer} does not "
                f"list {DPOP_ALGORITHM} in dpop_signing_alg_values_supported; pass dpop=None"
            )
        return DPoPKey()

    def _key_of(self, tokens: Tokens) -> DPoPKey | None:
        key = self._dpop_keys.get(tokens.access_token)
        if key is None and tokens.dpop_jwk is not None:
            key = DPoPKey.from_jwk(tokens.dpop_jwk)
            self._dpop_keys[tokens.access_token] = key
        return key

    # -- storage --------------------------------------------------------------------------

    async def _load(self, resource: str) -> Tokens | None:
        if resource not in self._tokens:
            key = _token_key(resource)
            record = await self.store.get(key)
            self._tokens[resource] = Tokens.from_record(record, key) if record is not None else None
        return self._tokens[resource]

    async def _reload(self, resource: str) -> Tokens | None:
        """The tokens as the store holds them now, not as this object last saw them:
        another program sharing the store may have replaced them."""
        self._tokens.pop(resource, None)
        return await self._load(resource)

    async def _save(self, resource: str, tokens: Tokens | None) -> None:
        self._tokens[resource] = tokens
        if tokens is None:
            await self.store.delete(_token_key(resource))
        else:
            await self.store.set(_token_key(resource), tokens.as_record())

    @asynccontextmanager
    async def _locked(self) -> AsyncGenerator[None, None]:
        """One flow at a time (a lock per event loop library: anyio's is bound to one)."""
        library: object = type(anyio.lowlevel.current_token().native_token)  # its kind
        if self._lock is None or self._lock[0] != library:
            self._lock = (library, anyio.Lock())
        async with self._lock[1]:
            yield

    @asynccontextmanager
    async def _holding(self, resource: str) -> AsyncGenerator[None, None]:
        """The store's lock on ``resource``'s tokens, where the store offers one: other
        programs sharing the store wait while this one reads, refreshes and saves them,
        rather than spend the same refresh token at the same instant. A person's login
        is never run inside it (it may take minutes)."""
        if isinstance(self.store, LockingTokenStore):
            async with self.store.lock_record(_token_key(resource)):
                yield
        else:
            yield

    @asynccontextmanager
    async def _http(self) -> AsyncGenerator[OAuthHTTP, None]:
        """The user's client, or one for this flow only (flows are rare, and this keeps
        nothing open between them); each exchange with ``timeout`` as its deadline."""
        if self._http_client is not None:
            yield OAuthHTTP(self._http_client, self.timeout)
            return
        async with httpx2.AsyncClient(timeout=self.timeout, follow_redirects=False) as http:
            yield OAuthHTTP(http, self.timeout)


def _refused(failure: AuthorizationError) -> bool:
    """Whether a refresh failed because the authorization server refused it (an OAuth
    error code: the refresh token is spent or revoked), rather than because it could not
    be asked (unreachable, too slow, a server error). Only then are the stored tokens
    worthless: a network blip must not log the person out."""
    return failure.oauth_error is not None


def _replaced(stored: Tokens, held: Tokens) -> bool:
    """Whether ``stored`` are other tokens than ``held`` (renewed by someone else)."""
    return (stored.access_token, stored.refresh_token) != (held.access_token, held.refresh_token)


def _resource_key(url: httpx2.URL) -> str:
    return str(url.copy_with(query=None, fragment=None))


def _token_key(resource: str) -> str:
    return f"oauth:tokens:{resource}"


def _client_key(issuer: str) -> str:
    return f"oauth:client:{issuer}"


def _same_but_loopback_port(registered: str | None, wanted: str | None) -> bool:
    """Whether two redirect URIs are one plain-http loopback address (``localhost``,
    127.0.0.0/8 or ::1, the same host in both) but for their ports."""
    if registered is None or wanted is None:
        return False
    try:
        old, new = httpx2.URL(registered), httpx2.URL(wanted)
    except httpx2.InvalidURL:
        return False
    return (
        old.scheme == new.scheme == "http"
        and is_loopback(old.host)
        and old.copy_with(port=None) == new.copy_with(port=None)
    )


def _with_key(tokens: Tokens, key: DPoPKey) -> Tokens:
    return replace(tokens, dpop_jwk=key.as_jwk())
