"""Resources: data a server exposes by URI, fixed or from a URI template.

A function registered with ``@mcp.resource(uri)`` produces the resource's contents:
``str`` becomes text, ``bytes`` becomes a base64 blob, content objects pass through, and
anything else is served as JSON, except ``None`` and NaN or Infinity, which are errors
naming the resource (served, they would be the JSON ``null``, which says nothing of what
went wrong). A URI with ``{name}`` placeholders is a template; the placeholders become
the function's arguments (``{+name}`` may span ``/``), each a type URI text can become.
A template may end with an RFC 6570 form-style query, ``{?q,limit}`` (or ``{&q,limit}``
after a fixed ``?k=v``): its parameters come in any order, and one left out takes the
function's default.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast
from urllib.parse import unquote, unquote_plus

import pydantic
import pydantic_core
from pydantic import TypeAdapter

from answerback.server._functions import (
    ANY_VALUE,
    Signature,
    call,
    read_signature,
    type_name,
    unreadable_parameters,
)
from answerback.server._literals import reading_literal_text
from answerback.types import (
    BlobResourceContents,
    Icon,
    InputRequiredResult,
    InvalidParamsError,
    Resource,
    ResourceTemplate,
    TextResourceContents,
)

ResourceContents = TextResourceContents | BlobResourceContents
_PLACEHOLDER = re.compile(r"\{(\+?)([A-Za-z_][A-Za-z0-9_]*)\}")
_QUERY = re.compile(r"\{([?&])([A-Za-z_][A-Za-z0-9_]*(?:,[A-Za-z_][A-Za-z0-9_]*)*)\}\Z")
"""A form-style query expression (``{?a,b}``, or ``{&a,b}`` continuing a fixed query),
which ends a template."""
_EXPRESSION = re.compile(r"\{[^{}]*\}")
_SUPPORTED = (
    "answerback serves {name}, {+name} (which may span '/') and, at the very end, a "
    "query {?a,b} (or {&a,b} after a fixed '?k=v'), each name a Python identifier: the "
    "function's parameter"
)

_TEXT_SCHEMA_TYPES = frozenset({"string", "integer", "number", "boolean", "null"})
"""The JSON Schema types a template parameter may have: what a URI's text can become
(``null`` for the ``None`` of ``int | None``)."""


def is_template(uri: str) -> bool:
    return _PLACEHOLDER.search(uri) is not None or _QUERY.search(uri) is not None


@dataclass(frozen=True, slots=True)
class QueryPart:
    """A template's closing query: the names it may give, and the fixed ``k=v`` pairs a
    ``{&...}`` template's URI must also have."""

    names: tuple[str, ...]
    fixed: tuple[tuple[str, str], ...]

    def arguments(self, query: str) -> dict[str, str] | None:
        """The names ``query`` gives (decoded), or ``None`` if it is not this query's:
        a pair it does not know, a name given twice, or a fixed pair missing."""
        given: dict[str, str] = {}
        for pair in filter(None, query.split("&")):
            key, _, value = pair.partition("=")
            key, value = unquote_plus(key), unquote_plus(value)
            if key in given or (key not in self.names and (key, value) not in self.fixed):
                return None
            given[key] = value
        if any(given.get(key) != value for key, value in self.fixed):
            return None
        return {name: value for name, value in given.items() if name in self.names}


def _split_query(uri: str) -> tuple[str, QueryPart | None]:
    """``uri`` without its closing query expression, and that query (``None`` if none)."""
    found = _QUERY.search(uri)
    if found is None:
        return uri, None
    base, names = uri[: found.start()], tuple(found.group(2).split(","))
    if found.group(1) == "?":
        if "?" in base:
            raise ValueError(
                f"Invalid argument for mcp.resource(): uri {uri!r} has a fixed query, so "
                "{?...} would start a second one; continue it with {&...} instead."
            )
        return base, QueryPart(names, ())
    if "?" not in base:
        raise ValueError(
            f"Invalid argument for mcp.resource(): uri {uri!r} has no fixed query for "
            "{&...} to continue; start the query with {?...} instead."
        )
    base, _, literal = base.partition("?")
    if "{" in literal or "}" in literal:
        raise ValueError(
            f"Invalid argument for mcp.resource(): uri {uri!r} has a placeholder in its "
            "fixed query; name it in the {&...} expression instead."
        )
    fixed = tuple(
        (unquote_plus(key), unquote_plus(value))
        for key, _, value in (pair.partition("=") for pair in filter(None, literal.split("&")))
    )
    return base, QueryPart(names, fixed)


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
    query: QueryPart | None = None
    """A template's closing query; ``pattern`` then matches the URI before its ``?``."""

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
        icons: list[Icon] | None = None,
        meta: dict[str, Any] | None = None,
    ) -> RegisteredResource:
        signature = read_signature(function, context_type)
        common: dict[str, Any] = {
            "name": name or function.__name__,
            "title": title,
            "description": description if description is not None else function.__doc__,
            "mime_type": mime_type,
            "icons": icons,
            "meta": meta,
        }
        base, query = _split_query(uri)
        stray = _PLACEHOLDER.sub("", base)
        if "{" in stray or "}" in stray:
            expression = _EXPRESSION.search(stray)
            problem = (
                f"the template expression {expression.group()!r}, a form it does not serve"
                if expression
                else "a brace outside a placeholder"
            )
            raise ValueError(
                f"Invalid argument for mcp.resource(): uri {uri!r} has {problem}. "
                f"{_SUPPORTED}; a URI holds no other braces."
            )
        if not is_template(uri):
            if signature.parameters:
                raise TypeError(
                    f"resource {uri!r}: a fixed URI has no placeholders to fill "
                    f"{list(signature.parameters)}; use a template such as 'x://{{id}}'"
                )
            return cls(Resource(uri=uri, **common), function, signature, None, {})
        placeholders = [match.group(2) for match in _PLACEHOLDER.finditer(base)]
        placeholders += query.names if query is not None else ()
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
                parameter: TypeAdapter[Any](reading_literal_text(annotation))
                for parameter, (annotation, _) in signature.parameters.items()
            }
            not_text = [
                f"{parameter} ({type_name(signature.parameters[parameter][0])})"
                for parameter, parser in parsers.items()
                if not _from_text(parser.json_schema())
            ]
        except pydantic.PydanticUserError:
            raise _no_uri_text(uri, unreadable_parameters(signature.parameters)) from None
        if not_text:
            raise _no_uri_text(uri, not_text)
        return cls(
            ResourceTemplate(uri_template=uri, **common),
            function,
            signature,
            _compile(base if query is not None else uri),
            parsers,
            query,
        )

    def match(self, uri: str) -> dict[str, str] | None:
        """The template's arguments for ``uri``, or ``None`` if it is not one of ours."""
        if self.pattern is None:
            return (
                {} if isinstance(self.definition, Resource) and self.definition.uri == uri else None
            )
        path, _, query = uri.partition("?") if self.query is not None else (uri, "", "")
        found = self.pattern.fullmatch(path)
        if found is None:
            return None
        arguments = {name: unquote(value) for name, value in found.groupdict().items()}
        if self.query is None:
            return arguments
        given = self.query.arguments(query)
        return None if given is None else arguments | given

    async def read(
        self, uri: str, arguments: dict[str, str], context: Any
    ) -> list[ResourceContents] | InputRequiredResult:
        kwargs: dict[str, Any] = {}
        for name, parser in self.parsers.items():
            if name not in arguments:  # a query parameter the URI leaves out
                default = self.signature.parameters[name][1]
                if default is ...:
                    raise InvalidParamsError(
                        f"Invalid params: {uri!r} gives the template no {name!r}, which it "
                        f"needs; add {name}=... to the query."
                    )
                kwargs[name] = default
                continue
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
        value = await call(self.function, kwargs, self.signature.on_loop)
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
    if value is None:
        # The official SDK serves the JSON text "null"; that is no contents, and hides
        # the missing return (or the missing thing) from the client and the author alike.
        raise TypeError(
            f"resource {uri!r} returned None; return its contents (str, bytes, JSON data, "
            "or TextResourceContents / BlobResourceContents), or raise an MCPError to say "
            "why there are none"
        )
    try:
        data = ANY_VALUE.dump_python(value, mode="json")
    except (TypeError, ValueError, pydantic_core.PydanticSerializationError):
        kind = type(cast(object, value)).__name__
        raise TypeError(
            f"resource {uri!r} returned {kind}, which JSON cannot hold; return str, bytes, "
            "JSON data (a dict, a list, a pydantic model...), or "
            "TextResourceContents / BlobResourceContents"
        ) from None
    try:
        text = json.dumps(data, ensure_ascii=False, allow_nan=False)
    except ValueError:  # NaN or Infinity, the only thing JSON-ready data may still hold
        raise ValueError(
            f"resource {uri!r} returned NaN or Infinity, which JSON cannot carry; return "
            "None or a string in its place"
        ) from None
    return [TextResourceContents(uri=uri, mime_type=mime_type or "application/json", text=text)]


def _no_uri_text(uri: str, parameters: list[str]) -> TypeError:
    """The registration error for template parameters no URI text can become."""
    return TypeError(
        f"resource template {uri!r}: no URI text can become {', '.join(parameters)}; "
        "annotate each with str, or a type read from text (int, float, bool, an Enum, a "
        "Literal)"
    )


def _from_text(schema: dict[str, Any]) -> bool:
    """Whether a value of this JSON Schema can be read from a URI's text: a string,
    number, boolean, enum or constant (or a choice of these), not an object or array (a
    model, a dataclass, a list, a dict), which every read would then fail to build."""
    definitions: dict[str, Any] = schema.get("$defs", {})

    def readable(part: dict[str, Any]) -> bool:
        reference = part.get("$ref")
        if isinstance(reference, str):
            part = definitions.get(reference.rsplit("/", 1)[-1], {})
        choices = part.get("anyOf") or part.get("oneOf") or part.get("allOf")
        if choices is not None:
            return all(readable(choice) for choice in choices)
        kind: object = part.get("type")
        kinds = cast(list[object], kind) if isinstance(kind, list) else [kind]
        return all(k is None or k in _TEXT_SCHEMA_TYPES for k in kinds)

    return readable(schema)


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
