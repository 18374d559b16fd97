"""The resource server against a real authorization server (tests/servers/oauth_server.py).

Two levels: the ``ResourceServer`` on its own, as the HTTP app uses it (``authenticate``
for every request, ``authorize`` for each message; answered in-process through httpx's
ASGI transport), where every kind of bad token is tried; then a protected MCP server on
loopback, where a tool reads ``ctx.auth`` and 2026 ``requestState`` is bound to its user.
Tokens come from the test AS's real flows (code with PKCE, client credentials), or are
minted by it with the one claim a test needs wrong.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
from collections.abc import AsyncGenerator, Iterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import pytest
from http_support import REPO, free_port, python_server, serve, serve_process
from oauth_fixtures import AuthServer, running_auth_server
from pydantic import BaseModel
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from answerback import Client, MCPError
from answerback.client import ClientRequestContext
from answerback.server import (
    AuthInfo,
    Context,
    IntrospectionVerifier,
    JWTVerifier,
    MCPServer,
    ResourceServer,
    TokenVerifier,
    VerifierUnavailableError,
)
from answerback.transports.http import StreamableHTTPApp, StreamableHTTPTransport
from answerback.types import (
    ElicitRequestParams,
    ElicitResult,
    InputRequiredResult,
    TextContent,
)

pytestmark = pytest.mark.anyio

RESOURCE = "http://127.0.0.1:8000/mcp"
EXAMPLES = REPO / "examples"
METADATA_URL = "http://127.0.0.1:8000/.well-known/oauth-protected-resource/mcp"


@pytest.fixture(scope="module")
def auth_server() -> Iterator[AuthServer]:
    with running_auth_server() as server:
        yield server


def jwt_verifier(server: AuthServer, **options: Any) -> JWTVerifier:
    return JWTVerifier(jwks_url=server.jwks_url, issuer=server.issuer, **options)


async def introspection_verifier(server: AuthServer, **options: Any) -> IntrospectionVerifier:
    client = await server.confidential_client()
    return IntrospectionVerifier(
        server.introspection_url, client["client_id"], client["client_secret"], **options
    )


def protected(resource_server: ResourceServer) -> Starlette:
    """The authenticator alone, used as the HTTP app uses it: ``authenticate``, then
    ``authorize`` for a POSTed message; the caller is echoed back."""

    async def endpoint(request: Request) -> Response:
        verdict = await resource_server.authenticate(request)
        if isinstance(verdict, Response):
            return verdict
        if request.method == "POST":
            refusal = await resource_server.authorize(verdict, await request.json())
            if refusal is not None:
                return refusal
        return JSONResponse(
            {
                "subject": verdict.subject,
                "issuer": verdict.issuer,
                "client_id": verdict.client_id,
                "scopes": sorted(verdict.scopes),
                "principal": verdict.principal,
            }
        )

    routes = [*resource_server.routes, Route("/mcp", endpoint, methods=["GET", "POST"])]
    return Starlette(routes=routes)


@asynccontextmanager
async def http(resource_server: ResourceServer) -> AsyncGenerator[httpx2.AsyncClient]:
    transport = httpx2.ASGITransport(app=protected(resource_server))
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1:8000") as c:
        yield c


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def challenge(response: httpx2.Response) -> dict[str, str]:
    """The ``WWW-Authenticate`` Bearer parameters (the values these tests produce are
    quoted and hold no commas except inside descriptions, which end the header)."""
    header = response.headers["www-authenticate"]
    scheme, _, rest = header.partition(" ")
    assert scheme == "Bearer"
    found: dict[str, str] = {}
    for part in rest.split('", '):
        name, _, value = part.partition("=")
        found[name.strip()] = value.strip().strip('"')
    return found


async def login(
    server: AuthServer, *, user: str = "alice", scope: str = "mcp", resource: str = RESOURCE
) -> str:
    client = await server.register()
    token = await server.authorize(client, user=user, scope=scope, resource=resource)
    return token["access_token"]


# -- the metadata and the challenges ------------------------------------------------------


async def test_metadata_document_names_the_resource_and_its_authorization_server(
    auth_server: AuthServer,
) -> None:
    mcp = MCPServer("metadata")

    @mcp.tool(scopes=["admin"])
    def purge() -> str:
        return "purged"

    resource_server = ResourceServer(
        RESOURCE,
        [auth_server.issuer],
        jwt_verifier(auth_server),
        scopes=["mcp"],
        resource_name="Test server",
    )
    resource_server.attach(mcp)
    assert resource_server.metadata_url == METADATA_URL
    async with http(resource_server) as client:
        at_path = await client.get("/.well-known/oauth-protected-resource/mcp")
        at_root = await client.get("/.well-known/oauth-protected-resource")
    assert at_path.status_code == 200
    assert at_path.json() == {
        "resource": RESOURCE,
        "authorization_servers": [auth_server.issuer],
        "scopes_supported": ["mcp"],  # the minimal set: admin comes by stepping up
        "bearer_methods_supported": ["header"],
        "resource_name": "Test server",
    }
    assert at_root.json() == at_path.json()
    assert at_path.headers["access-control-allow-origin"] == "*"
    async with http(resource_server) as client:
        preflight = await client.options(
            "/.well-known/oauth-protected-resource/mcp",
            headers={
                "origin": "https://app.example",
                "access-control-request-method": "GET",
                "access-control-request-headers": "mcp-protocol-version",
            },
        )
    assert preflight.status_code == 204
    assert preflight.headers["access-control-allow-origin"] == "*"


async def test_no_token_gets_401_pointing_at_the_metadata(auth_server: AuthServer) -> None:
    resource_server = ResourceServer(
        RESOURCE, [auth_server.issuer], jwt_verifier(auth_server), scopes=["mcp", "read"]
    )
    async with http(resource_server) as client:
        missing = await client.get("/mcp")
        not_bearer = await client.get("/mcp", headers={"authorization": "Basic YTpi"})
    for response in (missing, not_bearer):
        assert response.status_code == 401
        assert response.headers["www-authenticate"] == (
            f'Bearer resource_metadata="{METADATA_URL}", scope="mcp read"'
        )
        assert response.json()["error"] == "unauthorized"


async def test_a_valid_token_from_the_code_flow_is_accepted(auth_server: AuthServer) -> None:
    resource_server = ResourceServer(
        RESOURCE, [auth_server.issuer], jwt_verifier(auth_server), scopes=["mcp"]
    )
    token = await login(auth_server, user="bob", scope="mcp read")
    async with http(resource_server) as client:
        response = await client.get("/mcp", headers=bearer(token))
    assert response.status_code == 200, response.text
    caller = response.json()
    assert caller["subject"] == "bob"
    assert caller["issuer"] == auth_server.issuer
    assert caller["scopes"] == ["mcp", "read"]
    assert caller["principal"] == f"{auth_server.issuer} bob"


async def refused(resource_server: ResourceServer, token: str) -> str:
    """The description of the 401 ``invalid_token`` refusing ``token``."""
    async with http(resource_server) as client:
        response = await client.get("/mcp", headers=bearer(token))
    assert response.status_code == 401, response.text
    params = challenge(response)
    assert params["error"] == "invalid_token"
    assert params["resource_metadata"] == METADATA_URL
    return params["error_description"]


async def test_bad_jwts_are_refused_saying_why(auth_server: AuthServer) -> None:
    resource_server = ResourceServer(RESOURCE, [auth_server.issuer], jwt_verifier(auth_server))
    expired = await auth_server.mint(aud=RESOURCE, exp=1000)
    assert await refused(resource_server, expired) == "the token has expired"
    elsewhere = await login(auth_server, resource="http://127.0.0.1:9/other")
    assert "not meant for this resource" in await refused(resource_server, elsewhere)
    no_audience = await auth_server.mint(aud=None)
    assert "not meant for this resource" in await refused(resource_server, no_audience)
    forged_issuer = await auth_server.mint(aud=RESOURCE, iss="http://127.0.0.1:9")
    assert "issued by 'http://127.0.0.1:9'" in await refused(resource_server, forged_issuer)
    assert await refused(resource_server, "not-a-jwt") == "the token is not a JWT"
    header, payload, _ = (await auth_server.mint(aud=RESOURCE)).split(".")
    assert "signature does not verify" in await refused(resource_server, f"{header}.{payload}.AAAA")


async def test_an_unsigned_token_is_refused(auth_server: AuthServer) -> None:
    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    claims = {"iss": auth_server.issuer, "sub": "mallory", "aud": RESOURCE, "exp": 2**40}
    unsigned = f"{part({'alg': 'none'})}.{part(claims)}."
    resource_server = ResourceServer(RESOURCE, [auth_server.issuer], jwt_verifier(auth_server))
    assert (
        await refused(resource_server, unsigned) == "the token's algorithm 'none' is not accepted"
    )
    with pytest.raises(ValueError, match="HMAC"):
        jwt_verifier(auth_server, algorithms=["RS256", "HS256"])


async def test_an_explicit_audience_replaces_the_resource(auth_server: AuthServer) -> None:
    api = "https://api.example.com"
    verifier = jwt_verifier(auth_server, audience=[api])
    resource_server = ResourceServer(RESOURCE, [auth_server.issuer], verifier)
    for_api = await auth_server.mint(aud=api)
    async with http(resource_server) as client:
        assert (await client.get("/mcp", headers=bearer(for_api))).status_code == 200
    for_resource = await auth_server.mint(aud=RESOURCE)
    assert "not meant for this resource" in await refused(resource_server, for_resource)


async def test_a_rotated_key_is_fetched_when_a_token_names_it() -> None:
    """Its own AS: rotating keys must not disturb the other tests' tokens."""
    with running_auth_server() as server:
        eager = jwt_verifier(server, min_refresh_seconds=0)
        patient = jwt_verifier(server, min_refresh_seconds=3600)
        resource = ResourceServer(RESOURCE, [server.issuer], eager)
        holding = ResourceServer(RESOURCE, [server.issuer], patient)
        before = await server.mint(aud=RESOURCE)
        for verifier in (eager, patient):
            assert (await verifier.verify(before, resource=RESOURCE)).subject == "alice"
        new_kid = await server.rotate_keys()
        after = await server.mint(aud=RESOURCE, sub="carol")
        async with http(resource) as client:
            response = await client.get("/mcp", headers=bearer(after))
        assert response.json()["subject"] == "carol"  # unknown kid: fetched again
        assert await refused(holding, after) == (  # fetched too recently to try again
            f"the token's signing key {new_kid!r} is not published"
        )
        # the old key left the JWKS: a token it signed no longer verifies once refetched
        assert "is not published" in await refused(resource, before)


async def test_introspection_accepts_live_tokens_and_refuses_revoked_ones(
    auth_server: AuthServer,
) -> None:
    verifier = await introspection_verifier(auth_server, issuer=auth_server.issuer)
    resource_server = ResourceServer(RESOURCE, [auth_server.issuer], verifier, scopes=["mcp"])
    client = await auth_server.register()
    tokens = await auth_server.authorize(client, user="dave", resource=RESOURCE)
    async with http(resource_server) as http_client:
        ok = await http_client.get("/mcp", headers=bearer(tokens["access_token"]))
    assert ok.json()["subject"] == "dave"
    assert ok.json()["client_id"] == client["client_id"]
    await auth_server.revoke(client, tokens["access_token"])
    assert "not active" in await refused(resource_server, tokens["access_token"])
    assert "not active" in await refused(resource_server, "never-issued")
    elsewhere = await login(auth_server, resource="http://127.0.0.1:9/other")
    assert "not meant for this resource" in await refused(resource_server, elsewhere)
    expired = await auth_server.mint(aud=RESOURCE, exp=1000)
    assert "not active" in await refused(resource_server, expired)
    posting = await introspection_verifier(auth_server, auth_method="client_secret_post")
    live = await login(auth_server, user="gina")
    assert (await posting.verify(live, resource=RESOURCE)).subject == "gina"


async def test_introspection_with_bad_credentials_is_unavailable_not_unauthorized(
    auth_server: AuthServer,
) -> None:
    """A token that could not be checked is no reason to send the user to log in again."""
    verifier = IntrospectionVerifier(auth_server.introspection_url, "nobody", "wrong")
    resource_server = ResourceServer(RESOURCE, [auth_server.issuer], verifier)
    token = await login(auth_server)
    async with http(resource_server) as client:
        response = await client.get("/mcp", headers=bearer(token))
    assert response.status_code == 503
    assert response.json()["error"] == "temporarily_unavailable"
    assert "www-authenticate" not in response.headers


async def test_a_failing_jwks_is_not_asked_again_at_once(auth_server: AuthServer) -> None:
    """An unreachable (here: failing) JWKS makes requests 503, without a fetch each."""
    asked: list[str] = []

    async def failing(request: Request) -> Response:
        asked.append(request.url.path)
        return Response("down", status_code=500)

    token = await login(auth_server)
    jwks = Starlette(routes=[Route("/jwks", failing)])
    async with serve(jwks, path="/jwks") as running:
        verifier = JWTVerifier(jwks_url=running.url, issuer=auth_server.issuer)
        for _ in range(3):
            with pytest.raises(VerifierUnavailableError):
                await verifier.verify(token, resource=RESOURCE)
    assert asked == ["/jwks"]


async def test_unreachable_jwks_is_unavailable(auth_server: AuthServer) -> None:
    verifier = JWTVerifier(jwks_url="http://127.0.0.1:9/jwks", issuer=auth_server.issuer)
    resource_server = ResourceServer(RESOURCE, [auth_server.issuer], verifier)
    token = await login(auth_server)
    async with http(resource_server) as client:
        response = await client.get("/mcp", headers=bearer(token))
    assert response.status_code == 503


# -- scopes ---------------------------------------------------------------------------------


async def test_a_missing_required_scope_is_403_naming_it(auth_server: AuthServer) -> None:
    resource_server = ResourceServer(
        RESOURCE, [auth_server.issuer], jwt_verifier(auth_server), scopes=["mcp", "write"]
    )
    token = await login(auth_server, scope="mcp read")
    async with http(resource_server) as client:
        response = await client.get("/mcp", headers=bearer(token))
    assert response.status_code == 403
    params = challenge(response)
    assert params["error"] == "insufficient_scope"
    assert params["scope"] == "mcp read write"  # what was granted, plus what is missing
    assert params["error_description"] == "this server requires the scope write"
    assert params["resource_metadata"] == METADATA_URL


async def test_a_tool_with_scopes_is_refused_to_a_token_without_them(
    auth_server: AuthServer,
) -> None:
    mcp = MCPServer("scoped")

    @mcp.tool(scopes=["admin", "write"])
    def purge() -> str:
        return "purged"

    @mcp.tool()
    def look() -> str:
        return "looked"

    resource_server = ResourceServer(
        RESOURCE, [auth_server.issuer], jwt_verifier(auth_server), scopes=["mcp"]
    )
    resource_server.attach(mcp)
    plain = await login(auth_server, scope="mcp write")
    admin = await login(auth_server, scope="mcp write admin")

    def call(name: str) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name}}

    async with http(resource_server) as client:
        refused_call = await client.post("/mcp", json=call("purge"), headers=bearer(plain))
        other_tool = await client.post("/mcp", json=call("look"), headers=bearer(plain))
        listing = await client.post(
            "/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"}, headers=bearer(plain)
        )
        allowed = await client.post("/mcp", json=call("purge"), headers=bearer(admin))
    assert refused_call.status_code == 403
    params = challenge(refused_call)
    assert params["error"] == "insufficient_scope"
    assert params["scope"] == "admin mcp write"
    assert params["error_description"] == "the tool 'purge' requires the scope admin"
    assert refused_call.json()["error_description"] == "The tool 'purge' requires the scope admin"
    assert other_tool.status_code == listing.status_code == allowed.status_code == 200


def test_configuration_mistakes_are_refused_with_the_fix() -> None:
    verifier = JWTVerifier(jwks_url="http://127.0.0.1:9/jwks", issuer="http://127.0.0.1:9")
    with pytest.raises(ValueError, match="absolute http"):
        ResourceServer("/mcp", ["http://127.0.0.1:9"], verifier)
    with pytest.raises(ValueError, match="at least one issuer"):
        ResourceServer(RESOURCE, [], verifier)
    with pytest.raises(ValueError, match="at least one issuer"):
        ResourceServer(RESOURCE, "http://127.0.0.1:9", verifier)
    resource_server = ResourceServer(RESOURCE, ["http://127.0.0.1:9"], verifier)
    resource_server.attach(MCPServer("one"))
    with pytest.raises(ValueError, match="one per server"):
        resource_server.attach(MCPServer("two"))


# -- a protected MCP server ----------------------------------------------------------------


class Answer(BaseModel):
    name: str


def whoami_server() -> MCPServer:
    mcp = MCPServer("protected")

    @mcp.tool()
    def whoami(ctx: Context) -> str:
        """Who the token says is calling."""
        assert ctx.auth is not None
        return f"{ctx.auth.subject} with {' '.join(sorted(ctx.auth.scopes))}"

    @mcp.tool()
    async def greet(ctx: Context) -> str:
        """Ask the caller's name (a second round on 2026-07-28)."""
        answer = await ctx.elicit("Your name?", schema=Answer)
        return f"hello {answer.data.name}" if answer.action == "accept" else "no name"

    return mcp


@asynccontextmanager
async def protected_mcp(verifier: TokenVerifier) -> AsyncGenerator[str]:
    mcp = whoami_server()
    app = StreamableHTTPApp(mcp, auth=ResourceServer(RESOURCE, ["https://unused"], verifier))
    async with serve(app) as running:
        yield running.url


async def answer_name(_: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"name": "Alice"})


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_tool_reads_ctx_auth(auth_server: AuthServer, mode: str) -> None:
    token = await login(auth_server, user="erin", scope="mcp read")
    async with protected_mcp(jwt_verifier(auth_server)) as url:
        transport = StreamableHTTPTransport(url, headers=bearer(token))
        async with Client(transport, mode=mode) as client:
            result = await client.call_tool("whoami")
    assert isinstance(result.content[0], TextContent)
    assert result.content[0].text == "erin with mcp read"


async def test_request_state_opens_only_for_the_user_it_was_sealed_for(
    auth_server: AuthServer,
) -> None:
    alice = await login(auth_server, user="alice")
    mallory = await login(auth_server, user="mallory")
    async with protected_mcp(jwt_verifier(auth_server)) as url:
        transport = StreamableHTTPTransport(url, headers=bearer(alice))
        async with Client(transport, mode="2026-07-28", elicitation_callback=answer_name) as c:
            needed = await c.call_tool_round("greet", {})
            assert isinstance(needed, InputRequiredResult)
            answers = await c.answer_input_requests(needed)
        stolen = StreamableHTTPTransport(url, headers=bearer(mallory))
        async with Client(stolen, mode="2026-07-28") as c:
            with pytest.raises(MCPError, match="Invalid requestState"):
                await c.call_tool_round(
                    "greet", {}, input_responses=answers, request_state=needed.request_state
                )
        transport = StreamableHTTPTransport(url, headers=bearer(alice))
        async with Client(transport, mode="2026-07-28") as c:
            done = await c.call_tool_round(
                "greet", {}, input_responses=answers, request_state=needed.request_state
            )
    assert not isinstance(done, InputRequiredResult)
    assert isinstance(done.content[0], TextContent)
    assert done.content[0].text == "hello Alice"


async def test_http_app_enforces_tool_scopes(auth_server: AuthServer) -> None:
    """``mcp.http_app(auth=)`` hands the server's tools to the resource server itself."""
    mcp = MCPServer("scoped over HTTP")

    @mcp.tool(scopes=["admin"])
    def purge() -> str:
        return "purged"

    verifier = jwt_verifier(auth_server)
    app = mcp.http_app(auth=ResourceServer(RESOURCE, [auth_server.issuer], verifier))
    call = modern_call("purge")
    headers = {
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": "purge",
    }
    plain = await login(auth_server, scope="mcp")
    admin = await login(auth_server, scope="mcp admin")
    async with serve(app) as running, httpx2.AsyncClient() as client:
        refused_call = await client.post(running.url, json=call, headers=headers | bearer(plain))
        allowed = await client.post(running.url, json=call, headers=headers | bearer(admin))
    assert refused_call.status_code == 403
    assert challenge(refused_call)["scope"] == "admin mcp"
    assert allowed.status_code == 200, allowed.text
    assert "purged" in allowed.text


# -- URL-mode elicitation bound to its user, and what a stdio server loads -------------------


def test_a_bound_elicitation_id_names_its_user_to_this_server_only() -> None:
    mcp = MCPServer("binds", state_keys=[bytes(32)])
    alice = AuthInfo(subject="alice", issuer="https://as.example")
    elicitation_id = mcp.bound_elicitation_id(alice)
    assert mcp.elicitation_principal(elicitation_id) == "https://as.example alice"
    assert "alice" not in elicitation_id  # the link carries no personal data
    assert mcp.bound_elicitation_id(alice) != elicitation_id  # each one is new
    replica = MCPServer("replica", state_keys=[bytes(32)])
    assert replica.elicitation_principal(elicitation_id) == alice.principal
    altered = elicitation_id[:-2] + ("AA" if not elicitation_id.endswith("AA") else "BB")
    assert mcp.elicitation_principal(altered) is None
    assert MCPServer("other keys").elicitation_principal(elicitation_id) is None
    assert mcp.elicitation_principal("made-up") is None


def test_a_server_without_auth_loads_none_of_it() -> None:
    """starlette, authlib's server side and joserfc load only when a resource server is
    used, not for every stdio server."""
    code = (
        "import sys\n"
        "from answerback.server import MCPServer, Context, AuthInfo\n"
        "loaded = [m for m in ('starlette', 'answerback.server._auth', "
        "'answerback.server._auth_jwt', 'answerback.server._auth_introspection') "
        "if m in sys.modules]\n"
        "assert not loaded, loaded\n"
        "from answerback.server import ResourceServer\n"
        "assert ResourceServer.__module__ == 'answerback.server'\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr


async def test_the_keys_are_found_from_the_issuer_metadata(auth_server: AuthServer) -> None:
    """Without ``jwks_url``: the ``jwks_uri`` of the issuer's metadata, found at the
    well-known URLs (path-inserted for an issuer with a path)."""
    token = await auth_server.mint(aud=RESOURCE)
    verifier = JWTVerifier(issuer=auth_server.issuer)
    assert (await verifier.verify(token, resource=RESOURCE)).subject == "alice"
    assert verifier.jwks_url == auth_server.jwks_url
    with running_auth_server(issuer_path="/tenant1") as tenant:
        tenant_token = await tenant.mint(aud=RESOURCE, sub="frank")
        verifier = JWTVerifier(issuer=tenant.issuer)
        assert (await verifier.verify(tenant_token, resource=RESOURCE)).subject == "frank"
    mistaken = JWTVerifier(issuer=auth_server.issuer + "/")
    with pytest.raises(VerifierUnavailableError, match="names the issuer"):
        await mistaken.verify(token, resource=RESOURCE)


async def test_the_protected_server_example(auth_server: AuthServer) -> None:
    """examples/protected_server.py run as a user would, against the test AS."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    resource = url
    alice = await login(auth_server, user="alice", resource=resource)
    bob = await login(auth_server, user="bob", resource=resource)
    admin = await login(auth_server, user="carol", scope="mcp admin", resource=resource)
    argv = python_server(EXAMPLES / "protected_server.py", "--issuer", auth_server.issuer)
    with serve_process([*argv, "--port", str(port)], port):
        for token, text in ((alice, "alice's"), (bob, "bob's")):
            async with Client(StreamableHTTPTransport(url, headers=bearer(token))) as client:
                added = await client.call_tool("add_note", {"text": text})
                assert isinstance(added.content[0], TextContent)
                assert added.content[0].text == f"Noted for {text[:-2]}."
        async with Client(StreamableHTTPTransport(url, headers=bearer(alice))) as client:
            mine = await client.call_tool("my_notes")
        assert mine.structured_content == {"result": ["alice's"]}
        async with httpx2.AsyncClient() as http_client:
            anonymous = await http_client.get(url)
            metadata = await http_client.get(
                f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp"
            )
            headers = {
                "accept": "application/json, text/event-stream",
                "mcp-protocol-version": "2026-07-28",
                "mcp-method": "tools/call",
                "mcp-name": "forget_everyone",
            }
            call = modern_call("forget_everyone")
            without_admin = await http_client.post(url, json=call, headers=headers | bearer(bob))
            with_admin = await http_client.post(url, json=call, headers=headers | bearer(admin))
    assert anonymous.status_code == 401
    assert challenge(anonymous)["resource_metadata"] == metadata.url
    assert metadata.json()["authorization_servers"] == [auth_server.issuer]
    assert without_admin.status_code == 403
    assert "forget_everyone" in challenge(without_admin)["error_description"]
    assert with_admin.status_code == 200
    assert "Forgot the notes of 2 users." in with_admin.text


def modern_call(name: str) -> dict[str, Any]:
    """A 2026-07-28 ``tools/call`` as one POST body."""
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {
            "name": name,
            "arguments": {},
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
            },
        },
    }
