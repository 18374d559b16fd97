"""The CLI's error line shows the library's reason alone, taken from the error's data
(``WHY``), not found by stripping the library's wording from its message: what failed
("Connection failed:", "authorization failed:") is what the line already says ("cannot
talk to", "cannot log in to"), and the advice to a program that goes on ("Open a new
connection.") is for no command, which is leaving.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Generator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from http_support import free_port, serve
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from support import peer_pair

from answerback import Client
from answerback.cli._oneshot import failure
from answerback.cli._targets import Target, config_entry
from answerback.jsonrpc import Endpoint, Envelope, IncomingRequest, JSONObject
from answerback.jsonrpc._endpoint import WHY
from answerback.transports.http import StreamableHTTPTransport
from answerback.types import AuthorizationError, ConnectionClosedError

pytestmark = pytest.mark.anyio


async def connection_error(target: Any) -> ConnectionClosedError:
    """What connecting to ``target`` raised."""
    with pytest.raises(ConnectionClosedError) as caught:
        async with Client(target, mode="legacy"):
            pytest.fail("connected")
    return caught.value


async def test_a_connection_failure_shows_its_reason_alone() -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"
    exc = await connection_error(url)
    assert exc.message.startswith("Connection failed: nothing is listening")
    reason = (
        f"nothing is listening at {url} (connection refused); start the server, or check "
        "the host and port."
    )
    assert exc.data[WHY] == reason
    said = str(failure(Target(name="tea", url=url), exc))
    assert said == f"cannot talk to tea ({url}): {reason}"


async def refuse_unauthorized(request: Request) -> Response:
    """A protected server, to a client that brought no token."""
    challenge = 'Bearer error="invalid_token", error_description="no token"'
    return Response(status_code=401, headers={"www-authenticate": challenge})


async def test_a_servers_401_is_worded_for_the_command() -> None:
    """The library's reason advises a program (``auth=``); the command's line says what a
    user of the command can do, from the status and challenge the error's data keeps."""
    app = Starlette(routes=[Route("/mcp", refuse_unauthorized, methods=["POST"])])
    async with serve(app) as server:
        exc = await connection_error(server.url)
    assert isinstance(exc, AuthorizationError)
    assert exc.message.startswith("Connection failed: HTTP 401 Unauthorized: ")
    assert "connect with auth=" in exc.message
    challenge = 'Bearer error="invalid_token", error_description="no token"'
    assert (exc.data["httpStatus"], exc.data["challenge"]) == (401, challenge)
    said = str(failure(Target(name="tea", url=server.url), exc))
    assert said == (
        f"cannot log in to tea ({server.url}): it refused the command's authorization with "
        f"HTTP 401 (WWW-Authenticate: {challenge}): log in as someone it lets in "
        f"(answerback logout {server.url}, then run the command at a terminal), or give a "
        "token it accepts (--token or $ANSWERBACK_TOKEN)."
    )
    entry = {"url": server.url, "headers": {"Authorization": "Bearer old"}}
    configured = config_entry(Path("servers.json"), "tea", entry)
    said = str(failure(configured, exc))
    assert said == (
        f"cannot log in to tea ({server.url}): it refused the token given by the "
        "\"Authorization\" header of the server 'tea' in servers.json with HTTP 401 "
        f"(WWW-Authenticate: {challenge}): give a token it accepts, or none, for the "
        "command to log in through the browser."
    )
    assert "auth=" not in said


class DeclinedLogin(httpx2.Auth):
    """The login step of an ``OAuth``, failing as when the person declines it."""

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        raise AuthorizationError("The login was declined in the browser. Try again.")
        yield request  # an async generator, as httpx2 drives it

    def sync_auth_flow(
        self, request: httpx2.Request
    ) -> Generator[httpx2.Request, httpx2.Response, None]:
        raise NotImplementedError


async def test_a_failed_login_shows_its_reason_alone() -> None:
    url = f"http://127.0.0.1:{free_port()}/mcp"  # the login fails before any connection
    exc = await connection_error(StreamableHTTPTransport(url, auth=DeclinedLogin()))
    assert isinstance(exc, AuthorizationError)
    assert exc.message == (
        "Connection failed: authorization failed: The login was declined in the browser. Try again."
    )
    assert exc.data[WHY] == "The login was declined in the browser. Try again."
    said = str(failure(Target(name="tea", url=url), exc))
    assert said == f"cannot log in to tea ({url}): {exc.data[WHY]}"


async def test_a_request_on_a_closed_connection_shows_its_reason_alone() -> None:
    async def no_request(request: IncomingRequest) -> JSONObject:
        raise AssertionError(request.method)

    async def no_notification(method: str, params: JSONObject | None, _: Envelope) -> None:
        return None

    with peer_pair() as ((read_stream, write_stream), peer):
        async with Endpoint(
            read_stream, write_stream, on_request=no_request, on_notification=no_notification
        ) as endpoint:
            peer.write_stream.close()  # the peer hangs up
            with anyio.fail_after(30):
                await endpoint.closed.wait()
            with pytest.raises(ConnectionClosedError) as caught:
                await endpoint.request("tools/list")
    exc = caught.value
    assert exc.message.endswith(". Open a new connection.")
    target = Target(name="tea", command=["tea-server"])
    said = str(failure(target, exc))
    assert said == f"cannot talk to tea (tea-server): {exc.data[WHY]}"
    assert said.startswith("cannot talk to tea (tea-server): Cannot send 'tools/list': ")
    assert "Open a new connection" not in said
