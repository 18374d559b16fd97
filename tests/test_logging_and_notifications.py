"""Notifications from the server: log messages, and everything else via message_handler.

``logging_callback`` gets ``notifications/message`` as ``LoggingMessageNotificationParams``
and ``logging/setLevel`` filters at the server. ``message_handler`` gets every other
notification (and transport errors), but never ``notifications/cancelled``, which the
engine applies itself.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from support import SERVERS, RawPeer, client_with_hand_driven_server, target

from answerback import Client
from answerback.client import IncomingMessage
from answerback.jsonrpc import MalformedMessage
from answerback.server import Context, MCPServer
from answerback.transports import _pipes as pipes_module
from answerback.types import (
    PARSE_ERROR,
    CallToolResult,
    CancelledNotification,
    LoggingLevel,
    LoggingMessageNotification,
    LoggingMessageNotificationParams,
    ProgressNotification,
    ResourceListChangedNotification,
    TextContent,
    ToolListChangedNotification,
)

pytestmark = pytest.mark.anyio

ASKING_SERVER = SERVERS / "asking_server.py"
ALL_LEVELS: list[LoggingLevel] = [
    "debug",
    "info",
    "notice",
    "warning",
    "error",
    "critical",
    "alert",
    "emergency",
]


@pytest.fixture(params=["memory", "stdio"])
def asking(request: pytest.FixtureRequest) -> Any:
    """The asking test server, in-process or as a stdio subprocess."""
    return target(request.param, ASKING_SERVER)


class Recorder:
    """Collects what the notification callbacks receive."""

    def __init__(self) -> None:
        self.logs: list[LoggingMessageNotificationParams] = []
        self.messages: list[IncomingMessage] = []

    async def log(self, params: LoggingMessageNotificationParams) -> None:
        self.logs.append(params)

    async def message(self, message: IncomingMessage) -> None:
        self.messages.append(message)


async def test_log_messages_reach_the_logging_callback(asking: Any) -> None:
    """Every level arrives, in order, with its logger name and data."""
    seen = Recorder()
    async with Client(asking, mode="legacy", logging_callback=seen.log) as client:
        result = await client.call_tool("log_every_level")
    assert result.structured_content == {"result": "logged"}
    assert seen.logs == [
        LoggingMessageNotificationParams(level=level, logger="asking", data=f"a {level} message")
        for level in ALL_LEVELS
    ]


async def test_set_logging_level_filters_lower_levels(asking: Any) -> None:
    """After ``set_logging_level("warning")`` only warning and above are sent."""
    seen = Recorder()
    async with Client(asking, mode="legacy", logging_callback=seen.log) as client:
        await client.set_logging_level("warning")
        await client.call_tool("log_every_level")
    assert [params.level for params in seen.logs] == ALL_LEVELS[3:]


async def test_log_level_option_sets_the_level_on_connect(asking: Any) -> None:
    """``Client(log_level=...)`` asks the server for that level as part of connecting."""
    seen = Recorder()
    async with Client(
        asking, mode="legacy", logging_callback=seen.log, log_level="error"
    ) as client:
        await client.call_tool("log_every_level")
    assert [params.level for params in seen.logs] == ALL_LEVELS[4:]


async def test_logs_go_to_message_handler_without_a_logging_callback(asking: Any) -> None:
    """With no logging callback of its own, a log message is just another notification."""
    seen = Recorder()
    async with Client(asking, mode="legacy", message_handler=seen.message) as client:
        await client.set_logging_level("emergency")
        await client.call_tool("log_every_level")
    assert seen.messages == [
        LoggingMessageNotification(
            params=LoggingMessageNotificationParams(
                level="emergency", logger="asking", data="a emergency message"
            )
        )
    ]


async def test_logs_with_their_own_callback_skip_the_message_handler(asking: Any) -> None:
    """A notification that has its own callback is not delivered twice."""
    seen = Recorder()
    async with Client(
        asking, mode="legacy", logging_callback=seen.log, message_handler=seen.message
    ) as client:
        await client.call_tool("log_every_level")
    assert len(seen.logs) == len(ALL_LEVELS)
    assert seen.messages == []


async def test_a_real_servers_list_changed_reaches_the_message_handler(asking: Any) -> None:
    """``notify_tools_changed()`` on the server arrives as ``ToolListChangedNotification``."""
    seen = Recorder()
    async with Client(asking, mode="legacy", message_handler=seen.message) as client:
        result = await client.call_tool("change_tools")
    assert result.content == [TextContent(text="announced")]
    assert seen.messages == [ToolListChangedNotification()]


async def _flush(server: RawPeer) -> None:
    """Wait until the client has handled everything sent before this point.

    The client handles notifications in arrival order before it reads on, so once it
    answers a ping sent after them, they have all been delivered.
    """
    await server.send({"jsonrpc": "2.0", "id": "flush", "method": "ping"})
    answer = await server.receive_until(lambda m: m.get("id") == "flush")
    assert answer == {"jsonrpc": "2.0", "id": "flush", "result": {}}


async def test_message_handler_gets_notifications_without_their_own_callback() -> None:
    """List-changed and stray progress notifications reach the catch-all, parsed."""
    seen = Recorder()
    async with client_with_hand_driven_server(message_handler=seen.message) as (_, server, _):
        await server.send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        await server.send({"jsonrpc": "2.0", "method": "notifications/resources/list_changed"})
        await server.send(
            {
                "jsonrpc": "2.0",
                "method": "notifications/progress",
                "params": {"progressToken": "not-ours", "progress": 1, "total": 2},
            }
        )
        await _flush(server)
    assert seen.messages[:2] == [ToolListChangedNotification(), ResourceListChangedNotification()]
    progress = seen.messages[2]
    assert isinstance(progress, ProgressNotification)
    assert progress.params.progress_token == "not-ours"
    assert progress.params.total == 2
    assert len(seen.messages) == 3


async def test_message_handler_never_gets_cancelled_notifications() -> None:
    """``notifications/cancelled`` is applied by the engine, never surfaced."""
    seen = Recorder()
    async with client_with_hand_driven_server(message_handler=seen.message) as (_, server, _):
        for request_id in (12345, "unknown"):
            await server.send(
                {
                    "jsonrpc": "2.0",
                    "method": "notifications/cancelled",
                    "params": {"requestId": request_id, "reason": "changed my mind"},
                }
            )
        await server.send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        await _flush(server)
    assert seen.messages == [ToolListChangedNotification()]
    assert not any(isinstance(m, CancelledNotification) for m in seen.messages)


async def test_message_handler_gets_transport_errors() -> None:
    """Garbage on the wire is shown to the handler as an exception; the peer gets -32700."""
    seen = Recorder()
    async with client_with_hand_driven_server(message_handler=seen.message) as (_, server, _):
        await server.send_raw(MalformedMessage("Expecting value at line 1 column 1"))
        parse_error = await server.receive()
        await server.send({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})
        await _flush(server)
    assert parse_error["id"] is None
    assert parse_error["error"]["code"] == PARSE_ERROR
    [error, still_listening] = seen.messages
    assert isinstance(error, MalformedMessage)
    assert "Expecting value" in str(error)
    assert still_listening == ToolListChangedNotification()


async def test_a_tool_writing_faster_than_the_client_handles_waits_for_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """In-process, a tool's log messages wait for a client whose callback is held once
    ``UNTAKEN_MESSAGES_HELD`` of them do (the tool wrote them all into memory before);
    when the callback goes on, every message is handled, in order."""
    monkeypatch.setattr(pipes_module, "UNTAKEN_MESSAGES_HELD", 8)
    mcp = MCPServer("chatty")
    sent = 0

    @mcp.tool()
    async def chatter(ctx: Context, n: int) -> str:
        nonlocal sent
        for i in range(n):
            await ctx.info(str(i))
            sent += 1
        return "done"

    released = anyio.Event()
    handled: list[Any] = []

    async def on_log(params: LoggingMessageNotificationParams) -> None:
        await released.wait()
        handled.append(params.data)

    held_at = 0
    async with Client(mcp, mode="legacy", logging_callback=on_log) as client:
        results: list[CallToolResult] = []
        async with anyio.create_task_group() as tg:

            async def call() -> None:
                results.append(await client.call_tool("chatter", {"n": 100}))

            tg.start_soon(call)
            await anyio.wait_all_tasks_blocked()
            held_at = sent
            released.set()
    assert held_at <= 10, f"the tool wrote {held_at} messages while the client took one"
    assert handled == [str(i) for i in range(100)]
    assert results[0].content == [TextContent(text="done")]
