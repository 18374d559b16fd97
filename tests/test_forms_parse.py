"""``parse_form``: a received ``requestedSchema`` as typed fields, or every reason it is not one."""

from __future__ import annotations

from typing import Any

import pytest

from answerback.forms import (
    MAX_FIELDS,
    BooleanField,
    FieldError,
    Form,
    MultiSelectField,
    NumberField,
    Option,
    SingleSelectField,
    StringField,
    UnsupportedForm,
    parse_form,
)


def form_of(**properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


def only_field(definition: dict[str, Any]) -> Any:
    return parse_form(form_of(field=definition))["field"]


def refusal(schema: Any) -> list[FieldError]:
    with pytest.raises(UnsupportedForm) as caught:
        parse_form(schema)
    return list(caught.value.errors)


def test_string_field_with_everything() -> None:
    field = only_field(
        {"type": "string", "minLength": 2, "maxLength": 9, "pattern": "^[a-z]+$", "default": "abc"}
    )
    assert field == StringField(
        name="field", min_length=2, max_length=9, pattern="^[a-z]+$", default="abc"
    )
    assert field.label == "field"


@pytest.mark.parametrize("fmt", ["email", "uri", "date", "date-time"])
def test_string_formats(fmt: str) -> None:
    assert only_field({"type": "string", "format": fmt}).format == fmt


def test_number_and_integer_fields() -> None:
    number = only_field({"type": "number", "minimum": -1.5, "maximum": 2.5, "default": 0.5})
    assert number == NumberField(name="field", minimum=-1.5, maximum=2.5, default=0.5)
    integer = only_field({"type": "integer", "minimum": 0, "default": 4.0})
    assert integer == NumberField(name="field", integer=True, minimum=0, default=4)
    assert isinstance(integer.default, int), "a whole float default of an integer is an int"


def test_boolean_field() -> None:
    assert only_field({"type": "boolean", "default": False}) == BooleanField(
        name="field", default=False
    )


def test_single_select_spellings() -> None:
    untitled = only_field({"type": "string", "enum": ["a", "b"]})
    titled = only_field(
        {"type": "string", "oneOf": [{"const": "a", "title": "A"}, {"const": "b", "title": "B"}]}
    )
    legacy = only_field({"type": "string", "enum": ["a", "b"], "enumNames": ["A", "B"]})
    assert untitled == SingleSelectField(name="field", options=(Option("a"), Option("b")))
    assert not untitled.titled
    assert titled.options == legacy.options == (Option("a", "A"), Option("b", "B"))
    assert titled.titled
    assert [option.label for option in untitled.options] == ["a", "b"]
    # Legacy ``enumNames`` are written back in the spelling 2025-11-25 keeps.
    assert legacy.schema() == titled.schema()


def test_multi_select_spellings() -> None:
    untitled = only_field(
        {"type": "array", "items": {"type": "string", "enum": ["x", "y"]}, "maxItems": 1}
    )
    titled = only_field(
        {
            "type": "array",
            "minItems": 1,
            "items": {"anyOf": [{"const": "x", "title": "X"}, {"const": "y", "title": "Y"}]},
            "default": ["y"],
        }
    )
    assert untitled == MultiSelectField(
        name="field", options=(Option("x"), Option("y")), max_items=1
    )
    assert titled.options == (Option("x", "X"), Option("y", "Y"))
    assert (titled.min_items, titled.default, titled.default_value()) == (1, ("y",), ["y"])


def test_required_and_order_follow_the_schema() -> None:
    form = parse_form(
        {
            "type": "object",
            "properties": {"b": {"type": "string"}, "a": {"type": "boolean"}},
            "required": ["a"],
        }
    )
    assert [(field.name, field.required) for field in form.fields] == [("b", False), ("a", True)]


def test_the_schema_written_back_parses_to_the_same_form() -> None:
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "title": "Name", "maxLength": 20},
            "n": {"type": "integer", "maximum": 3},
            "pick": {"type": "string", "enum": ["a"], "enumNames": ["A"], "default": "a"},
        },
        "required": ["name"],
    }
    form = parse_form(schema)
    assert parse_form(form.schema) == form
    assert form.schema["properties"]["pick"] == {
        "type": "string",
        "oneOf": [{"const": "a", "title": "A"}],
        "default": "a",
    }


def test_words_that_change_nothing_are_accepted_and_dropped() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$comment": "made by hand",
        "title": "Contact",
        "description": "Who to call",
        "type": "object",
        "additionalProperties": False,
        "properties": {"name": {"type": "string", "examples": ["Ada"], "$comment": "x"}},
    }
    assert parse_form(schema).schema == {
        "type": "object",
        "properties": {"name": {"type": "string"}},
    }


def test_an_empty_form_is_a_confirmation() -> None:
    assert parse_form({"type": "object", "properties": {}}) == Form(())


def test_form_lookup_and_names() -> None:
    form = parse_form(form_of(a={"type": "string"}))
    with pytest.raises(KeyError, match="'b' is not a field of this form"):
        form["b"]
    with pytest.raises(ValueError, match="distinct names"):
        Form((StringField(name="a"), BooleanField(name="a")))


UNSUPPORTED: list[tuple[str, dict[str, Any], str]] = [
    ("nested object", {"type": "object", "properties": {}}, "nested object"),
    ("no type", {"title": "x"}, 'has no "type"'),
    ("nullable union", {"anyOf": [{"type": "string"}, {"type": "null"}]}, "leave it out"),
    ("type list", {"type": ["string", "null"]}, "several types"),
    ("null type", {"type": "null"}, 'has type "null"'),
    ("reference", {"$ref": "#/$defs/Thing"}, "references are not followed"),
    ("numbers as choices", {"type": "string", "enum": [1, 2]}, "strings only"),
    ("no choices", {"type": "string", "enum": []}, "non-empty list"),
    ("repeated choice", {"type": "string", "enum": ["a", "a"]}, 'lists ["a"] more than once'),
    (
        "enum and oneOf",
        {"type": "string", "enum": ["a"], "oneOf": [{"const": "a", "title": "A"}]},
        "both",
    ),
    ("bad titled choice", {"type": "string", "oneOf": [{"const": "a"}]}, '"title": string'),
    ("enumNames mismatch", {"type": "string", "enum": ["a"], "enumNames": ["A", "B"]}, "2"),
    ("free list", {"type": "array", "items": {"type": "string"}}, "multi-select"),
    ("list of numbers", {"type": "array", "items": {"type": "integer", "enum": [1]}}, "items"),
    (
        "too many picks",
        {"type": "array", "items": {"type": "string", "enum": ["a"]}, "minItems": 2},
        "offers 1",
    ),
    ("unknown format", {"type": "string", "format": "uuid"}, '"format" must be one of'),
    ("multipleOf", {"type": "integer", "multipleOf": 2}, "'multipleOf' is not allowed"),
    ("exclusive bound", {"type": "number", "exclusiveMinimum": 0}, 'use "minimum"'),
    ("length on a choice", {"type": "string", "enum": ["a"], "minLength": 1}, "'minLength'"),
    ("negative length", {"type": "string", "minLength": -1}, "whole number from 0 to"),
    ("boolean as length", {"type": "string", "maxLength": True}, "whole number"),
    ("bounds crossed", {"type": "number", "minimum": 5, "maximum": 1}, "which no value has"),
    (
        "no whole number within the bounds",
        {"type": "integer", "minimum": 1.5, "maximum": 1.7},
        "a whole number of at least 1.5 and at most 1.7, which no whole number is",
    ),
    (
        "no whole number within negative bounds",
        {"type": "integer", "minimum": -1.7, "maximum": -1.5},
        "at least -1.7 and at most -1.5",
    ),
    ("lengths crossed", {"type": "string", "minLength": 3, "maxLength": 2}, "which no value has"),
    (
        "counts crossed",
        {
            "type": "array",
            "items": {"type": "string", "enum": ["a", "b"]},
            "minItems": 2,
            "maxItems": 1,
        },
        "which no value has",
    ),
    ("infinite bound", {"type": "number", "maximum": float("inf")}, '"maximum" must be a number'),
    ("bound past any float", {"type": "integer", "minimum": 10**400}, '"minimum" must be a number'),
    ("default past any float", {"type": "integer", "default": -(10**400)}, "from -1.8e+308 to"),
    ("length past any text", {"type": "string", "maxLength": 10**400}, "from 0 to"),
    (
        "count past any list",
        {"type": "array", "items": {"type": "string", "enum": ["a"]}, "maxItems": 2**63},
        '"maxItems" must be a whole number from 0 to',
    ),
    ("bad pattern", {"type": "string", "pattern": "("}, "not a regular expression"),
    ("title not text", {"type": "boolean", "title": 3}, '"title" must be text'),
    ("default of another type", {"type": "string", "default": 5}, "must be text"),
    ("null default", {"type": "boolean", "default": None}, "not null"),
    ("default outside the choices", {"type": "string", "enum": ["a"], "default": "b"}, "one of"),
    ("default out of range", {"type": "integer", "maximum": 3, "default": 9}, "at most 3"),
    ("fractional integer default", {"type": "integer", "default": 1.5}, "whole number"),
    ("bad email default", {"type": "string", "format": "email", "default": "x"}, "email"),
    ("not an object", [], "must be a schema object"),  # type: ignore[dict-item]
]


@pytest.mark.parametrize(
    ("definition", "expected"),
    [pytest.param(definition, expected, id=case) for case, definition, expected in UNSUPPORTED],
)
def test_unsupported_fields_are_refused_with_a_reason(definition: Any, expected: str) -> None:
    errors = refusal(form_of(field=definition))
    assert {error.field for error in errors} == {"field"}
    assert any(expected in error.message for error in errors), errors


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        pytest.param([], "must be a JSON object", id="not an object"),
        pytest.param({"properties": {}}, '"type" must be "object"', id="no type"),
        pytest.param({"type": "object"}, '"properties" must be an object', id="no properties"),
        pytest.param(
            {"type": "object", "properties": {}, "required": "a"}, "list of field names", id="req"
        ),
        pytest.param(
            {"type": "object", "properties": {}, "additionalProperties": {"type": "string"}},
            "true or false",
            id="additional schema",
        ),
        pytest.param({"type": "object", "properties": {}, "allOf": []}, "'allOf'", id="allOf"),
    ],
)
def test_unsupported_forms_are_refused_with_a_reason(schema: Any, expected: str) -> None:
    errors = refusal(schema)
    assert len(errors) == 1, errors
    assert errors[0].field is None
    assert expected in errors[0].message


def test_a_whole_number_between_fractional_bounds_is_a_field() -> None:
    field = only_field({"type": "integer", "minimum": 1.5, "maximum": 2})
    assert field == NumberField(name="field", integer=True, minimum=1.5, maximum=2)
    assert only_field({"type": "number", "minimum": 1.5, "maximum": 1.7}) == NumberField(
        name="field", minimum=1.5, maximum=1.7
    )


def test_required_given_as_one_name_is_quoted_as_sent() -> None:
    errors = refusal(
        {"type": "object", "properties": {"name": {"type": "string"}}, "required": "name"}
    )
    assert [(error.field, error.message) for error in errors] == [
        (None, '"required" must be a list of field names, not "name"')
    ]


def test_every_problem_is_listed_by_field_in_one_refusal() -> None:
    schema = {
        "type": "object",
        "properties": {
            "ok": {"type": "string"},
            "nested": {"type": "object"},
            "numbers": {"type": "string", "enum": [1, 2, 3]},
            "both": {"type": "integer", "minimum": 3, "maximum": 1, "multipleOf": 2},
        },
        "required": ["ok", "ghost", "ghost"],
    }
    with pytest.raises(UnsupportedForm) as caught:
        parse_form(schema)
    fields = [error.field for error in caught.value.errors]
    assert fields == ["ghost", "ghost", "nested", "numbers", "both", "both"]
    message = str(caught.value)
    assert message.startswith("The requested form is not an MCP elicitation form")
    for error in caught.value.errors:
        assert str(error) in message


def test_repeats_are_found_without_comparing_every_pair() -> None:
    """Repeats are counted in one pass: comparing each name or choice with every other
    took a 100,000-option list minutes, and would still take seconds at the limits."""
    comparisons = 0

    class Compared(str):
        def __eq__(self, other: object) -> bool:
            nonlocal comparisons
            comparisons += 1
            return str.__eq__(self, other)

        __hash__ = str.__hash__

    names = [Compared(f"field {n}") for n in range(MAX_FIELDS)]
    choices = [Compared(f"option {n}") for n in range(1000)]
    properties: dict[str, Any] = {name: {"type": "boolean"} for name in names}
    properties[names[0]] = {"type": "string", "enum": choices}
    properties[names[1]] = {
        "type": "string",
        "oneOf": [{"const": c, "title": "t"} for c in choices],
    }
    properties[names[2]] = {"type": "array", "items": {"type": "string", "enum": choices}}
    form = parse_form({"type": "object", "properties": properties, "required": names})
    assert [field.name for field in form.fields] == names
    assert comparisons < len(choices), "each pair compared: quadratic"
    errors = refusal(form_of(pick={"type": "string", "enum": [*choices, "option 7"]}))
    assert [(error.field, error.message) for error in errors] == [
        ("pick", '"enum" lists ["option 7"] more than once')
    ]
