"""From a received ``requestedSchema`` to typed fields, or every reason it is not a form.

MCP restricts form schemas to a flat object of primitive fields (2025-11-25
``PrimitiveSchemaDefinition``, unchanged in 2026-07-28). A client that rendered anything
else would have to guess, so a schema outside the subset is refused, naming each field
and what is wrong with it. Keywords that change nothing about the question (``$schema``,
``$comment``, ``examples``, and a top-level title, description or
``additionalProperties``) are accepted and dropped.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, TypedDict, cast

from answerback.forms._ecma_regex import PatternError
from answerback.forms._errors import AnswerError, FieldError, FormTooSlow, UnsupportedForm
from answerback.forms._fields import (
    MAX_PATTERN_LENGTH,
    BooleanField,
    FormField,
    FormValue,
    MultiSelectField,
    NumberField,
    Option,
    SingleSelectField,
    StringField,
    show,
)
from answerback.forms._form import Form, repeated
from answerback.forms._formats import FORMATS
from answerback.forms._limits import check_size
from answerback.forms._patterns import PatternTooSlow, compiled_pattern, pattern_budget

_TOP_KEYS = frozenset({"type", "properties", "required"})
_TOP_IGNORED = frozenset({"$schema", "$id", "$comment", "title", "description"})
_IGNORED = frozenset({"$comment", "examples"})
_COMMON = frozenset({"type", "title", "description", "default"})
_KEYS = {
    "string": _COMMON | {"minLength", "maxLength", "pattern", "format"},
    "number": _COMMON | {"minimum", "maximum"},
    "boolean": _COMMON,
    "single-select": _COMMON | {"enum", "enumNames", "oneOf"},
    "multi-select": _COMMON | {"items", "minItems", "maxItems"},
}
_HINTS = {
    "anyOf": 'a field has one type; to make it optional, leave it out of "required"',
    "oneOf": 'titled choices are written {"type": "string", "oneOf": [{"const", "title"}]}',
    "const": 'a fixed value is a single choice: {"type": "string", "enum": [value]}',
    "$ref": "each field is written out in place; references are not followed",
    "exclusiveMinimum": 'bounds are inclusive: use "minimum"',
    "exclusiveMaximum": 'bounds are inclusive: use "maximum"',
}

_WITHIN_FLOAT = f"a number from {-sys.float_info.max:.2g} to {sys.float_info.max:.2g}"
"""What a number in a form may be: what a float holds, as many hosts (any in JavaScript)
read every JSON number as one, and 10**400 would reach them as infinity."""

Complain = Callable[[str], None]


class _Common(TypedDict):
    name: str
    title: str | None
    description: str | None
    required: bool


def parse_form(requested_schema: Mapping[str, Any]) -> Form:
    """The typed fields of a form-mode ``requestedSchema``.

    Raises ``UnsupportedForm`` listing every field that is outside the restricted
    subset (and why), so a host can tell the server exactly what it could not show;
    first, and at once, ``FormTooLarge`` if the form holds more fields, choices or text
    than ``MAX_FIELDS``, ``MAX_CHOICES`` and ``MAX_TEXT_LENGTH`` allow. Compiling the
    patterns and checking the defaults against them share one budget
    (``PatternBudget``): past it, or past one default's ``PATTERN_SECONDS``,
    ``FormTooSlow`` (an ``UnsupportedForm``) refuses the form at once, naming the field
    it stopped at.
    """
    with pattern_budget():
        return _parse(requested_schema)


def _parse(requested_schema: Mapping[str, Any]) -> Form:
    problems: list[FieldError] = []
    if not isinstance(requested_schema, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise UnsupportedForm(
            [FieldError(None, f"must be a JSON object, not {show(requested_schema)}")]
        )
    top = requested_schema
    check_size(top)

    def complain(message: str) -> None:
        problems.append(FieldError(None, message))

    if top.get("type") != "object":
        complain(f'"type" must be "object", {_instead(top, "type")}')
    for key in top:
        if key == "additionalProperties":
            if not isinstance(top[key], bool):
                complain('"additionalProperties" may only be true or false: a form is flat')
        elif key not in _TOP_KEYS | _TOP_IGNORED:
            complain(f"{key!r} is not part of a form schema (type, properties, required)")
    properties = top.get("properties")
    if not isinstance(properties, Mapping):
        complain(f'"properties" must be an object of fields, {_instead(top, "properties")}')
        properties = {}
    properties = cast(Mapping[str, Any], properties)
    required = _required(top.get("required", []), properties, problems)
    fields: list[FormField] = []
    for name, definition in properties.items():
        field = _field(name, definition, name in required, problems)
        if field is not None:
            fields.append(field)
    if problems:
        raise UnsupportedForm(problems)
    return Form(tuple(fields))


def _required(value: object, properties: Mapping[str, Any], problems: list[FieldError]) -> set[str]:
    listed = _as_list(value)
    if listed is None or not all(isinstance(name, str) for name in listed):
        problems.append(
            FieldError(None, f'"required" must be a list of field names, not {show(value)}')
        )
        return set()
    names = cast(list[str], listed)
    listed_twice = set(repeated(names))
    for name in dict.fromkeys(names):
        if name not in properties:
            problems.append(FieldError(name, 'is listed in "required" but is not a field'))
        if name in listed_twice:
            problems.append(FieldError(name, 'is listed in "required" more than once'))
    return set(names)


def _kind(definition: Mapping[str, Any], complain: Complain) -> str | None:
    kind = definition.get("type")
    if kind == "string":
        return "single-select" if "enum" in definition or "oneOf" in definition else "string"
    if kind in ("number", "integer"):
        return "number"
    if kind == "boolean":
        return "boolean"
    if kind == "array":
        return "multi-select"
    if kind is None:
        hint = next((_HINTS[key] for key in ("$ref", "anyOf", "oneOf") if key in definition), "")
        complain('has no "type" (string, number, integer, boolean or array)' + _then(hint))
    elif kind == "object":
        complain("is a nested object; a form is flat: ask for its fields one by one")
    elif isinstance(kind, list):
        complain(f"has several types {show(cast(list[object], kind))}; {_HINTS['anyOf']}")
    else:
        complain(f"has type {show(kind)}; a field is a string, number, integer, boolean or array")
    return None


def _as_list(value: object) -> list[object] | None:
    return cast(list[object], value) if isinstance(value, list) else None


def _as_mapping(value: object) -> Mapping[str, Any] | None:
    return cast(Mapping[str, Any], value) if isinstance(value, Mapping) else None


def _instead(schema: Mapping[str, Any], key: str) -> str:
    """What a complaint about ``key`` says was there instead: a missing key is not null."""
    return f"not {show(schema[key])}" if key in schema else "but it is missing"


def _then(hint: str) -> str:
    return f" ({hint})" if hint else ""


def _field(
    name: str, definition: object, required: bool, problems: list[FieldError]
) -> FormField | None:
    before = len(problems)

    def complain(message: str) -> None:
        problems.append(FieldError(name, message))

    if not isinstance(definition, Mapping):
        complain(f"must be a schema object, not {show(definition)}")
        return None
    schema = cast(Mapping[str, Any], definition)
    kind = _kind(schema, complain)
    if kind is None:
        return None
    for key in schema:
        if key not in _KEYS[kind] and key not in _IGNORED:
            complain(f"{key!r} is not allowed in a {kind} field" + _then(_HINTS.get(key, "")))
    common = _Common(
        name=name,
        title=_text(schema, "title", complain),
        description=_text(schema, "description", complain),
        required=required,
    )
    field: FormField
    if kind == "string":
        field = _string(schema, common, complain)
    elif kind == "number":
        field = _number_field(schema, common, complain)
    elif kind == "boolean":
        field = BooleanField(**common)
    elif kind == "single-select":
        field = SingleSelectField(**common, options=_single_options(schema, complain))
    else:
        field = _multi(schema, common, complain)
    if "default" in schema and len(problems) == before:
        field = _with_default(field, schema["default"], complain)
    return None if len(problems) > before else field


def _text(schema: Mapping[str, Any], key: str, complain: Complain) -> str | None:
    value = schema.get(key)
    if value is not None and not isinstance(value, str):
        complain(f'"{key}" must be text, not {show(value)}')
        return None
    return value


def _count(schema: Mapping[str, Any], key: str, complain: Complain) -> int | None:
    value = schema.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= sys.maxsize:
        complain(f'"{key}" must be a whole number from 0 to {sys.maxsize}, not {show(value)}')
        return None
    return value


def _bound(schema: Mapping[str, Any], key: str, complain: Complain) -> int | float | None:
    value = schema.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        complain(f'"{key}" must be a number, not {show(value)}')
        return None
    if not _finite(value):
        complain(f'"{key}" must be {_WITHIN_FLOAT}, not {show(value)}')
        return None
    return value


def _finite(value: int | float) -> bool:
    """Whether ``value`` is finite and within what a float holds: JSON's integers have no
    bound, and a 400-digit one overflows every float comparison made with it."""
    return math.isfinite(value) if isinstance(value, float) else abs(value) <= sys.float_info.max


def _ordered(low: float | None, high: float | None, what: str, complain: Complain) -> None:
    if low is not None and high is not None and low > high:
        complain(
            f"asks for {what} of at least {show(low)} and at most {show(high)}, which no value has"
        )


def _string(schema: Mapping[str, Any], common: _Common, complain: Complain) -> StringField:
    min_length = _count(schema, "minLength", complain)
    max_length = _count(schema, "maxLength", complain)
    _ordered(min_length, max_length, "a length", complain)
    pattern = _text(schema, "pattern", complain)
    if pattern is not None and len(pattern) > MAX_PATTERN_LENGTH:
        complain(
            f'"pattern" is {len(pattern):,} characters long, more than the '
            f"{MAX_PATTERN_LENGTH:,} a pattern may have"
        )
    elif pattern is not None:
        try:
            compiled_pattern(pattern)  # as the answers will be checked
        except PatternError as exc:
            complain(f'"pattern" {exc}')
        except PatternTooSlow as exc:
            # The form's budget is spent compiling (a new pattern in every field): at
            # once, as for a default too slow to check.
            raise FormTooSlow([FieldError(common["name"], f"its pattern {exc}")]) from None
    format_ = schema.get("format")
    if format_ is not None and format_ not in FORMATS:
        complain(f'"format" must be one of {", ".join(FORMATS)}, not {show(format_)}')
        format_ = None
    return StringField(
        **common,
        min_length=min_length,
        max_length=max_length,
        pattern=pattern,
        format=format_,
    )


def _number_field(schema: Mapping[str, Any], common: _Common, complain: Complain) -> NumberField:
    minimum = _bound(schema, "minimum", complain)
    maximum = _bound(schema, "maximum", complain)
    integer = schema["type"] == "integer"
    _ordered(minimum, maximum, "a value", complain)
    # Ordered bounds can still hold no whole number (1.5 to 1.7): nobody could answer.
    if (
        integer
        and minimum is not None
        and maximum is not None
        and minimum <= maximum < math.ceil(minimum)
    ):
        complain(
            f"asks for a whole number of at least {show(minimum)} and at most "
            f"{show(maximum)}, which no whole number is"
        )
    return NumberField(**common, integer=integer, minimum=minimum, maximum=maximum)


def _strings(
    value: object, where: str, complain: Complain, *, unique: bool = True
) -> list[str] | None:
    items = _as_list(value)
    if not items:
        complain(f"{where} must be a non-empty list of strings, not {show(value)}")
        return None
    if not all(isinstance(item, str) for item in items):
        complain(
            f"{where} must hold strings only, not {show(items)} "
            '(a choice between numbers is a list of strings like ["1", "2"], '
            'or a number field with "minimum" and "maximum")'
        )
        return None
    strings = cast(list[str], items)
    twice = repeated(strings)
    if unique and twice:
        complain(f"{where} lists {show(twice)} more than once")
        return None
    return strings


def _titled_options(value: object, where: str, complain: Complain) -> tuple[Option, ...]:
    entries = _as_list(value)
    if not entries:
        complain(f'{where} must be a non-empty list of {{"const", "title"}}, not {show(value)}')
        return ()
    options: list[Option] = []
    for entry in entries:
        choice = _as_mapping(entry)
        if choice is None:
            complain(f'{where} must hold {{"const", "title"}} objects, not {show(entry)}')
            continue
        const, title = choice.get("const"), choice.get("title")
        extra = sorted(set(choice) - {"const", "title"} - _IGNORED)
        if not isinstance(const, str) or not isinstance(title, str) or extra:
            complain(f'{where} entries are {{"const": string, "title": string}}, not {show(entry)}')
            continue
        options.append(Option(const, title))
    values = [option.value for option in options]
    twice = repeated(values)
    if twice:
        complain(f"{where} lists {show(twice)} more than once")
    return tuple(options)


def _single_options(schema: Mapping[str, Any], complain: Complain) -> tuple[Option, ...]:
    if "oneOf" in schema:
        if "enum" in schema or "enumNames" in schema:
            complain('has both "oneOf" and "enum"; titled choices use "oneOf" alone')
        return _titled_options(schema["oneOf"], '"oneOf"', complain)
    values = _strings(schema["enum"], '"enum"', complain) or []
    if "enumNames" not in schema:
        return tuple(Option(value) for value in values)
    names = _strings(schema["enumNames"], '"enumNames"', complain, unique=False) or []
    if values and names and len(names) != len(values):
        complain(f'has {len(values)} choices in "enum" but {len(names)} "enumNames"')
    return tuple(Option(value, title) for value, title in zip(values, names, strict=False))


def _multi(schema: Mapping[str, Any], common: _Common, complain: Complain) -> MultiSelectField:
    items = schema.get("items")
    options: tuple[Option, ...] = ()
    shape = 'a list field is a multi-select: "items" with "enum" or "anyOf" of {"const", "title"}'
    if not isinstance(items, Mapping):
        complain(shape)
    else:
        items = cast(Mapping[str, Any], items)
        extra = sorted(set(items) - {"type", "enum", "anyOf"} - _IGNORED)
        if "anyOf" in items and "enum" not in items and not extra:
            if items.get("type", "string") != "string":
                complain('"items.type" of titled choices may only be "string"')
            options = _titled_options(items["anyOf"], '"items.anyOf"', complain)
        elif "enum" in items and "anyOf" not in items and not extra:
            # The specification requires "type": "string", but peers leave it out (as it
            # may be for titled choices); the choices being strings is checked below.
            if items.get("type", "string") != "string":
                complain(f'"items.type" of choices may only be "string", not {show(items["type"])}')
            options = tuple(
                Option(v) for v in _strings(items["enum"], '"items.enum"', complain) or []
            )
        else:
            complain(shape)
    min_items = _count(schema, "minItems", complain)
    max_items = _count(schema, "maxItems", complain)
    _ordered(min_items, max_items, "a number of choices", complain)
    if options and min_items is not None and min_items > len(options):
        complain(f"asks for at least {min_items} choices but offers {len(options)}")
    return MultiSelectField(**common, options=options, min_items=min_items, max_items=max_items)


def _with_default(field: FormField, default: object, complain: Complain) -> FormField:
    """``field`` with its default, if the default is itself an answer the field accepts."""
    if isinstance(field, NumberField) and isinstance(default, int) and not _finite(default):
        complain(f"its default {show(default)} does not fit the field: must be {_WITHIN_FLOAT}")
        return field
    try:
        value = _checked_default(field, default)
    except PatternTooSlow as exc:
        # At once, whatever else the form holds: each such field would cost the whole
        # deadline (or the rest of the form's budget), and a form may have hundreds.
        raise FormTooSlow([FieldError(field.name, f"its default {exc}")]) from None
    except AnswerError as exc:
        reasons = "; ".join(error.message for error in exc.errors)
        complain(f"its default {show(default)} does not fit the field: {reasons}")
        return field
    if isinstance(field, MultiSelectField):
        return replace(field, default=tuple(cast(list[str], value)))
    return replace(field, default=value)  # pyright: ignore[reportArgumentType]


def _checked_default(field: FormField, default: object) -> FormValue:
    """``field.check(default)``, with a string default's pattern run once: on its own, so
    that a pattern too slow for the default raises ``PatternTooSlow`` (which ``check``
    would report as an ``AnswerError``), and then not again by ``check``."""
    if not isinstance(field, StringField) or field.pattern is None or not isinstance(default, str):
        return field.check(default)
    mismatch = None if field.matches(default) else f"must match the pattern {field.pattern}"
    try:
        value = replace(field, pattern=None).check(default)
    except AnswerError as exc:
        if mismatch is None:
            raise
        raise AnswerError([*exc.errors, FieldError(field.name, mismatch)]) from None
    if mismatch is not None:
        raise AnswerError([FieldError(field.name, mismatch)])
    return value
