"""Nothing is left behind after calls that end badly: cancelled by the caller while a
question waits, timed out while the tool works, or cut off by the client leaving.

After a bounded loop of such calls, the server has no tool still running, neither
engine holds a request, an HTTP server has no session or stored stream left, and the
connection still serves a normal call. And calls that end well leave no reference
cycles for the garbage collector to find.
"""

from __future__ import annotations

import gc
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import pytest
from http_support import (
    LOAD_SERVER,
    load_server,
    reach_load_server,
    running_tasks,
    serve,
    settle,
)
from support import load_module

from answerback import Client, MCPError
from answerback.client import ClientRequestContext
from answerback.types import ElicitRequestParams, ElicitResult, TextContent

pytestmark = pytest.mark.anyio

ROUNDS = 60
"""Cancellations plus timeouts: more than an HTTP client's default pool of 100 connections."""


async def answer(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"value": 2 * int(params.message[2:])})


async def settle_running(client: Client) -> bool:
    """Wait (bounded) until the server runs no tool but the one asking this."""
    with anyio.move_on_after(10):
        while (await client.call_tool("running")).content != [TextContent(text="0")]:  # noqa: ASYNC110
            await anyio.sleep(0.05)
        return True
    return False


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
@pytest.mark.parametrize("transport", ["memory", "stdio", "http"])
async def test_cancelled_and_timed_out_calls_leave_nothing_behind(
    transport: str, mode: str
) -> None:
    asked = anyio.Event()
    release = anyio.Event()

    async def answer_slowly(
        context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult:
        """The person takes their time: the call is cancelled while they think."""
        asked.set()
        await release.wait()
        return await answer(context, params)

    async with (
        reach_load_server(transport) as target,
        Client(target, mode=mode, elicitation_callback=answer_slowly) as client,
    ):
        for round_number in range(ROUNDS):
            # Cancelled by the caller while its question waits for a person.
            asked = anyio.Event()
            with anyio.CancelScope() as scope:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(client.call_tool, "double", {"n": round_number})
                    await asked.wait()
                    scope.cancel()
            # Timed out while the tool works on after its question was answered.
            release.set()
            with pytest.raises(MCPError, match="within"):
                await client.call_tool("slow_ask", {"n": round_number}, read_timeout_seconds=0.05)
            release = anyio.Event()

        release.set()
        endpoint = client.session.endpoint
        assert endpoint.pending_count == 0
        assert await settle(lambda: endpoint.in_flight_count == 0)
        assert await settle_running(client)
        result = await client.call_tool("double", {"n": 21})
        assert result.content == [TextContent(text="21:42")]


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
@pytest.mark.parametrize("transport", ["memory", "http"])
async def test_clients_that_leave_mid_question_leave_nothing_behind(
    transport: str, mode: str
) -> None:
    """Each client leaves while its call's question is open; the server ends the call,
    and an HTTP server its session and every stored event."""
    server = load_server()
    app = server.http_app()
    module = load_module(LOAD_SERVER)

    async def leave_mid_question(target: Any, round_number: int) -> None:
        asked = anyio.Event()

        async def walk_away(
            context: ClientRequestContext, params: ElicitRequestParams
        ) -> ElicitResult:
            asked.set()
            await anyio.sleep_forever()
            raise AssertionError("unreachable")

        with anyio.CancelScope() as scope:
            async with (
                Client(target, mode=mode, elicitation_callback=walk_away) as client,
                anyio.create_task_group() as tg,
            ):
                tg.start_soon(client.call_tool, "double", {"n": round_number})
                await asked.wait()
                scope.cancel()

    async with serve(app) if transport == "http" else _nothing() as running:
        target = running.url if running is not None else server
        idle = running_tasks()
        for round_number in range(ROUNDS // 3):
            await leave_mid_question(target, round_number)
        assert await settle(lambda: module.running_calls == 0)
        if transport == "http":  # its one stateless connection serves every 2026 request
            assert await settle(lambda: not app.sessions), list(app.sessions)
        else:  # each in-memory connection ends with its client, tasks and all
            assert await settle(lambda: running_tasks() <= idle), running_tasks()
        assert len(app.event_store) == 0  # type: ignore[arg-type]
        async with Client(target, mode=mode, elicitation_callback=answer) as client:
            result = await client.call_tool("double", {"n": 4})
        assert result.content == [TextContent(text="4:8")]


@asynccontextmanager
async def _nothing() -> AsyncGenerator[None, None]:
    yield None


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_eliciting_calls_leave_nothing_for_the_garbage_collector(mode: str) -> None:
    """A call that asks, in either era, frees everything it made by reference counting.

    A 2026-07-28 tool raises ``InputNeeded`` on every round that asks; kept with its
    traceback, it held the tool's whole call stack in a cycle, so each call left work for
    the collector (a pause per few hundred calls on a busy server).
    """
    async with Client(load_server(), mode=mode, elicitation_callback=answer) as client:
        for n in range(3):  # warm caches (forms, validators) before counting
            await client.call_tool("double", {"n": n})
        results: dict[int, Any] = {}

        async def call(n: int) -> None:
            results[n] = (await client.call_tool("double", {"n": n})).content

        gc.collect()
        gc.disable()
        try:
            # Several calls in flight at once on the one client, as a busy host has them.
            for first in range(0, ROUNDS, 10):
                async with anyio.create_task_group() as tg:
                    for n in range(first, first + 10):
                        tg.start_soon(call, n)
            unreachable = gc.collect()
        finally:
            gc.enable()
    assert results == {n: [TextContent(text=f"{n}:{2 * n}")] for n in range(ROUNDS)}
    assert unreachable == 0
