"""The test authorization server (tests/servers/oauth_server.py) as a process a test starts,
and the few OAuth steps tests take against it without the library's own client.

A test module gets one with a fixture of its own (pyright sees no imported fixtures)::

    @pytest.fixture(scope="module")
    def auth_server() -> Iterator[AuthServer]:
        with running_auth_server(default_user="alice") as server:
            yield server

The helpers speak plain HTTP (httpx2) so that a resource server test does not depend on the
OAuth client under test, and a client test can check its results against a second opinion.
"""

from __future__ import annotations

import base64
import json
import secrets
import subprocess
import sys
from collections.abc import Generator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx2
from authlib.oauth2 import rfc7636

OAUTH_SERVER = Path(__file__).parent / "servers" / "oauth_server.py"
REDIRECT_URI = "http://127.0.0.1:1/callback"
"""A redirect URI nobody listens on: the helpers read the redirect, never follow it."""


@dataclass(frozen=True)
class AuthServer:
    """A running test authorization server, by its issuer URL."""

    issuer: str

    @property
    def jwks_url(self) -> str:
        return f"{self.issuer}/jwks"

    @property
    def introspection_url(self) -> str:
        return f"{self.issuer}/introspect"

    async def _post(self, path: str, **options: Any) -> httpx2.Response:
        async with httpx2.AsyncClient() as http:
            return await http.post(f"{self.issuer}{path}", **options)

    async def register(self, **metadata: Any) -> dict[str, Any]:
        """Register a client (RFC 7591); defaults: a public client for the code flow with
        refresh tokens, redirecting to ``REDIRECT_URI``."""
        body: dict[str, Any] = {
            "client_name": "test client",
            "redirect_uris": [REDIRECT_URI],
            "grant_types": ["authorization_code", "refresh_token"],
            "token_endpoint_auth_method": "none",
            **metadata,
        }
        response = await self._post("/register", json=body)
        assert response.status_code == 201, response.text
        return response.json()

    async def token(self, client: dict[str, Any], **form: str) -> dict[str, Any]:
        """A token endpoint call, authenticated as ``client`` registered; the JSON answer
        (an error's too)."""
        return (await self.token_response(client, **form)).json()

    async def token_response(self, client: dict[str, Any], **form: str) -> httpx2.Response:
        headers: dict[str, str] = {}
        data = dict(form)
        method = client.get("token_endpoint_auth_method", "client_secret_basic")
        if method == "client_secret_basic":
            pair = f"{client['client_id']}:{client['client_secret']}".encode()
            headers["Authorization"] = "Basic " + base64.b64encode(pair).decode()
        elif method == "client_secret_post":
            data |= {"client_id": client["client_id"], "client_secret": client["client_secret"]}
        else:
            data["client_id"] = client["client_id"]
        return await self._post("/token", data=data, headers=headers)

    async def authorize(
        self,
        client: dict[str, Any],
        *,
        user: str = "alice",
        scope: str = "mcp",
        resource: str | Sequence[str] | None = None,
    ) -> dict[str, Any]:
        """The whole authorization code flow with PKCE, as a browser stand-in would follow
        it for ``user``: the token response."""
        verifier = secrets.token_urlsafe(48)
        pkce: Any = rfc7636  # the stubs leave its types unknown
        challenge: str = pkce.create_s256_code_challenge(verifier)
        state = secrets.token_urlsafe(8)
        params: list[tuple[str, str]] = [
            ("response_type", "code"),
            ("client_id", client["client_id"]),
            ("redirect_uri", REDIRECT_URI),
            ("scope", scope),
            ("state", state),
            ("code_challenge", challenge),
            ("code_challenge_method", "S256"),
            ("user", user),
        ]
        resources = [resource] if isinstance(resource, str) else list(resource or [])
        params += [("resource", each) for each in resources]
        async with httpx2.AsyncClient() as http:
            response = await http.get(f"{self.issuer}/authorize", params=tuple(params))
        assert response.status_code == 302, response.text
        query = parse_qs(urlsplit(response.headers["location"]).query)
        answer = {name: values[0] for name, values in query.items()}
        assert answer["state"] == state
        assert answer["iss"] == self.issuer
        form = {"grant_type": "authorization_code", "code": answer["code"]}
        form |= {"redirect_uri": REDIRECT_URI, "code_verifier": verifier}
        token = await self.token(client, **form)
        assert "access_token" in token, token
        return token

    async def client_credentials(
        self, *, scope: str = "mcp", resource: str | None = None
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """A new confidential client and a token it got for itself."""
        client = await self.register(
            grant_types=["client_credentials"],
            token_endpoint_auth_method="client_secret_basic",
            redirect_uris=[],
        )
        form = {"grant_type": "client_credentials", "scope": scope}
        if resource is not None:
            form["resource"] = resource
        token = await self.token(client, **form)
        assert "access_token" in token, token
        return client, token

    async def confidential_client(self) -> dict[str, Any]:
        """A client with a secret that may call introspection (a resource server's)."""
        return await self.register(
            grant_types=["client_credentials"],
            token_endpoint_auth_method="client_secret_basic",
            redirect_uris=[],
        )

    async def revoke(self, client: dict[str, Any], token: str) -> None:
        """Revoke ``token`` (RFC 7009) as the client it was issued to; both tokens of its
        grant stop working."""
        data = {"token": token}
        auth: tuple[str, str] | None = None
        if client.get("client_secret"):
            auth = (client["client_id"], client["client_secret"])
        else:
            data["client_id"] = client["client_id"]
        response = await self._post("/revoke", data=data, auth=auth)
        assert response.status_code == 200, response.text

    async def mint(self, **claims: Any) -> str:
        """A token signed by the current key with these claims over a valid default
        (``sub`` alice, this issuer, an hour; a claim given as None is left out)."""
        response = await self._post("/testing/mint", content=json.dumps(claims))
        assert response.status_code == 200, response.text
        return response.json()["access_token"]

    async def rotate_keys(self, *, keep_old: bool = False) -> str:
        """Sign with a new key from now on (the old one leaves the JWKS unless
        ``keep_old``); the new key's id."""
        response = await self._post("/testing/rotate-keys", json={"keep_old": keep_old})
        assert response.status_code == 200, response.text
        return response.json()["kid"]


@contextmanager
def running_auth_server(
    *,
    issuer_path: str = "",
    default_user: str | None = None,
    token_lifetime: int = 3600,
    clients: Sequence[dict[str, Any]] = (),
) -> Generator[AuthServer]:
    """Start the test authorization server on a free loopback port; stop it after."""
    command = [sys.executable, str(OAUTH_SERVER), "--token-lifetime", str(token_lifetime)]
    if issuer_path:
        command += ["--issuer-path", issuer_path]
    if default_user is not None:
        command += ["--default-user", default_user]
    for client in clients:
        command += ["--client", json.dumps(client)]
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True) as process:
        try:
            assert process.stdout is not None
            line = process.stdout.readline()  # printed once it accepts connections
            assert line.startswith("listening at "), f"the test AS did not start: {line!r}"
            yield AuthServer(line.removeprefix("listening at ").strip())
        finally:
            process.kill()
