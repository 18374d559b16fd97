"""The served 421 and 403 name what was received and the setting that allows it (what is
allowed already goes to the log, not to a client that may be anyone), as a web developer
meets them first: Starlette's ``TestClient`` (Host ``testserver``) on an
app that mounts the MCP server; and a mounted app whose lifespan was not handed to the
parent says how to hand it over."""

from __future__ import annotations

from typing import Any

from starlette.applications import Starlette
from starlette.routing import Mount
from starlette.testclient import TestClient

from answerback.server import MCPServer

POST_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


def mounted(*, lifespan: bool = True) -> Starlette:
    mcp_app = MCPServer("Mounted").http_app(path="/mcp")
    return Starlette(
        routes=[Mount("/api", app=mcp_app)],
        lifespan=mcp_app.app.router.lifespan_context if lifespan else None,
    )


def error_of(response: Any) -> str:
    return response.json()["error"]["message"]


def test_the_test_clients_host_is_named_with_the_setting_that_allows_it() -> None:
    with TestClient(mounted()) as client:
        response = client.post("/api/mcp", json=PING, headers=POST_HEADERS)
    assert response.status_code == 421
    message = error_of(response)
    assert "the Host 'testserver'" in message
    assert "host_policy=HostPolicy(allowed_hosts=[..., 'testserver'])" in message
    assert "localhost" not in message


def test_a_refused_origin_is_named_with_the_setting_that_allows_it() -> None:
    with TestClient(mounted(), base_url="http://127.0.0.1:8000") as client:
        headers = {**POST_HEADERS, "origin": "https://app.example"}
        response = client.post("/api/mcp", json=PING, headers=headers)
    assert response.status_code == 403
    assert "HostPolicy(allowed_origins=[..., 'https://app.example'])" in error_of(response)
    assert "localhost" not in error_of(response)


def test_a_forgotten_lifespan_is_answered_with_the_expression_to_pass() -> None:
    client = TestClient(mounted(lifespan=False), base_url="http://127.0.0.1:8000")
    response = client.post("/api/mcp", json=PING, headers=POST_HEADERS)
    assert response.status_code == 500
    assert "lifespan=mcp_app.app.router.lifespan_context" in error_of(response)
