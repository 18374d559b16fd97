"""``Client.listen()`` in both eras: one loop in a host receives list changes and
resource updates whichever era the connection speaks. On 2026-07-28 they come on a
``subscriptions/listen`` stream; a legacy server sends them unasked, and the stream
takes them from the session, and the client subscribes the URIs asked for."""

from __future__ import annotations

import itertools
import logging
import sys
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from http_support import (
    PATIENCE_SECONDS,
    Listening,
    forget_session,
    free_port,
    python_server,
    read_request_body,
    replaying,
    serve,
    serve_process,
)
from http_support.apps import http_app

from answerback import Client, StdioServer
from answerback.client import ListenStream
from answerback.client import _client as client_module
from answerback.jsonrpc import IncomingRequest, JSONObject
from answerback.server import MCPServer
from answerback.server import _connection as connection_module
from answerback.server._connection import Connection
from answerback.transports.http import StreamableHTTPTransport
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
SERVE_SCRIPT = Path(__file__).parent / "http_support" / "serve_script.py"


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
async def test_a_listen_over_http_ends_when_the_server_is_killed_in_either_era(
    mode: str,
) -> None:
    """The HTTP server's process is killed while the host listens. On 2026-07-28 the
    listen's own stream breaks and cannot be resumed; on a legacy connection the listen
    hears through the GET stream, which tries again for as long as the session lasts
    (as it should behind a balancer), so the block waited for ever with no sign. Now,
    once the GET stream has failed for ``connect_timeout_seconds`` (here the clock
    leaps 1000 s at each reading, so at its second failure), the block raises, as a
    2026-07-28 one does, saying the server is gone and what to do; a listen opened
    while it is gone fails at once."""
    port = free_port()
    with serve_process(python_server(SERVE_SCRIPT, str(DYING_SERVER), str(port)), port) as process:
        transport = StreamableHTTPTransport(f"http://127.0.0.1:{port}/mcp")
        leaps = itertools.count(step=1000.0)
        transport._clock = lambda: next(leaps)  # pyright: ignore[reportPrivateUsage]
        async with Client(transport, mode=mode) as client:

            async def listen_as_it_is_killed() -> None:
                async with client.listen(tools_list_changed=True) as stream:
                    process.kill()
                    await anyio.to_thread.run_sync(process.wait)
                    async for _ in stream:
                        pass

            async def listen_again() -> None:
                async with client.listen(tools_list_changed=True):
                    pytest.fail("a listen opened while the server is gone")

            with anyio.fail_after(PATIENCE_SECONDS):
                with pytest.raises(ConnectionClosedError) as ended:
                    await listen_as_it_is_killed()
                with pytest.raises(ConnectionClosedError) as reopened:
                    await listen_again()
    message = ended.value.message
    assert message.startswith("listen() ended: the server 'Leaving' ")
    assert message.endswith(
        "nothing it sends can arrive. Wait a few seconds, then open listen() again (it "
        "raises this at once while the server is still gone; if the client has stopped "
        "trying, a request such as ping() sets a session up again), or close the Client."
    )
    assert ended.value.data == {"reason": "server_gone"}
    if mode == "legacy":
        assert "its standalone SSE stream failed 2 times in a row" in message
        assert "nothing is listening at" in message
        assert reopened.value.message == message
    else:
        assert "nothing is listening at" in reopened.value.message


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


@pytest.mark.parametrize("mode", ERAS)
async def test_a_uri_the_server_does_not_serve_is_left_out_in_either_era(
    mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    """No resource serves ``films://dune``: a 2026-07-28 server leaves it out of its
    acknowledgement, a legacy one refuses its ``resources/subscribe`` (-32002). Either
    way the block runs without it, with the same warning, and hears ``NEWS``."""
    caplog.set_level(logging.WARNING, "answerback.client")
    mcp = library()
    async with (
        Client(mcp, mode=mode) as client,
        client.listen(resource_subscriptions=[NEWS, "films://dune"]) as stream,
    ):
        await mcp.notify_resource_updated(NEWS)
        with anyio.fail_after(PATIENCE_SECONDS):
            update = await stream.receive()
        if mode == "legacy":
            assert server_subscriptions(mcp) == {NEWS}
    assert stream.honoured.resource_subscriptions == [NEWS]
    assert isinstance(update, ResourceUpdatedNotification)
    assert update.params.uri == NEWS
    warned = [r.getMessage() for r in caplog.records if "listen() stream" in r.getMessage()]
    assert warned == [
        "The server 'Library' 0.1.0 did not agree to send updates of 'films://dune' on its "
        "listen() stream; they will not arrive"
    ]


async def test_a_legacy_subscription_refused_otherwise_raises_before_the_block(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A refusal other than "not served" or "not acceptable" (here the server's own
    failure, -32603) raises before the block runs, and the URI asked for with it is
    unsubscribed again."""
    subscribe = Connection.subscribe

    async def failing(self: Connection, client: Any, request: IncomingRequest) -> JSONObject:
        if (request.params or {}).get("uri") == "library://hours":
            raise MCPError(-32603, "Internal error: the subscription store is down")
        return await subscribe(self, client, request)

    monkeypatch.setitem(
        connection_module._LEGACY,  # pyright: ignore[reportPrivateUsage]
        "resources/subscribe",
        failing,
    )
    mcp = library()
    updates = Updates()
    async with Client(mcp, mode="legacy", message_handler=updates) as client:
        with pytest.raises(MCPError, match="the subscription store is down"):
            async with client.listen(resource_subscriptions=[NEWS, "library://hours"]):
                pytest.fail("the block ran")
        await mcp.notify_resource_updated(NEWS)
        await client.call_tool("echo", {"text": "after"})
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


def server_subscriptions(mcp: MCPServer) -> set[str]:
    """What the server's only connection is subscribed to."""
    (connection,) = mcp._connections  # pyright: ignore[reportPrivateUsage]
    return connection.subscriptions


async def test_a_legacy_listen_opening_as_another_ends_leaves_the_uri_subscribed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One block ends (its unsubscribe is on its way) as another opens for the same URI:
    the new block subscribed at once, the server then handled the old block's
    unsubscribe, and the new block listened to a URI the server no longer sent
    updates of. Now subscription changes go one at a time, so the new block subscribes
    after the unsubscribe is answered, and the server's state matches the open block."""
    unsubscribing, answer_it = anyio.Event(), anyio.Event()

    async def held_unsubscribe(
        connection: Connection, client: Any, request: IncomingRequest
    ) -> JSONObject:
        unsubscribing.set()
        await answer_it.wait()
        return await Connection.unsubscribe(connection, client, request)

    monkeypatch.setitem(
        connection_module._LEGACY,  # pyright: ignore[reportPrivateUsage]
        "resources/unsubscribe",
        held_unsubscribe,
    )
    mcp = library()
    first_open, end_first, first_ended = anyio.Event(), anyio.Event(), anyio.Event()
    second_open = anyio.Event()
    heard: list[ServerNotification] = []

    async def first(client: Client) -> None:
        async with client.listen(resource_subscriptions=[NEWS]):
            first_open.set()
            await end_first.wait()
        first_ended.set()

    async def second(client: Client) -> None:
        async with client.listen(resource_subscriptions=[NEWS]) as stream:
            second_open.set()
            heard.append(await stream.receive())

    async with Client(mcp, mode="legacy") as client:
        with anyio.fail_after(PATIENCE_SECONDS):
            async with anyio.create_task_group() as tg:
                tg.start_soon(first, client)
                await first_open.wait()
                end_first.set()
                await unsubscribing.wait()  # the first block's unsubscribe is with the server
                tg.start_soon(second, client)
                await anyio.wait_all_tasks_blocked()  # the second subscribed, or waits its turn
                answer_it.set()
                await first_ended.wait()
                await second_open.wait()
                assert server_subscriptions(mcp) == {NEWS}
                await mcp.notify_resource_updated(NEWS)
    assert len(heard) == 1
    assert isinstance(heard[0], ResourceUpdatedNotification)


async def test_a_host_unsubscribing_as_a_legacy_listen_opens_leaves_the_uri_subscribed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The host's own ``unsubscribe_resource`` takes its turn too: a listen opening
    meanwhile found the URI subscribed (the host's) and sent nothing, and the host's
    unsubscribe then left the listen with no updates."""
    unsubscribing, answer_it = anyio.Event(), anyio.Event()

    async def held_unsubscribe(
        connection: Connection, client: Any, request: IncomingRequest
    ) -> JSONObject:
        unsubscribing.set()
        await answer_it.wait()
        return await Connection.unsubscribe(connection, client, request)

    monkeypatch.setitem(
        connection_module._LEGACY,  # pyright: ignore[reportPrivateUsage]
        "resources/unsubscribe",
        held_unsubscribe,
    )
    mcp = library()
    listening, unsubscribed = anyio.Event(), anyio.Event()
    async with Client(mcp, mode="legacy") as client:
        await client.subscribe_resource(NEWS)

        async def unsubscribe() -> None:
            await client.unsubscribe_resource(NEWS)
            unsubscribed.set()

        async def listen() -> None:
            async with client.listen(resource_subscriptions=[NEWS]):
                listening.set()
                await anyio.sleep_forever()

        with anyio.fail_after(PATIENCE_SECONDS):
            async with anyio.create_task_group() as tg:
                tg.start_soon(unsubscribe)
                await unsubscribing.wait()
                tg.start_soon(listen)
                await anyio.wait_all_tasks_blocked()  # the listen subscribed, or waits its turn
                answer_it.set()
                await unsubscribed.wait()
                await listening.wait()
                assert server_subscriptions(mcp) == {NEWS}
                tg.cancel_scope.cancel()
