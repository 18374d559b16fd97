"""What the resource server's token verifiers accept, beyond a good signature: where
they may fetch keys and ask about tokens (https, or this machine), the JWT type and
time claims, what an introspection answer may leave out, and whose principal a token
without a user gets. Keys and the introspection endpoint are served on loopback."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from typing import Any

import pytest
from http_support import serve
from joserfc import jwt
from joserfc.jwk import ECKey, KeySet
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from answerback.server import (
    IntrospectionVerifier,
    InvalidTokenError,
    JWTVerifier,
    ResourceServer,
    VerifierUnavailableError,
)

pytestmark = pytest.mark.anyio

ISSUER = "https://as.example.com"
RESOURCE = "https://mcp.example.com/mcp"
KEY = ECKey.generate_key("P-256", parameters={"kid": "k1"})


class AuthorizationServer:
    """Keys, metadata and an introspection endpoint, answering as a test sets."""

    def __init__(self) -> None:
        self.base = ""
        self.jwks_uri: str | None = None
        self.introspection: dict[str, Any] = {}

    def app(self) -> Starlette:
        async def jwks(request: Request) -> Response:
            return JSONResponse(KeySet([KEY]).as_dict(private=False))

        async def metadata(request: Request) -> Response:
            return JSONResponse({"issuer": self.base, "jwks_uri": self.jwks_uri})

        async def introspect(request: Request) -> Response:
            return JSONResponse(self.introspection)

        return Starlette(
            routes=[
                Route("/jwks", jwks),
                Route("/.well-known/oauth-authorization-server", metadata),
                Route("/introspect", introspect, methods=["POST"]),
            ]
        )


@pytest.fixture
async def server() -> AsyncIterator[AuthorizationServer]:
    found = AuthorizationServer()
    async with serve(found.app(), path="") as running:
        found.base = running.url
        yield found


def token(header: dict[str, Any] | None = None, **claims: Any) -> str:
    """A token signed by ``KEY``: good claims for ``RESOURCE``, replaced by ``claims``
    (a claim given as ``None`` is left out)."""
    now = int(time.time())
    base: dict[str, Any] = {"iss": ISSUER, "sub": "alice", "aud": RESOURCE, "exp": now + 600}
    chosen = {name: value for name, value in (base | claims).items() if value is not None}
    protected = {"alg": "ES256", "kid": "k1", "typ": "at+jwt"} | (header or {})
    given = {name: value for name, value in protected.items() if value is not None}
    return jwt.encode(given, chosen, KEY, algorithms=["ES256"])


def verifier(server: AuthorizationServer, **options: Any) -> JWTVerifier:
    return JWTVerifier(issuer=ISSUER, jwks_url=f"{server.base}/jwks", **options)


# -- https for every address of the authorization server -----------------------------------


OFF_MACHINE = "http://as.example.com"


@pytest.mark.parametrize(
    ("build", "option"),
    [
        (lambda: JWTVerifier(issuer=OFF_MACHINE), "issuer"),
        (lambda: JWTVerifier(issuer=ISSUER, jwks_url=f"{OFF_MACHINE}/jwks"), "jwks_url"),
        (lambda: IntrospectionVerifier(f"{OFF_MACHINE}/introspect", "rs", "secret"), "url"),
        (
            lambda: ResourceServer(RESOURCE, [OFF_MACHINE], JWTVerifier(issuer=ISSUER)),
            "authorization_servers",
        ),
    ],
    ids=["issuer", "jwks_url", "introspection", "authorization_servers"],
)
def test_plain_http_off_this_machine_is_refused(build: Any, option: str) -> None:
    """Keys fetched over plain http can be replaced on the way (any token forged), and
    introspection over it sends the secret and every token in cleartext."""
    with pytest.raises(ValueError, match="must be an https URL") as raised:
        build()
    message = str(raised.value)
    assert option in message
    assert "localhost" in message
    # a verifier's own fetches may opt out, and the error says how; clients are never
    # told a plain-http issuer, so authorization_servers has no way out to name
    assert ("allow_insecure_http=True" in message) is (option != "authorization_servers")


IN_CLUSTER = "http://keycloak.auth.svc.cluster.local:8080/realms/mcp"


def test_verifiers_may_fetch_over_plain_http_on_a_trusted_network() -> None:
    """In-cluster, Ory Hydra's admin port, docker-compose: plain http off this machine,
    on a network the operator trusts, opted into by name."""
    JWTVerifier(issuer=IN_CLUSTER, allow_insecure_http=True)
    JWTVerifier(
        issuer=ISSUER,
        jwks_url=f"{IN_CLUSTER}/protocol/openid-connect/certs",
        allow_insecure_http=True,
    )
    IntrospectionVerifier(
        "http://hydra-admin:4445/admin/oauth2/introspect", "rs", "secret", allow_insecure_http=True
    )
    # what clients are told stays https, whatever the verifier fetches from
    with pytest.raises(ValueError, match="authorization_servers must be an https URL"):
        ResourceServer(
            RESOURCE, ["http://keycloak:8080"], JWTVerifier(issuer=ISSUER, allow_insecure_http=True)
        )


def test_allow_insecure_http_is_a_flag() -> None:
    with pytest.raises(TypeError, match="allow_insecure_http must be True or False"):
        JWTVerifier(issuer=ISSUER, allow_insecure_http="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="allow_insecure_http must be True or False"):
        IntrospectionVerifier(f"{ISSUER}/i", "rs", "s", allow_insecure_http=1)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1:9000", "localhost:9000", "[::1]:9000", "localhost.:9000", "[::ffff:127.0.0.1]"],
)
def test_plain_http_on_this_machine_is_allowed_for_development(host: str) -> None:
    url = f"http://{host}"
    JWTVerifier(issuer=url)
    JWTVerifier(issuer=ISSUER, jwks_url=f"{url}/jwks")
    IntrospectionVerifier(f"{url}/introspect", "rs", "secret")
    ResourceServer(RESOURCE, [url], JWTVerifier(issuer=url))


async def test_a_plain_http_jwks_uri_in_the_metadata_is_not_fetched(
    server: AuthorizationServer,
) -> None:
    server.jwks_uri = "http://keys.example.com/jwks"
    checking = JWTVerifier(issuer=server.base, audience=RESOURCE)
    with pytest.raises(VerifierUnavailableError, match="jwks_uri must be an https URL") as raised:
        await checking.verify(token(iss=server.base), resource=RESOURCE)
    assert "JWTVerifier(..., allow_insecure_http=True)" in str(raised.value)


async def test_allow_insecure_http_covers_the_jwks_uri_in_the_metadata(
    server: AuthorizationServer,
) -> None:
    """The opt-out reaches the address the metadata names, not only the configured ones:
    the keys are fetched (``.invalid`` never resolves, RFC 6761, so the fetch fails)."""
    server.jwks_uri = "http://keys.invalid/jwks"
    checking = JWTVerifier(issuer=server.base, audience=RESOURCE, allow_insecure_http=True)
    with pytest.raises(VerifierUnavailableError, match="could not fetch the signing keys from"):
        await checking.verify(token(iss=server.base), resource=RESOURCE)


# -- the JWT's type and time claims ---------------------------------------------------------


@pytest.mark.parametrize("typ", ["at+jwt", "application/at+jwt", "AT+JWT", "JWT", None])
async def test_an_access_token_type_or_none_is_accepted(
    server: AuthorizationServer, typ: str | None
) -> None:
    info = await verifier(server).verify(token({"typ": typ}), resource=RESOURCE)
    assert info.subject == "alice"


@pytest.mark.parametrize("typ", ["dpop+jwt", "logout+jwt", "secevent+jwt"])
async def test_a_token_typed_as_something_else_is_refused(
    server: AuthorizationServer, typ: str
) -> None:
    """RFC 9068 §4: a JWT of another type signed by the same keys is no access token."""
    with pytest.raises(InvalidTokenError, match="not at\\+jwt"):
        await verifier(server).verify(token({"typ": typ}), resource=RESOURCE)


@pytest.mark.parametrize("typ", ["JWT", None])
async def test_require_at_jwt_accepts_only_typed_access_tokens(
    server: AuthorizationServer, typ: str | None
) -> None:
    strict = verifier(server, require_at_jwt=True)
    with pytest.raises(InvalidTokenError, match="not at\\+jwt"):
        await strict.verify(token({"typ": typ}), resource=RESOURCE)
    assert (await strict.verify(token(), resource=RESOURCE)).subject == "alice"


def test_require_at_jwt_is_a_flag() -> None:
    with pytest.raises(TypeError, match="require_at_jwt must be True or False"):
        JWTVerifier(issuer=ISSUER, require_at_jwt="yes")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("claims", "why"),
    [
        ({"nbf": "tomorrow"}, "nbf is not a number"),
        ({"nbf": True}, "nbf is not a number"),
        ({"exp": "never"}, "exp is not a number"),
        ({"exp": float("inf")}, "exp is not a number"),
        ({"exp": None}, "no expiry"),
    ],
)
async def test_time_claims_must_be_numbers(
    server: AuthorizationServer, claims: dict[str, Any], why: str
) -> None:
    """RFC 7519: exp and nbf are NumericDates; one that is not must not count as no
    limit (a string nbf was skipped, an infinite exp never expired)."""
    with pytest.raises(InvalidTokenError, match=why):
        await verifier(server).verify(token(**claims), resource=RESOURCE)


# -- a client acting for itself -------------------------------------------------------------


async def test_a_token_without_a_user_does_not_share_a_users_principal(
    server: AuthorizationServer,
) -> None:
    """A client registered as ``alice`` (client credentials: no ``sub``) must not open
    user alice's sessions or share her limits."""
    checking = verifier(server)
    user = await checking.verify(token(), resource=RESOURCE)
    client = await checking.verify(token(sub=None, client_id="alice"), resource=RESOURCE)
    assert (client.subject, client.client_id, client.client_only) == ("alice", "alice", True)
    assert not user.client_only
    assert user.principal == f"{ISSUER} alice"
    assert client.principal != user.principal


# -- what an introspection answer may leave out ---------------------------------------------


def introspection(server: AuthorizationServer, **options: Any) -> IntrospectionVerifier:
    return IntrospectionVerifier(f"{server.base}/introspect", "rs", "secret", **options)


async def test_an_introspection_answer_without_exp_or_iss_is_accepted(
    server: AuthorizationServer,
) -> None:
    """RFC 7662 §2.2 makes both optional: the token is good while the server says it is
    active."""
    server.introspection = {"active": True, "sub": "alice", "aud": RESOURCE}
    info = await introspection(server, issuer=ISSUER).verify("opaque", resource=RESOURCE)
    assert (info.subject, info.expires_at, info.issuer) == ("alice", None, None)


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        ({"iss": "https://other.example.com"}, "issued by 'https://other.example.com'"),
        ({"exp": 1}, "has expired"),
        ({"exp": "later"}, "exp is not a number"),
    ],
)
async def test_an_introspection_answer_with_a_wrong_exp_or_iss_is_refused(
    server: AuthorizationServer, answer: dict[str, Any], why: str
) -> None:
    server.introspection = {"active": True, "sub": "alice", "aud": RESOURCE} | answer
    with pytest.raises(InvalidTokenError, match=why):
        await introspection(server, issuer=ISSUER).verify("opaque", resource=RESOURCE)
