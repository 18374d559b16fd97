"""Tool arguments typed on a command line: ``key=value ...`` or one JSON object.

A value is read by what the tool's ``inputSchema`` says the property is: a string
property takes the text as it is (``zip=02134`` stays ``"02134"``), anything else is read
as JSON (``count=3``, ``tags=["a","b"]``, ``ok=true``) and falls back to the text when
it is not JSON.
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
    declared: object = (schema or {}).get("properties")
    # A malformed schema (properties as a list, say) types nothing: values read as JSON.
    properties = cast(dict[str, Any], declared) if isinstance(declared, dict) else {}
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


def _value(text: str, spec: object) -> Any:
    types: object = cast(dict[str, Any], spec).get("type") if isinstance(spec, dict) else None
    if types == "string" or (isinstance(types, list) and types == ["string"]):
        return text
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text
