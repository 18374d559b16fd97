"""Stop 56 (f2): the HTTP server's stop runs every step whatever one of them does."""

from __future__ import annotations

import json
import logging
from typing import Any, cast

import anyio
import httpx2
import pytest
from http_support import PATIENCE_SECONDS, raw_initialize, read_request_body, replaying, serve
from http_support.apps import http_app
from starlette.types import Receive, Scope, Send

from answerback import Client, MCPError
from answerback.server import MCPServer
from answerback.transports.http import InMemoryState
from answerback.transports.http._event_store import ReplaySink
from answerback.transports.http._state import StateFull
from answerback.types import ConnectionClosedError, TextContent
from answerback.types._errors import INTERNAL_ERROR

pytestmark = pytest.mark.anyio


class BrokenEventStore:
    """An event store of the deployment's that finds its storage full (every event
    unstored: an outage under way) and fails to forget a stream with an error of its
    own (a bug): the stop must still close every session and log the outage."""

    def __init__(self) -> None:
        self.forget_calls = 0

    async def store_event(self, stream_id: str, data: bytes) -> str:
        raise StateFull("the event storage is full")

    async def replay_events_after(self, last_event_id: str, send: ReplaySink) -> str | None:
        return None

    async def forget_stream(self, stream_id: str) -> None:
        self.forget_calls += 1
        raise RuntimeError("the event store broke while forgetting")


def leaves(error: BaseException) -> list[BaseException]:
    """The exceptions inside ``error``'s groups (a task group's, a thread's)."""
    if isinstance(error, BaseExceptionGroup):
        group = cast("BaseExceptionGroup[BaseException]", error)
        return [leaf for inner in group.exceptions for leaf in leaves(inner)]
    return [error]


def stop_failures(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.getMessage().startswith("stopping: closing session")]


@pytest.mark.parametrize("closed_by", ["lifespan", "close_sessions"])
async def test_a_session_failing_to_close_skips_no_other_step_of_the_stop(
    closed_by: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Two sessions, each failing to close: both are closed, each failure logged with
    its traceback, and the outage under way is still logged as the server stops. Under
    plain uvicorn the lifespan closes the sessions; under answerback's own server
    ``close_sessions`` does, before the lifespan, which must still run."""
    store = BrokenEventStore()
    app = http_app(state=InMemoryState(event_store=store))

    async def plain(scope: Scope, receive: Receive, send: Send) -> None:
        await app(scope, receive, send)

    served: Any = plain if closed_by == "lifespan" else app
    caplog.set_level(logging.DEBUG, logger="answerback.http")
    raised: list[BaseException] = []
    try:
        async with (
            serve(served) as running,
            httpx2.AsyncClient(timeout=PATIENCE_SECONDS) as http,
        ):
            for _ in range(2):
                await raw_initialize(http, running.url)
    except BaseException as exc:  # checked below: the first failure, raised once
        raised.extend(leaves(exc))
    # uvicorn logs a failed lifespan; close_sessions raises its first failure to its caller.
    expected = [] if closed_by == "lifespan" else ["the event store broke while forgetting"]
    assert [str(exc) for exc in raised] == expected
    assert store.forget_calls == 2
    failures = stop_failures(caplog)
    assert len(failures) == 2
    for failure in failures:
        assert failure.exc_info is not None
        assert "the event store broke" in str(failure.exc_info[1])
    assert any(
        r.getMessage().startswith("this server stops while the shared server state is still full")
        for r in caplog.records
    )


def failing_on(methods: set[str] | None, *, with_id: bool, inner: Any = None) -> Any:
    """An ASGI app answering the POSTs of ``methods`` (every POST: ``None``) with a 500,
    a JSON-RPC error carrying the request's id (``with_id``) or a plain text page; the
    others go to ``inner``, whose lifespan it runs."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            body = await read_request_body(receive)
            message = json.loads(body)
            if methods is None or message.get("method") in methods:
                if with_id:
                    error = {"code": -32603, "message": "Internal error: the database is down."}
                    page = json.dumps({"jsonrpc": "2.0", "id": message["id"], "error": error})
                    kind = b"application/json"
                else:
                    page, kind = "Internal Server Error", b"text/plain"
                headers = [(b"content-type", kind)]
                await send({"type": "http.response.start", "status": 500, "headers": headers})
                await send({"type": "http.response.body", "body": page.encode()})
                return
            receive = replaying(body, receive)
        if inner is None:
            assert scope["type"] == "lifespan", scope["type"]
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        await inner(scope, receive, send)

    return app


async def test_a_pinned_client_reports_a_5xx_error_with_the_request_id_as_the_servers() -> None:
    """A 500 whose JSON-RPC error carries ``server/discover``'s id is the server failing,
    not a statement that it speaks only the handshake: its words, marked with the status."""
    async with serve(failing_on(None, with_id=True)) as running:
        with pytest.raises(MCPError) as caught:
            async with Client(running.url, mode="2026-07-28"):
                pass
    assert caught.value.message == "Internal error: the database is down."
    assert caught.value.data == {"httpStatus": 500}


@pytest.mark.parametrize("with_id", [False, True], ids=["text", "jsonrpc"])
async def test_auto_connects_to_a_legacy_server_that_500s_on_unknown_methods(
    with_id: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """A server of the handshake era that answers ``server/discover`` with a 500: the
    handshake tried after it succeeds, and the log says why it was tried."""
    mcp = MCPServer("legacy only")

    @mcp.tool()
    def shout(text: str) -> str:
        """Say it louder."""
        return text.upper()

    legacy = failing_on({"server/discover"}, with_id=with_id, inner=mcp.http_app())
    caplog.set_level(logging.DEBUG, logger="answerback.client")
    async with serve(legacy) as running, Client(running.url) as client:
        result = await client.call_tool("shout", {"text": "hi"})
        assert client.session.negotiation.facts is not None
        assert client.session.negotiation.facts.protocol_version == "2025-11-25"
    assert result.content == [TextContent(type="text", text="HI")]
    [why] = [r for r in caplog.records if r.getMessage().startswith("server/discover failed")]
    assert "but initialize succeeded" in why.getMessage()


@pytest.mark.parametrize("with_id", [False, True], ids=["text", "jsonrpc"])
async def test_auto_against_a_server_that_500s_on_everything_quotes_both_failures(
    with_id: bool,
) -> None:
    async with serve(failing_on(None, with_id=with_id)) as running:
        with pytest.raises(MCPError) as caught:
            async with Client(running.url):
                pass
    message = caught.value.message
    discover, initialize = message.split(". The handshake tried next ('initialize') failed too: ")
    assert discover.startswith("The server failed on 'server/discover' (2026-07-28): ")
    words = "Internal error: the database is down" if with_id else "Internal Server Error"
    assert words in discover
    assert words in initialize
    assert "handshake era" not in message


def malformed_error_server(error: dict[str, Any], *, sse: bool) -> Any:
    """A 2026-07-28 server that answers ``server/discover`` and then every request with
    ``error`` (malformed) in a 200, as JSON or as an SSE event."""

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        message = json.loads(await read_request_body(receive))
        answer: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"], "error": error}
        if message["method"] == "server/discover":
            del answer["error"]
            answer["result"] = {
                "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "sloppy", "version": "1"},
                "resultType": "complete",
            }
        page = json.dumps(answer).encode()
        kind = b"text/event-stream" if sse else b"application/json"
        if sse:
            page = b"event: message\ndata: " + page + b"\n\n"
        headers = [(b"content-type", kind)]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": page})

    return app


@pytest.mark.parametrize("sse", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize(
    ("error", "wrong"),
    [
        ({"code": 1.5, "message": "x"}, "its code 1.5 is not an integer"),
        ({"code": -32603}, "no message"),
        ({"code": True, "message": "x"}, "its code True is not an integer"),
    ],
    ids=["float code", "no message", "boolean code"],
)
async def test_a_malformed_error_in_a_200_is_the_servers_malformed_answer(
    error: dict[str, Any], wrong: str, sse: bool
) -> None:
    """Not an HTTP failure ("HTTP 200 OK with a body that is not a JSON-RPC answer"):
    the server's answer, malformed, naming what is wrong, as over SSE or stdio."""
    async with (
        serve(malformed_error_server(error, sse=sse)) as running,
        Client(running.url, mode="2026-07-28") as client,
    ):
        with pytest.raises(MCPError) as caught:
            await client.list_tools()
    assert not isinstance(caught.value, ConnectionClosedError)
    assert caught.value.code == INTERNAL_ERROR
    assert caught.value.message.startswith(f"Malformed error response ({wrong}): ")
    assert "report it to its authors" in caught.value.message


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_client_closed_with_calls_under_way_logs_nothing_of_them(
    mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Calls given up as the client closes, some not yet sent: their POSTs stay open
    until the server answers (see ``cancelled_early``), and the client's DELETE ends the
    session meanwhile, so they meet a 404 whose failure had no reader left; that was
    logged as "sending request ... failed unexpectedly" and left a task's exception
    unretrieved."""
    mcp = MCPServer("waits")
    first: anyio.Event | None = None  # made where the server runs (its own loop on trio)

    @mcp.tool()
    async def wait() -> str:
        """Wait until cancelled."""
        assert first is not None
        first.set()
        await anyio.sleep_forever()
        return "never"

    async def made_there() -> anyio.Event:
        return anyio.Event()

    caplog.set_level(logging.DEBUG, logger="answerback")
    async with serve(http_app(mcp)) as running:
        first = there = await running.call(made_there)
        async with Client(running.url, mode=mode) as client, anyio.create_task_group() as tg:
            for _ in range(40):  # more than are sent at once
                tg.start_soon(client.call_tool, "wait")
            with anyio.fail_after(PATIENCE_SECONDS):
                await running.call(there.wait)
            tg.cancel_scope.cancel()
    loud = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert not [m for m in loud if "failed unexpectedly" in m or "dropped a response" in m]
