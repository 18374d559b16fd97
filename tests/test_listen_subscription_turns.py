"""Legacy ``listen()`` and the host's own subscriptions change the server's
subscriptions in turns, one per URI: a change the server never answers holds up only
changes of its own URI, and nothing at all that needs no change; a listen opened while
the server is gone lets other tasks run; and a session set up again as the last listen
of a URI ends leaves the server unsubscribed."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from support import PATIENCE_SECONDS
from trio.testing import MockClock

from answerback import Client
from answerback.jsonrpc import IncomingRequest, JSONObject
from answerback.server import MCPServer
from answerback.server import _connection as connection_module
from answerback.server._connection import Connection
from answerback.types import ConnectionClosedError, RequestTimeoutError

pytestmark = pytest.mark.anyio

NEWS, HOURS, EVENTS = "library://news", "library://hours", "library://events"


def library() -> MCPServer:
    mcp = MCPServer("Library")

    @mcp.resource(NEWS)
    def news() -> str:
        return "The library opens at 9."

    @mcp.resource(HOURS)
    def hours() -> str:
        return "9 to 5"

    @mcp.resource(EVENTS)
    def events() -> str:
        return "A reading on Friday."

    return mcp


def server_subscriptions(mcp: MCPServer) -> set[str]:
    """What the server's only connection is subscribed to."""
    (connection,) = mcp._connections  # pyright: ignore[reportPrivateUsage]
    return connection.subscriptions


def never_answer(monkeypatch: pytest.MonkeyPatch, method: str, uri: str) -> anyio.Event:
    """The server never answers ``method`` for ``uri`` (others as usual); the event is
    set once such a request has arrived."""
    arrived = anyio.Event()
    original = connection_module._LEGACY[method]  # pyright: ignore[reportPrivateUsage]

    async def hung(connection: Connection, client: Any, request: IncomingRequest) -> JSONObject:
        if request.params is not None and request.params.get("uri") == uri:
            arrived.set()
            await anyio.sleep_forever()
        return await original(connection, client, request)

    monkeypatch.setitem(
        connection_module._LEGACY,  # pyright: ignore[reportPrivateUsage]
        method,
        hung,
    )
    return arrived


async def test_a_subscribe_never_answered_holds_up_no_other_listen_or_uri(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """One lock for every subscription change was held across a subscribe the server
    never answered: a listen asking for no URI, or for one already subscribed, and the
    host's (un)subscribing of other URIs all waited for ever."""
    subscribing = never_answer(monkeypatch, "resources/subscribe", HOURS)
    mcp = library()
    async with Client(mcp, mode="legacy") as client:
        await client.subscribe_resource(NEWS)
        with anyio.fail_after(PATIENCE_SECONDS):
            async with anyio.create_task_group() as tg:

                async def hangs() -> None:
                    async with client.listen(resource_subscriptions=[HOURS]):
                        pytest.fail("the server never answered its subscribe")

                tg.start_soon(hangs)
                await subscribing.wait()
                async with client.listen(tools_list_changed=True):
                    pass
                async with client.listen(resource_subscriptions=[NEWS]):
                    pass
                await client.subscribe_resource(EVENTS)
                await client.unsubscribe_resource(NEWS)
                assert server_subscriptions(mcp) == {EVENTS}
                tg.cancel_scope.cancel()


async def test_an_unsubscribe_never_answered_holds_up_no_other_uri(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    unsubscribing = never_answer(monkeypatch, "resources/unsubscribe", NEWS)
    mcp = library()
    async with Client(mcp, mode="legacy") as client:
        await client.subscribe_resource(NEWS)
        with anyio.fail_after(PATIENCE_SECONDS):
            async with anyio.create_task_group() as tg:
                tg.start_soon(client.unsubscribe_resource, NEWS)
                await unsubscribing.wait()
                await client.subscribe_resource(HOURS)
                async with client.listen(resource_subscriptions=[EVENTS]):
                    assert server_subscriptions(mcp) == {NEWS, HOURS, EVENTS}
                assert server_subscriptions(mcp) == {NEWS, HOURS}
                tg.cancel_scope.cancel()


async def test_a_listen_waiting_for_its_uris_turn_gives_up_after_the_connect_timeout(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The host's subscribe of ``HOURS`` is never answered (calls have no timeout by
    default): a listen of ``HOURS`` waits for its turn, but no longer than starting a
    listen may take, and says why it did not start."""
    subscribing = never_answer(monkeypatch, "resources/subscribe", HOURS)
    mcp = library()
    async with Client(mcp, mode="legacy") as client:
        # Connected: only the listen's start is bounded this tightly.
        client.session.negotiation.connect_timeout_seconds = 0.01
        with anyio.fail_after(PATIENCE_SECONDS):
            async with anyio.create_task_group() as tg:
                tg.start_soon(client.subscribe_resource, HOURS)
                await subscribing.wait()
                with pytest.raises(RequestTimeoutError) as raised:
                    async with client.listen(resource_subscriptions=[HOURS]):
                        pytest.fail("the block ran")
                assert raised.value.message.startswith(
                    "listen() did not start: the server 'Library' 0.1.0 did not answer "
                    "'resources/subscribe' within 0.01 s"
                )
                tg.cancel_scope.cancel()


async def test_retrying_a_listen_while_the_server_is_gone_lets_other_tasks_run() -> None:
    """A listen opened while the server is gone raised at once, never yielding, so a
    host retrying it in a loop starved the task that would find the server back."""
    mcp = library()
    failures: list[ConnectionClosedError] = []
    async with Client(mcp, mode="legacy") as client, anyio.create_task_group() as tg:
        client._server_gone("its standalone SSE stream failed")  # pyright: ignore[reportPrivateUsage]

        async def back() -> None:  # stands in for the GET stream reaching it again
            client._server_gone(None)  # pyright: ignore[reportPrivateUsage]

        tg.start_soon(back)
        for _ in range(1000):
            try:
                async with client.listen(tools_list_changed=True):
                    break
            except ConnectionClosedError as exc:
                failures.append(exc)
        else:
            pytest.fail("the listen never opened: the task bringing the server back never ran")
    assert all(exc.data == {"reason": "server_gone"} for exc in failures)


async def test_a_listen_ending_as_the_session_is_set_up_again_leaves_it_unsubscribed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The session is set up again while a listen follows ``NEWS``, and the block ends
    before the new session's subscribe is answered: the block found nothing to
    unsubscribe (the new session had not confirmed it), and the subscribe then left the
    server sending updates nobody listens for. Now the client unsubscribes it again."""
    mcp = library()
    listening, resubscribing, answer_it = anyio.Event(), anyio.Event(), anyio.Event()
    subscribes = 0

    async def second_subscribe_held(
        connection: Connection, client: Any, request: IncomingRequest
    ) -> JSONObject:
        nonlocal subscribes
        subscribes += 1
        if subscribes == 2:
            resubscribing.set()
            await answer_it.wait()
        return await Connection.subscribe(connection, client, request)

    monkeypatch.setitem(
        connection_module._LEGACY,  # pyright: ignore[reportPrivateUsage]
        "resources/subscribe",
        second_subscribe_held,
    )
    async with Client(mcp, mode="legacy") as client:

        async def new_session() -> None:
            """A forgotten session's new handshake; the in-process server keeps its
            connection, whose subscriptions stand for the new session's."""

        monkeypatch.setattr(client.session.negotiation, "initialize", new_session)
        with anyio.fail_after(PATIENCE_SECONDS):
            async with anyio.create_task_group() as tg:

                async def listen() -> None:
                    async with client.listen(resource_subscriptions=[NEWS]):
                        listening.set()
                        await resubscribing.wait()

                tg.start_soon(listen)
                await listening.wait()
                async with anyio.create_task_group() as setting_up:
                    setting_up.start_soon(client.session.set_up_again)
                    await resubscribing.wait()
                    await anyio.wait_all_tasks_blocked()  # the listen has ended
                    answer_it.set()
            assert server_subscriptions(mcp) == set()


def subscribed_unanswered(monkeypatch: pytest.MonkeyPatch, uri: str) -> anyio.Event:
    """The server subscribes ``uri`` but never answers that subscribe; the event is
    set once it has subscribed."""
    subscribed = anyio.Event()

    async def unanswered(
        connection: Connection, client: Any, request: IncomingRequest
    ) -> JSONObject:
        result = await Connection.subscribe(connection, client, request)
        if request.params is not None and request.params.get("uri") == uri:
            subscribed.set()
            await anyio.sleep_forever()
        return result

    monkeypatch.setitem(
        connection_module._LEGACY,  # pyright: ignore[reportPrivateUsage]
        "resources/subscribe",
        unanswered,
    )
    return subscribed


async def test_a_listen_cancelled_after_the_server_subscribed_leaves_it_unsubscribed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A listen cancelled while its subscribe was unanswered, though the server had
    handled it, recorded nothing: the server stayed subscribed and no unsubscribe was
    ever sent. The given-up subscribe is now unsubscribed as the listen ends, and a
    later listen of the URI subscribes it again."""
    subscribed = subscribed_unanswered(monkeypatch, NEWS)
    mcp = library()
    async with Client(mcp, mode="legacy") as client:

        async def listen() -> None:
            async with client.listen(resource_subscriptions=[NEWS]):
                pytest.fail("the block ran though its subscribe was never answered")

        with anyio.fail_after(PATIENCE_SECONDS):
            async with anyio.create_task_group() as tg:
                tg.start_soon(listen)
                await subscribed.wait()
                assert server_subscriptions(mcp) == {NEWS}
                tg.cancel_scope.cancel()
            assert server_subscriptions(mcp) == set()
            monkeypatch.undo()
            async with client.listen(resource_subscriptions=[NEWS]):
                assert server_subscriptions(mcp) == {NEWS}
            assert server_subscriptions(mcp) == set()


@pytest.mark.parametrize(
    "anyio_backend", [pytest.param(("trio", {"clock": MockClock(autojump_threshold=0)}), id="trio")]
)
async def test_a_listen_whose_subscribe_timed_out_after_the_server_subscribed_unsubscribes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As a cancelled one: a listen that gave up waiting for its subscribe's answer
    left the server subscribed. The clock jumps only once every task waits, so the
    timeout comes after the server subscribed."""
    subscribed = subscribed_unanswered(monkeypatch, NEWS)
    mcp = library()
    async with Client(mcp, mode="legacy", connect_timeout_seconds=5) as client:
        with pytest.raises(RequestTimeoutError):
            async with client.listen(resource_subscriptions=[NEWS]):
                pytest.fail("the block ran though its subscribe was never answered")
        assert subscribed.is_set()
        assert server_subscriptions(mcp) == set()
