"""From a pydantic model to the restricted schema an elicitation form may use.

Elicitation forms are flat objects of primitive fields (string, number, integer,
boolean, single- or multi-select enums). A model that cannot be rendered as such a form
is refused when the tool asks, with a message naming the field, rather than reaching a
client that would have to guess.
"""

from __future__ import annotations

import copy
import functools
from typing import Any, cast

from pydantic import BaseModel

_PRIMITIVES = {"string", "number", "integer", "boolean"}
_KEPT_KEYWORDS = {
    "type", "title", "description", "default", "enum", "oneOf", "anyOf", "const",
    "minLength", "maxLength", "pattern", "format", "minimum", "maximum",
    "items", "minItems", "maxItems", "enumNames",
}  # fmt: skip


class FormSchemaError(TypeError):
    """The model cannot be asked for in an elicitation form."""


def form_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The ``requestedSchema`` for ``model``, checked against the form restrictions.

    Each model's schema is built once (generating it is far slower than asking); every
    caller gets its own copy, so changing one cannot change the next question.
    """
    return copy.deepcopy(_form_schema(model))


@functools.cache
def _form_schema(model: type[BaseModel]) -> dict[str, Any]:
    schema = model.model_json_schema()
    definitions = cast(dict[str, Any], schema.pop("$defs", {}))
    properties = cast(dict[str, Any], schema.get("properties", {}))
    flat: dict[str, Any] = {}
    for name, prop in properties.items():
        flat[name] = _field(model.__name__, name, _inline(prop, definitions))
    result: dict[str, Any] = {"properties": flat}
    if schema.get("required"):
        result["required"] = schema["required"]
    for key in ("title", "description"):
        if key in schema:
            result[key] = schema[key]
    result["type"] = "object"
    return dict(sorted(result.items()))


def _inline(prop: dict[str, Any], definitions: dict[str, Any]) -> dict[str, Any]:
    ref = prop.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        target = dict(definitions.get(ref.removeprefix("#/$defs/"), {}))
        merged = {**target, **{k: v for k, v in prop.items() if k != "$ref"}}
        return _inline(merged, definitions)
    if "items" in prop and isinstance(prop["items"], dict):
        prop = {**prop, "items": _inline(cast(dict[str, Any], prop["items"]), definitions)}
    return prop


def _field(model_name: str, name: str, prop: dict[str, Any]) -> dict[str, Any]:
    options = prop.get("anyOf")
    if isinstance(options, list) and "type" not in prop:
        # ``X | None`` becomes anyOf[X, null]: the form field is simply optional.
        non_null = [o for o in cast(list[dict[str, Any]], options) if o.get("type") != "null"]
        if len(non_null) == 1:
            rest = {k: v for k, v in prop.items() if k != "anyOf"}
            prop = {**non_null[0], **rest}
    kind = prop.get("type")
    if kind == "array":
        items = cast(dict[str, Any], prop.get("items", {}))
        if not ("enum" in items or "anyOf" in items):
            raise FormSchemaError(
                f"{model_name}.{name}: a form can only ask for a list of choices "
                "(a list of Literal or Enum values), not an arbitrary list."
            )
    elif kind not in _PRIMITIVES:
        raise FormSchemaError(
            f"{model_name}.{name}: elicitation forms hold only strings, numbers, integers, "
            "booleans and choices; nested objects, unions and free-form lists cannot be "
            "rendered. Flatten the model or ask in several steps."
        )
    kept = {key: value for key, value in prop.items() if key in _KEPT_KEYWORDS}
    if kept.get("default", ...) is None:
        del kept["default"]  # an optional field's ``None`` default is "no default" on a form
    return kept
