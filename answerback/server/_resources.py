"""Resources: data a server exposes by URI, fixed or from a URI template.

A function registered with ``@mcp.resource(uri)`` produces the resource's contents:
``str`` becomes text, ``bytes`` becomes a base64 blob, content objects pass through, and
anything else is served as JSON. A URI with ``{name}`` placeholders is a template; the
placeholders become the function's arguments (``{+name}`` may span ``/``).
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import unquote

import pydantic
import pydantic_core
from pydantic import TypeAdapter

from answerback.server._functions import (
    ANY_VALUE,
    Signature,
    call,
    read_signature,
    unreadable_parameters,
)
from answerback.types import (
    BlobResourceContents,
    InputRequiredResult,
    InvalidParamsError,
    Resource,
    ResourceTemplate,
    TextResourceContents,
)

ResourceContents = TextResourceContents | BlobResourceContents
_PLACEHOLDER = re.compile(r"\{(\+?)([A-Za-z_][A-Za-z0-9_]*)\}")


def is_template(uri: str) -> bool:
    return _PLACEHOLDER.search(uri) is not None


def template_shape(uri: str) -> str:
    """``uri`` with its placeholders' names left out: two templates of the same shape
    (``users://{id}``, ``users://{user_id}``) match exactly the same URIs."""
    return _PLACEHOLDER.sub(lambda match: "{" + match.group(1) + "}", uri)


@dataclass(slots=True)
class RegisteredResource:
    """A fixed resource, or a template with the pattern that recognises its URIs."""

    definition: Resource | ResourceTemplate
    function: Callable[..., Any]
    signature: Signature
    pattern: re.Pattern[str] | None
    parsers: dict[str, TypeAdapter[Any]]
    """A template's parameters by name, each parsing the text a URI gives it to the
    parameter's type; built once, because building one costs far more than a read."""

    @classmethod
    def from_function(
        cls,
        function: Callable[..., Any],
        uri: str,
        *,
        name: str | None,
        title: str | None,
        description: str | None,
        mime_type: str | None,
        context_type: type,
    ) -> RegisteredResource:
        signature = read_signature(function, context_type)
        common: dict[str, Any] = {
            "name": name or function.__name__,
            "title": title,
            "description": description if description is not None else function.__doc__,
            "mime_type": mime_type,
        }
        stray = _PLACEHOLDER.sub("", uri)
        if "{" in stray or "}" in stray:
            raise ValueError(
                f"Invalid argument for mcp.resource(): uri {uri!r} has a brace outside a "
                "placeholder. Write placeholders as {name} or {+name} (a Python identifier: "
                "the function's parameter); a URI holds no other braces."
            )
        if not is_template(uri):
            if signature.parameters:
                raise TypeError(
                    f"resource {uri!r}: a fixed URI has no placeholders to fill "
                    f"{list(signature.parameters)}; use a template such as 'x://{{id}}'"
                )
            return cls(Resource(uri=uri, **common), function, signature, None, {})
        placeholders = [match.group(2) for match in _PLACEHOLDER.finditer(uri)]
        if len(set(placeholders)) != len(placeholders):
            twice = sorted({name for name in placeholders if placeholders.count(name) > 1})
            raise ValueError(
                f"Invalid argument for mcp.resource(): uri {uri!r} has the placeholders "
                f"{twice} more than once. Give each placeholder once; it fills the "
                "function's parameter of that name."
            )
        if set(placeholders) != set(signature.parameters):
            raise TypeError(
                f"resource template {uri!r}: placeholders {placeholders} must be exactly "
                f"the function's parameters {list(signature.parameters)}"
            )
        try:
            parsers = {
                parameter: TypeAdapter[Any](annotation)
                for parameter, (annotation, _) in signature.parameters.items()
            }
            for parser in parsers.values():
                parser.json_schema()
        except pydantic.PydanticUserError:
            which = ", ".join(unreadable_parameters(signature.parameters))
            raise TypeError(
                f"resource template {uri!r}: no URI text can become {which}; annotate "
                "each with str, or a type read from text (int, float, bool, an Enum, a "
                "Literal)"
            ) from None
        return cls(
            ResourceTemplate(uri_template=uri, **common),
            function,
            signature,
            _compile(uri),
            parsers,
        )

    def match(self, uri: str) -> dict[str, str] | None:
        """The template's arguments for ``uri``, or ``None`` if it is not one of ours."""
        if self.pattern is None:
            return (
                {} if isinstance(self.definition, Resource) and self.definition.uri == uri else None
            )
        found = self.pattern.fullmatch(uri)
        if found is None:
            return None
        return {name: unquote(value) for name, value in found.groupdict().items()}

    async def read(
        self, uri: str, arguments: dict[str, str], context: Any
    ) -> list[ResourceContents] | InputRequiredResult:
        kwargs: dict[str, Any] = {}
        for name, parser in self.parsers.items():
            try:
                kwargs[name] = parser.validate_python(arguments[name])
            except pydantic.ValidationError as exc:
                problem = exc.errors(include_url=False)[0]["msg"]
                raise InvalidParamsError(
                    f"Invalid params: {uri!r} gives the template's {name!r} the value "
                    f"{arguments[name]!r}: {problem}."
                ) from None
        if self.signature.context_parameter is not None:
            kwargs[self.signature.context_parameter] = context
        value = await call(self.function, kwargs)
        if isinstance(value, InputRequiredResult):
            return value
        return to_contents(uri, value, self.definition.mime_type)


def to_contents(uri: str, value: Any, mime_type: str | None) -> list[ResourceContents]:
    """A resource function's return value as resource contents."""
    if isinstance(value, TextResourceContents | BlobResourceContents):
        return [value]
    if (
        isinstance(value, Sequence)
        and value
        and all(
            isinstance(item, TextResourceContents | BlobResourceContents)
            for item in value  # type: ignore[misc]
        )
    ):
        return list(value)  # type: ignore[arg-type]
    if isinstance(value, bytes):
        blob = base64.b64encode(value).decode()
        return [
            BlobResourceContents(
                uri=uri, mime_type=mime_type or "application/octet-stream", blob=blob
            )
        ]
    if isinstance(value, str):
        return [TextResourceContents(uri=uri, mime_type=mime_type or "text/plain", text=value)]
    try:
        text = json.dumps(ANY_VALUE.dump_python(value, mode="json"), ensure_ascii=False)
    except (TypeError, ValueError, pydantic_core.PydanticSerializationError):
        kind = type(cast(object, value)).__name__
        raise TypeError(
            f"resource {uri!r} returned {kind}, which JSON cannot hold; return str, bytes, "
            "JSON data (a dict, a list, a pydantic model...), or "
            "TextResourceContents / BlobResourceContents"
        ) from None
    return [TextResourceContents(uri=uri, mime_type=mime_type or "application/json", text=text)]


def _compile(template: str) -> re.Pattern[str]:
    parts: list[str] = []
    position = 0
    for match in _PLACEHOLDER.finditer(template):
        parts.append(re.escape(template[position : match.start()]))
        spans_slashes = match.group(1) == "+"
        parts.append(f"(?P<{match.group(2)}>{'.+' if spans_slashes else '[^/]+'})")
        position = match.end()
    parts.append(re.escape(template[position:]))
    return re.compile("".join(parts))
