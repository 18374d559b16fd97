"""One HTTP client carries hundreds of calls at once.

When they all wait on a question (legacy), each call holds its response stream while
its question waits, the GET stream holds one more connection, and every answer is a
POST of its own: answers must never queue behind the calls they would finish (with one
shared pool of 100 connections, 99 such calls deadlocked). And a burst opens its
connections at the loop's pace, not all in one turn.
"""

from __future__ import annotations

import anyio
import anyio.lowlevel
import httpx2
import pytest
from http_support import PATIENCE_SECONDS, serve
from http_support.apps import http_app

from answerback import Client
from answerback.client import ClientRequestContext
from answerback.transports.http import StreamableHTTPTransport
from answerback.types import ElicitRequestParams, ElicitResult, TextContent

pytestmark = pytest.mark.anyio

CALLS = 300


def derived(tag: str) -> str:
    """The answer for ``tag``: checkable, and different from the tag."""
    return tag[::-1].upper()


async def test_hundreds_of_calls_waiting_on_questions_at_once() -> None:
    """No question is answered before all of them have arrived, so every call holds its
    stream while its answer travels; each result carries its own call's answer."""
    asked = 0
    all_asked = anyio.Event()

    async def answer_when_all_asked(
        context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult:
        nonlocal asked
        asked += 1
        if asked == CALLS:
            all_asked.set()
        await all_asked.wait()
        tag = params.message.removeprefix("tag=")
        return ElicitResult(action="accept", content={"value": derived(tag)})

    results: dict[str, str] = {}

    async def one_call(client: Client, tag: str) -> None:
        result = await client.call_tool("echo_elicit", {"tag": tag})
        [content] = result.content
        assert isinstance(content, TextContent)
        results[tag] = content.text

    tags = [f"call-{index}" for index in range(CALLS)]
    async with (
        serve(http_app()) as running,
        Client(running.url, mode="legacy", elicitation_callback=answer_when_all_asked) as client,
    ):
        with anyio.fail_after(PATIENCE_SECONDS):
            async with anyio.create_task_group() as tg:
                for tag in tags:
                    tg.start_soon(one_call, client, tag)
        # The connection is still good for more.
        again = await client.call_tool("echo_elicit", {"tag": "after"})
    assert asked == CALLS + 1
    assert results == {tag: f"{tag}:{derived(tag)}" for tag in tags}
    assert again.content == [TextContent(text=f"after:{derived('after')}")]


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_burst_starts_its_posts_at_the_loops_pace(mode: str) -> None:
    """Calls started all at once are handed straight to their POSTs only up to a pool's
    worth (64); the rest start one per loop turn. Started all in one turn, a burst of a
    thousand opened as many connections at once, and a loaded server dropped some."""
    turn = 0
    started_in_turn: list[int] = []

    async def count_turns() -> None:
        nonlocal turn
        while True:
            turn += 1
            await anyio.lowlevel.checkpoint()

    async def record(request: httpx2.Request) -> None:
        if b'"tools/call"' in request.content:
            started_in_turn.append(turn)

    async with (
        serve(http_app()) as running,
        httpx2.AsyncClient(event_hooks={"request": [record]}) as http,
        Client(StreamableHTTPTransport(running.url, http_client=http), mode=mode) as client,
    ):
        await client.call_tool("pause", {"seconds": 0})  # the session's set-up is over
        started_in_turn.clear()
        with anyio.fail_after(PATIENCE_SECONDS):
            async with anyio.create_task_group() as ticking:
                ticking.start_soon(count_turns)
                async with anyio.create_task_group() as burst:
                    for _ in range(CALLS):
                        burst.start_soon(client.call_tool, "pause", {"seconds": 0})
                ticking.cancel_scope.cancel()
    assert len(started_in_turn) == CALLS
    # All at once, the POSTs would start within a few turns (a score on trio, whose
    # HTTP stack checkpoints more); paced, those past the first 64 take a turn each.
    assert max(started_in_turn) - min(started_in_turn) >= CALLS // 2
