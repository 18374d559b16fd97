"""Tool arguments typed on a command line: ``key=value ...`` or one JSON object.

A value is read by what the tool's ``inputSchema`` says the property is: a string
property takes the text as it is (``zip=02134`` stays ``"02134"``), anything else is read
as JSON (``count=3``, ``tags=["a","b"]``, ``ok=true``) and falls back to the text when
it is not JSON. A schema that cannot say how to read a value (``properties`` that is not
an object, say) is refused, naming what is malformed; one JSON object never needs it.
"""

from __future__ import annotations

import json
from typing import Any, cast


class ArgumentsError(Exception):
    """The arguments cannot be read; the message says how to write them."""


def parse_arguments(words: list[str], schema: dict[str, Any] | None) -> dict[str, Any]:
    if len(words) == 1 and words[0].lstrip().startswith("{"):
        try:
            value: object = json.loads(words[0])
        except json.JSONDecodeError as exc:
            raise ArgumentsError(f"The arguments are not valid JSON: {exc}.") from exc
        if not isinstance(value, dict):
            raise ArgumentsError('JSON arguments must be one object: {"key": value}.')
        return cast(dict[str, Any], value)
    properties = _properties(schema)
    arguments: dict[str, Any] = {}
    for word in words:
        key, equals, text = word.partition("=")
        if not equals or not key:
            raise ArgumentsError(
                f"{word!r} is not key=value: write arguments as name=value (or one JSON "
                'object such as \'{"name": "Ada"}\').'
            )
        arguments[key] = _value(text, properties.get(key))
    return arguments


def _properties(schema: dict[str, Any] | None) -> dict[str, Any]:
    """The tool's properties, each a schema (an object, or true or false); ``ArgumentsError``
    if the server wrote them otherwise, for then nothing says how to read a value."""
    declared: object = (schema or {}).get("properties")
    if declared is None:
        return {}
    if not isinstance(declared, dict):
        raise _malformed(f'"properties" is {_kind(declared)}, not an object of properties')
    properties = cast(dict[str, object], declared)
    for name, spec in properties.items():
        if not isinstance(spec, dict | bool):
            raise _malformed(f"the property {name!r} is {_kind(spec)}, not a schema object")
    return properties


def _malformed(what: str) -> ArgumentsError:
    return ArgumentsError(
        f"The server's tool has a malformed inputSchema: {what}. Give the arguments as one "
        'JSON object instead, such as \'{"name": "Ada"}\'.'
    )


def _kind(value: object) -> str:
    """What a JSON value is, as a sentence says it: "a list", "text", "null"."""
    if value is None:
        return "null"
    if isinstance(value, str):
        return "text"
    if isinstance(value, int | float) and not isinstance(value, bool):
        return "a number"
    return "a list" if isinstance(value, list) else f"a {type(value).__name__}"


def _value(text: str, spec: object) -> Any:
    types: object = cast(dict[str, Any], spec).get("type") if isinstance(spec, dict) else None
    if types == "string" or (isinstance(types, list) and types == ["string"]):
        return text
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text
