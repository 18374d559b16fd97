"""Every ``Client`` method refuses a wrong argument itself, before anything is sent, with
a ``TypeError`` (wrong type) or ``ValueError`` (right type, value not allowed) that
names the method and the argument and says what to pass; pydantic's own error, which
names internal models, is not chained to it. A good call still goes through."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from answerback import Client
from answerback.server import MCPServer
from answerback.types import (
    CompletionArgument,
    CompletionContext,
    InputRequiredResult,
    Prompt,
    PromptReference,
    ResourceTemplateReference,
)

pytestmark = pytest.mark.anyio

LEGACY = "legacy"
MODERN = "2026-07-28"
CURSOR_HINT = "Pass None for the first page, then the next_cursor"
URI_HINT = "Pass the resource's URI as a string."
PROMPT_ARGUMENTS_HINT = "prompt arguments are strings on the wire"
WORDS = CompletionArgument(name="topic", value="te")
Call = Callable[[Client], Awaitable[Any]]


def server() -> MCPServer:
    mcp = MCPServer("Arguments")

    @mcp.prompt()
    def brief(topic: str) -> str:
        return f"Write about {topic}."

    @mcp.resource("notes://today")
    def today() -> str:
        return "Nothing planned."

    @mcp.resource("notes://day/{day}")
    def day(day: str) -> str:
        return f"Nothing planned on {day}."

    @mcp.tool()
    def double(x: int) -> int:
        return 2 * x

    return mcp


async def listening(client: Client, **options: Any) -> None:
    async with client.listen(**options):
        pass


async def answering(client: Client, result: Any) -> None:
    await client.answer_input_requests(result)


# (method, mode, call, exception, where, what to pass)
REFUSALS: list[tuple[str, str, Call, type[Exception], str, str]] = [
    (
        "get_prompt",
        MODERN,
        lambda c: c.get_prompt("brief", {"topic": 5}),  # pyright: ignore[reportArgumentType]
        TypeError,
        "arguments.topic",
        "str(value) or json.dumps(value)",
    ),
    (
        "get_prompt",
        LEGACY,
        lambda c: c.get_prompt("brief", {"topic": None}),  # pyright: ignore[reportArgumentType]
        TypeError,
        "arguments.topic",
        PROMPT_ARGUMENTS_HINT,
    ),
    (
        "get_prompt",
        MODERN,
        lambda c: c.get_prompt("brief", ["topic"]),  # pyright: ignore[reportArgumentType]
        TypeError,
        "arguments:",
        "Pass a dict of argument names to strings",
    ),
    (
        "get_prompt",
        MODERN,
        lambda c: c.get_prompt(5),  # pyright: ignore[reportArgumentType]
        TypeError,
        "name:",
        "Pass the prompt's name as a string.",
    ),
    (
        "read_resource",
        MODERN,
        lambda c: c.read_resource(5),  # pyright: ignore[reportArgumentType]
        TypeError,
        "uri:",
        URI_HINT,
    ),
    (
        "subscribe_resource",
        LEGACY,
        lambda c: c.subscribe_resource(None),  # pyright: ignore[reportArgumentType]
        TypeError,
        "uri:",
        URI_HINT,
    ),
    (
        "unsubscribe_resource",
        LEGACY,
        lambda c: c.unsubscribe_resource(5),  # pyright: ignore[reportArgumentType]
        TypeError,
        "uri:",
        URI_HINT,
    ),
    (
        "set_logging_level",
        LEGACY,
        lambda c: c.set_logging_level("loud"),  # pyright: ignore[reportArgumentType]
        ValueError,
        "level:",
        "'debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert' or 'emergency'",
    ),
    (
        "set_logging_level",
        LEGACY,
        lambda c: c.set_logging_level(7),  # pyright: ignore[reportArgumentType]
        TypeError,
        "level:",
        "Pass one of those levels, as a string.",
    ),
    (
        "list_tools",
        MODERN,
        lambda c: c.list_tools(cursor=5),  # pyright: ignore[reportArgumentType]
        TypeError,
        "cursor:",
        CURSOR_HINT,
    ),
    (
        "list_prompts",
        MODERN,
        lambda c: c.list_prompts(cursor=["page"]),  # pyright: ignore[reportArgumentType]
        TypeError,
        "cursor:",
        CURSOR_HINT,
    ),
    (
        "list_resources",
        LEGACY,
        lambda c: c.list_resources(cursor=2.5),  # pyright: ignore[reportArgumentType]
        TypeError,
        "cursor:",
        CURSOR_HINT,
    ),
    (
        "list_resource_templates",
        MODERN,
        lambda c: c.list_resource_templates(cursor=object()),  # pyright: ignore[reportArgumentType]
        TypeError,
        "cursor:",
        CURSOR_HINT,
    ),
    (
        "complete",
        MODERN,
        lambda c: c.complete("brief", WORDS),  # pyright: ignore[reportArgumentType]
        TypeError,
        "ref:",
        "Pass a PromptReference(name=...) or a ResourceTemplateReference(uri=...).",
    ),
    (
        "complete",
        MODERN,
        lambda c: c.complete(Prompt(name="brief"), WORDS),  # pyright: ignore[reportArgumentType]
        TypeError,
        "ref:",
        "Pass a PromptReference(name=...)",
    ),
    (
        "complete",
        LEGACY,
        lambda c: c.complete({"type": "ref/tool", "name": "double"}, WORDS),  # pyright: ignore[reportArgumentType]
        ValueError,
        "ref:",
        "Pass a PromptReference(name=...)",
    ),
    (
        "complete",
        MODERN,
        lambda c: c.complete(PromptReference(name="brief"), "te"),  # pyright: ignore[reportArgumentType]
        TypeError,
        "argument:",
        "Pass a CompletionArgument(name=..., value=...)",
    ),
    (
        "complete",
        MODERN,
        lambda c: c.complete(PromptReference(name="brief"), {"name": "topic"}),  # pyright: ignore[reportArgumentType]
        ValueError,
        "argument.value: Field required",
        "Pass a CompletionArgument(name=..., value=...)",
    ),
    (
        "complete",
        MODERN,
        lambda c: c.complete(PromptReference(name="brief"), WORDS, "day=mon"),  # pyright: ignore[reportArgumentType]
        TypeError,
        "context:",
        "Pass a CompletionContext(arguments={...})",
    ),
    (
        "call_tool_round",
        MODERN,
        lambda c: c.call_tool_round("double", {"x": 1}, input_responses=[1]),  # pyright: ignore[reportArgumentType]
        TypeError,
        "input_responses:",
        "Pass the dict answer_input_requests() returned",
    ),
    (
        "call_tool_round",
        MODERN,
        lambda c: c.call_tool_round("double", {"x": 1}, request_state=5),  # pyright: ignore[reportArgumentType]
        TypeError,
        "request_state:",
        "Pass the request_state of the InputRequiredResult, unchanged",
    ),
    (
        "listen",
        MODERN,
        lambda c: listening(c, resource_subscriptions="notes://today"),
        TypeError,
        "resource_subscriptions:",
        "Pass a list of resource URIs (strings), or None.",
    ),
    (
        "listen",
        MODERN,
        lambda c: listening(c, resource_subscriptions=["notes://today", 5]),
        TypeError,
        "resource_subscriptions.1:",
        "Pass a list of resource URIs (strings), or None.",
    ),
    (
        "listen",
        MODERN,
        lambda c: listening(c, tools_list_changed="maybe"),
        TypeError,
        "tools_list_changed:",
        "Pass True or False.",
    ),
    # values a lax model would have converted without a word: each is refused
    (
        "listen",
        MODERN,
        lambda c: listening(c, tools_list_changed="no"),  # read as False
        TypeError,
        "tools_list_changed:",
        "Pass True or False.",
    ),
    (
        "listen",
        MODERN,
        lambda c: listening(c, prompts_list_changed=1),  # read as True
        TypeError,
        "prompts_list_changed:",
        "Pass True or False.",
    ),
    (
        "read_resource",
        LEGACY,
        lambda c: c.read_resource(b"notes://today"),  # pyright: ignore[reportArgumentType]
        TypeError,
        "uri:",
        URI_HINT,
    ),
    (
        "get_prompt",
        LEGACY,
        lambda c: c.get_prompt(b"brief", {"topic": "tea"}),  # pyright: ignore[reportArgumentType]
        TypeError,
        "name:",
        "Pass the prompt's name as a string.",
    ),
    (
        "get_prompt",
        MODERN,
        lambda c: c.get_prompt("brief", {"topic": b"tea"}),  # pyright: ignore[reportArgumentType]
        TypeError,
        "arguments.topic",
        "str(value) or json.dumps(value)",
    ),
    (
        "complete",
        LEGACY,
        lambda c: c.complete(PromptReference(name="brief"), {"name": "topic", "value": b"te"}),  # pyright: ignore[reportArgumentType]
        TypeError,
        "argument.value:",
        "Pass a CompletionArgument(name=..., value=...)",
    ),
]


def ids_in_use(client: Client) -> int:
    """The next request id: every request the client sends takes one."""
    return client.session.endpoint.reserve_id()


@pytest.mark.parametrize(
    ("method", "mode", "call", "error", "where", "what_to_pass"),
    REFUSALS,
    ids=[f"{case[0]}-{number}" for number, case in enumerate(REFUSALS)],
)
async def test_a_wrong_argument_is_refused_before_sending_saying_what_to_pass(
    method: str,
    mode: str,
    call: Call,
    error: type[Exception],
    where: str,
    what_to_pass: str,
) -> None:
    async with Client(server(), mode=mode) as client:
        before = ids_in_use(client)
        with pytest.raises(error) as caught:
            await call(client)
        assert type(caught.value) is error
        message = str(caught.value)
        assert message.startswith(f"Invalid argument for {method}(): ")
        assert where in message
        assert what_to_pass in message
        assert "RequestParams" not in message
        assert "validation error" not in message
        assert caught.value.__cause__ is None
        assert caught.value.__suppress_context__
        assert ids_in_use(client) == before + 1, "a request was sent"
        assert client.session.endpoint.pending_count == 0


async def test_every_problem_is_named_and_each_argument_advised_once() -> None:
    async with Client(server()) as client:
        with pytest.raises(TypeError) as caught:
            await client.get_prompt(5, {"topic": 1, "tone": None})  # pyright: ignore[reportArgumentType]
    message = str(caught.value)
    assert "name: Input should be a valid string" in message
    assert "arguments.topic: Input should be a valid string" in message
    assert "arguments.tone: Input should be a valid string" in message
    assert message.count(PROMPT_ARGUMENTS_HINT) == 1


async def test_answers_that_cannot_be_sent_as_json_are_refused_before_sending() -> None:
    async with Client(server(), mode=MODERN) as client:
        before = ids_in_use(client)
        with pytest.raises(TypeError, match=r"input_responses of call_tool_round\(\) cannot"):
            await client.call_tool_round("double", {"x": 1}, input_responses={"k": object()})
        assert ids_in_use(client) == before + 1


async def test_answer_input_requests_takes_an_input_required_result() -> None:
    async with Client(server(), mode=MODERN) as client:
        with pytest.raises(TypeError) as caught:
            await answering(client, {"inputRequests": {}})
    assert str(caught.value) == (
        "answer_input_requests() takes the InputRequiredResult that call_tool_round() "
        "returned, not dict."
    )


async def test_good_arguments_still_go_through_in_the_handshake_era() -> None:
    async with Client(server(), mode=LEGACY) as client:
        prompt = await client.get_prompt("brief", {"topic": "tea"})
        assert prompt.messages
        await client.set_logging_level("info")
        await client.subscribe_resource("notes://today")
        await client.unsubscribe_resource("notes://today")
        assert (await client.list_resources(cursor=None)).resources


async def test_good_arguments_still_go_through_in_2026() -> None:
    async with Client(server(), mode=MODERN) as client:
        assert (await client.list_tools()).tools
        assert (await client.list_prompts(cursor=None)).prompts
        assert (await client.list_resource_templates()).resource_templates
        read = await client.read_resource("notes://today")
        assert read.contents
        await client.complete(PromptReference(name="brief"), WORDS, CompletionContext())
        await client.complete(
            ResourceTemplateReference(uri="notes://day/{day}"),
            {"name": "day", "value": "mon"},  # pyright: ignore[reportArgumentType]
        )
        result = await client.call_tool_round("double", {"x": 2}, input_responses={})
        assert not isinstance(result, InputRequiredResult)
        assert result.structured_content == {"result": 4}
        async with client.listen(tools_list_changed=True, resource_subscriptions=["notes://today"]):
            pass
        # any collection of URIs, not only a list (but never one string)
        for uris in (("notes://today",), {"notes://today"}, frozenset({"notes://today"})):
            async with client.listen(resource_subscriptions=uris):
                pass
