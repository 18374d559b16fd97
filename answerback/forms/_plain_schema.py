"""A quick yes for content that plainly fits a plain JSON Schema.

Checking a tool's structured result against its output schema with jsonschema costs
tens of microseconds even for ``{"result": "text"}``, because jsonschema walks its
keywords and builds a child validator for every property it descends into: on a
2026-07-28 HTTP client, which lists tools by itself and so checks every call, that was
a twentieth of the client's work for an echo. Most output schemas are plain (pydantic
writes types, properties and ``required`` for a flat model), and most results fit them,
so such a schema is turned into one predicate that says yes, in Python's own terms, to
content that fits. It never says no: anything else, and every complaint, still goes to
jsonschema, so the verdict and its wording are jsonschema's alone
(``tests/test_plain_schema.py`` holds the predicate to jsonschema's verdict).

Plain means: ``type`` (one name or a list), ``properties``, ``required``,
``additionalProperties`` (a boolean or a plain schema), ``items`` (one plain schema),
``anyOf`` of plain schemas, a ``$ref`` to the document's own ``$defs`` (not looping),
annotations, and keywords no dialect acts on (a vendor's ``x-...``); no other keyword.
An integer is an ``int`` here (jsonschema also takes ``1.0`` in the newer dialects: that
case goes to it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache
from typing import Any, cast

Test = Callable[[object], bool]

_ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "$comment", "deprecated", "readOnly",
     "writeOnly", "$schema", "$defs", "definitions"}
)  # fmt: skip
_KEYWORDS = frozenset({"type", "properties", "required", "additionalProperties", "items", "anyOf"})
_TYPES: dict[str, Test] = {
    "string": lambda value: isinstance(value, str),
    "integer": lambda value: isinstance(value, int) and not isinstance(value, bool),
    "number": lambda value: isinstance(value, int | float) and not isinstance(value, bool),
    "boolean": lambda value: isinstance(value, bool),
    "null": lambda value: value is None,
    "array": lambda value: isinstance(value, list),
    "object": lambda value: isinstance(value, dict),
}


def plain_test(schema: Mapping[str, Any]) -> Test | None:
    """The quick yes for ``schema``, or ``None`` if it is not plain."""
    definitions: object = schema.get("$defs")
    if not isinstance(definitions, Mapping):
        return _compiled(schema, _Definitions({}))
    return _compiled(schema, _Definitions(cast(Mapping[str, Any], definitions)))


class _Definitions:
    """The document's ``$defs``, each compiled once: a schema may refer to one many times
    over (a hostile one, in every branch of every level), and compiling it again for each
    reference could take exponential time. A reference that loops is not plain."""

    def __init__(self, schemas: Mapping[str, Any]) -> None:
        self._schemas = schemas
        self._compiled: dict[str, Test | None] = {}
        self._compiling: set[str] = set()

    def test(self, name: str) -> Test | None:
        if name in self._compiled:
            return self._compiled[name]
        if name in self._compiling or name not in self._schemas:
            return None
        self._compiling.add(name)
        compiled = _compiled(self._schemas[name], self)
        self._compiling.discard(name)
        self._compiled[name] = compiled
        return compiled


def _compiled(schema: object, definitions: _Definitions) -> Test | None:
    if schema is True:
        return _always
    if not isinstance(schema, Mapping):
        return None
    node = cast(Mapping[str, Any], schema)
    keywords = {keyword for keyword in node.keys() - _ANNOTATIONS if not _ignored(keyword)}
    if "$ref" in keywords:
        return _referenced(node, keywords, definitions)
    if keywords - _KEYWORDS:
        return None
    type_test = _type_test(node.get("type")) if "type" in node else _always
    object_test = _object_test(node, definitions)
    items = node.get("items")
    item_test = _compiled(items, definitions) if "items" in node else _always
    any_of = node.get("anyOf")
    branches = (
        [_compiled(branch, definitions) for branch in cast(list[object], any_of)]
        if isinstance(any_of, list) and any_of
        else None
    )
    if (
        type_test is None
        or object_test is None
        or item_test is None
        or ("anyOf" in node and (branches is None or None in branches))
    ):
        return None
    alternatives = cast(list[Test], branches or [])

    def test(value: object) -> bool:
        if not type_test(value):
            return False
        if isinstance(value, dict) and not object_test(cast(dict[str, object], value)):
            return False
        if isinstance(value, list) and not all(map(item_test, cast(list[object], value))):
            return False
        return not alternatives or any(branch(cast(object, value)) for branch in alternatives)

    return test


def _referenced(
    node: Mapping[str, Any], keywords: set[str], definitions: _Definitions
) -> Test | None:
    """A ``$ref`` alone, to ``#/$defs/<name>`` of the same document, not looping."""
    reference = node["$ref"]
    if keywords != {"$ref"} or not isinstance(reference, str):
        return None
    name = reference.removeprefix("#/$defs/")
    if name == reference or "/" in name or "~" in name:
        return None
    return definitions.test(name)


def _type_test(names: object) -> Test | None:
    if isinstance(names, str):
        return _TYPES.get(names)
    if not isinstance(names, list) or not names:
        return None
    tests = [
        _TYPES.get(name) if isinstance(name, str) else None for name in cast(list[object], names)
    ]
    if None in tests:
        return None
    known = cast(list[Test], tests)
    return lambda value: any(test(value) for test in known)


def _object_test(
    node: Mapping[str, Any], definitions: _Definitions
) -> Callable[[dict[str, object]], bool] | None:
    """What ``properties``, ``required`` and ``additionalProperties`` ask of an object."""
    properties = node.get("properties", {})
    required = node.get("required", [])
    additional = node.get("additionalProperties", True)
    if not isinstance(properties, Mapping) or not isinstance(required, list):
        return None
    named = cast(Mapping[str, object], properties)
    needed = cast(list[object], required)
    if not all(isinstance(name, str) for name in needed):
        return None
    property_tests: dict[str, Test] = {}
    for name, subschema in named.items():
        compiled = _compiled(subschema, definitions)
        if compiled is None:
            return None
        property_tests[name] = compiled
    others = _compiled(additional, definitions) if additional is not False else _never
    if others is None:
        return None
    names = cast(list[str], needed)

    def test(value: dict[str, object]) -> bool:
        if any(name not in value for name in names):
            return False
        return all(property_tests.get(key, others)(item) for key, item in value.items())

    return test


@cache
def _ignored(keyword: str) -> bool:
    """Whether every dialect jsonschema knows ignores ``keyword``, as JSON Schema has
    validators ignore keywords they do not know: a vendor's own (``x-...``), such as the
    ``x-fastmcp-wrap-result`` on every answerback tool returning a plain value, used to
    send each result of such a tool to jsonschema. Never one that moves a reference's
    base (``$id``, ``$anchor``, draft 4's ``id``)."""
    if keyword.startswith("$") or keyword == "id":
        return False
    from jsonschema import validators

    return not any(keyword in dialect.VALIDATORS for dialect in _dialects(validators))


def _dialects(validators: Any) -> tuple[Any, ...]:
    return (
        validators.Draft3Validator,
        validators.Draft4Validator,
        validators.Draft6Validator,
        validators.Draft7Validator,
        validators.Draft201909Validator,
        validators.Draft202012Validator,
    )


def _always(_: object) -> bool:
    return True


def _never(_: object) -> bool:
    return False
