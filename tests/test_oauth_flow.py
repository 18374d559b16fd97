"""The whole MCP authorization flow, end to end, with every part real.

A real authorization server process (tests/servers/oauth_server.py), an answerback MCP
server protected by ``ResourceServer`` under uvicorn on loopback, and the answerback
client with ``OAuth`` and ``BrowserLogin``. The person's browser is a stand-in that
opens the login page as a named user and follows the redirect back to the client's
loopback listener (tests/login_support.py). Covered: the first login, tokens reused
from the store by the next connection, a refresh when they expire, step-up for a tool
that needs another scope, a declined login, a revoked token, a token for another
audience, and another user's token presented with someone else's session id.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from http_support import free_port, python_server, serve_process
from login_support import browser_program, opens_as, serving_protected
from oauth_fixtures import AuthServer, running_auth_server

from answerback import Client
from answerback.client import (
    AuthorizationError,
    FileTokenStore,
    InMemoryTokenStore,
    OAuth,
    TokenStore,
)
from answerback.interact import BrowserLogin
from answerback.server import (
    IntrospectionVerifier,
    JWTVerifier,
    TokenVerifier,
)
from answerback.transports.http import StreamableHTTPTransport
from answerback.types import TextContent

pytestmark = pytest.mark.anyio

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

POST_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


@pytest.fixture(scope="module")
def auth_server() -> Generator[AuthServer]:
    with running_auth_server(default_user="alice") as server:
        yield server


@pytest.fixture(scope="module")
def server_url(auth_server: AuthServer) -> Generator[str]:
    """Tokens checked as JWTs against the authorization server's JWKS."""

    def verifier(url: str) -> TokenVerifier:
        return JWTVerifier(jwks_url=auth_server.jwks_url, issuer=auth_server.issuer, audience=url)

    with serving_protected(auth_server.issuer, verifier) as url:
        yield url


@pytest.fixture(scope="module")
def introspected_url(auth_server: AuthServer) -> Generator[str]:
    """Tokens checked by introspection, which knows at once when one is revoked."""
    resource_client = anyio.run(auth_server.confidential_client)

    def verifier(url: str) -> TokenVerifier:
        return IntrospectionVerifier(
            auth_server.introspection_url,
            resource_client["client_id"],
            resource_client["client_secret"],
            issuer=auth_server.issuer,
            audience=url,
        )

    with serving_protected(auth_server.issuer, verifier) as url:
        yield url


class Logins:
    """A browser stand-in that counts the login pages it was sent to."""

    def __init__(self, user: str | None = None, *, deny: bool = False) -> None:
        self.urls: list[str] = []
        self._open = opens_as(user, deny=deny)

    def __call__(self, url: str) -> bool:
        self.urls.append(url)
        return self._open(url)


def text_of(result: Any) -> str:
    [block] = result.content
    assert isinstance(block, TextContent)
    return block.text


@contextmanager
def oauth_with(store: TokenStore, logins: Logins, **options: Any) -> Generator[OAuth]:
    with BrowserLogin(open_browser=logins, tell=lambda text: None) as login:
        yield OAuth(redirect_uri=login.redirect_uri, authorize=login, store=store, **options)


# -- the flow ----------------------------------------------------------------------------


async def test_the_first_connection_logs_in_and_the_next_reuses_the_tokens(
    server_url: str, tmp_path: Path
) -> None:
    store = FileTokenStore(tmp_path / "tokens.json")
    logins = Logins("alice")
    with oauth_with(store, logins) as auth:
        async with Client(server_url, auth=auth) as client:
            assert text_of(await client.call_tool("whoami", {})) == "alice"
    assert len(logins.urls) == 1
    assert httpx2.URL(logins.urls[0]).params["resource"] == server_url

    later = Logins("bob")  # nobody should be sent to log in again
    with oauth_with(FileTokenStore(tmp_path / "tokens.json"), later) as auth:
        async with Client(server_url, auth=auth) as client:
            assert text_of(await client.call_tool("whoami", {})) == "alice"
    assert later.urls == []


async def test_expired_tokens_are_refreshed_without_a_login(server_url: str) -> None:
    store = InMemoryTokenStore()
    logins = Logins("alice")
    with oauth_with(store, logins) as auth:
        async with Client(server_url, auth=auth) as client:
            await client.call_tool("whoami", {})
    first = await store.get(f"oauth:tokens:{server_url}")
    assert first is not None
    assert first["refresh_token"]
    await store.set(f"oauth:tokens:{server_url}", {**first, "expires_at": 0})

    with oauth_with(store, logins) as auth:
        async with Client(server_url, auth=auth) as client:
            assert text_of(await client.call_tool("whoami", {})) == "alice"
    assert len(logins.urls) == 1
    second = await store.get(f"oauth:tokens:{server_url}")
    assert second is not None
    assert second["refresh_token"] != first["refresh_token"]  # rotated
    assert second["expires_at"] > 0


async def test_a_tool_needing_another_scope_steps_up(server_url: str) -> None:
    logins = Logins("alice")
    with oauth_with(InMemoryTokenStore(), logins) as auth:
        async with Client(server_url, auth=auth) as client:
            assert text_of(await client.call_tool("whoami", {})) == "alice"
            assert len(logins.urls) == 1
            purged = text_of(await client.call_tool("purge", {}))
    assert purged.startswith("purged by alice with ")
    assert {"admin", "mcp"} <= set(purged.removeprefix("purged by alice with ").split())
    assert len(logins.urls) == 2
    second = httpx2.URL(logins.urls[1]).params["scope"].split()
    assert {"admin", "mcp"} <= set(second)


async def test_a_new_loopback_port_keeps_the_registration(
    auth_server: AuthServer, server_url: str
) -> None:
    """Each run's login listener gets a new port: the stored registration is used for
    the next login (the authorization server accepts any loopback port), instead of a
    new registration each run replacing the last."""
    key = f"oauth:client:{auth_server.issuer}"
    first_run = InMemoryTokenStore()
    with oauth_with(first_run, Logins("alice")) as auth:
        first_redirect = auth.redirect_uri
        async with Client(server_url, auth=auth) as client:
            assert text_of(await client.call_tool("whoami", {})) == "alice"
    registration = await first_run.get(key)
    assert registration is not None
    second_run = InMemoryTokenStore()  # the registration kept, the tokens gone
    await second_run.set(key, registration)
    logins = Logins("alice")
    with oauth_with(second_run, logins) as auth:
        assert auth.redirect_uri != first_redirect
        async with Client(server_url, auth=auth) as client:
            assert text_of(await client.call_tool("whoami", {})) == "alice"
    [login] = logins.urls
    assert httpx2.URL(login).params["client_id"] == registration["client_id"]
    assert await second_run.get(key) == registration


async def test_a_declined_login_is_an_authorization_error(server_url: str) -> None:
    with (
        oauth_with(InMemoryTokenStore(), Logins(deny=True)) as auth,
        pytest.raises(AuthorizationError) as caught,
    ):
        async with Client(server_url, auth=auth):
            pass
    assert caught.value.oauth_error == "access_denied"


async def test_a_revoked_token_is_refused_and_the_client_logs_in_again(
    auth_server: AuthServer, introspected_url: str
) -> None:
    store = InMemoryTokenStore()
    logins = Logins("alice")
    with oauth_with(store, logins) as auth:
        async with Client(introspected_url, auth=auth) as client:
            await client.call_tool("whoami", {})
    record = await store.get(f"oauth:tokens:{introspected_url}")
    assert record is not None
    revoked = record["access_token"]
    await auth_server.revoke({"client_id": record["client_id"]}, revoked)

    # The server refuses the revoked token outright ...
    async with httpx2.AsyncClient() as http:
        refused = await http.post(
            introspected_url,
            headers={**POST_HEADERS, "authorization": f"Bearer {revoked}"},
            json=initialize(),
        )
    assert refused.status_code == 401
    assert 'error="invalid_token"' in refused.headers["www-authenticate"]

    # ... and the client, whose refresh token died with it, sends the person to log in.
    with oauth_with(store, logins) as auth:
        async with Client(introspected_url, auth=auth) as client:
            assert text_of(await client.call_tool("whoami", {})) == "alice"
    assert len(logins.urls) == 2
    renewed = await store.get(f"oauth:tokens:{introspected_url}")
    assert renewed is not None
    assert renewed["access_token"] != revoked


async def test_a_token_for_another_audience_is_refused(
    auth_server: AuthServer, server_url: str
) -> None:
    elsewhere = await auth_server.mint(aud="http://127.0.0.1:1/mcp", scope="mcp")
    async with httpx2.AsyncClient() as http:
        refused = await http.post(
            server_url,
            headers={**POST_HEADERS, "authorization": f"Bearer {elsewhere}"},
            json=initialize(),
        )
    assert refused.status_code == 401
    assert 'error="invalid_token"' in refused.headers["www-authenticate"]

    transport = StreamableHTTPTransport(
        server_url, headers={"authorization": f"Bearer {elsewhere}"}
    )
    # A client sending it without OAuth is told at once why (not left to time out).
    with pytest.raises(
        AuthorizationError, match=r"HTTP 401 Unauthorized: the server requires authorization"
    ) as caught:
        async with Client(transport):
            pass
    assert caught.value.oauth_error == "invalid_token"

    # An OAuth client holding such a token (stored for this server) gets a right one.
    store = InMemoryTokenStore()
    await store.set(
        f"oauth:tokens:{server_url}",
        {
            "access_token": elsewhere,
            "token_type": "Bearer",
            "issuer": auth_server.issuer,
            "client_id": "someone-else",
        },
    )
    logins = Logins("alice")
    with oauth_with(store, logins) as auth:
        async with Client(server_url, auth=auth) as client:
            assert text_of(await client.call_tool("whoami", {})) == "alice"
    assert len(logins.urls) == 1


async def test_another_users_token_cannot_use_someone_elses_session(
    auth_server: AuthServer, server_url: str
) -> None:
    client = await auth_server.register()
    alice = (await auth_server.authorize(client, user="alice", resource=server_url))["access_token"]
    bob = (await auth_server.authorize(client, user="bob", resource=server_url))["access_token"]
    async with httpx2.AsyncClient() as http:
        opened = await http.post(
            server_url,
            headers={**POST_HEADERS, "authorization": f"Bearer {alice}"},
            json=initialize(),
        )
        assert opened.status_code == 200
        session = opened.headers["mcp-session-id"]
        in_session = {
            **POST_HEADERS,
            "mcp-session-id": session,
            "mcp-protocol-version": "2025-11-25",
        }
        initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        answered = await http.post(
            server_url, headers={**in_session, "authorization": f"Bearer {alice}"}, json=initialized
        )
        assert answered.status_code == 202
        call: dict[str, Any] = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "whoami", "arguments": {}},
        }
        hijack = await http.post(
            server_url, headers={**in_session, "authorization": f"Bearer {bob}"}, json=call
        )
        assert hijack.status_code == 404
        own = await http.post(
            server_url, headers={**in_session, "authorization": f"Bearer {alice}"}, json=call
        )
        assert own.status_code == 200
        assert "alice" in own.text


def initialize() -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "0"},
        },
    }


# -- the example -------------------------------------------------------------------------


def test_the_connect_protected_example(auth_server: AuthServer, tmp_path: Path) -> None:
    """examples/connect_protected.py as a person runs it, against examples/protected_server.py:
    a login the first time, none the next, a second one for the admin scope."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    argv = python_server(EXAMPLES / "protected_server.py", "--issuer", auth_server.issuer)
    env = {**os.environ, "BROWSER": str(browser_program(tmp_path)), "LOGIN_USER": "frank"}
    tokens = tmp_path / "private" / "tokens.json"

    def run(*extra: str) -> subprocess.CompletedProcess[str]:
        example = [sys.executable, str(EXAMPLES / "connect_protected.py"), url, "--tokens"]
        return subprocess.run(
            [*example, str(tokens), *extra],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    with serve_process([*argv, "--port", str(port)], port):
        first = run()
        second = run()
        admin = run("--admin")
    assert first.returncode == 0, first.stderr
    assert first.stdout.startswith("Opening the login page in your browser: http://127.0.0.1:")
    assert first.stdout.endswith('Noted for frank.\nMy notes: ["buy tea"]\n')
    assert (second.returncode, second.stdout) == (
        0,
        'Noted for frank.\nMy notes: ["buy tea", "buy tea"]\n',
    ), second.stderr
    assert admin.returncode == 0, admin.stderr
    [opened] = [line for line in admin.stdout.splitlines() if line.startswith("Opening")]
    step_up = httpx2.URL(opened.removeprefix("Opening the login page in your browser: "))
    assert "admin" in step_up.params["scope"].split()
    assert admin.stdout.endswith("Forgot the notes of 1 users.\n")
