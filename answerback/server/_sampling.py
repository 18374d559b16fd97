"""Sampling with a tool loop, the server's side of it: what ``ctx.sample`` runs.

In MCP the server owns the tools a sampled model may call. The client's model answers
with ``tool_use`` blocks; the server runs those tools and asks again with the whole
conversation so far plus a ``tool_result`` for each use. This module is that loop,
written once so that every server gets the details right: the pairing rules checked
before each question (``ServerSession.create_message``), a cap on the rounds with
``toolChoice: none`` on the last so that the model must answer, and a tool that fails
reported to the model as an ``isError`` result instead of ending the conversation.

On 2026-07-28 each round is one ``InputRequiredResult``, and the tool that called
``ctx.sample`` runs again from the start on every retry. The loop then replays: the
model's earlier answers come back from the recorded input responses (keyed by each
question's content) and earlier tool results from the request's ``Memo``, so a re-run
rebuilds the same conversation, runs each tool call once, and only the next round's
question is new.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias, cast

from answerback.jsonrpc import JSONObject
from answerback.server._arguments import bad_value, wrong_type
from answerback.server._asking import Memo, settle
from answerback.server._tools import RegisteredTool, tool_error_result
from answerback.types import (
    CreateMessageResult,
    InputRequiredResult,
    InvalidParamsError,
    MCPError,
    SamplingMessage,
    SamplingMessageContentBlock,
    TextContent,
    Tool,
    ToolChoice,
    ToolResultContent,
    ToolUseContent,
)
from answerback.types._sampling_rules import check_tool_balance

SamplingTools: TypeAlias = Sequence[Callable[..., Any] | str] | Literal[True]
"""What ``ctx.sample(tools=...)`` takes: functions and names of the server's own tools,
or ``True`` for all of the server's tools."""

Ask: TypeAlias = Callable[
    [list[SamplingMessage], list[Tool] | None, ToolChoice | None], Awaitable[CreateMessageResult]
]
"""Sends one ``sampling/createMessage`` with these messages, tools and tool choice."""


@dataclass(frozen=True, slots=True)
class SampleResult:
    """What ``ctx.sample`` returns: the model's final answer and how it got there.

    ``messages`` is the whole conversation: what you sent, each round of tool uses and
    their results, and the final answer last. Pass it (plus a new user message) to
    ``ctx.sample`` again to carry the conversation on.
    """

    result: CreateMessageResult
    """The final ``sampling/createMessage`` result, as the client sent it."""
    messages: list[SamplingMessage]
    rounds: int
    """How many sampling requests it took (1 when the model called no tool)."""

    @property
    def text(self) -> str:
        """The text of the final answer (its text blocks joined; "" if it has none)."""
        return "".join(block.text for block in blocks_of(self.result) if block.type == "text")

    @property
    def content(self) -> list[SamplingMessageContentBlock]:
        """The final answer's content blocks, always as a list."""
        return blocks_of(self.result)

    @property
    def model(self) -> str:
        """The name of the model the client used for the final answer."""
        return self.result.model

    @property
    def stop_reason(self) -> str | None:
        """Why the model stopped (``endTurn``, ``maxTokens``, ``stopSequence``, ...)."""
        return self.result.stop_reason


class SamplingLoopError(RuntimeError):
    """The model still called tools in the last round ``ctx.sample`` allowed.

    That round asks with ``toolChoice: none``, so a client whose model honours it never
    causes this. ``messages`` is the conversation up to that answer, ``result`` the
    answer itself.
    """

    def __init__(
        self, message: str, messages: list[SamplingMessage], result: CreateMessageResult
    ) -> None:
        super().__init__(message)
        self.messages = messages
        self.result = result


def blocks_of(result: CreateMessageResult | SamplingMessage) -> list[SamplingMessageContentBlock]:
    """A result's or message's content as a list (the wire allows one block or several)."""
    return list(result.content) if isinstance(result.content, list) else [result.content]


def as_messages(
    messages: str | SamplingMessage | Sequence[SamplingMessage],
) -> list[SamplingMessage]:
    """The conversation to send: a string is one user message.

    Anything else than a string, a ``SamplingMessage`` or a list of them is refused
    (``TypeError``), and so is an empty list or tool uses and results that do not pair
    up (``ValueError``): the author's mistake, named as ``ctx.sample``'s.
    """
    if isinstance(messages, str):
        return [SamplingMessage(role="user", content=TextContent(text=messages))]
    if isinstance(messages, SamplingMessage):
        return [messages]
    if not isinstance(cast(object, messages), list | tuple):
        raise wrong_type(_CALL, "messages", _MESSAGES_ARE, messages, _MESSAGES_ADVICE)
    conversation = list(messages)
    for index, message in enumerate(conversation):
        if not isinstance(cast(object, message), SamplingMessage):
            raise wrong_type(
                _CALL, f"messages[{index}]", "a SamplingMessage", message, _MESSAGES_ADVICE
            )
    if not conversation:
        raise bad_value(_CALL, "messages", "is empty", _MESSAGES_ADVICE)
    try:
        check_tool_balance(conversation)
    except InvalidParamsError as exc:
        raise bad_value(
            _CALL,
            "messages",
            f"break the tool-use rules: {exc.message.rstrip('.')}",
            "Carry a conversation on from a SampleResult's messages.",
        ) from None
    return conversation


_CALL = "ctx.sample()"
_MESSAGES_ARE = "a string, a SamplingMessage or a list of SamplingMessage"
_MESSAGES_ADVICE = (
    'Pass a string (one user message), or SamplingMessage(role="user", '
    "content=TextContent(text=...)) objects, at least one."
)
_TOOLS_ADVICE = (
    "Pass a list of functions and names of this server's tools, True for all of its tools, or None."
)


def offered_tools(
    tools: SamplingTools | None,
    registered: Mapping[str, RegisteredTool],
    *,
    calling: str | None,
    context_type: type,
) -> dict[str, RegisteredTool]:
    """The tools to offer the model, by name. ``True`` is every registered tool but the
    one calling (a model that called it would start this loop again inside itself);
    a name must be registered; a function is described as ``@mcp.tool()`` would."""
    if tools is None:
        return {}
    if tools is True:
        return {name: tool for name, tool in registered.items() if name != calling}
    if not isinstance(cast(object, tools), str | list | tuple):
        raise wrong_type(_CALL, "tools", "a list, True or None", tools, _TOOLS_ADVICE)
    offered: dict[str, RegisteredTool] = {}
    for index, item in enumerate([tools] if isinstance(tools, str) else tools):
        if not isinstance(item, str) and not callable(item):
            raise wrong_type(
                _CALL, f"tools[{index}]", "a function or a tool's name", item, _TOOLS_ADVICE
            )
        if isinstance(item, str):
            tool = registered.get(item)
            if tool is None:
                raise bad_value(
                    _CALL,
                    f"tools[{index}]",
                    f"names no tool of this server: {item!r} (it has "
                    f"{', '.join(map(repr, registered)) or 'none'})",
                    "Register it with @mcp.tool(), or pass the function itself.",
                )
        else:
            tool = RegisteredTool.from_function(
                item,
                name=None,
                title=None,
                description=None,
                annotations=None,
                structured_output=None,
                context_type=context_type,
            )
        name = tool.definition.name
        if name in offered:
            raise bad_value(
                _CALL,
                "tools",
                f"offers two tools named {name!r}: the model could not tell them apart",
                "Offer each name once.",
            )
        offered[name] = tool
    return offered


class ToolRunner:
    """Runs the tools the model calls, with the tool's own ``Context`` passed in."""

    def __init__(
        self,
        tools: dict[str, RegisteredTool],
        context: Any,
        *,
        redact: bool,
        memo: Memo | None,
    ) -> None:
        self._tools = tools
        self._context = context
        self._redact = redact
        self._memo = memo

    @property
    def definitions(self) -> list[Tool]:
        """The tools as the model is told of them."""
        return [tool.definition for tool in self._tools.values()]

    async def answer(self, use: ToolUseContent) -> ToolResultContent:
        """The result of one tool use, run now or (2026-07-28) kept from an earlier round."""

        async def run() -> JSONObject:
            return await self._run(use)

        if self._memo is None:
            wire = await run()
        else:
            wire = await self._memo.once("tool", use.to_wire(), run)
        return ToolResultContent.model_validate(
            {**wire, "type": "tool_result", "toolUseId": use.id}
        )

    async def _run(self, use: ToolUseContent) -> JSONObject:
        tool = self._tools.get(use.name)
        if tool is None:
            offered = ", ".join(map(repr, self._tools))
            return _error(f"Unknown tool {use.name!r}; the tools offered are {offered}.")
        try:
            result = await tool.call(use.input, self._context)
        except Exception as raised:  # questions (InputNeeded) are BaseExceptions: they pass
            failure = settle(raised)
            if isinstance(failure, MCPError):  # deliberate: its text is meant to be read
                return _error(f"Error executing tool: {failure.message}")
            if not isinstance(failure, Exception):
                raise
            return _tool_result(tool_error_result(use.name, failure, redact=self._redact))
        if isinstance(result, InputRequiredResult):
            return _error(
                f"Tool {use.name!r} returned an InputRequiredResult, which a sampled model "
                "cannot answer; inside sampling a tool asks with ctx.elicit (and friends)."
            )
        return _tool_result(result)


def _tool_result(call_result: JSONObject) -> JSONObject:
    """A ``tools/call`` result as the body of a ``tool_result`` block."""
    body: JSONObject = {"content": call_result.get("content", [])}
    if call_result.get("structuredContent") is not None:
        body["structuredContent"] = call_result["structuredContent"]
    if call_result.get("isError"):
        body["isError"] = True
    return body


def _error(message: str) -> JSONObject:
    return {"content": [{"type": "text", "text": message}], "isError": True}


async def sample_with_tools(
    ask: Ask,
    messages: list[SamplingMessage],
    runner: ToolRunner | None,
    *,
    tool_choice: ToolChoice | None,
    max_rounds: int,
) -> SampleResult:
    """Ask, run the tools the answer calls, ask again with their results; until the
    model answers without tools or ``max_rounds`` requests have been sent.

    ``tool_choice`` goes with every round but the last, except that "required" binds
    only the first (the model has used a tool by then; requiring it again would never
    let it answer); the last round with tools sends ``none``.
    """
    transcript = list(messages)
    tools = runner.definitions if runner is not None else None
    for round_number in range(1, max_rounds + 1):
        choice = tool_choice
        if choice is not None and choice.mode == "required" and round_number > 1:
            choice = None
        if tools is not None and round_number == max_rounds:
            choice = ToolChoice(mode="none")
        result = await ask(transcript, tools, choice)
        transcript.append(SamplingMessage(role=result.role, content=result.content))
        uses = [block for block in blocks_of(result) if isinstance(block, ToolUseContent)]
        if runner is None or not uses:
            return SampleResult(result, transcript, round_number)
        if round_number == max_rounds:
            raise SamplingLoopError(
                f"The client's model called tools ({', '.join(sorted({u.name for u in uses}))}) "
                f"in round {round_number}, the last that max_rounds={max_rounds} allows, "
                'although that round asked with toolChoice "none". Raise max_rounds, or '
                "check that the client's sampler honours toolChoice.",
                transcript,
                result,
            )
        results: list[SamplingMessageContentBlock] = [await runner.answer(use) for use in uses]
        transcript.append(SamplingMessage(role="user", content=results))
    raise AssertionError("unreachable: the last round returns or raises")  # pragma: no cover
