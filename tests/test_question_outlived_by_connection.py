"""A 2026-07-28 call whose server asked a question ends when the connection ends while
the question is still being answered, and says so in words that fit a call."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from support import PATIENCE_SECONDS, HandDrivenServer

from answerback import Client
from answerback.client import ClientRequestContext
from answerback.jsonrpc import JSONObject
from answerback.types import ConnectionClosedError, ElicitResult

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"


async def test_a_call_whose_question_is_outlived_by_the_connection_says_what_stopped() -> None:
    """It said "Stopped answering the server's questions", which reads as if the
    client had been answering instead of making the call."""
    asking = anyio.Event()

    async def person(context: ClientRequestContext, params: Any) -> ElicitResult:
        asking.set()
        await anyio.sleep_forever()
        raise AssertionError("never answered")

    transport = HandDrivenServer()
    peer = transport.peer
    raised: list[ConnectionClosedError] = []
    with anyio.fail_after(PATIENCE_SECONDS):
        async with anyio.create_task_group() as tg:

            async def serve() -> None:
                discover = await peer.receive()
                result: JSONObject = {"supportedVersions": [MODERN], "capabilities": {"tools": {}}}
                await peer.send({"jsonrpc": "2.0", "id": discover["id"], "result": result})
                call = await peer.receive()
                assert call["method"] == "tools/call", call
                question = {
                    "method": "elicitation/create",
                    "params": {
                        "mode": "form",
                        "message": "Your name?",
                        "requestedSchema": {
                            "type": "object",
                            "properties": {"name": {"type": "string"}},
                        },
                    },
                }
                needed: JSONObject = {
                    "resultType": "input_required",
                    "inputRequests": {"q": question},
                    "requestState": "s",
                }
                await peer.send({"jsonrpc": "2.0", "id": call["id"], "result": needed})
                await asking.wait()
                peer.write_stream.close()  # the server is gone

            tg.start_soon(serve)
            async with Client(transport, mode=MODERN, elicitation_callback=person) as client:
                try:
                    await client.call_tool("sign_up")
                except ConnectionClosedError as exc:
                    raised.append(exc)
    [exc] = raised
    assert exc.message.startswith("Stopped waiting for the answer to the server's question: ")
