"""One client, a thousand concurrent calls, each asking a question: nothing deadlocks,
nothing is lost, misrouted or answered twice.

Every call to ``double(n)`` asks the client for ``2 * n``; the callback answers from the
question's own text, so a result that names another call's number, a call that never
returns, or a question asked twice all show. Run over every transport and both protocol
generations. The loop is bounded (a fixed number of calls) and the time limit is a
safety net against a hang, never a claim about speed (``make bench`` measures speed).
"""

from __future__ import annotations

from collections import Counter

import anyio
import anyio.lowlevel
import pytest
from http_support import reach_load_server

from answerback import Client
from answerback.client import ClientRequestContext
from answerback.types import ElicitRequestParams, ElicitResult, TextContent

pytestmark = pytest.mark.anyio

CALLS = 1000
SAFETY_NET_SECONDS = 240.0


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
@pytest.mark.parametrize("transport", ["memory", "stdio", "http"])
async def test_a_thousand_concurrent_eliciting_calls(transport: str, mode: str) -> None:
    asked: Counter[int] = Counter()

    async def double(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        n = int(params.message.removeprefix("n="))
        asked[n] += 1
        await anyio.lowlevel.checkpoint()  # let the other calls interleave with this one
        return ElicitResult(action="accept", content={"value": 2 * n})

    results: dict[int, str] = {}
    async with (
        reach_load_server(transport) as target,
        Client(target, mode=mode, elicitation_callback=double) as client,
    ):

        async def call(n: int) -> None:
            result = await client.call_tool("double", {"n": n})
            assert not result.is_error, result
            [content] = result.content
            assert isinstance(content, TextContent)
            results[n] = content.text

        with anyio.fail_after(SAFETY_NET_SECONDS):
            async with anyio.create_task_group() as tg:
                for n in range(CALLS):
                    tg.start_soon(call, n)
        # The server is not left holding any of them.
        assert (await client.call_tool("running")).content == [TextContent(text="0")]

    assert results == {n: f"{n}:{2 * n}" for n in range(CALLS)}
    assert asked == dict.fromkeys(range(CALLS), 1), "a question was asked twice or never"
