"""A 2026-07-28 retry carrying ``requestState`` is not sent again after a connection
reset once it was written whole: the server may have handled it (a round may act, and
single-use state refuses a second try as a replay nobody made). A TCP front resets the
connection after the server answered the first such retry, as a balancer can."""

from __future__ import annotations

import socket
import struct
import threading

import anyio
import pytest
from http_support import PATIENCE_SECONDS, serve
from http_support.apps import http_app
from pydantic import BaseModel
from test_http_client_cut_while_writing import CuttingFront

from answerback import Client
from answerback.client import ClientRequestContext
from answerback.server import AcceptedElicitation, Context, MCPServer
from answerback.types import ConnectionClosedError, ElicitRequestParams, ElicitResult

pytestmark = pytest.mark.anyio

STATE = b'"requestState"'


class Answer(BaseModel):
    name: str


class ResettingAfterTheAnswer(CuttingFront):
    """Passes every request on; the first one carrying ``requestState`` reaches the
    server, and once its answer starts back the client's connection is reset instead."""

    def __init__(self, upstream: int) -> None:
        super().__init__(upstream)
        self._holding = threading.Event()
        self._answered = threading.Event()

    def _requests(self, client: socket.socket, server: socket.socket) -> None:
        pending = bytearray()
        while True:
            while b"\r\n\r\n" not in pending:
                if not self._read(client, pending):
                    return
            end = pending.index(b"\r\n\r\n") + 4
            head = bytes(pending[:end])
            del pending[:end]
            length = next(
                (
                    int(line.split(b":")[1])
                    for line in head.lower().split(b"\r\n")
                    if line.startswith(b"content-length:")
                ),
                0,
            )
            while len(pending) < length:
                if not self._read(client, pending):
                    return
            body = bytes(pending[:length])
            del pending[:length]
            hold = STATE in body and not self._holding.is_set()
            if hold:
                self._holding.set()
            server.sendall(head + body)
            if hold:
                self._answered.wait(PATIENCE_SECONDS)
                # A TCP reset (RST), as a crashing balancer sends.
                client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                client.close()
                return

    def _pipe(  # pyright: ignore[reportIncompatibleMethodOverride] - called as self._pipe
        self, source: socket.socket, target: socket.socket
    ) -> None:
        try:
            while data := source.recv(64 * 1024):
                if self._holding.is_set() and not self._answered.is_set():
                    self._answered.set()  # the held retry's answer: never delivered
                    return
                target.sendall(data)
        except OSError:
            pass


def single_use_server() -> tuple[MCPServer, list[str]]:
    mcp = MCPServer("Once", single_use_state=True)
    completed: list[str] = []

    @mcp.prompt()
    async def greet(ctx: Context) -> str:
        answered = await ctx.elicit("Who?", Answer)
        assert isinstance(answered, AcceptedElicitation)
        completed.append("greet")
        return "hello"

    return mcp, completed


async def answer(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"name": "Ada"})


async def test_a_retry_answered_then_reset_is_not_sent_again() -> None:
    mcp, completed = single_use_server()
    async with serve(http_app(mcp)) as running:
        with ResettingAfterTheAnswer(running.port) as front:
            async with Client(front.url, mode="2026-07-28", elicitation_callback=answer) as c:
                with anyio.fail_after(PATIENCE_SECONDS):
                    with pytest.raises(ConnectionClosedError) as caught:
                        await c.get_prompt("greet")
                    again = await c.get_prompt("greet")  # the call, started afresh
    assert "Whether the request did its work is unknown" in caught.value.error.message
    assert "already used" not in caught.value.error.message
    assert again.messages
    assert completed == ["greet", "greet"]
