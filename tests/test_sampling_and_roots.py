"""Sampling and roots: the server asks the client's model and the client's folders.

Tools on ``tests/servers/asking_server.py`` call ``ctx.session.create_message`` and
``ctx.session.list_roots``; they run in-process and over stdio. The tool_use/tool_result
pairing rules are checked both on the server (before asking) and on the client (on
receipt), each rule shown once.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import FileUrl
from support import SERVERS, client_with_hand_driven_server, target

from answerback import Client, MCPError
from answerback.client import ClientRequestContext
from answerback.server import Context, MCPServer
from answerback.types import (
    INVALID_PARAMS,
    CreateMessageRequestParams,
    CreateMessageResult,
    InvalidParamsError,
    ListRootsResult,
    Root,
    SamplingCapability,
    SamplingMessage,
    SamplingToolsCapability,
    TextContent,
    ToolResultContent,
    ToolUseContent,
)
from answerback.types._sampling_rules import check_tool_balance

pytestmark = pytest.mark.anyio

ASKING_SERVER = SERVERS / "asking_server.py"


@pytest.fixture(params=["memory", "stdio"])
def asking(request: pytest.FixtureRequest) -> Any:
    """The asking test server, in-process or as a stdio subprocess."""
    return target(request.param, ASKING_SERVER)


async def answer_42(
    context: ClientRequestContext, params: CreateMessageRequestParams
) -> CreateMessageResult:
    return CreateMessageResult(
        role="assistant", content=TextContent(text="The answer is 42."), model="my-llm"
    )


async def call_the_weather_tool(
    context: ClientRequestContext, params: CreateMessageRequestParams
) -> CreateMessageResult:
    assert params.tools is not None
    return CreateMessageResult(
        role="assistant",
        content=[ToolUseContent(id="call-1", name=params.tools[0].name, input={"city": "Paris"})],
        model="my-llm",
        stop_reason="toolUse",
    )


async def notebooks(context: ClientRequestContext) -> ListRootsResult:
    return ListRootsResult(
        roots=[Root(uri=FileUrl("file:///home/ada/notebooks"), name="notebooks")]
    )


# -- sampling ------------------------------------------------------------------------------


async def test_sampling_callback_answers_the_servers_question(asking: Any) -> None:
    """The callback gets the full request and its answer becomes the tool's result."""
    seen: list[CreateMessageRequestParams] = []

    async def model(
        context: ClientRequestContext, params: CreateMessageRequestParams
    ) -> CreateMessageResult:
        seen.append(params)
        return await answer_42(context, params)

    async with Client(asking, mode="legacy", sampling_callback=model) as client:
        result = await client.call_tool("ask_model", {"question": "What is 6 x 7?"})
    assert result.content == [TextContent(text="my-llm said: The answer is 42.")]
    [params] = seen
    assert params.messages == [
        SamplingMessage(role="user", content=TextContent(text="What is 6 x 7?"))
    ]
    assert params.max_tokens == 50
    assert params.system_prompt == "Answer in one sentence."
    assert params.tools is None


async def test_without_sampling_callback_the_call_fails(asking: Any) -> None:
    """No sampling callback: the server refuses to ask, with a clear MCPError."""
    async with Client(asking, mode="legacy") as client:
        with pytest.raises(
            MCPError, match=r"^Sampling not supported\nanswerback: .*pass sampling_callback="
        ):
            await client.call_tool("ask_model")


async def test_tools_are_sent_when_the_client_declared_sampling_tools(asking: Any) -> None:
    """With ``sampling.tools`` declared the model can be offered tools and ask to use one."""
    async with Client(
        asking,
        mode="legacy",
        sampling_callback=call_the_weather_tool,
        sampling_capabilities=SamplingCapability(tools=SamplingToolsCapability()),
    ) as client:
        result = await client.call_tool("ask_model_with_tools")
    assert result.content == [TextContent(text="tool use: get_weather({'city': 'Paris'})")]


async def test_tools_are_refused_without_sampling_tools_declared(asking: Any) -> None:
    """A plain sampling callback does not accept tools; the server says so up front."""
    called = False

    async def model(
        context: ClientRequestContext, params: CreateMessageRequestParams
    ) -> CreateMessageResult:
        nonlocal called
        called = True
        return await answer_42(context, params)

    async with Client(asking, mode="legacy", sampling_callback=model) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("ask_model_with_tools")
        assert "not supported" in caught.value.message
        assert "Sampling with tools" in caught.value.message
        assert called is False
        # The refusal is per call: plain sampling still works on the same session.
        plain = await client.call_tool("ask_model")
    assert plain.content == [TextContent(text="my-llm said: The answer is 42.")]


# -- the tool_use / tool_result pairing rules ---------------------------------------------


def _text(role: str, text: str) -> SamplingMessage:
    return SamplingMessage(role=role, content=TextContent(text=text))  # type: ignore[arg-type]


def _uses(role: str, *ids: str) -> SamplingMessage:
    blocks: list[Any] = [ToolUseContent(id=i, name="get_weather", input={}) for i in ids]
    return SamplingMessage(role=role, content=blocks)  # type: ignore[arg-type]


def _results(role: str, *ids: str, extra_text: bool = False) -> SamplingMessage:
    blocks: list[Any] = [ToolResultContent(tool_use_id=i) for i in ids]
    if extra_text:
        blocks.append(TextContent(text="and also..."))
    return SamplingMessage(role=role, content=blocks)  # type: ignore[arg-type]


BALANCED = [_text("user", "Weather?"), _uses("assistant", "a", "b"), _results("user", "a", "b")]

UNBALANCED: dict[str, tuple[list[SamplingMessage], str]] = {
    "results mixed with other content": (
        [
            _text("user", "Weather?"),
            _uses("assistant", "a"),
            _results("user", "a", extra_text=True),
        ],
        "must contain only tool results",
    ),
    "a result for a tool use that is missing": (
        [_text("user", "Weather?"), _results("user", "a")],
        "must directly follow",
    ),
    "a tool use answered by the assistant": (
        [_text("user", "Weather?"), _uses("assistant", "a"), _results("assistant", "a")],
        "expected a user message with tool results",
    ),
    "a tool use not followed by its results": (
        [_uses("assistant", "a"), _text("user", "never mind")],
        "expected a user message with tool results",
    ),
    "one of two tool uses unanswered": (
        [_uses("assistant", "a", "b"), _results("user", "a")],
        "missing ['b']",
    ),
    "a result for an unknown id": (
        [_uses("assistant", "a"), _results("user", "a", "zzz")],
        "unexpected ['zzz']",
    ),
    "a tool use by the user": (
        [_uses("user", "a"), _results("user", "a")],
        "only assistant messages may use tools",
    ),
    "trailing tool uses without results": (
        [_text("user", "Weather?"), _uses("assistant", "a")],
        "have no results",
    ),
    "one id for two tool uses": (
        [_uses("assistant", "a", "a"), _results("user", "a", "a")],
        "tool use ids ['a'] appear more than once",
    ),
    "two results for one tool use": (
        [_uses("assistant", "a"), _results("user", "a", "a")],
        "tool uses ['a'] have more than one result",
    ),
}


def test_balanced_tool_conversation_passes_the_rules() -> None:
    """Uses answered by exactly their results, in the next user turn, are fine."""
    check_tool_balance(BALANCED)


@pytest.mark.parametrize("case", list(UNBALANCED), ids=list(UNBALANCED))
def test_each_pairing_rule_is_enforced(case: str) -> None:
    """Every broken pairing raises InvalidParamsError naming the problem."""
    messages, complaint = UNBALANCED[case]
    with pytest.raises(InvalidParamsError) as caught:
        check_tool_balance(messages)
    assert caught.value.code == INVALID_PARAMS
    assert complaint in caught.value.message


def _server_sampling(messages: list[SamplingMessage]) -> MCPServer:
    server = MCPServer("Sampler")

    @server.tool()
    async def sample(ctx: Context) -> str:
        result = await ctx.session.create_message(messages, max_tokens=10)
        return result.model

    return server


@pytest.mark.parametrize("case", list(UNBALANCED), ids=list(UNBALANCED))
async def test_server_checks_the_pairing_rules_before_asking(case: str) -> None:
    """A tool that sends a broken conversation fails with a ``ValueError`` naming the
    rule, as ``ctx.sample`` does (the tool author's mistake, not the client's params);
    the client is not asked."""
    messages, complaint = UNBALANCED[case]
    asked = False

    async def model(
        context: ClientRequestContext, params: CreateMessageRequestParams
    ) -> CreateMessageResult:
        nonlocal asked
        asked = True
        return await answer_42(context, params)

    async with Client(
        _server_sampling(messages),
        mode="legacy",
        sampling_callback=model,
        sampling_capabilities=SamplingCapability(tools=SamplingToolsCapability()),
    ) as client:
        result = await client.call_tool("sample")
    assert result.is_error
    [block] = result.content
    assert isinstance(block, TextContent)
    assert block.text.startswith(
        "Error executing tool: Invalid argument for ctx.session.create_message(): messages["
    )
    assert complaint in block.text
    assert asked is False


async def test_server_sends_a_balanced_tool_conversation() -> None:
    """The balanced conversation reaches the callback unchanged."""
    seen: list[list[SamplingMessage]] = []

    async def model(
        context: ClientRequestContext, params: CreateMessageRequestParams
    ) -> CreateMessageResult:
        seen.append(params.messages)
        return await answer_42(context, params)

    async with Client(
        _server_sampling(BALANCED),
        mode="legacy",
        sampling_callback=model,
        sampling_capabilities=SamplingCapability(tools=SamplingToolsCapability()),
    ) as client:
        result = await client.call_tool("sample")
    assert result.content == [TextContent(text="my-llm")]
    assert seen == [BALANCED]


def _sampling_request(request_id: int, messages: list[SamplingMessage], **extra: Any) -> Any:
    params = {
        "messages": [m.model_dump(mode="json", by_alias=True, exclude_none=True) for m in messages],
        "maxTokens": 10,
        **extra,
    }
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "sampling/createMessage",
        "params": params,
    }


async def test_client_checks_the_pairing_rules_on_receipt() -> None:
    """A careless server's broken conversation is answered -32602, not shown to the model."""
    asked = False

    async def model(
        context: ClientRequestContext, params: CreateMessageRequestParams
    ) -> CreateMessageResult:
        nonlocal asked
        asked = True
        return await answer_42(context, params)

    async with client_with_hand_driven_server(
        sampling_callback=model,
        sampling_capabilities=SamplingCapability(tools=SamplingToolsCapability()),
    ) as (_, server, _):
        messages, complaint = UNBALANCED["one of two tool uses unanswered"]
        await server.send(_sampling_request(7, messages))
        answer = await server.receive()
    assert answer["id"] == 7
    assert answer["error"]["code"] == INVALID_PARAMS
    assert complaint in answer["error"]["message"]
    assert asked is False


@pytest.mark.parametrize(
    ("max_tokens", "complaint"),
    [
        (0, "maxTokens must be at least 1, not 0"),
        (-1, "maxTokens must be at least 1, not -1"),
        (-(10**9), f"maxTokens must be at least 1, not {-(10**9)}"),
        ("5", "maxTokens: Input should be a valid integer"),
        (True, "maxTokens: Input should be a valid integer"),
        (5.0, "maxTokens: Input should be a valid integer"),
    ],
)
async def test_client_refuses_a_max_tokens_that_is_no_positive_integer(
    max_tokens: object, complaint: str
) -> None:
    """A negative grant reached the model and gave the server tokens back from the
    person's budget, and ``"5"`` or ``true`` was read as a number: each is refused,
    naming the rule, before anyone sees it."""
    asked = False

    async def model(
        context: ClientRequestContext, params: CreateMessageRequestParams
    ) -> CreateMessageResult:
        nonlocal asked
        asked = True
        return await answer_42(context, params)

    async with client_with_hand_driven_server(sampling_callback=model) as (_, server, _):
        request = _sampling_request(9, [_text("user", "Hi")])
        request["params"]["maxTokens"] = max_tokens
        await server.send(request)
        answer = await server.receive()
    assert answer["id"] == 9
    assert answer["error"]["code"] == INVALID_PARAMS
    assert complaint in answer["error"]["message"]
    assert asked is False


WEATHER = {"name": "get_weather", "inputSchema": {"type": "object"}}


@pytest.mark.parametrize(
    ("extra", "complaint"),
    [
        ({"tools": [WEATHER, WEATHER]}, "tools ['get_weather'] are offered more than once"),
        ({"toolChoice": {"mode": "required"}}, 'toolChoice "required" needs at least one tool'),
    ],
    ids=["one tool offered twice", "a required tool choice and no tools"],
)
async def test_client_refuses_tools_no_model_could_honour(
    extra: dict[str, Any], complaint: str
) -> None:
    async with client_with_hand_driven_server(
        sampling_callback=answer_42,
        sampling_capabilities=SamplingCapability(tools=SamplingToolsCapability()),
    ) as (_, server, _):
        await server.send(_sampling_request(10, [_text("user", "Hi")], **extra))
        answer = await server.receive()
    assert answer["error"]["code"] == INVALID_PARAMS
    assert complaint in answer["error"]["message"]


async def test_server_refuses_a_max_tokens_under_one_before_asking() -> None:
    server = MCPServer("Sampler")

    @server.tool()
    async def sample(ctx: Context) -> str:
        result = await ctx.session.create_message([_text("user", "Hi")], max_tokens=0)
        return result.model

    async with Client(server, mode="legacy", sampling_callback=answer_42) as client:
        result = await client.call_tool("sample")
    assert result.is_error
    [block] = result.content
    assert isinstance(block, TextContent)
    assert block.text == (
        "Error executing tool: Invalid argument for ctx.session.create_message(): max_tokens "
        "must be at least 1, not 0. Pass the most tokens the model may write, as an int."
    )


async def test_client_refuses_tools_it_did_not_declare() -> None:
    """A server that sends tools anyway gets -32602 explaining the missing declaration."""
    async with client_with_hand_driven_server(sampling_callback=answer_42) as (_, server, _):
        tools = [{"name": "get_weather", "inputSchema": {"type": "object"}}]
        await server.send(_sampling_request(8, [_text("user", "Hi")], tools=tools))
        answer = await server.receive()
    assert answer["id"] == 8
    assert answer["error"]["code"] == INVALID_PARAMS
    assert "sampling.tools" in answer["error"]["message"]


# -- roots ---------------------------------------------------------------------------------


async def test_list_roots_callback_answers_the_server(asking: Any) -> None:
    """The server sees the client's roots, names and file URLs intact."""
    async with Client(asking, mode="legacy", list_roots_callback=notebooks) as client:
        result = await client.call_tool("list_my_roots")
    assert result.structured_content == {"result": ["notebooks=file:///home/ada/notebooks"]}


async def test_without_roots_callback_the_call_fails(asking: Any) -> None:
    """No roots callback: the server refuses to ask, with a clear MCPError."""
    async with Client(asking, mode="legacy") as client:
        with pytest.raises(
            MCPError, match=r"^List roots not supported\nanswerback: .*pass list_roots_callback="
        ):
            await client.call_tool("list_my_roots")


async def test_roots_list_changed_reaches_the_server(asking: Any) -> None:
    """The client can announce new roots; the connection carries on normally."""
    async with Client(asking, mode="legacy", list_roots_callback=notebooks) as client:
        await client.send_roots_list_changed()
        result = await client.call_tool("list_my_roots")
    assert result.structured_content == {"result": ["notebooks=file:///home/ada/notebooks"]}


async def test_roots_list_changed_is_on_the_wire() -> None:
    """What the server receives is exactly the spec's notification."""
    async with client_with_hand_driven_server(list_roots_callback=notebooks) as (
        client,
        server,
        _,
    ):
        await client.send_roots_list_changed()
        notification = await server.receive()
    assert notification == {"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}


# -- refusals by the client itself ---------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "params", "message"),
    [
        (
            "elicitation/create",
            {"mode": "form", "message": "Name?", "requestedSchema": {"type": "object"}},
            "Elicitation not supported",
        ),
        (
            "sampling/createMessage",
            {"messages": [], "maxTokens": 5},
            "Sampling not supported",
        ),
        ("roots/list", None, "List roots not supported"),
    ],
)
async def test_client_without_callback_refuses_what_the_server_asks_anyway(
    method: str, params: Any, message: str
) -> None:
    """A server that ignores the declaration gets the default refusal as its error."""
    async with client_with_hand_driven_server() as (_, server, _):
        request: dict[str, Any] = {"jsonrpc": "2.0", "id": "ask-1", "method": method}
        if params is not None:
            request["params"] = params
        await server.send(request)
        answer = await server.receive()
    assert answer["id"] == "ask-1"
    assert answer["error"]["message"] == message
