"""answerback on trio as well as asyncio, both ends at once.

Every async test in the suite runs on both backends (see conftest.py); the client and an
in-process server then share the test's loop. Here the server also runs on trio in a
process of its own, serving stdio from worker threads (trio has no pipe streams for the
standard descriptors), while the client runs on whichever backend the test runs on: an
eliciting call is answered in both protocol generations, and a call cancelled while its
question waits stops the server's tool.
"""

from __future__ import annotations

import sys

import anyio
import pytest
from support import PATIENCE_SECONDS, SERVERS

from answerback import Client, StdioServer
from answerback.client import ClientRequestContext
from answerback.types import ElicitRequestParams, ElicitResult, TextContent

pytestmark = pytest.mark.anyio

# The asking server's tools, served by a process whose event loop is trio's.
TRIO_SERVER = (
    "import sys, anyio\n"
    f"sys.path.insert(0, {str(SERVERS)!r})\n"
    "from asking_server import mcp\n"
    "anyio.run(mcp.run_stdio_async, backend='trio')\n"
)


def server_on_trio() -> StdioServer:
    return StdioServer(sys.executable, ["-c", TRIO_SERVER])


class Person:
    """Answers "Name for ..." questions; sits on "Who is waiting?" until cancelled."""

    def __init__(self) -> None:
        self.waiting = anyio.Event()
        self.cancelled = anyio.Event()

    async def __call__(
        self, context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult:
        if params.message.startswith("Name for"):
            return ElicitResult(action="accept", content={"name": "Ada"})
        self.waiting.set()
        try:
            await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            self.cancelled.set()
            raise
        raise AssertionError("unreachable")


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_an_eliciting_call_to_a_server_on_trio(mode: str) -> None:
    async with Client(server_on_trio(), mode=mode, elicitation_callback=Person()) as client:
        with anyio.fail_after(PATIENCE_SECONDS):
            result = await client.call_tool("greet", {"who": "the reader"})
    assert result.content == [TextContent(text="Hello, Ada (the reader).")]


async def test_a_cancelled_call_stops_the_tool_of_a_server_on_trio() -> None:
    person = Person()
    tag = "trio-cancel"
    async with Client(server_on_trio(), mode="legacy", elicitation_callback=person) as client:
        with anyio.fail_after(PATIENCE_SECONDS):
            async with anyio.create_task_group() as tg:
                tg.start_soon(client.call_tool, "wait_for_name", {"tag": tag})
                await person.waiting.wait()
                tg.cancel_scope.cancel()
            await person.cancelled.wait()
            # The server heard the cancellation and cancelled the tool. Its own record
            # is polled: no event crosses the process boundary (fail_after bounds it).
            history: list[str] = []
            while history != ["asking", "cancelled"]:
                result = await client.call_tool("history", {"tag": tag})
                assert result.structured_content is not None
                history = result.structured_content["result"]
                assert history in (["asking"], ["asking", "cancelled"]), history
                await anyio.sleep(0.05)
        # And the connection still serves.
        greeting = await client.call_tool("greet", {"who": "after"})
    assert greeting.content == [TextContent(text="Hello, Ada (after).")]
