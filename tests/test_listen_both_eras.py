"""``Client.listen()`` in both eras: one loop in a host receives list changes and
resource updates whichever era the connection speaks. On 2026-07-28 they come on a
``subscriptions/listen`` stream; a legacy server sends them unasked, and the stream
takes them from the session, and the client subscribes the URIs asked for."""

from __future__ import annotations

import logging
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from http_support import (
    PATIENCE_SECONDS,
    Listening,
    forget_session,
    read_request_body,
    replaying,
    serve,
)
from http_support.apps import http_app

from answerback import Client, StdioServer
from answerback.client import ListenStream
from answerback.client import _client as client_module
from answerback.server import MCPServer
from answerback.types import (
    ConnectionClosedError,
    MCPError,
    PromptListChangedNotification,
    ResourceUpdatedNotification,
    ServerNotification,
    ToolListChangedNotification,
)

pytestmark = pytest.mark.anyio

ERAS = ["legacy", "2026-07-28"]
NEWS = "library://news"
DYING_SERVER = Path(__file__).parent / "servers" / "listen_then_exit_server.py"


def library() -> MCPServer:
    mcp = MCPServer("Library")

    @mcp.resource(NEWS)
    def news() -> str:
        return "The library opens at 9."

    @mcp.resource("library://hours")
    def hours() -> str:
        return "9 to 5"

    @mcp.tool()
    def echo(text: str) -> str:
        return text

    @mcp.prompt()
    def greet(name: str) -> str:
        return f"Greet {name}."

    return mcp


def pending(stream: ListenStream) -> list[ServerNotification]:
    """Every notification the stream holds now, without waiting."""
    held: list[ServerNotification] = []
    while True:
        try:
            held.append(stream.receive_nowait())
        except anyio.WouldBlock:
            return held


@pytest.mark.parametrize("mode", ERAS)
async def test_one_listen_loop_hears_list_changes_and_updates_in_either_era(mode: str) -> None:
    mcp = library()
    seen_by_handler: list[str] = []

    async def handler(message: Any) -> None:
        if not isinstance(message, Exception):
            seen_by_handler.append(message.method)

    async with (
        Client(mcp, mode=mode, message_handler=handler) as client,
        client.listen(tools_list_changed=True, resource_subscriptions=[NEWS]) as stream,
    ):
        assert stream.honoured.tools_list_changed
        assert stream.honoured.resource_subscriptions == [NEWS]
        await mcp.notify_tools_changed()
        await mcp.notify_resource_updated(NEWS)
        with anyio.fail_after(PATIENCE_SECONDS):
            first = await stream.receive()
            second = await stream.receive()
    assert isinstance(first, ToolListChangedNotification)
    assert isinstance(second, ResourceUpdatedNotification)
    assert second.params.uri == NEWS
    if mode == "legacy":  # the session's own notifications still reach the handler
        assert "notifications/tools/list_changed" in seen_by_handler


@pytest.mark.parametrize("mode", ERAS)
async def test_listeners_at_once_each_get_only_what_they_asked_for(mode: str) -> None:
    mcp = library()
    async with (
        Client(mcp, mode=mode) as client,
        client.listen(tools_list_changed=True) as tools,
        client.listen(tools_list_changed=True, prompts_list_changed=True) as both,
        client.listen(prompts_list_changed=True) as prompts,
    ):
        await mcp.notify_tools_changed()
        await mcp.notify_resources_changed()  # asked for by nobody
        await mcp.notify_prompts_changed()
        with anyio.fail_after(PATIENCE_SECONDS):
            assert isinstance(await tools.receive(), ToolListChangedNotification)
            assert isinstance(await both.receive(), ToolListChangedNotification)
            assert isinstance(await both.receive(), PromptListChangedNotification)
            assert isinstance(await prompts.receive(), PromptListChangedNotification)
        await client.call_tool("echo", {"text": "after"})  # everything sent has arrived
        assert pending(tools) == pending(both) == pending(prompts) == []


async def test_a_legacy_listen_passes_over_updates_of_uris_it_did_not_ask_for() -> None:
    mcp = library()
    async with Client(mcp, mode="legacy") as client:
        await client.subscribe_resource(NEWS)
        await client.subscribe_resource("library://hours")
        async with client.listen(resource_subscriptions=[NEWS]) as stream:
            await mcp.notify_resource_updated("library://hours")
            await mcp.notify_resource_updated(NEWS)
            with anyio.fail_after(PATIENCE_SECONDS):
                update = await stream.receive()
    assert isinstance(update, ResourceUpdatedNotification)
    assert update.params.uri == NEWS


@pytest.mark.parametrize("mode", ERAS)
async def test_a_cancelled_listen_ends_and_the_next_one_hears(mode: str) -> None:
    mcp = library()
    async with Client(mcp, mode=mode) as client:
        opened = anyio.Event()

        async def listen_for_ever() -> None:
            async with client.listen(tools_list_changed=True) as stream:
                opened.set()
                async for _ in stream:
                    pass

        with anyio.fail_after(PATIENCE_SECONDS):
            async with anyio.create_task_group() as tg:
                tg.start_soon(listen_for_ever)
                await opened.wait()
                tg.cancel_scope.cancel()
            async with client.listen(tools_list_changed=True) as stream:
                await mcp.notify_tools_changed()
                assert isinstance(await stream.receive(), ToolListChangedNotification)
        assert (await client.call_tool("echo", {"text": "still here"})).is_error is False


@pytest.mark.parametrize("mode", ERAS)
async def test_a_listen_ends_with_the_connection_in_either_era(mode: str) -> None:
    """The server process exits while the host listens: the block raises
    ``ConnectionClosedError`` in both eras, rather than waiting for ever."""
    server = StdioServer(sys.executable, args=[str(DYING_SERVER)])

    async def end_the_server(client: Client) -> None:
        with pytest.raises(ConnectionClosedError):
            await client.call_tool("exit")

    async def listen_while_it_ends() -> None:
        async with (
            Client(server, mode=mode) as client,
            client.listen(tools_list_changed=True) as stream,
            anyio.create_task_group() as tg,
        ):
            tg.start_soon(end_the_server, client)
            async for _ in stream:
                pass

    with anyio.fail_after(PATIENCE_SECONDS), pytest.raises(ConnectionClosedError):
        await listen_while_it_ends()


@pytest.mark.parametrize("mode", ERAS)
async def test_listen_over_http_in_either_era(mode: str) -> None:
    mcp = library()
    async with (
        serve(http_app(mcp)) as running,
        Client(running.url, mode=mode) as client,
        client.listen(tools_list_changed=True, resource_subscriptions=[NEWS]) as stream,
    ):
        await running.call(mcp.notify_tools_changed)
        await running.call(lambda: mcp.notify_resource_updated(NEWS))
        with anyio.fail_after(PATIENCE_SECONDS):
            first = await stream.receive()
            second = await stream.receive()
    assert isinstance(first, ToolListChangedNotification)
    assert isinstance(second, ResourceUpdatedNotification)
    assert second.params.uri == NEWS


class Updates:
    """A ``message_handler`` that keeps the URIs of the resource updates it receives."""

    def __init__(self) -> None:
        self.uris: list[str] = []

    async def __call__(self, message: Any) -> None:
        if isinstance(message, ResourceUpdatedNotification):
            self.uris.append(message.params.uri)


async def test_leaving_a_legacy_listen_unsubscribes_what_it_subscribed() -> None:
    """The legacy server sends updates only to a subscribed session: the listen
    subscribed ``NEWS`` for its block, so after the block the server sends none."""
    mcp = library()
    updates = Updates()
    async with Client(mcp, mode="legacy", message_handler=updates) as client:
        async with client.listen(resource_subscriptions=[NEWS]) as stream:
            await mcp.notify_resource_updated(NEWS)
            with anyio.fail_after(PATIENCE_SECONDS):
                assert isinstance(await stream.receive(), ResourceUpdatedNotification)
        await mcp.notify_resource_updated(NEWS)
        await client.call_tool("echo", {"text": "after"})  # everything sent has arrived
    assert updates.uris == [NEWS]


async def test_a_hosts_own_subscription_outlives_a_legacy_listen_of_the_same_uri() -> None:
    mcp = library()
    updates = Updates()
    async with Client(mcp, mode="legacy", message_handler=updates) as client:
        await client.subscribe_resource(NEWS)
        async with client.listen(resource_subscriptions=[NEWS]):
            pass
        await mcp.notify_resource_updated(NEWS)
        await client.call_tool("echo", {"text": "after"})
    assert updates.uris == [NEWS]


async def test_a_uri_stays_subscribed_while_another_legacy_listen_follows_it() -> None:
    mcp = library()
    async with (
        Client(mcp, mode="legacy") as client,
        client.listen(resource_subscriptions=[NEWS]) as staying,
    ):
        async with client.listen(resource_subscriptions=[NEWS, "library://hours"]):
            pass
        await mcp.notify_resource_updated(NEWS)
        await client.call_tool("echo", {"text": "after"})
        (update,) = pending(staying)
    assert isinstance(update, ResourceUpdatedNotification)
    assert update.params.uri == NEWS


async def test_a_refused_legacy_subscription_raises_before_the_block() -> None:
    """No resource serves ``films://dune``: the legacy server refuses its
    ``resources/subscribe``, which raises before the block runs, and the URI asked for
    with it is unsubscribed again."""
    mcp = library()
    updates = Updates()
    async with Client(mcp, mode="legacy", message_handler=updates) as client:
        with pytest.raises(MCPError) as raised:
            async with client.listen(resource_subscriptions=[NEWS, "films://dune"]):
                pytest.fail("the block ran")
        await mcp.notify_resource_updated(NEWS)
        await client.call_tool("echo", {"text": "after"})
    assert "films://dune" in str(raised.value)
    assert updates.uris == []


async def test_a_legacy_listen_hears_updates_again_after_the_session_is_set_up_again() -> None:
    """The HTTP server forgets the session while the host listens: the client sets up a
    new session, which had no subscription, so the listen heard no update again. Now the
    client subscribes the new session to what the old one held."""
    mcp = library()
    async with serve(http_app(mcp, retry_ms=100)) as running:
        transport = Listening(running.url)
        async with (
            transport.starts,
            transport.started,
            Client(transport, mode="legacy") as client,
            client.listen(resource_subscriptions=[NEWS]) as stream,
        ):
            with anyio.fail_after(PATIENCE_SECONDS):
                first = await transport.started.receive()
                assert first is not None
                await running.call(lambda: mcp.notify_resource_updated(NEWS))
                assert isinstance(await stream.receive(), ResourceUpdatedNotification)
                await forget_session(running.url, first)
                second = await transport.started.receive()
                await client.ping()  # waits for the session's setting up to finish
                await running.call(lambda: mcp.notify_resource_updated(NEWS))
                update = await stream.receive()
    assert second not in (None, first)
    assert isinstance(update, ResourceUpdatedNotification)
    assert update.params.uri == NEWS


class NeverUnsubscribes:
    """Wraps an app: a ``resources/unsubscribe`` POST is never answered (a server that
    hangs on it); everything else goes through."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["method"] == "POST":
            body = await read_request_body(receive)
            if b'"resources/unsubscribe"' in body:
                await anyio.sleep_forever()
            receive = replaying(body, receive)
        await self.app(scope, receive, send)


async def test_a_cancelled_legacy_listen_ends_though_its_unsubscribe_is_never_answered(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Leaving a block unsubscribes shielded from the cancellation that ended it, so a
    server that never answers would hold the block open: each unsubscribe waits
    ``UNSUBSCRIBE_SECONDS`` at most (none, here), then a warning says what was left."""
    monkeypatch.setattr(client_module, "UNSUBSCRIBE_SECONDS", 0.0)
    caplog.set_level(logging.WARNING, "answerback.client")
    mcp = library()
    async with (
        serve(NeverUnsubscribes(http_app(mcp))) as running,
        Client(running.url, mode="legacy") as client,
    ):
        with anyio.fail_after(PATIENCE_SECONDS):
            with anyio.CancelScope() as scope:
                async with client.listen(resource_subscriptions=[NEWS]):
                    scope.cancel()
                    await anyio.sleep_forever()
            echoed = await client.call_tool("echo", {"text": "still here"})
    assert echoed.text == "still here"
    left = [r.getMessage() for r in caplog.records if "did not unsubscribe" in r.getMessage()]
    assert len(left) == 1, left
    assert repr(NEWS) in left[0]
