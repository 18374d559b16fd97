"""The HTTP client's answers to the server's questions are never silently lost: one
dropped from a full line ends the call it belongs to, saying why; one that meets a
proxy's 502/503/504 or a dropped connection is sent again, and the server's "already
answered" refusal of the repeat means the first one arrived.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from http_support import PATIENCE_SECONDS, read_request_body, replaying, serve
from http_support.apps import Answer, http_app
from starlette.applications import Starlette

from answerback import Client
from answerback.client import ClientRequestContext
from answerback.server import Context, MCPServer
from answerback.transports.http import StreamableHTTPApp
from answerback.transports.http import _client as client_module
from answerback.types import (
    ConnectionClosedError,
    ElicitRequestParams,
    ElicitResult,
    TextContent,
)

pytestmark = pytest.mark.anyio


async def answer_upper(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"value": params.message.upper()})


async def respond(send: Any, status: int, body: bytes = b"", **headers: str) -> None:
    raw = [(name.replace("_", "-").encode(), value.encode()) for name, value in headers.items()]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


async def swallow(message: Any) -> None:
    """An ASGI ``send`` whose response never reaches the client (a proxy lost it)."""


def is_answer(message: dict[str, Any]) -> bool:
    return "method" not in message and "result" in message


async def test_an_answer_dropped_from_a_full_line_ends_its_call_saying_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A server asks faster than it takes the answers, and the line of answers waiting
    to be POSTed is full: the newest are dropped. The call a dropped answer belonged to
    waited for ever (its question is never answered); now it fails, saying so. (Both
    limits at 0: every answer is dropped, rather than 4,096 waiting first.)"""
    monkeypatch.setattr(client_module, "_POSTED_AT_ONCE", 0)
    monkeypatch.setattr(client_module, "_WAITING_TO_POST", 0)
    app = http_app()
    async with (
        serve(app) as running,
        Client(running.url, mode="legacy", elicitation_callback=answer_upper) as client,
    ):
        with anyio.fail_after(PATIENCE_SECONDS):
            with pytest.raises(ConnectionClosedError) as caught:
                await client.call_tool("echo_elicit", {"tag": "dropped"})
        await running.call(app.close_sessions)
    said = caught.value.error.message
    assert (
        "was dropped: 0 answers and notifications already waited to be POSTed (the most kept)"
        in said
    )
    assert "the server asked faster than the answers' POSTs went through" in said
    assert "this call was waiting on it, so it cannot complete" in said


class FailsAnswers:
    """Wraps an app: the first ``count`` answer POSTs meet a proxy's ``status`` page,
    ``after`` the app took them (the proxy lost the response) or before (the app never
    saw them); answer POSTs after those get ``then`` (a status) if given, else go on to
    the app, refused as the scaled-out server refuses a second answer (``owner_stopped``:
    as it refuses one whose asking replica stopped). Every answer POST is counted.

    With ``after``, the call's result is held until the answer was POSTed again, as a
    slower path to the client would: else the result, which the first answer already
    brought about, could end the call before the client even read the 502."""

    def __init__(
        self,
        app: Any,
        status: int,
        *,
        after: bool,
        count: int = 1,
        then: int | None = None,
        owner_stopped: bool = False,
    ) -> None:
        self.app, self.status, self.after, self.count, self.then = app, status, after, count, then
        self.owner_stopped = owner_stopped
        self.answers = 0
        self.sent_again: anyio.Event | None = None
        """Set once the answer was POSTed again (made on the server's loop)."""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        if self.sent_again is None:
            self.sent_again = anyio.Event()
        sent_again = self.sent_again
        body = await read_request_body(receive)
        message = json.loads(body)
        if not is_answer(message):
            if not self.after or message.get("method") != "tools/call":
                await self.app(scope, replaying(body, receive), send)
                return

            async def held(message: Any) -> None:
                if b'"result"' in message.get("body", b""):
                    await sent_again.wait()
                await send(message)

            await self.app(scope, replaying(body, receive), held)
            return
        self.answers += 1
        if self.answers > self.count:
            sent_again.set()
            if self.then is None:
                await self.app(scope, replaying(body, receive), send)
            else:
                why, data = (
                    ("the server process that asked it has stopped", None)
                    if self.owner_stopped
                    else ("it was already answered", {"reason": "already_answered"})
                )
                said = (
                    f"Conflict: the response to request 'q1' was refused: {why}. A request "
                    "takes one answer, while its call is open."
                )
                error: dict[str, Any] = {"code": -32600, "message": said}
                if data is not None:
                    error["data"] = data
                body = json.dumps({"jsonrpc": "2.0", "id": None, "error": error}).encode()
                await respond(send, self.then, body)
            return
        if self.after:
            await self.app(scope, replaying(body, receive), swallow)
        page = f"<html><h1>{self.status}</h1></html>".encode()
        await respond(send, self.status, page, content_type="text/html")


@pytest.mark.parametrize("status", [502, 503, 504])
@pytest.mark.parametrize("after", [False, True], ids=["before-the-server", "after-the-server"])
async def test_an_answer_that_meets_a_proxys_error_page_is_sent_again(
    status: int, after: bool
) -> None:
    """A proxy's 502/503/504 (a replica restarting) lost the answer, and the call it
    belonged to with it. The answer is sent again: if the server never saw it, the
    repeat completes the call; if it had (the proxy lost only its response), the
    server drops the repeat, and the call completes all the same."""
    app = http_app()
    wrapper = FailsAnswers(app, status, after=after)
    async with (
        serve(wrapper) as running,
        Client(running.url, mode="legacy", elicitation_callback=answer_upper) as client,
    ):
        with anyio.fail_after(PATIENCE_SECONDS):
            result = await client.call_tool("echo_elicit", {"tag": "kept"})
        await running.call(app.close_sessions)
    assert result.content == [TextContent(text="kept:TAG=KEPT")]
    assert wrapper.answers == 2  # the repeat of one the server took is dropped there


async def test_already_answered_after_a_lost_response_is_success() -> None:
    """Scaled out, the server refuses a second answer to one question with 409. After a
    502 that may have hidden the first answer's arrival, that refusal says the first
    one arrived: the call goes on (it used to fail, as for a refused answer)."""
    app = http_app()
    wrapper = FailsAnswers(app, 502, after=True, then=409)
    async with (
        serve(wrapper) as running,
        Client(running.url, mode="legacy", elicitation_callback=answer_upper) as client,
    ):
        with anyio.fail_after(PATIENCE_SECONDS):
            result = await client.call_tool("echo_elicit", {"tag": "once"})
        await running.call(app.close_sessions)
    assert result.content == [TextContent(text="once:TAG=ONCE")]
    assert wrapper.answers == 2


async def test_a_stopped_asker_after_a_lost_response_ends_the_call() -> None:
    """A 409 saying the replica that asked has stopped is no proof that the first try
    arrived, whatever came before it: the call fails with the server's reason."""
    app = http_app()
    wrapper = FailsAnswers(app, 502, after=False, then=409, owner_stopped=True)
    async with (
        serve(wrapper) as running,
        Client(running.url, mode="legacy", elicitation_callback=answer_upper) as client,
    ):
        with anyio.fail_after(PATIENCE_SECONDS):
            with pytest.raises(ConnectionClosedError, match="that asked it has stopped"):
                await client.call_tool("echo_elicit", {"tag": "orphaned"})
        await running.call(app.close_sessions)


async def test_a_conflict_after_a_503_still_ends_the_call() -> None:
    """A 503 says the request was not handled, so a 409 to the repeat is a real
    refusal (the answer never arrived): the call fails with the server's reason."""
    app = http_app()
    wrapper = FailsAnswers(app, 503, after=False, then=409)
    async with (
        serve(wrapper) as running,
        Client(running.url, mode="legacy", elicitation_callback=answer_upper) as client,
    ):
        with anyio.fail_after(PATIENCE_SECONDS):
            with pytest.raises(ConnectionClosedError, match="it was already answered"):
                await client.call_tool("echo_elicit", {"tag": "refused"})
        await running.call(app.close_sessions)


async def test_an_answer_is_sent_again_a_bounded_number_of_times() -> None:
    """A proxy that fails every answer POST: after the last try the call fails with
    the proxy's status, rather than the answer being sent for ever."""
    app = http_app()
    attempts = client_module._DELIVERY_ATTEMPTS  # pyright: ignore[reportPrivateUsage]
    wrapper = FailsAnswers(app, 502, after=False, count=attempts)
    async with (
        serve(wrapper) as running,
        Client(running.url, mode="legacy", elicitation_callback=answer_upper) as client,
    ):
        with anyio.fail_after(PATIENCE_SECONDS):
            with pytest.raises(ConnectionClosedError, match="HTTP 502 Bad Gateway"):
                await client.call_tool("echo_elicit", {"tag": "lost"})
        await running.call(app.close_sessions)
    assert wrapper.answers == attempts


def answers_to_another_process(asking: StreamableHTTPApp, other: StreamableHTTPApp) -> Any:
    """Two server processes without shared state behind a balancer, as ``uvicorn
    --workers 2`` is: the answer's POST, on a connection of its own, reaches the process
    that did not ask (``other``); every other request reaches ``asking``."""

    @asynccontextmanager
    async def both_running(app: Starlette) -> AsyncGenerator[None, None]:
        async with asking.app.router.lifespan_context(app), other.app.router.lifespan_context(app):
            yield

    lifespans = Starlette(lifespan=both_running)

    async def route(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            await lifespans(scope, receive, send)
        elif scope["method"] != "POST":
            await asking(scope, receive, send)
        else:
            body = await read_request_body(receive)
            target = other if is_answer(json.loads(body)) else asking
            await target(scope, replaying(body, receive), send)

    return route


async def test_an_answer_another_process_refuses_ends_its_call_naming_the_cause() -> None:
    """The answer meets 404 (session not found) from a process that does not share
    sessions, while the call's stream is still open in the process that asked: nothing
    would ever end that call. It fails, naming both causes (the session ended, or another
    process) and the cures, and is cancelled on the server."""
    cancelled: list[anyio.Event] = []
    mcp = MCPServer("asks")

    @mcp.tool()
    async def ask(ctx: Context) -> str:
        ended = anyio.Event()
        cancelled.append(ended)
        try:
            await ctx.elicit("anything?", schema=Answer)
        except anyio.get_cancelled_exc_class():
            ended.set()
            raise
        return "answered"

    asking, other = http_app(mcp), http_app(mcp)
    async with (
        serve(answers_to_another_process(asking, other)) as running,
        Client(running.url, mode="legacy", elicitation_callback=answer_upper) as client,
    ):
        with anyio.fail_after(PATIENCE_SECONDS):
            with pytest.raises(ConnectionClosedError) as caught:
                await client.call_tool("ask", {})
            await running.call(cancelled[0].wait)
        await running.call(asking.close_sessions)
    said = caught.value.error.message
    assert "did not know the session (HTTP 404)" in said
    assert "the server ended the session, or (most likely, if the call is still" in said
    assert "another server process than the one running the call" in said
    assert "sticky sessions" in said
    assert "RedisState" in said
    assert "this call was waiting on it, so it cannot complete" in said
