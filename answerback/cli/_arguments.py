"""Tool arguments typed on a command line: ``key=value ...`` or one JSON object.

A value is read by what the tool's ``inputSchema`` says the property is: a string
property takes the text as it is (``zip=02134`` stays ``"02134"``), an object or a list
must be JSON (it is refused, naming the mistake, when it is not), anything else is read
as JSON (``count=3``, ``tags=["a","b"]``, ``ok=true``) and falls back to the text when
it is not JSON. A schema that cannot say how to read a value (``properties`` that is not
an object, say) is refused, naming what is malformed; one JSON object never needs it.
What JSON cannot carry (a lone surrogate, NaN or Infinity, nesting past ``MAX_DEPTH``),
an integer too long to read, and a key given twice are refused here, naming the
argument: sent, they failed the request far from where they were typed.
"""

from __future__ import annotations

import json
import math
import shlex
import sys
from collections.abc import Mapping
from typing import Any, cast

MAX_DEPTH = 100
"""How deep an argument may nest. The encoder stops past 254 levels and answerback's own
server reads 200, the request's own levels counted (a request it cannot read is never
answered); no tool's arguments nest this deep."""


class ArgumentsError(Exception):
    """The arguments cannot be read; the message says how to write them."""


class ArgumentsCancelled(Exception):
    """The person cancelled the form or line that asked a tool's arguments (Ctrl-C, Esc):
    unlike declining it, they stopped the command."""


class _Unsendable(Exception):
    """JSON that was read but cannot be sent; the message says why."""


QUOTING = (
    "a value with spaces or quote marks goes in quotes, as a shell reads it: "
    """name="Ada Lovelace", name="O'Brien", tags='["a", "b"]'"""
)
"""How to quote a value, for a line split as a shell splits it."""


def split_arguments(text: str) -> list[str]:
    """A line of arguments typed at a prompt, split as a shell splits words (one JSON
    object is kept whole); ``ArgumentsError`` for a quote left open."""
    if text.lstrip().startswith("{"):
        return [text]
    try:
        return shlex.split(text)
    except ValueError as exc:  # a quote left open, or a backslash at the very end
        raise ArgumentsError(f"The line could not be read ({exc}): {QUOTING}.") from None


def parse_arguments(words: list[str], schema: dict[str, Any] | None) -> dict[str, Any]:
    if len(words) == 1 and words[0].lstrip().startswith("{"):
        try:
            value = _json(words[0])
        except json.JSONDecodeError as exc:
            raise ArgumentsError(f"The arguments are not valid JSON: {exc}.") from exc
        except _Unsendable as exc:
            raise ArgumentsError(f"The arguments cannot be sent: {exc}.") from None
        if not isinstance(value, dict):
            raise ArgumentsError('JSON arguments must be one object: {"key": value}.')
        arguments = cast(dict[str, Any], value)
    else:
        properties = _properties(schema)
        arguments = {}
        for word in words:
            key, equals, text = word.partition("=")
            if not equals or not key:
                # After a key=value, a word of its own is most likely the rest of that
                # value, split at a space.
                hint = f"; {QUOTING}" if arguments and equals == "" else ""
                raise ArgumentsError(
                    f"{word!r} is not key=value: write arguments as name=value (or one JSON "
                    f'object such as \'{{"name": "Ada"}}\'){hint}.'
                )
            if key in arguments:
                raise ArgumentsError(f"The argument {key!r} is given twice: give it once.")
            try:
                arguments[key] = _value(text, properties.get(key))
            except _Unsendable as exc:
                raise ArgumentsError(f"The argument {key!r} cannot be sent: {exc}.") from None
            except json.JSONDecodeError as exc:
                raise ArgumentsError(
                    f"The argument {key!r} is {_kind_of(properties.get(key))}, and {text!r} is "
                    f"not valid JSON ({exc}): write it as JSON in quotes, such as "
                    f"{key}={_EXAMPLES[_kind_of(properties.get(key))]}."
                ) from None
    for key, value in arguments.items():
        if (problem := _uncarried(key) or _uncarried(value)) is not None:
            raise ArgumentsError(f"The argument {key!r} cannot be sent: {problem}.")
    return arguments


def required_arguments(schema: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The arguments a tool's ``inputSchema`` requires, each once, in its order (what is
    not a name in its ``required`` list ignored)."""
    listed: object = (schema or {}).get("required")
    names = cast(list[object], listed) if isinstance(listed, list) else []
    return tuple(dict.fromkeys(name for name in names if isinstance(name, str)))


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


def _types(spec: object) -> list[str]:
    """The JSON types a property's schema names (``[]``: none, or not as names)."""
    types: object = cast(dict[str, Any], spec).get("type") if isinstance(spec, dict) else None
    if isinstance(types, str):
        return [types]
    if isinstance(types, list) and all(isinstance(t, str) for t in cast(list[object], types)):
        return cast(list[str], types)
    return []


def _kind_of(spec: object) -> str:
    """How an error names a property that must be JSON: "an object" or "a list"."""
    return "an object" if "object" in _types(spec) else "a list"


_EXAMPLES = {"an object": """'{"key": "value"}'""", "a list": """'["a", "b"]'"""}


def _value(text: str, spec: object) -> Any:
    """``text`` as the property ``spec`` reads it; ``JSONDecodeError`` when only JSON
    can be its value (an object or a list) and it is not JSON."""
    types = _types(spec)
    if types == ["string"]:
        return text
    try:
        return _json(text)
    except json.JSONDecodeError:
        if {"object", "array"} & set(types) and set(types) <= {"object", "array", "null"}:
            raise
        return text


def _json(text: str) -> object:
    """``text`` read as JSON (``JSONDecodeError`` if it is not); ``_Unsendable`` for JSON
    that Python cannot read or that would not be sent as written."""
    try:
        return json.loads(text, object_pairs_hook=_object)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise _Unsendable(f"more than {MAX_DEPTH} levels of nesting") from None
    except ValueError:  # the only other: an integer past Python's digit limit
        raise _Unsendable(
            f"an integer of more than {sys.get_int_max_str_digits()} digits, more than Python reads"
        ) from None


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object, refusing a key given twice (``json`` keeps the last one silently)."""
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise _Unsendable(f"the key {key!r} is given twice in one object")
        found[key] = value
    return found


def _uncarried(value: object, depth: int = 0) -> str | None:
    """Why JSON cannot carry ``value`` (nested ``depth`` levels deep), or ``None``."""
    if isinstance(value, str):
        try:
            value.encode()
        except UnicodeEncodeError as exc:
            return (
                f"{value[exc.start]!r} is a lone surrogate, which JSON cannot carry (a byte "
                "that is not UTF-8, or a \\ud800-style escape without its pair)"
            )
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN, Infinity and numbers beyond ±1.8e308 are not JSON"
    if isinstance(value, dict):
        pairs = cast(dict[object, object], value)
        inside = [*pairs, *pairs.values()]
    elif isinstance(value, list):
        inside = cast(list[object], value)
    else:
        return None
    if depth == MAX_DEPTH:
        return f"more than {MAX_DEPTH} levels of nesting"
    return next((why for item in inside if (why := _uncarried(item, depth + 1))), None)
