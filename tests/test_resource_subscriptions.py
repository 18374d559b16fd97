"""Resource subscriptions. Handshake era: a connection keeps what it subscribed to for as
long as it lives, so only URIs a resource serves are kept, each of a bounded length and
only so many, and a refusal says which limit was hit and what to do. 2026-07-28: a
``listen()`` stream the host does not read keeps only its newest notifications."""

from __future__ import annotations

import anyio
import pytest

from answerback import Client, MCPError
from answerback.client import _session as session_module
from answerback.server import MCPServer
from answerback.server import _connection as connection_module
from answerback.types import EmptyResult, ResourceUpdatedNotification, ServerNotification

pytestmark = pytest.mark.anyio

NOT_FOUND = -32002
INVALID_PARAMS = -32602


def library() -> MCPServer:
    mcp = MCPServer("Library")

    @mcp.resource("library://news")
    def news() -> str:
        return "The library opens at 9."

    @mcp.resource("library://books/{isbn}")
    def book(isbn: str) -> str:
        return f"Book {isbn}"

    return mcp


def subscriptions(mcp: MCPServer) -> set[str]:
    """What the server's only connection keeps."""
    (connection,) = mcp._connections  # pyright: ignore[reportPrivateUsage]
    return connection.subscriptions


class Updates:
    """The ``resources/updated`` notifications a client receives, in order."""

    def __init__(self) -> None:
        self.uris: list[str] = []
        self.arrived = anyio.Event()

    async def __call__(self, message: ServerNotification | Exception) -> None:
        if isinstance(message, Exception):
            raise message
        if isinstance(message, ResourceUpdatedNotification):
            self.uris.append(message.params.uri)
            self.arrived.set()


async def test_a_served_or_template_matched_uri_is_kept_and_notified() -> None:
    mcp = library()
    updates = Updates()
    async with Client(mcp, mode="legacy", message_handler=updates) as client:
        await client.subscribe_resource("library://books/978-0")
        await client.subscribe_resource("library://news")
        await client.subscribe_resource("library://news")  # again: still one
        assert subscriptions(mcp) == {"library://news", "library://books/978-0"}
        await mcp.notify_resource_updated("library://books/978-0")
        await updates.arrived.wait()
        assert updates.uris == ["library://books/978-0"]
        await client.unsubscribe_resource("library://books/978-0")
        assert subscriptions(mcp) == {"library://news"}


async def test_a_uri_no_resource_serves_is_refused_and_not_kept() -> None:
    mcp = library()
    async with Client(mcp, mode="legacy") as client:
        with pytest.raises(MCPError) as raised:
            await client.subscribe_resource("library://nowhere")
        assert raised.value.code == NOT_FOUND
        assert "library://nowhere" in raised.value.message
        assert raised.value.data == {"uri": "library://nowhere"}
        assert subscriptions(mcp) == set()


async def test_a_server_without_resources_keeps_no_subscription() -> None:
    """Sent as it is: answerback's client would not ask a server that declares no
    resource subscriptions (tests/test_undeclared_server_capabilities.py)."""
    mcp = MCPServer("No resources")
    async with Client(mcp, mode="legacy") as client:
        with pytest.raises(MCPError) as raised:
            await client.session.send_request(
                "resources/subscribe", {"uri": "file:///etc/passwd"}, EmptyResult
            )
        assert raised.value.code == NOT_FOUND
        assert subscriptions(mcp) == set()


async def test_an_overlong_uri_is_refused_naming_the_limit() -> None:
    mcp = library()
    uri = "library://books/" + "9" * connection_module.SUBSCRIBED_URI_CHARS
    async with Client(mcp, mode="legacy") as client:
        with pytest.raises(MCPError) as raised:
            await client.subscribe_resource(uri)
        assert raised.value.code == INVALID_PARAMS
        assert str(connection_module.SUBSCRIBED_URI_CHARS) in raised.value.message
        assert subscriptions(mcp) == set()
        await client.subscribe_resource("library://news")  # the connection still works


async def test_subscriptions_stop_at_the_bound_until_one_is_dropped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(connection_module, "SUBSCRIPTIONS_KEPT", 3)
    mcp = library()
    async with Client(mcp, mode="legacy") as client:
        for isbn in ("1", "2", "3"):
            await client.subscribe_resource(f"library://books/{isbn}")
        await client.subscribe_resource("library://books/3")  # already kept: no refusal
        with pytest.raises(MCPError) as raised:
            await client.subscribe_resource("library://books/4")
        assert raised.value.code == INVALID_PARAMS
        assert "unsubscribe" in raised.value.message
        assert len(subscriptions(mcp)) == 3
        await client.unsubscribe_resource("library://books/1")
        await client.subscribe_resource("library://books/4")
        assert subscriptions(mcp) == {f"library://books/{isbn}" for isbn in ("2", "3", "4")}


async def test_a_listen_stream_nobody_reads_keeps_the_newest_and_the_connection_answers(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """2026-07-28: a host holding a ``listen()`` stream open without reading it keeps
    its newest notifications (each says that something changed), drops the oldest with
    one warning, and its connection goes on answering."""
    monkeypatch.setattr(session_module, "LISTEN_NOTIFICATIONS_KEPT", 4)
    mcp = library()
    async with (
        Client(mcp, mode="2026-07-28") as client,
        client.listen(resource_subscriptions=["library://news"]) as updates,
    ):
        for _ in range(10):
            await mcp.notify_resource_updated("library://news")
        # Answered after the ten were handed over: the same connection, in order.
        assert (await client.read_resource("library://news")).contents
        kept = 0
        while True:
            try:
                update = updates.receive_nowait()
            except anyio.WouldBlock:
                break
            assert isinstance(update, ResourceUpdatedNotification)
            kept += 1
    assert kept == 4
    dropping = [r for r in caplog.records if "nobody has taken" in r.getMessage()]
    assert len(dropping) == 1
