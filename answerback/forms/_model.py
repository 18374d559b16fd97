"""From a pydantic model to a spec-exact form schema, and from an answer back to the model.

The server author writes the question as a model; pydantic turns each field into JSON
Schema (with every constraint and format it knows), and this module reshapes that into
MCP's restricted subset or says, field by field, why it cannot. The result then goes
through ``parse_form`` like any received schema, so the server sends nothing a client
built on the same rules would refuse.
"""

from __future__ import annotations

import functools
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from pydantic import BaseModel, GetJsonSchemaHandler, ValidationError
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import CoreSchema, core_schema, to_json

from answerback.forms._errors import AnswerError, FieldError, FormSchemaError, UnsupportedForm
from answerback.forms._form import Form
from answerback.forms._formats import FORMATS
from answerback.forms._parse import Complain, parse_form

ModelT = TypeVar("ModelT", bound=BaseModel)


class Titles:
    """Display titles for the choices of a ``Literal`` (or ``Enum``) field.

    ``Annotated[Literal["#f00", "#0f0"], Titles({"#f00": "Red", "#0f0": "Green"})]``
    sends titled choices (``oneOf`` of ``const``/``title``), so the person reads "Red"
    and the server gets "#f00". On a list of choices it titles the multi-select.
    Every choice needs a title, and every title a choice: a typo fails loudly.
    """

    __slots__ = ("titles",)

    def __init__(self, titles: Mapping[str, str] | None = None, /, **by_value: str) -> None:
        self.titles: dict[str, str] = {**(titles or {}), **by_value}

    def __repr__(self) -> str:
        return f"Titles({self.titles!r})"

    def __get_pydantic_json_schema__(
        self, schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        generated = handler.resolve_ref_schema(handler(schema))
        if generated.get("type") == "array" and isinstance(generated.get("items"), dict):
            items = handler.resolve_ref_schema(generated["items"])
            return {**generated, "items": {"type": "string", "oneOf": self._choices(items)}}
        return {"type": "string", "oneOf": self._choices(generated)}

    def _choices(self, schema: JsonSchemaValue) -> list[dict[str, str]]:
        values = _choice_values(schema)
        if values is None or not all(isinstance(value, str) for value in values):
            raise TypeError(f"{self!r} titles choices between strings, not {schema}")
        missing = [value for value in values if value not in self.titles]
        unknown = [value for value in self.titles if value not in values]
        if missing or unknown:
            raise TypeError(
                f"{self!r} must title every choice exactly once: "
                f"no title for {missing}, not a choice: {unknown}"
            )
        return [{"const": value, "title": self.titles[value]} for value in values]


def _choice_values(schema: Mapping[str, Any]) -> list[Any] | None:
    if "enum" in schema:
        return list(schema["enum"])
    if "const" in schema:
        return [schema["const"]]
    if "oneOf" in schema and all("const" in choice for choice in schema["oneOf"]):
        return [choice["const"] for choice in schema["oneOf"]]
    return None


def _words(name: str) -> str:
    """An Enum member's name as a title: ``EXTRA_LARGE`` and ``extra_large`` → "Extra large"."""
    words = name.replace("_", " ").strip()
    return words.capitalize() if words.isupper() or words.islower() else words


class _FormJsonSchema(GenerateJsonSchema):
    """pydantic's JSON Schema, with titled Enum choices and a title on every field."""

    def enum_schema(self, schema: core_schema.EnumSchema) -> JsonSchemaValue:
        members = schema["members"]
        if members and all(isinstance(member.value, str) for member in members):
            choices = [{"const": m.value, "title": _words(m.name)} for m in members]
            return {"type": "string", "oneOf": choices}
        return super().enum_schema(schema)

    def field_title_should_be_set(self, schema: Any) -> bool:
        # pydantic leaves the title off fields whose type has its own (an Enum's class
        # name); on a form the field's own name is the better label.
        return True


@dataclass(frozen=True)
class _ModelForm:
    form: Form
    nullable: frozenset[str]
    """Fields the model requires but allows ``None`` for: the form makes them optional,
    and an answer that leaves one out gives it ``None``."""


def form_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The restricted ``requestedSchema`` that asks for ``model``, as a new dict.

    Fields may be ``str`` (with ``min_length``, ``max_length``, ``pattern``, or as
    ``EmailStr``, ``AnyUrl``, ``date``, ``datetime``), ``int`` or ``float`` (with
    ``ge``/``le``; ``gt``/``lt`` only on ``int``), ``bool``, a ``Literal`` of strings or
    a string ``Enum`` (one choice), or a list or set of those (several choices, with
    ``min_length``/``max_length``). ``X | None`` makes a field optional even without a
    default. ``title``, ``description`` and defaults carry over; Enum choices are titled
    by member name, ``Titles`` titles any. Raises ``FormSchemaError`` naming every field
    that does not fit, and how to write it instead.
    """
    return _model_form(model).form.schema


def validate_answer(model: type[ModelT], answer: Mapping[str, object]) -> ModelT:
    """An accepted answer as ``model``, after checking it against the form ``model`` asks.

    Raises ``AnswerError`` naming every bad field, whether the form check or the model's
    own validators found it, so the server reports them all at once. Fields that are
    ``X | None`` and left out become ``None``.
    """
    asked = _model_form(model)
    checked = asked.form.check(answer)
    data = {**dict.fromkeys(sorted(asked.nullable - checked.keys())), **checked}
    try:
        # Through JSON, so the model reads dates and URLs as it would from the wire.
        return model.model_validate_json(to_json(data))
    except ValidationError as exc:
        raise AnswerError(
            FieldError(str(error["loc"][0]) if error["loc"] else None, error["msg"])
            for error in exc.errors(include_url=False)
        ) from None


@functools.cache
def _model_form(model: type[BaseModel]) -> _ModelForm:
    # Cached per model: building the JSON Schema costs far more than asking does.
    generated = model.model_json_schema(schema_generator=_FormJsonSchema)
    if generated.get("type") != "object":
        raise FormSchemaError(model.__name__, [FieldError(None, "a form needs named fields")])
    definitions = cast(dict[str, Any], generated.get("$defs", {}))
    model_required = set(cast(list[str], generated.get("required", [])))
    problems: list[FieldError] = []
    properties: dict[str, Any] = {}
    required: list[str] = []
    nullable: set[str] = set()
    for name, prop in cast(dict[str, Any], generated.get("properties", {})).items():
        prop, optional = _without_null(_inline(prop, definitions))
        restricted = _restrict(name, prop, problems)
        if restricted is None:
            continue
        properties[name] = restricted
        if name in model_required:
            (nullable.add(name) if optional else required.append(name))
    form = None
    try:
        form = parse_form({"type": "object", "properties": properties, "required": required})
    except UnsupportedForm as exc:
        problems.extend(exc.errors)
    if problems or form is None:
        order = list(cast(dict[str, Any], generated.get("properties", {})))
        problems.sort(key=lambda error: order.index(error.field) if error.field in order else 0)
        raise FormSchemaError(model.__name__, problems)
    return _ModelForm(form, frozenset(nullable))


def _inline(schema: Any, definitions: Mapping[str, Any]) -> Any:
    """``schema`` with every ``$ref`` to ``$defs`` replaced by what it refers to."""
    if isinstance(schema, list):
        return [_inline(item, definitions) for item in cast(list[Any], schema)]
    if not isinstance(schema, dict):
        return schema
    found = cast(dict[str, Any], schema)
    ref = found.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        siblings = {key: value for key, value in found.items() if key != "$ref"}
        target = definitions.get(ref.removeprefix("#/$defs/"), {})
        if "properties" in target:  # a nested model: kept as a reference, refused later
            return {"type": "object", **siblings}
        return _inline({**target, **siblings}, definitions)
    return {key: _inline(value, definitions) for key, value in found.items()}


def _without_null(prop: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    """``X | None`` as ``X``, and whether ``None`` was allowed; a ``None`` default goes."""
    nullable = False
    branches = prop.get("anyOf")
    if isinstance(branches, list) and {"type": "null"} in branches:
        others = [branch for branch in cast(list[Any], branches) if branch != {"type": "null"}]
        if len(others) == 1:
            rest = {key: value for key, value in prop.items() if key != "anyOf"}
            prop, nullable = {**others[0], **rest}, True
    if "default" in prop and prop["default"] is None:
        prop = {key: value for key, value in prop.items() if key != "default"}
    return prop, nullable


def _restrict(name: str, prop: dict[str, Any], problems: list[FieldError]) -> dict[str, Any] | None:
    """pydantic's schema for one field in the restricted spelling, or ``None`` if refused."""
    before = len(problems)

    def complain(message: str) -> None:
        problems.append(FieldError(name, message))

    kind = prop.get("type")
    if kind is None and ("anyOf" in prop or "oneOf" in prop):
        complain("is a union of several types; a form field has exactly one")
    elif kind == "object":
        complain(
            "is a nested model or a dict; a form is flat: "
            "move its fields into this model, or ask for them in a second form"
        )
    elif kind == "array":
        prop = _choices_list(prop, complain)
    elif _choice_values(prop) is not None:
        prop = _choice(prop, complain)
    fmt = prop.get("format")
    if fmt == "password":
        complain(
            "is a secret; MCP forbids asking for sensitive data in a form: "
            "send the person to a page of yours with URL-mode elicitation"
        )
    elif fmt is not None and fmt not in FORMATS:
        complain(
            f"has format {fmt!r}, which a form cannot ask for "
            f"(it knows {', '.join(FORMATS)}): declare it as str and check the answer yourself"
        )
    # An int's exclusive bound is an inclusive one a step inside; a float's has none.
    if "exclusiveMinimum" in prop or "exclusiveMaximum" in prop:
        if kind != "integer":
            complain("a form has only inclusive bounds: use Field(ge=..., le=...), not gt/lt")
        else:
            prop = dict(prop)
            if "exclusiveMinimum" in prop:
                above = math.floor(prop.pop("exclusiveMinimum")) + 1
                prop["minimum"] = max(above, prop.get("minimum", above))
            if "exclusiveMaximum" in prop:
                below = math.ceil(prop.pop("exclusiveMaximum")) - 1
                prop["maximum"] = min(below, prop.get("maximum", below))
    if "multipleOf" in prop:
        complain("a form cannot ask for a multiple_of; check it after the answer comes")
    return prop if len(problems) == before else None


def _choice(prop: dict[str, Any], complain: Complain) -> dict[str, Any]:
    values = _choice_values(prop) or []
    if not all(isinstance(value, str) for value in values):
        complain(_not_strings(values, "Literal[{}]"))
        return prop
    if "oneOf" in prop:
        return {key: value for key, value in prop.items() if key not in ("enum", "const")}
    rest = {key: value for key, value in prop.items() if key != "const"}
    return {**rest, "type": "string", "enum": values}


def _choices_list(prop: dict[str, Any], complain: Complain) -> dict[str, Any]:
    items = cast(dict[str, Any], prop.get("items") or {})
    values = _choice_values(items)
    if values is None:
        complain(
            "is a list of free values; a form asks for a list only as several choices: "
            'list[Literal["a", "b"]] or set[SomeStrEnum]'
        )
        return prop
    if not all(isinstance(value, str) for value in values):
        complain(_not_strings(values, "list[Literal[{}]]"))
        return prop
    rest = {key: value for key, value in prop.items() if key not in ("items", "uniqueItems")}
    if "oneOf" in items:
        return {**rest, "items": {"anyOf": items["oneOf"]}}
    return {**rest, "items": {"type": "string", "enum": values}}


def _not_strings(values: list[Any], spelling: str) -> str:
    shown = ", ".join(json.dumps(value) for value in values)
    as_text = spelling.format(", ".join(json.dumps(str(value)) for value in values))
    advice = f"offers {shown}, but a form's choices are strings: write {as_text} (or a StrEnum)"
    numbers = [value for value in values if isinstance(value, int) and not isinstance(value, bool)]
    if spelling.startswith("Literal") and values and len(numbers) == len(values):
        advice += f", or use an int field with Field(ge={min(numbers)}, le={max(numbers)})"
    return advice
