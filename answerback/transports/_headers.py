"""The 2026-07-28 request headers: what mirrors what in the body, and how values travel.

``Mcp-Method`` mirrors the method, ``Mcp-Name`` the tool/prompt name or resource URI,
and ``Mcp-Param-{Name}`` a tool argument whose schema carries ``x-mcp-header``. Values
that are not plain visible ASCII (or that look like the sentinel) travel as
``=?base64?...?=``. Load balancers route on these headers; the server checks each one
against the body so the two can never disagree.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any, cast

from answerback.jsonrpc import JSONObject
from answerback.jsonrpc._endpoint import as_object

SESSION_HEADER = "mcp-session-id"
VERSION_HEADER = "mcp-protocol-version"
METHOD_HEADER = "mcp-method"
NAME_HEADER = "mcp-name"
PARAM_HEADER_PREFIX = "mcp-param-"
_SENTINEL = re.compile(r"^=\?base64\?(.*)\?=$", re.DOTALL)
_SAFE = re.compile(r"^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$")
_TOKEN = re.compile(r"^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$")
_MAX_SAFE_INTEGER = 2**53 - 1
NAMED_METHODS = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}


def encode_value(value: str) -> str:
    """A header-safe form of ``value`` (base64 sentinel when needed)."""
    if value == "" or (_SAFE.match(value) and not _SENTINEL.match(value)):
        return value
    return f"=?base64?{base64.b64encode(value.encode()).decode()}?="


def decode_value(header: str) -> str | None:
    """The value a header carries; ``None`` if its base64 is broken."""
    if not header.startswith("=?base64?"):  # the sentinel's start: most values are plain
        return header
    match = _SENTINEL.match(header)
    if match is None:
        return header
    try:
        return base64.b64decode(match.group(1), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError):
        return None


def name_of(message: JSONObject) -> str | None:
    """The body value ``Mcp-Name`` mirrors, for the methods that have one."""
    return named_value(message.get("method"), as_object(message.get("params")))


def named_value(method: object, params: JSONObject | None) -> str | None:
    """``name_of`` for a message's method and params, already looked up."""
    field = NAMED_METHODS.get(method) if isinstance(method, str) else None
    if field is None or params is None:
        return None
    value = params.get(field)
    return value if isinstance(value, str) else None


def header_parameters(input_schema: JSONObject) -> dict[str, tuple[str, ...]]:
    """``x-mcp-header`` name → property path, for a tool's input schema.

    Raises ``ValueError`` naming the problem if an annotation breaks the rules (the
    client must then leave that tool out).
    """
    found: dict[str, tuple[str, ...]] = {}

    def walk(schema: JSONObject, path: tuple[str, ...]) -> None:
        properties = as_object(schema.get("properties")) or {}
        for key, raw in properties.items():
            prop = as_object(raw)
            if prop is None:
                continue
            here = (*path, key)
            header: object = prop.get("x-mcp-header")
            if header is not None:
                if not isinstance(header, str) or not _TOKEN.match(header):
                    raise ValueError(f"x-mcp-header {header!r} on {'.'.join(here)} is not a token")
                if prop.get("type") not in ("string", "integer", "boolean"):
                    raise ValueError(
                        f"x-mcp-header on {'.'.join(here)} needs a string, integer or boolean"
                    )
                if header.lower() in (name.lower() for name in found):
                    raise ValueError(f"x-mcp-header {header!r} is used twice")
                found[header] = here
            walk(prop, here)

    walk(input_schema, ())
    _reject_nested_annotations(input_schema, top=True)
    return found


def _reject_nested_annotations(node: Any, *, top: bool) -> None:
    """``x-mcp-header`` may only sit on properties reachable through ``properties``."""
    if isinstance(node, list):
        for item in cast(list[Any], node):
            _reject_nested_annotations(item, top=False)
        return
    obj = as_object(node)
    if obj is None:
        return
    for key, value in obj.items():
        if key == "properties":
            for prop in (as_object(value) or {}).values():
                _reject_nested_annotations(prop, top=top)
        elif key == "x-mcp-header" and not top:
            raise ValueError("x-mcp-header may only annotate properties reachable via properties")
        elif key != "x-mcp-header":
            _reject_nested_annotations(value, top=False)


def parameter_headers(
    parameters: dict[str, tuple[str, ...]], arguments: JSONObject | None
) -> dict[str, str]:
    """The ``Mcp-Param-*`` headers for a call with ``arguments``."""
    headers: dict[str, str] = {}
    for header, path in parameters.items():
        value = _at(arguments, path)
        if value is None:
            continue
        text = header_text(value)
        if text is not None:
            headers[PARAM_HEADER_PREFIX + header] = encode_value(text)
    return headers


def header_text(value: object) -> str | None:
    """A primitive argument as header text; ``None`` for what headers cannot carry."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value) if abs(value) <= _MAX_SAFE_INTEGER else None
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return value if isinstance(value, str) else None


def _at(arguments: JSONObject | None, path: tuple[str, ...]) -> object:
    node: object = arguments
    for key in path:
        obj = as_object(node)
        if obj is None:
            return None
        node = obj.get(key)
    return node
