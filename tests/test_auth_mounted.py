"""A protected MCP server mounted under a prefix in a bigger Starlette app.

RFC 9728 puts the protected resource metadata at the root of the origin plus the
resource's path, so the mounted app's own copy (under the prefix) is where no client
looks: the parent serves ``resource_server.routes``, and a parent that does not is
named in a warning at the first request. End to end: a real authorization server, the
parent app under uvicorn, and the answerback client logging in through the 401.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Generator
from contextlib import contextmanager
from typing import Any

import httpx2
import pytest
import uvicorn
from login_support import opens_as, protected_mcp, serving_in_a_thread
from oauth_fixtures import AuthServer, running_auth_server
from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.testclient import TestClient

from answerback import Client
from answerback.client import InMemoryTokenStore, OAuth
from answerback.interact import BrowserLogin
from answerback.server import JWTVerifier, ResourceServer
from answerback.types import TextContent

PREFIX = "/api/v1"
POST_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


@pytest.fixture(scope="module")
def auth_server() -> Generator[AuthServer]:
    with running_auth_server(default_user="alice") as server:
        yield server


def parent_app(resource_server: ResourceServer, *, serve_metadata: bool) -> Starlette:
    """The web app: the protected MCP app at ``PREFIX`` + ``/mcp``, and (as the docs say)
    the resource server's routes at the root when ``serve_metadata``."""
    mcp_app = protected_mcp().http_app(path="/mcp", auth=resource_server)
    routes = [*resource_server.routes] if serve_metadata else []
    return Starlette(
        routes=[*routes, Mount(PREFIX, app=mcp_app)],
        lifespan=mcp_app.app.router.lifespan_context,
    )


@contextmanager
def serving_mounted(auth_server: AuthServer) -> Generator[str]:
    """The parent app under uvicorn, in a thread with an asyncio loop of its own; the MCP
    endpoint's URL (the socket is bound first: the URL is the token's audience)."""
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{listening.getsockname()[1]}{PREFIX}/mcp"
    verifier = JWTVerifier(jwks_url=auth_server.jwks_url, issuer=auth_server.issuer, audience=url)
    resource_server = ResourceServer(url, [auth_server.issuer], verifier, scopes=["mcp"])
    config = uvicorn.Config(
        parent_app(resource_server, serve_metadata=True),
        log_level="warning",
        lifespan="on",
        timeout_graceful_shutdown=3,
    )
    server = uvicorn.Server(config)
    started = threading.Event()
    startup = server.startup

    async def startup_then_report(sockets: Any = None) -> None:
        await startup(sockets=sockets)
        started.set()

    server.startup = startup_then_report  # type: ignore[method-assign]
    with serving_in_a_thread(server, listening, started, "the mounted app"):
        yield url


@pytest.mark.anyio
async def test_a_client_logs_in_to_a_server_mounted_under_a_prefix(
    auth_server: AuthServer,
) -> None:
    with (
        serving_mounted(auth_server) as url,
        BrowserLogin(open_browser=opens_as("alice"), tell=lambda text: None) as login,
    ):
        auth = OAuth(redirect_uri=login.redirect_uri, authorize=login, store=InMemoryTokenStore())
        async with Client(url, auth=auth) as client:
            [block] = (await client.call_tool("whoami", {})).content
        async with httpx2.AsyncClient() as http:
            challenge = (await http.post(url, json=PING, headers=POST_HEADERS)).headers
    assert isinstance(block, TextContent)
    assert block.text == "alice"
    origin = url.removesuffix(f"{PREFIX}/mcp")
    metadata_url = f"{origin}/.well-known/oauth-protected-resource{PREFIX}/mcp"
    assert f'resource_metadata="{metadata_url}"' in challenge["www-authenticate"]


def first_refusal(app: Starlette, caplog: pytest.LogCaptureFixture) -> list[str]:
    """The warnings the resource server logs over two unauthenticated requests (the
    lifespan is not needed: the token is checked first)."""
    with caplog.at_level(logging.WARNING, logger="answerback.server.auth"):
        client = TestClient(app, base_url="http://127.0.0.1:8000")
        for _ in range(2):
            response = client.post(f"{PREFIX}/mcp", json=PING, headers=POST_HEADERS)
            assert response.status_code == 401
    return [r.getMessage() for r in caplog.records if r.name == "answerback.server.auth"]


def resource_server_at(path: str) -> ResourceServer:
    return ResourceServer(
        f"http://127.0.0.1:8000{path}",
        ["http://127.0.0.1:9"],
        JWTVerifier(issuer="http://127.0.0.1:9"),  # never asked: no token is sent
    )


def test_a_parent_that_does_not_serve_the_metadata_is_named_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    resource_server = resource_server_at(f"{PREFIX}/mcp")
    [warning] = first_refusal(parent_app(resource_server, serve_metadata=False), caplog)
    assert f"mounted under '{PREFIX}'" in warning
    assert f"http://127.0.0.1:8000/.well-known/oauth-protected-resource{PREFIX}/mcp" in warning
    assert "*resource_server.routes" in warning


def test_a_parent_serving_the_metadata_hears_nothing(caplog: pytest.LogCaptureFixture) -> None:
    resource_server = resource_server_at(f"{PREFIX}/mcp")
    app = parent_app(resource_server, serve_metadata=True)
    assert first_refusal(app, caplog) == []
    metadata = TestClient(app).get(f"/.well-known/oauth-protected-resource{PREFIX}/mcp")
    assert metadata.json()["resource"] == resource_server.resource


def test_an_app_at_the_root_of_its_origin_hears_nothing(caplog: pytest.LogCaptureFixture) -> None:
    resource_server = resource_server_at("/mcp")
    app = protected_mcp().http_app(path="/mcp", auth=resource_server)
    with caplog.at_level(logging.WARNING, logger="answerback.server.auth"):
        response = TestClient(app, base_url="http://127.0.0.1:8000").post(
            "/mcp", json=PING, headers=POST_HEADERS
        )
    assert response.status_code == 401
    assert [r for r in caplog.records if r.name == "answerback.server.auth"] == []
