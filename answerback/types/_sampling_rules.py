"""The message rules of sampling with tools, checked by whichever side sees them first.

A server checks before it asks (so its author learns of the mistake at once); a client
checks what it receives (so a careless server cannot confuse the user's model).
"""

from __future__ import annotations

from collections.abc import Sequence

from answerback.types._errors import InvalidParamsError
from answerback.types._models import SamplingMessage, ToolResultContent, ToolUseContent


def check_tool_balance(messages: Sequence[SamplingMessage]) -> None:
    """Raise ``InvalidParamsError`` unless tool uses and tool results pair up.

    Every assistant turn with ``tool_use`` blocks must be followed by a user turn made
    only of ``tool_result`` blocks answering exactly those ids, and a ``tool_result``
    may appear nowhere else.
    """
    expected: set[str] | None = None
    for index, message in enumerate(messages):
        blocks = message.content if isinstance(message.content, list) else [message.content]
        uses = {b.id for b in blocks if isinstance(b, ToolUseContent)}
        results = [b for b in blocks if isinstance(b, ToolResultContent)]
        where = f"messages[{index}]"
        if results and len(results) != len(blocks):
            raise InvalidParamsError(
                f"{where}: a message with tool results must contain only tool results."
            )
        if expected is not None:
            answered = {r.tool_use_id for r in results}
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
