"""2026-07-28 ``subscriptions/listen``: what the acknowledgement says, on both ends.

The server acknowledges only what it will send (the kinds its capabilities declare, the
URIs one of its resources serves), as the schema has ``notifications`` be "the subset of
requested notification types the server agreed to honor". The client asks only for what
the server declared, holds what was agreed as ``honoured``, and raises a refusal of the
request itself, before the block runs, cancelling nothing else.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from support import PATIENCE_SECONDS, HandDrivenServer, RawPeer, peer_pair

from answerback import Client, MCPError
from answerback.client import InvalidServerResultError
from answerback.jsonrpc import JSONObject
from answerback.server import MCPServer
from answerback.server import _connection as connection_module
from answerback.types import CallToolResult, MethodNotFoundError, SubscriptionFilter, TextContent

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
META: JSONObject = {
    "io.modelcontextprotocol/protocolVersion": MODERN,
    "io.modelcontextprotocol/clientCapabilities": {},
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
}
SERVER_INFO: JSONObject = {"name": "hand-driven", "version": "0"}
EVERY_KIND: JSONObject = {
    "tools": {"listChanged": True},
    "prompts": {"listChanged": True},
    "resources": {"listChanged": True, "subscribe": True},
}


# -- the server's acknowledgement ------------------------------------------------------


def tools_and_books() -> MCPServer:
    """Tools and resources, no prompts."""
    mcp = MCPServer("Books")

    @mcp.tool()
    def lend(book_id: str) -> str:
        return f"Lent {book_id}."

    @mcp.resource("books://{book_id}")
    def book(book_id: str) -> str:
        return f"The book {book_id}."

    return mcp


@asynccontextmanager
async def raw_listen(mcp: MCPServer, wanted: JSONObject) -> AsyncGenerator[RawPeer, None]:
    """A raw client that opened a listen for ``wanted`` on ``mcp``; the server's
    acknowledgement is the next message it receives."""
    with peer_pair() as (server_side, peer):
        async with anyio.create_task_group() as tg:
            tg.start_soon(mcp.serve_connection, *server_side)
            listen = {
                "jsonrpc": "2.0",
                "id": "sub",
                "method": "subscriptions/listen",
                "params": {"notifications": wanted, "_meta": META},
            }
            await peer.send(listen)
            yield peer
            tg.cancel_scope.cancel()


async def test_the_server_acknowledges_only_the_kinds_and_uris_it_supports() -> None:
    long_uri = "books://" + "9" * connection_module.SUBSCRIBED_URI_CHARS
    wanted: JSONObject = {
        "toolsListChanged": True,
        "promptsListChanged": True,  # no prompts
        "resourcesListChanged": True,
        "resourceSubscriptions": ["books://dune", "films://dune", "books://dune", long_uri],
    }
    mcp = tools_and_books()
    async with raw_listen(mcp, wanted) as peer:
        acknowledged = await peer.receive()
        assert acknowledged["method"] == "notifications/subscriptions/acknowledged"
        assert acknowledged["params"] == {
            "notifications": {
                "toolsListChanged": True,
                "resourcesListChanged": True,
                "resourceSubscriptions": ["books://dune"],
            },
            "_meta": {"io.modelcontextprotocol/subscriptionId": "sub"},
        }
        # What was left out is not sent either.
        await mcp.notify_prompts_changed()
        await mcp.notify_resource_updated("films://dune")
        await mcp.notify_resource_updated("books://dune")
        updated = await peer.receive()
        assert updated["method"] == "notifications/resources/updated"
        assert updated["params"]["uri"] == "books://dune"


async def test_a_server_with_nothing_to_send_acknowledges_nothing() -> None:
    mcp = MCPServer("Empty")
    wanted: JSONObject = {"toolsListChanged": True, "resourceSubscriptions": ["file:///a"]}
    async with raw_listen(mcp, wanted) as peer:
        acknowledged = await peer.receive()
        assert acknowledged["params"]["notifications"] == {}


async def test_the_server_keeps_a_bounded_number_of_uris_per_listen(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(connection_module, "SUBSCRIPTIONS_KEPT", 2)
    uris = [f"books://{n}" for n in range(5)]
    async with raw_listen(tools_and_books(), {"resourceSubscriptions": uris}) as peer:
        acknowledged = await peer.receive()
        assert acknowledged["params"]["notifications"] == {"resourceSubscriptions": uris[:2]}


# -- the client ------------------------------------------------------------------------


@asynccontextmanager
async def modern_client(
    capabilities: JSONObject | None = None,
) -> AsyncGenerator[tuple[Client, RawPeer], None]:
    """A 2026-07-28 client whose server the test plays; its ``server/discover``
    declares ``capabilities`` (every kind of change by default)."""
    transport = HandDrivenServer()

    async def discover() -> None:
        request = await transport.peer.receive()
        assert request["method"] == "server/discover", request
        result: JSONObject = {
            "supportedVersions": [MODERN],
            "capabilities": EVERY_KIND if capabilities is None else capabilities,
            "_meta": {"io.modelcontextprotocol/serverInfo": SERVER_INFO},
        }
        await transport.peer.send({"jsonrpc": "2.0", "id": request["id"], "result": result})

    async with anyio.create_task_group() as tg:
        tg.start_soon(discover)
        async with Client(transport, mode=MODERN) as client:
            yield client, transport.peer


async def next_listen(peer: RawPeer) -> JSONObject:
    return await peer.receive_until(lambda m: m.get("method") == "subscriptions/listen")


async def acknowledge(peer: RawPeer, listen: JSONObject, notifications: Any) -> None:
    await peer.send(
        {
            "jsonrpc": "2.0",
            "method": "notifications/subscriptions/acknowledged",
            "params": {
                "notifications": notifications,
                "_meta": {"io.modelcontextprotocol/subscriptionId": listen["id"]},
            },
        }
    )


async def test_a_refused_listen_raises_the_refusal_itself_before_the_block() -> None:
    """A server without ``subscriptions/listen`` (FastMCP 4.2.3 answers -32601) once
    let the block run as if acknowledged, cancelled a call made in it, and raised an
    ExceptionGroup when it ended."""
    entered = False
    call_result: list[CallToolResult] = []
    async with modern_client() as (client, peer), anyio.create_task_group() as tg:

        async def call() -> None:
            call_result.append(await client.call_tool("slow"))

        tg.start_soon(call)
        called = await peer.receive_until(lambda m: m.get("method") == "tools/call")

        async def refuse() -> None:
            listen = await next_listen(peer)
            error = {"code": -32601, "message": "Method not found"}
            await peer.send({"jsonrpc": "2.0", "id": listen["id"], "error": error})

        tg.start_soon(refuse)
        with anyio.fail_after(PATIENCE_SECONDS), pytest.raises(MethodNotFoundError) as raised:
            async with client.listen(tools_list_changed=True):
                entered = True
        assert raised.value.message == "Method not found"
        assert not entered
        # The call made before is still waiting, not cancelled: answer it.
        result = {"content": [{"type": "text", "text": "done"}]}
        await peer.send({"jsonrpc": "2.0", "id": called["id"], "result": result})
    assert call_result[0].content == [TextContent(text="done")]


async def test_what_the_server_honours_is_held_and_the_rest_is_named(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async with modern_client() as (client, peer), anyio.create_task_group() as tg:

        async def agree_to_part() -> None:
            listen = await next_listen(peer)
            assert listen["params"]["notifications"] == {
                "toolsListChanged": True,
                "promptsListChanged": True,
                "resourceSubscriptions": ["notes://a", "notes://b"],
            }
            agreed = {"toolsListChanged": True, "resourceSubscriptions": ["notes://a"]}
            await acknowledge(peer, listen, agreed)

        tg.start_soon(agree_to_part)
        with anyio.fail_after(PATIENCE_SECONDS), caplog.at_level(logging.WARNING):
            async with client.listen(
                tools_list_changed=True,
                prompts_list_changed=True,
                resource_subscriptions=["notes://a", "notes://b"],
            ) as notifications:
                assert notifications.honoured == SubscriptionFilter(
                    tools_list_changed=True, resource_subscriptions=["notes://a"]
                )
    assert (
        "The server 'hand-driven' 0 did not agree to send promptsListChanged, updates of "
        "'notes://b' on its listen() stream; they will not arrive"
    ) in caplog.text


async def test_kinds_the_server_did_not_declare_are_not_asked_for(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """2025-11-25 lifecycle: a client uses only capabilities the server declared."""
    tools_only: JSONObject = {"tools": {}, "resources": {"listChanged": True}}
    async with modern_client(tools_only) as (client, peer), anyio.create_task_group() as tg:
        asked: list[JSONObject] = []

        async def agree() -> None:
            listen = await next_listen(peer)
            asked.append(listen["params"]["notifications"])
            await acknowledge(peer, listen, listen["params"]["notifications"])

        tg.start_soon(agree)
        with anyio.fail_after(PATIENCE_SECONDS), caplog.at_level(logging.WARNING):
            async with client.listen(
                tools_list_changed=True,
                resources_list_changed=True,
                resource_subscriptions=["notes://a"],
            ) as notifications:
                assert notifications.honoured == SubscriptionFilter(resources_list_changed=True)
        assert asked == [{"resourcesListChanged": True}]
        assert (
            "listen() does not ask the server 'hand-driven' 0 for what it did not declare: "
            'toolsListChanged (no {"tools": {"listChanged": true}}); '
            'resourceSubscriptions (no {"resources": {"subscribe": true}})'
        ) in caplog.text


@pytest.mark.parametrize(
    ("acknowledged", "problem"),
    [({"resourceSubscriptions": "notes://a"}, "resourceSubscriptions"), (None, "notifications")],
    ids=["wrong type", "no notifications"],
)
async def test_a_malformed_acknowledgement_fails_the_listen_and_cancels_it(
    acknowledged: Any, problem: str
) -> None:
    async with modern_client() as (client, peer), anyio.create_task_group() as tg:
        listen_id: list[Any] = []

        async def acknowledge_badly() -> None:
            listen = await next_listen(peer)
            listen_id.append(listen["id"])
            await acknowledge(peer, listen, acknowledged)

        tg.start_soon(acknowledge_badly)
        with anyio.fail_after(PATIENCE_SECONDS), pytest.raises(InvalidServerResultError) as raised:
            async with client.listen(tools_list_changed=True):
                pytest.fail("the block ran without an acknowledgement")
        cancelled = await peer.receive_until(lambda m: m.get("method") == "notifications/cancelled")
        assert cancelled["params"]["requestId"] == listen_id[0]
        assert raised.value.message.startswith(
            "The server 'hand-driven' 0 sent an invalid "
            "SubscriptionsAcknowledgedNotificationParams for 'subscriptions/listen'"
        )
        assert problem in raised.value.message


async def test_a_listen_ended_before_it_was_acknowledged_says_so() -> None:
    async with modern_client() as (client, peer), anyio.create_task_group() as tg:

        async def end_at_once() -> None:
            listen = await next_listen(peer)
            result = {"_meta": {"io.modelcontextprotocol/subscriptionId": listen["id"]}}
            await peer.send({"jsonrpc": "2.0", "id": listen["id"], "result": result})

        tg.start_soon(end_at_once)
        with anyio.fail_after(PATIENCE_SECONDS), pytest.raises(InvalidServerResultError) as raised:
            async with client.listen(tools_list_changed=True):
                pytest.fail("the block ran without an acknowledgement")
        assert raised.value.message == (
            "The server 'hand-driven' 0 ended 'subscriptions/listen' without acknowledging it; "
            "the specification has the acknowledgement come first. Report it to the server's "
            "authors."
        )


async def test_a_listen_failing_after_its_acknowledgement_raises_its_error_unwrapped() -> None:
    async with modern_client() as (client, peer), anyio.create_task_group() as tg:

        async def acknowledge_then_fail() -> None:
            listen = await next_listen(peer)
            await acknowledge(peer, listen, {"toolsListChanged": True})
            error = {"code": -32603, "message": "Ended: the server is going away"}
            await peer.send({"jsonrpc": "2.0", "id": listen["id"], "error": error})

        tg.start_soon(acknowledge_then_fail)
        with anyio.fail_after(PATIENCE_SECONDS), pytest.raises(MCPError) as raised:
            async with client.listen(tools_list_changed=True):
                await anyio.sleep_forever()
        assert not isinstance(raised.value, BaseExceptionGroup)
        assert raised.value.message == "Ended: the server is going away"


async def test_a_listen_the_server_ends_gracefully_ends_the_iteration() -> None:
    async with modern_client() as (client, peer), anyio.create_task_group() as tg:

        async def acknowledge_then_end() -> None:
            listen = await next_listen(peer)
            await acknowledge(peer, listen, {"toolsListChanged": True})
            await peer.send(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/tools/list_changed",
                    "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": listen["id"]}},
                }
            )
            result = {"_meta": {"io.modelcontextprotocol/subscriptionId": listen["id"]}}
            await peer.send({"jsonrpc": "2.0", "id": listen["id"], "result": result})

        tg.start_soon(acknowledge_then_end)
        with anyio.fail_after(PATIENCE_SECONDS):
            async with client.listen(tools_list_changed=True) as notifications:
                methods = [notification.method async for notification in notifications]
        assert methods == ["notifications/tools/list_changed"]


# -- legacy resource subscriptions -------------------------------------------------------


@pytest.mark.parametrize(
    "resources",
    [None, {}, {"subscribe": False}],
    ids=["no resources", "resources without subscribe", "subscribe false"],
)
async def test_subscribing_to_a_server_that_did_not_declare_it_is_refused_unsent(
    resources: JSONObject | None,
) -> None:
    capabilities: JSONObject = {} if resources is None else {"resources": resources}
    async with modern_client(capabilities) as (client, peer), anyio.create_task_group() as tg:
        for call in (client.subscribe_resource, client.unsubscribe_resource):
            with pytest.raises(MethodNotFoundError) as raised:
                await call("notes://a")
            assert raised.value.message == (
                f"{call.__name__}() not sent: protocol 2026-07-28, which the server "
                "'hand-driven' 0 speaks, has no resources/subscribe. The server 'hand-driven' "
                '0 does not offer resource updates either (it did not declare {"resources": '
                '{"subscribe": true}}): read the resource again when you need it fresh.'
            )

        async def answer_list() -> None:
            listed = await peer.receive()  # the next request: nothing was sent before it
            assert listed["method"] == "tools/list"
            await peer.send({"jsonrpc": "2.0", "id": listed["id"], "result": {"tools": []}})

        tg.start_soon(answer_list)
        with anyio.fail_after(PATIENCE_SECONDS):
            assert (await client.list_tools()).tools == []


async def test_a_legacy_server_declaring_subscriptions_is_asked() -> None:
    mcp = tools_and_books()
    async with Client(mcp, mode="legacy") as client:
        await client.subscribe_resource("books://dune")
        await client.unsubscribe_resource("books://dune")
    async with Client(MCPServer("Bare"), mode="legacy") as client:
        with pytest.raises(MethodNotFoundError, match="does not offer resource subscriptions"):
            await client.subscribe_resource("books://dune")
