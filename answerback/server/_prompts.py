"""Prompts: message templates a user picks, filled from string arguments.

A function registered with ``@mcp.prompt()`` receives the arguments and returns the
messages: a ``str`` is one user message; ``PromptMessage`` objects, content blocks
(text, images, embedded resources) and strings may be mixed in a list; a
``GetPromptResult`` passes through.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from answerback.server._functions import Signature, call, read_signature
from answerback.types import (
    AudioContent,
    EmbeddedResource,
    GetPromptResult,
    ImageContent,
    InputRequiredResult,
    InvalidParamsError,
    Prompt,
    PromptArgument,
    PromptMessage,
    ResourceLink,
    TextContent,
)

_BLOCKS = (TextContent, ImageContent, AudioContent, EmbeddedResource, ResourceLink)


@dataclass(slots=True)
class RegisteredPrompt:
    definition: Prompt
    function: Callable[..., Any]
    signature: Signature

    @classmethod
    def from_function(
        cls,
        function: Callable[..., Any],
        *,
        name: str | None,
        title: str | None,
        description: str | None,
        context_type: type,
    ) -> RegisteredPrompt:
        signature = read_signature(function, context_type)
        arguments = [
            PromptArgument(name=arg, required=default is ...)
            for arg, (_, default) in signature.parameters.items()
        ]
        definition = Prompt(
            name=name or function.__name__,
            title=title,
            description=description if description is not None else inspect.getdoc(function),
            arguments=arguments or None,
        )
        return cls(definition, function, signature)

    async def render(
        self, arguments: dict[str, str], context: Any
    ) -> GetPromptResult | InputRequiredResult:
        missing = [
            arg
            for arg, (_, default) in self.signature.parameters.items()
            if default is ... and arg not in arguments
        ]
        if missing:
            raise InvalidParamsError(
                f"Prompt {self.definition.name!r} needs the argument(s) {missing}."
            )
        kwargs: dict[str, Any] = {
            arg: arguments[arg] for arg in self.signature.parameters if arg in arguments
        }
        if self.signature.context_parameter is not None:
            kwargs[self.signature.context_parameter] = context
        value = await call(self.function, kwargs)
        if isinstance(value, GetPromptResult | InputRequiredResult):
            return value
        items = cast(Sequence[Any], value) if isinstance(value, list | tuple) else [value]
        return GetPromptResult(
            description=self.definition.description,
            messages=[_message(item) for item in items],
        )


def _message(item: Any) -> PromptMessage:
    if isinstance(item, PromptMessage):
        return item
    if isinstance(item, str):
        return PromptMessage(role="user", content=TextContent(text=item))
    if isinstance(item, _BLOCKS):
        return PromptMessage(role="user", content=item)
    raise TypeError(
        f"a prompt function returned a {type(item).__name__}; return str, PromptMessage, "
        "content blocks, a list of these, or GetPromptResult"
    )
