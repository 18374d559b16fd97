"""``ctx.sample``: a server borrows the client's model and runs the tools it calls.

An answerback server and an answerback client talk to each other; the client's sampling
callback is a scripted model (a test double for the LLM) that calls tools for a few rounds
and then answers. Every behaviour is checked in both protocol generations: on a legacy
connection each round is a live ``sampling/createMessage`` request; on 2026-07-28 each is
an ``InputRequiredResult`` round, and the tool is run again from the start each time, so
the conversation must come out the same on every re-run and each tool call run once.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from itertools import pairwise
from typing import Any

import anyio
import pytest
from http_support import serve
from pydantic import BaseModel
from support import PATIENCE_SECONDS

from answerback import Client, MCPError
from answerback.client import ClientRequestContext
from answerback.server import Context, MCPServer, SamplingLoopError
from answerback.types import (
    METHOD_NOT_FOUND,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    CallToolResult,
    CreateMessageRequestParams,
    CreateMessageResult,
    ElicitRequestParams,
    ElicitResult,
    InputRequiredResult,
    ModelPreferences,
    SamplingCapability,
    SamplingMessage,
    SamplingToolsCapability,
    TextContent,
    ToolChoice,
    ToolResultContent,
    ToolUseContent,
)

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"
WITH_TOOLS = SamplingCapability(tools=SamplingToolsCapability())

Call = tuple[str, dict[str, Any]]
"""A tool use the scripted model makes: the tool's name and its input."""


@pytest.fixture(params=["legacy", MODERN])
def mode(request: pytest.FixtureRequest) -> str:
    return request.param


class Unit(BaseModel):
    unit: str


def sampling_server(**options: Any) -> tuple[MCPServer, Counter[str]]:
    """A server whose tools sample with tools, and a count of every tool run by input."""
    mcp = MCPServer("Travel desk", **options)
    runs: Counter[str] = Counter()

    def weather(city: str) -> str:
        """Today's weather in a city."""
        runs[f"weather {city}"] += 1
        return f"{city}: {len(city) * 3} C"

    def broken(city: str) -> str:
        """A weather service that is down."""
        runs[f"broken {city}"] += 1
        raise RuntimeError("the weather service is down")

    async def ask_unit(ctx: Context) -> str:
        """Ask the user which unit they want."""
        runs["ask_unit"] += 1
        answer = await ctx.elicit("Which unit?", Unit)
        return answer.data.unit if answer.action == "accept" else "celsius"

    def by_hand() -> InputRequiredResult:
        """A tool that builds its own round (it cannot, inside sampling)."""
        return InputRequiredResult(request_state="opaque")

    @mcp.tool()
    def convert(celsius: float) -> float:
        """Celsius to Fahrenheit."""
        runs[f"convert {celsius}"] += 1
        return celsius * 9 / 5 + 32

    @mcp.tool()
    async def ask(ctx: Context, question: str) -> str:
        reply = await ctx.sample(
            question,
            system_prompt="Be brief.",
            max_tokens=50,
            temperature=0.2,
            stop_sequences=["END"],
            model_preferences=ModelPreferences(speed_priority=1.0),
            metadata={"purpose": "test"},
        )
        return f"{reply.model} said {reply.text!r} in {reply.rounds} round ({reply.stop_reason})"

    @mcp.tool()
    async def plan(ctx: Context, max_rounds: int = 5, tool_choice: str | None = None) -> str:
        choice: Any = tool_choice
        reply = await ctx.sample(
            "Plan a trip.",
            tools=[weather, "convert", broken, ask_unit, by_hand],
            tool_choice=choice,
            max_rounds=max_rounds,
        )
        return json.dumps({"text": reply.text, "rounds": reply.rounds, "kept": len(reply.messages)})

    @mcp.tool()
    async def ask_with_context(ctx: Context) -> str:
        reply = await ctx.sample("What were we saying?", include_context="thisServer")
        return reply.text

    @mcp.tool()
    async def plan_with_every_tool(ctx: Context) -> str:
        reply = await ctx.sample("Plan a trip.", tools=True)
        return reply.text

    @mcp.tool()
    async def plan_with_unknown_tool(ctx: Context) -> str:
        reply = await ctx.sample("Plan a trip.", tools=["teleport"])
        return reply.text

    @mcp.tool()
    async def plan_within_two_rounds(ctx: Context) -> str:
        try:
            await ctx.sample("Plan a trip.", tools=[weather], max_rounds=2)
        except SamplingLoopError as exc:
            return f"{len(exc.messages)} messages, last by {exc.result.model}: {exc}"
        return "finished"

    return mcp, runs


class ScriptedModel:
    """Plays a language model from a script: for each round (counted by the assistant
    turns already in the conversation) either tool uses or a final text. Records the
    request of every round it was sent."""

    def __init__(self, *script: str | Sequence[Call]) -> None:
        self.script = script
        self.seen: list[CreateMessageRequestParams] = []

    async def __call__(
        self, context: ClientRequestContext, params: CreateMessageRequestParams
    ) -> CreateMessageResult:
        self.seen.append(params)
        round_index = sum(message.role == "assistant" for message in params.messages)
        step = self.script[min(round_index, len(self.script) - 1)]
        if isinstance(step, str):
            return CreateMessageResult(
                role="assistant",
                content=TextContent(text=step),
                model="scripted",
                stop_reason="endTurn",
            )
        uses = [
            ToolUseContent(id=f"call-{round_index}-{n}", name=name, input=arguments)
            for n, (name, arguments) in enumerate(step)
        ]
        return CreateMessageResult(
            role="assistant", content=list(uses), model="scripted", stop_reason="toolUse"
        )


@pytest.fixture
def unchecked_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    """The client passes on sampling answers it would refuse (a tool not offered, a tool
    used under toolChoice "none"), as a client that is not answerback might: what the
    server does with them is under test."""

    def unchecked(*_: object) -> None:
        """Lets every answer through."""

    monkeypatch.setattr("answerback.client._session.check_sampling_answer", unchecked)


def client(target: Any, mode: str, model: ScriptedModel | None, **options: Any) -> Client:
    return Client(
        target,
        mode=mode,
        sampling_callback=model,
        sampling_capabilities=WITH_TOOLS if model is not None else None,
        **options,
    )


def text(result: CallToolResult) -> str:
    assert isinstance(result.content[0], TextContent), result
    return result.content[0].text


def results_in(message: SamplingMessage) -> dict[str, tuple[str, bool]]:
    """A tool-results message as ``{tool use id: (text, is error)}``."""
    assert message.role == "user"
    assert isinstance(message.content, list)
    found: dict[str, tuple[str, bool]] = {}
    for block in message.content:
        assert isinstance(block, ToolResultContent), message
        assert isinstance(block.content[0], TextContent)
        found[block.tool_use_id] = (block.content[0].text, bool(block.is_error))
    return found


def assert_balanced(messages: list[SamplingMessage]) -> None:
    """Each assistant turn with tool uses is followed by a user turn of exactly their
    results, and results appear nowhere else."""
    for index, message in enumerate(messages):
        blocks = message.content if isinstance(message.content, list) else [message.content]
        uses = {block.id for block in blocks if isinstance(block, ToolUseContent)}
        if any(isinstance(block, ToolResultContent) for block in blocks):
            before = messages[index - 1].content
            assert isinstance(before, list)
            assert set(results_in(message)) == {
                block.id for block in before if isinstance(block, ToolUseContent)
            }
        if uses:
            assert message.role == "assistant"
            assert set(results_in(messages[index + 1])) == uses


FIVE_ROUNDS: list[str | Sequence[Call]] = [
    [("weather", {"city": "Paris"}), ("weather", {"city": "Rome"})],
    [("convert", {"celsius": 15})],
    [("broken", {"city": "Oslo"})],
    [("weather", {"city": "Lisbon"}), ("convert", {"celsius": 18})],
    "Go to Lisbon: 18 C, or 64.4 F.",
]


# -- plain sampling ------------------------------------------------------------------


async def test_a_plain_sample_in_process(mode: str) -> None:
    """A string becomes one user message; every option reaches the client as given."""
    mcp, _ = sampling_server()
    model = ScriptedModel("Paris.")
    async with client(mcp, mode, model) as connected:
        result = await connected.call_tool("ask", {"question": "Capital of France?"})
    assert text(result) == "scripted said 'Paris.' in 1 round (endTurn)"
    [params] = model.seen
    assert params.messages == [
        SamplingMessage(role="user", content=TextContent(text="Capital of France?"))
    ]
    assert (params.system_prompt, params.max_tokens, params.temperature) == ("Be brief.", 50, 0.2)
    assert params.stop_sequences == ["END"]
    assert params.model_preferences == ModelPreferences(speed_priority=1.0)
    assert params.metadata == {"purpose": "test"}
    assert (params.tools, params.tool_choice, params.include_context) == (None, None, None)


async def test_a_plain_sample_over_http(mode: str) -> None:
    mcp, _ = sampling_server()
    model = ScriptedModel("Paris.")
    async with serve(mcp.http_app()) as running:
        with anyio.fail_after(PATIENCE_SECONDS):
            async with client(running.url, mode, model) as connected:
                result = await connected.call_tool("ask", {"question": "Capital of France?"})
    assert text(result) == "scripted said 'Paris.' in 1 round (endTurn)"
    assert len(model.seen) == 1


# -- the tool loop ---------------------------------------------------------------------


async def check_five_rounds(target: Any, mode: str, runs: Counter[str]) -> None:
    model = ScriptedModel(*FIVE_ROUNDS)
    async with client(target, mode, model) as connected:
        result = await connected.call_tool("plan")
    assert json.loads(text(result)) == {
        "text": "Go to Lisbon: 18 C, or 64.4 F.",
        "rounds": 5,
        "kept": 10,
    }
    seen = model.seen
    assert [len(params.messages) for params in seen] == [1, 3, 5, 7, 9]
    for earlier, later in pairwise(seen):
        assert later.messages[: len(earlier.messages)] == earlier.messages
    for params in seen:
        assert_balanced(params.messages)
        assert [tool.name for tool in params.tools or []] == [
            "weather",
            "convert",
            "broken",
            "ask_unit",
            "by_hand",
        ]
    # The last round forbids tools so the model must answer; the others leave it free.
    assert [params.tool_choice for params in seen] == [None] * 4 + [ToolChoice(mode="none")]
    final = seen[-1].messages
    assert results_in(final[2]) == {
        "call-0-0": ("Paris: 15 C", False),
        "call-0-1": ("Rome: 12 C", False),
    }
    assert results_in(final[4]) == {"call-1-0": ("59.0", False)}
    assert results_in(final[6]) == {
        "call-2-0": ("Error executing tool: the weather service is down", True)
    }
    assert results_in(final[8]) == {
        "call-3-0": ("Lisbon: 18 C", False),
        "call-3-1": ("64.4", False),
    }
    # Each tool use ran exactly once, in either era (2026-07-28 re-runs replay them).
    assert runs == {
        "weather Paris": 1,
        "weather Rome": 1,
        "convert 15.0": 1,
        "broken Oslo": 1,
        "weather Lisbon": 1,
        "convert 18.0": 1,
    }


async def test_five_rounds_of_tools_stay_balanced_in_process(mode: str) -> None:
    mcp, runs = sampling_server()
    await check_five_rounds(mcp, mode, runs)


async def test_five_rounds_of_tools_stay_balanced_over_http(mode: str) -> None:
    mcp, runs = sampling_server()
    async with serve(mcp.http_app()) as running:
        with anyio.fail_after(PATIENCE_SECONDS):
            await check_five_rounds(running.url, mode, runs)


async def test_a_tool_that_asks_the_user_inside_the_loop(mode: str) -> None:
    """A sampled tool may elicit: on 2026-07-28 that is one more round, after which the
    loop resumes where it was and the tool that asked is the only one run again."""
    mcp, runs = sampling_server()
    model = ScriptedModel(
        [("weather", {"city": "Paris"}), ("ask_unit", {})], [("convert", {"celsius": 15})], "Done."
    )
    asked: list[str] = []

    async def person(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
        asked.append(params.message)
        return ElicitResult(action="accept", content={"unit": "kelvin"})

    async with client(mcp, mode, model, elicitation_callback=person) as connected:
        result = await connected.call_tool("plan")
    assert json.loads(text(result))["rounds"] == 3
    assert asked == ["Which unit?"]
    assert results_in(model.seen[1].messages[2]) == {
        "call-0-0": ("Paris: 15 C", False),
        "call-0-1": ("kelvin", False),
    }
    assert len(model.seen) == 3
    assert runs["weather Paris"] == 1
    assert runs["convert 15.0"] == 1
    # Legacy asks live; 2026-07-28 ends the round at the question and runs it again.
    assert runs["ask_unit"] == (1 if mode == "legacy" else 2)


@pytest.mark.usefixtures("unchecked_answers")
async def test_tools_that_cannot_answer_get_error_results(mode: str) -> None:
    mcp, _ = sampling_server()
    model = ScriptedModel([("teleport", {"to": "Mars"}), ("by_hand", {})], "Sorry.")
    async with client(mcp, mode, model) as connected:
        await connected.call_tool("plan")
    assert results_in(model.seen[1].messages[2]) == {
        "call-0-0": (
            "Unknown tool 'teleport'; the tools offered are 'weather', 'convert', 'broken', "
            "'ask_unit', 'by_hand'.",
            True,
        ),
        "call-0-1": (
            "Tool 'by_hand' returned an InputRequiredResult, which a sampled model cannot "
            "answer; inside sampling a tool asks with ctx.elicit (and friends).",
            True,
        ),
    }


async def test_invalid_arguments_and_hidden_failures_are_error_results(mode: str) -> None:
    """Arguments that do not fit the tool's schema are reported as such; with
    ``error_details="redacted"`` an exception's text stays in the server's log."""
    mcp, runs = sampling_server(error_details="redacted")
    model = ScriptedModel([("convert", {"celsius": "hot"}), ("broken", {"city": "Oslo"})], "Hm.")
    async with client(mcp, mode, model) as connected:
        await connected.call_tool("plan")
    results = results_in(model.seen[1].messages[2])
    invalid, invalid_error = results["call-0-0"]
    assert invalid.startswith("Invalid arguments for tool 'convert': celsius: ")
    assert invalid_error
    hidden, hidden_error = results["call-0-1"]
    assert hidden.startswith("Error executing tool; the server logged the details under reference")
    assert "the weather service is down" not in hidden
    assert hidden_error
    assert runs == {"broken Oslo": 1}


async def test_tool_choice_required_binds_the_first_round_only(mode: str) -> None:
    mcp, _ = sampling_server()
    model = ScriptedModel([("convert", {"celsius": 0})], [("convert", {"celsius": 100})], "Hot.")
    async with client(mcp, mode, model) as connected:
        result = await connected.call_tool("plan", {"max_rounds": 3, "tool_choice": "required"})
    assert json.loads(text(result))["rounds"] == 3
    assert [params.tool_choice for params in model.seen] == [
        ToolChoice(mode="required"),
        None,
        ToolChoice(mode="none"),
    ]


async def test_every_server_tool_but_the_caller_with_tools_true(mode: str) -> None:
    mcp, runs = sampling_server()
    model = ScriptedModel([("convert", {"celsius": 100})], "Boiling.")
    async with client(mcp, mode, model) as connected:
        result = await connected.call_tool("plan_with_every_tool")
    assert text(result) == "Boiling."
    assert [tool.name for tool in model.seen[0].tools or []] == [
        "convert",
        "ask",
        "plan",
        "ask_with_context",
        "plan_with_unknown_tool",
        "plan_within_two_rounds",
    ]
    assert runs["convert 100.0"] == 1


async def test_a_tool_name_the_server_does_not_have(mode: str) -> None:
    mcp, _ = sampling_server()
    model = ScriptedModel("Never asked.")
    async with client(mcp, mode, model) as connected:
        result = await connected.call_tool("plan_with_unknown_tool")
    assert result.is_error
    assert text(result).startswith(
        "Error executing tool: Invalid argument for ctx.sample(): tools[0] names no tool of "
        "this server: 'teleport' (it has "
    )
    assert model.seen == []


# -- the round cap -----------------------------------------------------------------------


@pytest.mark.usefixtures("unchecked_answers")
async def test_a_model_that_ignores_tool_choice_none_hits_the_cap(mode: str) -> None:
    mcp, _ = sampling_server()
    model = ScriptedModel([("weather", {"city": "Paris"})])  # calls a tool every round
    async with client(mcp, mode, model) as connected:
        result = await connected.call_tool("plan_within_two_rounds")
    assert text(result) == (
        "4 messages, last by scripted: The client's model called tools (weather) in round 2, "
        "the last that max_rounds=2 allows, although that round asked with toolChoice "
        '"none". Raise max_rounds, or check that the client\'s sampler honours toolChoice.'
    )
    assert [params.tool_choice for params in model.seen] == [None, ToolChoice(mode="none")]


async def test_one_round_allowed_means_no_tool_use(mode: str) -> None:
    mcp, runs = sampling_server()
    model = ScriptedModel("Straight answer.")
    async with client(mcp, mode, model) as connected:
        result = await connected.call_tool("plan", {"max_rounds": 1})
    assert json.loads(text(result))["rounds"] == 1
    assert [params.tool_choice for params in model.seen] == [ToolChoice(mode="none")]
    assert not runs


async def test_max_rounds_below_one_is_refused(mode: str) -> None:
    mcp, _ = sampling_server()
    model = ScriptedModel("Never asked.")
    async with client(mcp, mode, model) as connected:
        result = await connected.call_tool("plan", {"max_rounds": 0})
    assert result.is_error
    assert text(result) == (
        "Error executing tool: Invalid argument for ctx.sample(): max_rounds must be at least "
        "1, not 0. Pass how many sampling requests the tool loop may send, as an int."
    )


# -- what the client declared ------------------------------------------------------------


async def test_without_sampling_the_call_fails_clearly(mode: str) -> None:
    mcp, _ = sampling_server()
    async with client(mcp, mode, None) as connected:
        with pytest.raises(MCPError) as caught:
            await connected.call_tool("ask", {"question": "Anyone there?"})
    if mode == "legacy":
        assert caught.value.code == METHOD_NOT_FOUND
        assert caught.value.message.startswith("Sampling not supported")
    else:
        assert caught.value.code == MISSING_REQUIRED_CLIENT_CAPABILITY
        assert caught.value.message.startswith(
            "Sampling not supported: the request did not declare the client capability "
            '{"sampling": {}}. With answerback\'s Client: pass sampling_callback= to Client'
        )


async def test_include_context_needs_the_sampling_context_capability(mode: str) -> None:
    mcp, _ = sampling_server()
    model = ScriptedModel("Never asked.")
    async with client(mcp, mode, model) as connected:
        with pytest.raises(MCPError) as caught:
            await connected.call_tool("ask_with_context")
    assert caught.value.message.startswith(
        "Sampling with context not supported: the "
        + (
            'client did not declare the capability {"sampling": {"context": {}}} in initialize'
            if mode == "legacy"
            else 'request did not declare the client capability {"sampling": {"context": {}}}'
        )
    )
    assert model.seen == []


async def test_tools_need_the_sampling_tools_capability(mode: str) -> None:
    mcp, runs = sampling_server()
    model = ScriptedModel("Never asked.")
    async with Client(mcp, mode=mode, sampling_callback=model) as connected:
        with pytest.raises(MCPError) as caught:
            await connected.call_tool("plan")
        # Plain sampling still works for this client.
        plain = await connected.call_tool("ask", {"question": "Capital of France?"})
    assert "Sampling with tools not supported" in caught.value.message
    assert '{"sampling": {"tools": {}}}' in caught.value.message
    assert "SamplingToolsCapability" in caught.value.message
    expected = METHOD_NOT_FOUND if mode == "legacy" else MISSING_REQUIRED_CLIENT_CAPABILITY
    assert caught.value.code == expected
    assert text(plain) == "scripted said 'Never asked.' in 1 round (endTurn)"
    assert len(model.seen) == 1
    assert not runs
