"""A 2026-07-28 tool, prompt or resource that catches its own questions is asked them;
a ``requestState`` the server refuses is logged with the check it failed.

``InputNeeded`` gets past ``except Exception``, but asyncio keeps what a task raised:
``gather(..., return_exceptions=True)`` returns it as a value, ``task.exception()`` hands
it back, and ``except BaseException`` catches it anywhere. The run then completes
without the answers; the server must ask the questions anyway, as the legacy era does.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, cast

import anyio
import pytest
from pydantic import BaseModel
from support import PATIENCE_SECONDS

import answerback.server._request_state
from answerback import Client, MCPError
from answerback.client import ClientRequestContext
from answerback.server import AcceptedElicitation, Context, MCPServer
from answerback.types import (
    INVALID_PARAMS,
    ElicitRequestParams,
    ElicitResult,
    InputRequiredResult,
    TextContent,
)

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"


class Answer(BaseModel):
    value: str


def value(answered: object) -> str:
    """The answer's value; anything but an accepted answer fails the tool."""
    assert isinstance(answered, AcceptedElicitation), answered
    data: object = cast(AcceptedElicitation[Answer], answered).data
    assert isinstance(data, Answer)
    return data.value


def build_server() -> MCPServer:
    mcp = MCPServer("catches")

    @mcp.tool()
    async def gathered(ctx: Context) -> str:
        results = await asyncio.gather(
            ctx.elicit("first?", Answer), ctx.elicit("second?", Answer), return_exceptions=True
        )
        return str([value(r) for r in results if not isinstance(r, BaseException)])

    @mcp.tool()
    async def waited(ctx: Context) -> str:
        tasks = [asyncio.ensure_future(ctx.elicit(q, Answer)) for q in ("first?", "second?")]
        await asyncio.wait(tasks)
        return str([value(t.result()) for t in tasks if t.exception() is None])

    async def each_or_nothing(ctx: Context) -> list[str]:
        """Both questions in tasks of a task group, each task catching everything."""
        answers: dict[str, str] = {}

        async def ask(question: str) -> None:
            try:
                answered = await ctx.elicit(question, Answer)
            except BaseException:  # the pattern under test
                return
            answers[question] = value(answered)

        async with anyio.create_task_group() as group:
            for question in ("first?", "second?"):
                group.start_soon(ask, question)
        return [answers[q] for q in ("first?", "second?") if q in answers]

    @mcp.tool()
    async def grouped(ctx: Context) -> str:
        return str(await each_or_nothing(ctx))

    @mcp.tool()
    async def failing_after(ctx: Context) -> str:
        """Goes on with what it caught and fails for it: a failure built without the
        answers, which must not reach the client while the questions are open."""
        try:
            answered = await ctx.elicit("first?", Answer)
        except BaseException as caught:  # the pattern under test
            answered = caught
        assert not isinstance(answered, BaseException), "no answer"
        return value(answered)

    @mcp.tool()
    async def asks(ctx: Context) -> str:
        return value(await ctx.elicit("first?", Answer))

    @mcp.prompt()
    async def prompted(ctx: Context) -> str:
        return f"Say {await each_or_nothing(ctx)}"

    @mcp.resource("caught://answers")
    async def read(ctx: Context) -> str:
        return str(await each_or_nothing(ctx))

    return mcp


class Person:
    def __init__(self) -> None:
        self.asked: list[str] = []

    async def elicit(
        self, context: ClientRequestContext, params: ElicitRequestParams
    ) -> ElicitResult:
        self.asked.append(params.message)
        return ElicitResult(action="accept", content={"value": params.message[:-1]})


@pytest.fixture(params=["legacy", MODERN])
def mode(request: pytest.FixtureRequest) -> str:
    return request.param


def text(content: Any) -> str:
    assert isinstance(content, TextContent), content
    return content.text


@pytest.mark.parametrize("tool", ["gathered", "waited"])
async def test_questions_caught_by_asyncio_are_asked(
    tool: str, mode: str, anyio_backend_name: str
) -> None:
    if anyio_backend_name != "asyncio":
        pytest.skip("asyncio.gather and asyncio.wait run on asyncio only")
    person = Person()
    with anyio.fail_after(PATIENCE_SECONDS):
        async with Client(build_server(), mode=mode, elicitation_callback=person.elicit) as c:
            result = await c.call_tool(tool, {})
    assert not result.is_error
    assert text(result.content[0]) == "['first', 'second']"
    assert sorted(person.asked) == ["first?", "second?"]


async def test_questions_caught_in_tasks_are_asked(mode: str) -> None:
    person = Person()
    with anyio.fail_after(PATIENCE_SECONDS):
        async with Client(build_server(), mode=mode, elicitation_callback=person.elicit) as c:
            tool = await c.call_tool("grouped", {})
            prompt = await c.get_prompt("prompted", {})
            resource = await c.read_resource("caught://answers")
    assert text(tool.content[0]) == "['first', 'second']"
    assert text(prompt.messages[0].content) == "Say ['first', 'second']"
    assert getattr(resource.contents[0], "text", None) == "['first', 'second']"
    assert person.asked.count("first?") == 3


async def test_a_failure_built_without_the_answer_waits_for_it(mode: str) -> None:
    person = Person()
    with anyio.fail_after(PATIENCE_SECONDS):
        async with Client(build_server(), mode=mode, elicitation_callback=person.elicit) as c:
            result = await c.call_tool("failing_after", {})
    assert not result.is_error, result
    assert text(result.content[0]) == "first"
    assert person.asked == ["first?"]


# -- a refused requestState is logged, with why and for which call ----------------------


class Clock:
    """Stands in for ``time`` in the sealing module: the test moves it on by hand."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def time(self) -> float:
        return self.now


async def first_round(client: Client) -> InputRequiredResult:
    result = await client.call_tool_round("asks", {})
    assert isinstance(result, InputRequiredResult)
    assert result.request_state is not None
    return result


async def refused_round(client: Client, state: str) -> str:
    with pytest.raises(MCPError) as caught:
        await client.call_tool_round("asks", {}, request_state=state)
    assert caught.value.code == INVALID_PARAMS
    return caught.value.message


def refusals(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        record.getMessage()
        for record in caplog.records
        if record.name == "answerback.server" and "requestState" in record.getMessage()
    ]


async def test_a_refused_state_is_logged_with_the_check_it_failed(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock()
    monkeypatch.setattr(answerback.server._request_state, "time", clock)
    server = build_server()
    caplog.set_level(logging.INFO, logger="answerback.server")
    with anyio.fail_after(PATIENCE_SECONDS):
        async with Client(server, mode=MODERN, elicitation_callback=Person().elicit) as client:
            state = (await first_round(client)).request_state
            assert state is not None
            forged = state[:-4] + ("AAAA" if not state.endswith("AAAA") else "BBBB")
            await refused_round(client, forged)
            clock.now += 601
            await refused_round(client, state)
    logged = refusals(caplog)
    assert logged == [
        "refused the requestState of tools/call 'asks': its seal does not match "
        "this request (altered, or another request's)",
        "refused the requestState of tools/call 'asks': it expired 1.0 s ago (ttl_seconds=600)",
    ]
    assert not any(state[4:20] in line or forged[4:20] in line for line in logged)


async def test_a_replayed_single_use_state_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    server = MCPServer("once", single_use_state=True)

    @server.tool()
    async def confirm(ctx: Context) -> str:
        return value(await ctx.elicit("first?", Answer))

    person = Person()
    with anyio.fail_after(PATIENCE_SECONDS):
        async with Client(server, mode=MODERN, elicitation_callback=person.elicit) as client:
            asked = await client.call_tool_round("confirm", {})
            assert isinstance(asked, InputRequiredResult)
            assert asked.input_requests
            assert asked.request_state is not None
            answers = await client.session.answer_input_requests(asked.input_requests)
            done = await client.call_tool_round(
                "confirm", {}, input_responses=answers, request_state=asked.request_state
            )
            assert not isinstance(done, InputRequiredResult)
            with pytest.raises(MCPError, match="already used"):
                await client.call_tool_round(
                    "confirm", {}, input_responses=answers, request_state=asked.request_state
                )
    assert refusals(caplog) == [
        "refused the requestState of tools/call 'confirm': it was already used (single-use state)"
    ]
