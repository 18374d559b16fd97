"""The rules of a sampling request the schema's types leave open, checked by whichever
side sees them first: tool uses and results pair up, ``maxTokens`` is positive, the
tools offered have distinct names, and a ``required`` tool choice comes with tools.

A server checks before it asks (so its author learns of the mistake at once); a client
checks what it receives (so a careless server cannot confuse the user's model, or,
with a negative ``maxTokens``, give itself tokens from the client's budget).

The answer has a rule too (``check_sampling_answer``): the model uses only the tools it
was offered, and none under ``toolChoice`` ``"none"``. The client checks it before the
answer leaves, so a server never runs a tool it did not offer on a model's say-so.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from answerback.types._errors import InvalidParamsError
from answerback.types._models import (
    CreateMessageRequestParams,
    CreateMessageResult,
    SamplingMessage,
    Tool,
    ToolChoice,
    ToolResultContent,
    ToolUseContent,
)


def check_sampling_request(
    messages: Sequence[SamplingMessage],
    max_tokens: int,
    tools: Sequence[Tool] | None = None,
    tool_choice: ToolChoice | None = None,
) -> None:
    """Raise ``InvalidParamsError`` unless ``max_tokens`` is positive, the tools have
    distinct names, a ``required`` tool choice has tools to choose from, and ``messages``
    keep the tool-use rules (``check_tool_balance``)."""
    if max_tokens < 1:
        raise InvalidParamsError(
            f"maxTokens must be at least 1, not {max_tokens}: it is the most the model may write."
        )
    names = [tool.name for tool in tools or ()]
    if len(set(names)) != len(names):
        raise InvalidParamsError(
            f"tools {_repeated(names)} are offered more than once; give each tool one name."
        )
    if tool_choice is not None and tool_choice.mode == "required" and not names:
        raise InvalidParamsError(
            'toolChoice "required" needs at least one tool in tools: the model must use one.'
        )
    check_tool_balance(messages)


class SamplingAnswerError(ValueError):
    """A sampling answer that breaks its request's rules (``check_sampling_answer``)."""


def check_sampling_answer(params: CreateMessageRequestParams, answer: CreateMessageResult) -> None:
    """Raise ``SamplingAnswerError`` if ``answer`` uses a tool ``params`` did not let the
    model use: any tool when none were offered or ``toolChoice`` is ``"none"`` (the
    schema: "Model MUST NOT use any tools"), else one whose name was not offered."""
    blocks = answer.content if isinstance(answer.content, list) else [answer.content]
    used = [block.name for block in blocks if isinstance(block, ToolUseContent)]
    if not used:
        return
    offered = {tool.name for tool in params.tools or ()}
    if not offered:
        raise SamplingAnswerError(f"it uses {_named(used)}, but the request offered no tools.")
    if params.tool_choice is not None and params.tool_choice.mode == "none":
        raise SamplingAnswerError(
            f'it uses {_named(used)}, but the request set toolChoice "none": the model must '
            "not use any tools."
        )
    unknown = [name for name in used if name not in offered]
    if unknown:
        raise SamplingAnswerError(f"it uses {_named(unknown)}, which the request did not offer.")


_NAMES_SHOWN = 3


def _named(names: list[str]) -> str:
    """Tool names for an error message: a few, each cut short (a model makes them up)."""
    distinct = sorted(set(names))
    shown = ", ".join(repr(name[:64]) for name in distinct[:_NAMES_SHOWN])
    more = len(distinct) - _NAMES_SHOWN
    return f"the tool{'s' if len(distinct) > 1 else ''} {shown}" + (
        f" and {more} more" if more > 0 else ""
    )


def _repeated(ids: list[str]) -> list[str]:
    return sorted(key for key, count in Counter(ids).items() if count > 1)


def check_tool_balance(messages: Sequence[SamplingMessage]) -> None:
    """Raise ``InvalidParamsError`` unless tool uses and tool results pair up.

    Every assistant turn with ``tool_use`` blocks must be followed by a user turn made
    only of ``tool_result`` blocks answering exactly those ids, and a ``tool_result``
    may appear nowhere else. Ids are unique within a turn: one result answers one use.
    """
    expected: set[str] | None = None
    for index, message in enumerate(messages):
        blocks = message.content if isinstance(message.content, list) else [message.content]
        use_ids = [b.id for b in blocks if isinstance(b, ToolUseContent)]
        uses = set(use_ids)
        results = [b for b in blocks if isinstance(b, ToolResultContent)]
        where = f"messages[{index}]"
        if len(uses) != len(use_ids):
            raise InvalidParamsError(
                f"{where}: tool use ids {_repeated(use_ids)} appear more than once; give "
                "each tool use an id of its own."
            )
        result_ids = [r.tool_use_id for r in results]
        if len(set(result_ids)) != len(result_ids):
            raise InvalidParamsError(
                f"{where}: tool uses {_repeated(result_ids)} have more than one result; "
                "answer each tool use once."
            )
        if results and len(results) != len(blocks):
            raise InvalidParamsError(
                f"{where}: a message with tool results must contain only tool results."
            )
        if expected is not None:
            answered = set(result_ids)
            if message.role != "user" or answered != expected:
                missing = sorted(expected - answered)
                raise InvalidParamsError(
                    f"{where}: expected a user message with tool results for "
                    f"{sorted(expected)}; missing {missing or 'none'}, "
                    f"unexpected {sorted(answered - expected) or 'none'}."
                )
            expected = None
        elif results:
            raise InvalidParamsError(
                f"{where}: tool results must directly follow the assistant message whose "
                "tool uses they answer."
            )
        if uses:
            if message.role != "assistant":
                raise InvalidParamsError(f"{where}: only assistant messages may use tools.")
            expected = uses
    if expected is not None:
        raise InvalidParamsError(
            f"messages[{len(messages) - 1}]: its tool uses {sorted(expected)} have no results; "
            "append a user message with a tool_result for each before sampling again."
        )
