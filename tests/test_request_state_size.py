"""A 2026-07-28 call whose ``requestState`` outgrows what the server accepts in a request.

The sealed state holds every answer so far and the client sends it back whole on each
retry, so a long sampling loop with large results grows it round by round. Over
streamable HTTP the retry that no longer fits in ``max_body_bytes`` used to be refused
with a bare 413 ("Payload Too Large: ..."), which said nothing of why;
now the server refuses to hand out that round, and the call fails with an error naming
the size, the limit, the setting to raise and how to keep less.
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from http_support import serve
from support import PATIENCE_SECONDS

from answerback import Client, MCPError
from answerback.client import ClientRequestContext
from answerback.server import Context, MCPServer
from answerback.server._request_state import check_retry_fits
from answerback.types import (
    INTERNAL_ERROR,
    CreateMessageRequestParams,
    CreateMessageResult,
    InputRequiredResult,
    TextContent,
)

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
LIMIT = 1024 * 1024
"""The HTTP app's ``max_body_bytes`` here: small, so a few rounds outgrow it."""
ANSWER_CHARS = 300_000
"""What the client's model says each round: three rounds' worth no longer fit."""


class Model:
    """A client's model that answers every request with ``ANSWER_CHARS`` characters."""

    def __init__(self) -> None:
        self.asked = 0

    async def __call__(
        self, context: ClientRequestContext, params: CreateMessageRequestParams
    ) -> CreateMessageResult:
        self.asked += 1
        return CreateMessageResult(
            role="assistant", content=TextContent(text="x" * ANSWER_CHARS), model="long-winded"
        )


def looping_server() -> MCPServer:
    mcp = MCPServer("looping")

    @mcp.tool()
    async def loop(ctx: Context, rounds: int) -> str:
        """Sample ``rounds`` times, one round each, and count what came back."""
        heard = 0
        for number in range(rounds):
            heard += len((await ctx.sample(f"round {number}")).text or "")
        return str(heard)

    @mcp.tool()
    async def hoard(ctx: Context, size: int) -> InputRequiredResult | str:
        """Keep ``size`` characters in a hand-made state, and ask the client to retry."""
        if ctx.open_state() is not None:
            return "done"
        return InputRequiredResult(request_state=ctx.seal_state({"blob": "y" * size}))

    return mcp


def client(target: Any, model: Model) -> Client:
    return Client(target, mode=MODERN, sampling_callback=model, input_required_max_rounds=20)


async def test_a_loop_whose_retry_would_not_fit_fails_saying_why_over_http() -> None:
    model = Model()
    async with serve(looping_server().http_app(max_body_bytes=LIMIT)) as running:
        with anyio.fail_after(PATIENCE_SECONDS):
            async with client(running.url, model) as connected:
                with pytest.raises(MCPError) as raised:
                    await connected.call_tool("loop", {"rounds": 8})
                # The server is none the worse: a short loop still runs on this client.
                after = await connected.call_tool("loop", {"rounds": 1})
    error = raised.value
    assert error.code == INTERNAL_ERROR
    message = str(error)
    assert message.startswith("Tool 'loop' cannot ask another round: the client's retry")
    assert f"this server accepts at most {LIMIT} bytes in one request" in message
    assert "requestState" in message
    assert "fewer rounds" in message
    assert "max_tokens" in message
    assert "raise max_body_bytes" in message
    assert "Payload Too Large" not in message
    # The third round's state held two answers: its retry (with a third) would not fit,
    # so it was never handed out, and the model was not asked for a third in vain (the
    # one more answer is the short loop's).
    assert model.asked == 2 + 1
    assert not after.is_error
    assert after.content == [TextContent(text=str(ANSWER_CHARS))]


async def test_a_loop_that_stays_under_the_limit_still_works_over_http() -> None:
    model = Model()
    async with serve(looping_server().http_app(max_body_bytes=LIMIT)) as running:
        with anyio.fail_after(PATIENCE_SECONDS):
            async with client(running.url, model) as connected:
                result = await connected.call_tool("loop", {"rounds": 2})
    assert not result.is_error
    assert result.content == [TextContent(text=str(2 * ANSWER_CHARS))]
    assert model.asked == 2


async def test_in_process_a_loop_has_no_request_limit() -> None:
    """No transport stands between an in-process client and the server: nothing to fit."""
    model = Model()
    with anyio.fail_after(PATIENCE_SECONDS):
        async with client(looping_server(), model) as connected:
            result = await connected.call_tool("loop", {"rounds": 5})
    assert result.content == [TextContent(text=str(5 * ANSWER_CHARS))]


async def test_a_hand_made_state_too_large_to_send_back_fails_saying_why_over_http() -> None:
    async with serve(looping_server().http_app(max_body_bytes=LIMIT)) as running:
        with anyio.fail_after(PATIENCE_SECONDS):
            async with client(running.url, Model()) as connected:
                with pytest.raises(MCPError) as raised:
                    await connected.call_tool("hoard", {"size": LIMIT})
                small = await connected.call_tool("hoard", {"size": 10})
    assert raised.value.code == INTERNAL_ERROR
    assert str(raised.value).startswith("Tool 'hoard' cannot ask another round")
    assert "seal less with ctx.seal_state" in str(raised.value)
    assert small.content == [TextContent(text="done")]


def test_the_retry_is_this_request_with_the_new_state_in_place_of_the_old() -> None:
    """700 bytes came in, 400 of them the old state; the new state is 800: the retry is
    about 1100 (its answers as large as this request's)."""
    check_retry_fits("Tool 't'", "s" * 800, 700, "o" * 400, 1100)
    with pytest.raises(MCPError, match=r"about 1101 bytes, of which the requestState .* is 801"):
        check_retry_fits("Tool 't'", "s" * 801, 700, "o" * 400, 1100)
    check_retry_fits("Tool 't'", "s" * 10**9, 700, None, None)  # no limit: nothing to fit
    check_retry_fits("Tool 't'", "s" * 1100, 0, "o" * 400, 1100)  # size unknown: the state
