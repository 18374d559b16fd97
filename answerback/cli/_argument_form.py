"""From a tool's ``inputSchema`` to the form that asks a person its arguments.

A tool's input schema is full JSON Schema, and the one pydantic writes for a Python
function uses two things MCP's restricted form schema has no room for: an optional
parameter (``limit: int | None = None``) is ``anyOf`` its type and ``null``, and an
Enum parameter is a ``$ref`` into the root's ``$defs``. A form holds only flat fields of
one type each, written out in place, so ``parse_form`` refuses both, and before this the
person had to type every argument on a line. Here the schema is rewritten into the
subset wherever that keeps each argument's meaning, and what still cannot be asked is
named:

- a local reference (``#/$defs/Name``, ``#/definitions/Name``) is written out in place,
  the property's own keywords kept over the definition's and the definition's title
  dropped (it names the type, not the argument); one reference per property at most, so
  a reference that is not local, not there, or that leads to another one (a recursive
  model) is left as it is, and the property cannot be asked;
- ``anyOf``/``oneOf`` of one schema and ``{"type": "null"}`` (and ``"type": [T,
  "null"]``) becomes that schema, without a ``null`` default: the field left empty is
  not sent, and the tool gets its default;
- the items of a list that are a local reference are written out too, so a list of an
  Enum is a multi-select of its values;
- the root keeps only ``type``, ``properties`` and ``required``: ``$defs``, ``title``,
  ``$schema`` and ``additionalProperties`` say nothing a form asks.

Each property is then judged by the form engine itself (``parse_form``), and one it
refuses is left off the form when optional (``left_off``) or, when required, makes the
whole form impossible (``unaskable``). An optional yes/no without a default is asked
like any other optional field: the form starts it unanswered, and left so it is not
sent. Pure code: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

from answerback.cli._arguments import required_arguments
from answerback.forms import MAX_FIELDS, UnsupportedForm, parse_form

_LOCAL_REFERENCES = (("#/$defs/", "$defs"), ("#/definitions/", "definitions"))
_NULL_KEYS = frozenset({"type", "title", "description"})
_NULLABLE = ("anyOf", "oneOf")


@dataclass(frozen=True)
class ArgumentForm:
    """What a form can ask of a tool's arguments.

    ``schema`` is a restricted form schema holding every argument a form can ask;
    ``left_off`` names the optional arguments it cannot (given, if at all, on the
    command line), and ``unaskable`` the required ones: when there are any, the
    arguments cannot be asked on a form at all.
    """

    schema: dict[str, Any]
    left_off: tuple[str, ...]
    unaskable: tuple[str, ...]


def argument_form(input_schema: Mapping[str, Any]) -> ArgumentForm:
    """The form for a tool's arguments, from its ``inputSchema`` (see the module)."""
    properties = _as_mapping(input_schema.get("properties")) or {}
    required = required_arguments(input_schema)
    must = set(required)
    # Over the limit the form is refused as too large whatever is in it: judging each
    # of a hundred thousand properties first would only delay saying so.
    judged = len(properties) <= MAX_FIELDS
    fields: dict[str, Any] = {}
    left_off: list[str] = []
    unaskable: list[str] = []
    for name, definition in properties.items():
        field = _written_out(definition, input_schema)
        if not judged or _askable(name, field, name in must):
            fields[name] = field
        elif name in must:
            unaskable.append(name)
        else:
            left_off.append(name)
    unaskable.extend(name for name in required if name not in properties)
    schema: dict[str, Any] = {"type": "object", "properties": fields}
    on_form = [name for name in required if name in fields]
    if on_form:
        schema["required"] = on_form
    return ArgumentForm(schema, tuple(left_off), tuple(unaskable))


def _as_mapping(value: object) -> Mapping[str, Any] | None:
    return cast(Mapping[str, Any], value) if isinstance(value, Mapping) else None


def _written_out(definition: object, root: Mapping[str, Any]) -> object:
    """One property in the form's spelling, where that keeps its meaning; otherwise as
    it was (and the form engine then says it cannot be asked)."""
    schema = _as_mapping(definition)
    if schema is None:
        return definition
    written, followed = _referenced(schema, root)
    written = _not_null(written)
    if not followed:
        written, _ = _referenced(written, root)
    items = _as_mapping(written.get("items"))
    if items is not None and set(items) == {"$ref"}:
        element, followed = _referenced(items, root)
        if followed:
            # A choice list's items hold only the choices; a title or description of
            # the type they came from has no place there.
            annotations = ("title", "description")
            element = {key: value for key, value in element.items() if key not in annotations}
            written = {**written, "items": element}
    return written


def _referenced(schema: Mapping[str, Any], root: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
    """``schema`` with its ``$ref`` written out, and whether it was: only a local
    reference to a definition that is there and is no reference itself."""
    reference = schema.get("$ref")
    target = _definition(reference, root) if isinstance(reference, str) else None
    if target is None or "$ref" in target:
        return dict(schema), False
    written = {key: value for key, value in target.items() if key != "title"}
    written.update((key, value) for key, value in schema.items() if key != "$ref")
    return written, True


def _definition(reference: str, root: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for prefix, key in _LOCAL_REFERENCES:
        if reference.startswith(prefix):
            name = reference.removeprefix(prefix)
            if "/" in name:  # a part of a definition, not a definition
                return None
            name = name.replace("~1", "/").replace("~0", "~")  # JSON Pointer escapes
            definitions = _as_mapping(root.get(key)) or {}
            return _as_mapping(definitions.get(name))
    return None


def _not_null(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` without its ``null`` alternative, when it is one schema or null;
    a ``null`` default goes too (an argument left out is left to the tool's default)."""
    kind = schema.get("type")
    kinds = cast(list[object], kind) if isinstance(kind, list) else None
    if kinds is not None:
        others = [item for item in kinds if item != "null"]
        if len(kinds) != 2 or len(others) != 1:
            return schema
        written = {**schema, "type": others[0]}
    else:
        present = [key for key in _NULLABLE if key in schema]
        if "type" in schema or len(present) != 1:
            return schema
        choices = schema[present[0]]
        if not isinstance(choices, list) or len(cast(list[object], choices)) != 2:
            return schema
        others = [choice for choice in cast(list[object], choices) if not _is_null(choice)]
        other = _as_mapping(others[0]) if len(others) == 1 else None
        if other is None:
            return schema
        written = {**other, **{key: value for key, value in schema.items() if key != present[0]}}
    if "default" in written and written["default"] is None:
        del written["default"]
    return written


def _is_null(schema: object) -> bool:
    found = _as_mapping(schema)
    return found is not None and found.get("type") == "null" and set(found) <= _NULL_KEYS


def _askable(name: str, definition: object, required: bool) -> bool:
    """Whether the form engine accepts this one field."""
    schema: dict[str, Any] = {"type": "object", "properties": {name: definition}}
    if required:
        schema["required"] = [name]
    try:
        parse_form(schema)
    except UnsupportedForm:
        return False
    return True
