"""What tools, prompts and resources share: reading a function's signature, calling it.

The parameter annotated with ``Context`` (or a subclass) is injected by the server and
never exposed to the client; every other parameter is an input.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, get_type_hints


@dataclass(frozen=True, slots=True)
class Signature:
    """A registered function's inputs, as the server needs them."""

    parameters: dict[str, tuple[Any, Any]]
    """name → (annotation, default; ``...`` when required)."""
    context_parameter: str | None
    returns: Any


def read_signature(function: Callable[..., Any], context_type: type) -> Signature:
    signature = inspect.signature(function)
    hints = get_type_hints(function, include_extras=True)
    parameters: dict[str, tuple[Any, Any]] = {}
    context_parameter: str | None = None
    for parameter in signature.parameters.values():
        annotation = hints.get(parameter.name, Any)
        if isinstance(annotation, type) and issubclass(annotation, context_type):
            context_parameter = parameter.name
            continue
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            raise TypeError(f"{function.__name__!r}: *args and **kwargs cannot be MCP inputs")
        default = ... if parameter.default is parameter.empty else parameter.default
        parameters[parameter.name] = (annotation, default)
    returns = hints.get("return", signature.return_annotation)
    return Signature(parameters, context_parameter, returns)


async def call(function: Callable[..., Any], kwargs: dict[str, Any]) -> Any:
    """Call a sync or async function. Sync ones run on the event loop: keep them quick."""
    value = function(**kwargs)
    if inspect.isawaitable(value):
        value = await value
    return value
