"""A ``Client`` method's arguments, checked before anything is sent.

Each request's params model is built from the caller's arguments here, and what the
model refuses becomes an error worded for the caller: which method, which argument,
what was wrong and what to pass instead. A value of the wrong type is a ``TypeError``,
a value of the right type that is not allowed (an unknown logging level) a
``ValueError``. Models are validated strictly: pydantic would otherwise take bytes for
a string and ``"no"`` for ``False`` without a word. ``call_tool`` checks its own
arguments by hand, on its fast path.
"""

from __future__ import annotations

from typing import Any, TypeVar

import pydantic

from answerback.types import MCPModel
from answerback.types._errors import argument_error

ModelT = TypeVar("ModelT", bound=MCPModel)

_CURSOR = "Pass None for the first page, then the next_cursor of the page before (a string)."
_URI = "Pass the resource's URI as a string."
_FLAG = "Pass True or False."

WHAT_TO_PASS: dict[str, dict[str, str]] = {
    "get_prompt": {
        "name": "Pass the prompt's name as a string.",
        "arguments": (
            "Pass a dict of argument names to strings: prompt arguments are strings on "
            "the wire, so convert any other value yourself, with str(value) or "
            "json.dumps(value)."
        ),
    },
    "list_tools": {"cursor": _CURSOR},
    "list_prompts": {"cursor": _CURSOR},
    "list_resources": {"cursor": _CURSOR},
    "list_resource_templates": {"cursor": _CURSOR},
    "read_resource": {"uri": _URI},
    "subscribe_resource": {"uri": _URI},
    "unsubscribe_resource": {"uri": _URI},
    "set_logging_level": {"level": "Pass one of those levels, as a string."},
    "complete": {
        "ref": "Pass a PromptReference(name=...) or a ResourceTemplateReference(uri=...).",
        "argument": "Pass a CompletionArgument(name=..., value=...), both strings.",
        "context": "Pass a CompletionContext(arguments={...}) of strings, or None.",
    },
    "call_tool_round": {
        "input_responses": (
            "Pass the dict answer_input_requests() returned: each input request's key "
            "mapped to its answer."
        ),
        "request_state": (
            "Pass the request_state of the InputRequiredResult, unchanged (a string), or None."
        ),
    },
    "listen": {
        "tools_list_changed": _FLAG,
        "prompts_list_changed": _FLAG,
        "resources_list_changed": _FLAG,
        "resource_subscriptions": "Pass a list of resource URIs (strings), or None.",
    },
}
"""For each method, what each argument should be: the second half of a refusal."""


class RoundArguments(MCPModel):
    """What ``call_tool_round`` sends besides the tool's name and arguments. Each answer
    is left for the server to check: it knows which question each key asked."""

    input_responses: dict[str, Any] | None = None
    request_state: str | None = None


def request_params(method: str, model: type[ModelT], /, **arguments: Any) -> ModelT:
    """``model`` built from the arguments ``method`` was called with (named as the
    method names them), or the ``TypeError`` or ``ValueError`` that says what to pass.

    The error lists every problem, so pydantic's own error, whose model names mean
    nothing to the caller, is left out of it (``from None``, like ``invalid_params``).
    """
    try:
        return model.model_validate(arguments, strict=True)
    except pydantic.ValidationError as exc:
        raise argument_error(f"{method}()", exc, WHAT_TO_PASS.get(method, {})) from None
