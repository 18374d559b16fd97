"""The MCP request headers: what mirrors what in the body, how values travel, and what
an ``Accept`` header accepts.

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
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
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
_PLAIN = re.compile(r"[\x20-\x7e]*")
_JSON_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]{1,6})?")
"""A JSON number, its exponent short enough for ``Decimal`` to hold."""
_QUALITY = re.compile(r"(?:0(?:\.[0-9]{0,3})?|1(?:\.0{0,3})?)")
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


def plain_value(header: str) -> str | None:
    """A received header's value without the whitespace HTTP allows around it; ``None``
    if it holds anything but visible ASCII and spaces (a raw byte past 0x7E, a tab, a
    control character): what a client must send as ``=?base64?...?=`` instead, so a
    server refuses it rather than guess how a proxy read it."""
    value = header.strip(" \t")
    return value if _PLAIN.fullmatch(value) else None


def mirrors(header: str, value: object) -> bool:
    """Whether a decoded ``Mcp-Param-*`` value mirrors the argument ``value``: as text,
    except that an integer argument is compared as a number (``42.0`` mirrors ``42``,
    as the specification advises); a string is never read as a number."""
    text = header_text(value)
    if text is None:
        return False
    if isinstance(value, bool | str):
        return header == text
    return _JSON_NUMBER.fullmatch(header) is not None and Decimal(header) == Decimal(text)


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
        value = argument_at(arguments, path)
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


def argument_at(arguments: JSONObject | None, path: tuple[str, ...]) -> object:
    """The argument at ``path`` (``None`` if there is none)."""
    node: object = arguments
    for key in path:
        obj = as_object(node)
        if obj is None:
            return None
        node = obj.get(key)
    return node


@dataclass(frozen=True, slots=True)
class Acceptance:
    """What an ``Accept`` header says of the two media types an MCP endpoint answers in."""

    json: bool
    """``application/json`` is acceptable."""
    event_stream: bool
    """``text/event-stream`` is acceptable."""
    prefers_json: bool
    """Both are, and ``application/json`` is the one preferred: of higher quality, or of
    the same and listed first."""


@lru_cache(maxsize=16)
def acceptance(accept: str | None) -> Acceptance:
    """Read an ``Accept`` header (RFC 9110 12.5.1): media types case-insensitive, each
    type matched by its most specific range (``application/json``, then
    ``application/*``, then ``*/*``), ``q=0`` meaning not acceptable. A missing or
    empty header accepts neither (a client must list what it takes). Cached: a
    client sends the same value with every request."""
    ranges: dict[str, tuple[float, int]] = {}
    for position, element in enumerate((accept or "").split(",")):
        media_range, *parameters = element.split(";")
        media_range = media_range.strip(" \t").lower()
        kind, slash, subtype = media_range.partition("/")
        if not (slash and _TOKEN.match(kind) and _TOKEN.match(subtype)):
            continue  # not a media range: it accepts nothing
        quality = 1.0
        for parameter in parameters:
            name, _, value = parameter.strip(" \t").partition("=")
            if name.lower() == "q":
                quality = float(value) if _QUALITY.fullmatch(value) else -1.0
        if quality >= 0 and media_range not in ranges:
            ranges[media_range] = (quality, position)
    json = _quality(ranges, "application", "json")
    stream = _quality(ranges, "text", "event-stream")
    return Acceptance(
        json=json[0] > 0,
        event_stream=stream[0] > 0,
        prefers_json=stream[0] > 0 and (-json[0], json[1]) < (-stream[0], stream[1]),
    )


def _quality(ranges: dict[str, tuple[float, int]], kind: str, subtype: str) -> tuple[float, int]:
    """The quality and position of the most specific range matching ``kind/subtype``
    (quality 0 if none does)."""
    for media_range in (f"{kind}/{subtype}", f"{kind}/*", "*/*"):
        found = ranges.get(media_range)
        if found is not None:
            return found
    return 0.0, 0
