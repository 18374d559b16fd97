"""Property tests: both ends agree on every form, and good answers survive every path.

- any restricted schema parses, and what it writes back parses to the same form;
- any valid answer passes ``check`` unchanged, and typing it as text gives it back;
- a field accepts exactly the values jsonschema accepts for it (its shortcut for plain
  values agrees with jsonschema, and plain valid values take it);
- any model ``form_schema`` accepts gives a schema the client side parses (and the
  wire schema in ``../shared/spec`` accepts, where present), and valid answers come back
  through ``validate_answer`` as a model whose own dump is again a valid answer.
"""

from __future__ import annotations

import csv
import datetime
import enum
import io
import json
import math
from collections.abc import Callable
from decimal import Decimal
from functools import cache
from pathlib import Path
from typing import Any, Literal, cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator
from pydantic import AnyUrl, BaseModel, EmailStr, Field, create_model
from support import schema_errors

from answerback.forms import (
    BooleanField,
    Form,
    FormField,
    MultiSelectField,
    NumberField,
    SingleSelectField,
    StringField,
    form_schema,
    parse_form,
    validate_answer,
)
from answerback.forms._formats import new_validator

PROPERTIES = settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
SPEC = Path(__file__).parents[2] / "shared" / "spec" / "2025-11-25" / "schema.json"

EMAILS = ["ada@example.com", "a.b+c@mail.example.org", "zoë@example.de", "x@sub.example.co.uk"]
URIS = ["https://example.com/", "http://[::1]:8080/a?b=c#d", "mailto:ada@example.com", "urn:x:y"]
CHARACTERS = st.characters(blacklist_categories=("Cc", "Cs"))
WORDS = st.text(CHARACTERS, min_size=1, max_size=8).filter(lambda text: text.strip() != "")


# --- random restricted schemas -----------------------------------------------------------


def _described(draw: st.DrawFn, schema: dict[str, Any]) -> dict[str, Any]:
    if draw(st.booleans()):
        schema["title"] = draw(WORDS)
    if draw(st.booleans()):
        schema["description"] = draw(st.text(CHARACTERS, max_size=20))
    return schema


@st.composite
def field_schemas(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(
        st.sampled_from(["string", "format", "integer", "number", "boolean", "one", "many"])
    )
    if kind == "string":
        low = draw(st.none() | st.integers(0, 4))
        high = draw(st.none() | st.integers(low or 0, 12))
        schema: dict[str, Any] = {"type": "string"}
        schema |= {"minLength": low} if low is not None else {}
        schema |= {"maxLength": high} if high is not None else {}
    elif kind == "format":
        schema = {
            "type": "string",
            "format": draw(st.sampled_from(["email", "uri", "date", "date-time"])),
        }
    elif kind == "integer":
        low = draw(st.none() | st.integers(-1000, 1000))
        high = draw(st.none() | st.integers(low if low is not None else -1000, 2000))
        schema = {"type": "integer"}
        schema |= {"minimum": low} if low is not None else {}
        schema |= {"maximum": high} if high is not None else {}
    elif kind == "number":
        finite = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)
        low = draw(st.none() | finite)
        high = draw(st.none() | st.floats(low if low is not None else -1e6, 2e6))
        schema = {"type": "number"}
        schema |= {"minimum": low} if low is not None else {}
        schema |= {"maximum": high} if high is not None else {}
    elif kind == "boolean":
        schema = {"type": "boolean"}
    else:
        values = draw(st.lists(WORDS, min_size=1, max_size=5, unique=True))
        titles = draw(st.none() | st.lists(WORDS, min_size=len(values), max_size=len(values)))
        choices = (
            None
            if titles is None
            else [{"const": v, "title": t} for v, t in zip(values, titles, strict=True)]
        )
        if kind == "one":
            legacy = titles is not None and draw(st.booleans())
            if choices is None:
                schema = {"type": "string", "enum": values}
            elif legacy:
                schema = {"type": "string", "enum": values, "enumNames": titles}
            else:
                schema = {"type": "string", "oneOf": choices}
        else:
            low = draw(st.none() | st.integers(0, len(values)))
            high = draw(st.none() | st.integers(low or 0, len(values) + 2))
            items = {"type": "string", "enum": values} if choices is None else {"anyOf": choices}
            schema = {"type": "array", "items": items}
            schema |= {"minItems": low} if low is not None else {}
            schema |= {"maxItems": high} if high is not None else {}
    return _described(draw, schema)


def values_of(field: FormField) -> st.SearchStrategy[Any]:
    """Values the field accepts."""
    if isinstance(field, StringField):
        if field.format == "email":
            return st.sampled_from(EMAILS)
        if field.format == "uri":
            return st.sampled_from(URIS)
        if field.format == "date":
            return st.dates().map(datetime.date.isoformat)
        if field.format == "date-time":
            return st.datetimes(timezones=st.just(datetime.UTC)).map(datetime.datetime.isoformat)
        longest = 20 if field.max_length is None else field.max_length
        return st.text(CHARACTERS, min_size=field.min_length or 0, max_size=longest)
    if isinstance(field, NumberField):
        if field.integer:
            low = None if field.minimum is None else int(field.minimum)
            high = None if field.maximum is None else int(field.maximum)
            return st.integers(-(10**15) if low is None else low, 10**15 if high is None else high)
        return st.floats(field.minimum, field.maximum, allow_nan=False, allow_infinity=False)
    if isinstance(field, BooleanField):
        return st.booleans()
    values = [option.value for option in field.options]
    if isinstance(field, SingleSelectField):
        return st.sampled_from(values)
    high = len(values) if field.max_items is None else min(field.max_items, len(values))
    return st.lists(
        st.sampled_from(values), min_size=field.min_items or 0, max_size=high, unique=True
    )


@st.composite
def forms(draw: st.DrawFn) -> Form:
    definitions = draw(st.lists(field_schemas(), max_size=6))
    names = [f"field_{index}" for index in range(len(definitions))]
    form = parse_form({"type": "object", "properties": dict(zip(names, definitions, strict=True))})
    # Now that the fields are known, give some of them a default they accept and a
    # required flag, and parse again.
    for field, definition in zip(form.fields, definitions, strict=True):
        if draw(st.booleans()):
            definition["default"] = draw(values_of(field))
    required = [name for name in names if draw(st.booleans())]
    return parse_form(
        {
            "type": "object",
            "properties": dict(zip(names, definitions, strict=True)),
            "required": required,
        }
    )


@st.composite
def answered(draw: st.DrawFn, forms: st.SearchStrategy[Form]) -> tuple[Form, dict[str, Any]]:
    form = draw(forms)
    answer = {
        field.name: draw(values_of(field))
        for field in form.fields
        if field.required or draw(st.booleans())
    }
    return form, answer


@PROPERTIES
@given(forms())
def test_what_a_form_writes_back_parses_to_the_same_form(form: Form) -> None:
    again = parse_form(form.schema)
    assert again == form
    assert again.schema == form.schema
    if SPEC.is_file():
        assert _spec_errors(form.schema) == []


@PROPERTIES
@given(answered(forms()))
def test_valid_answers_pass_unchanged(case: tuple[Form, dict[str, Any]]) -> None:
    form, answer = case
    assert form.check(answer) == answer
    filled = form.with_defaults(answer)
    assert form.check(filled) == filled


ANYTHING = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(CHARACTERS, max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.tuples(inner)
        | st.dictionaries(st.text(max_size=3), inner, max_size=2)
    ),
    max_leaves=5,
)
"""JSON-like values of any shape, with NaN, infinities and a tuple among them."""


def _shifted(edge: float, step: float, kind: Callable[[float], object]) -> object:
    return kind(edge + step)


def values_near(field: FormField) -> st.SearchStrategy[Any]:
    """Values at and just past the field's rules: bounds, lengths, choices, types."""
    if isinstance(field, StringField):
        low, high = field.min_length or 0, 20 if field.max_length is None else field.max_length
        return st.text(CHARACTERS, min_size=max(low - 1, 0), max_size=high + 1)
    if isinstance(field, NumberField):
        edges = [edge for edge in (field.minimum, field.maximum) if edge is not None] or [0]
        near = st.builds(
            _shifted,
            st.sampled_from(edges),
            st.sampled_from([-1, -0.5, 0, 0.5, 1]),
            st.sampled_from([int, float, Decimal]),
        )
        odd = st.sampled_from([True, False, math.nan, math.inf, -math.inf, 1e308])
        return near | odd
    if isinstance(field, BooleanField):
        return st.sampled_from([True, False, 0, 1, "true"])
    values = [option.value for option in field.options]
    words = st.sampled_from([*values, values[0].upper(), values[0] + " ", "other"])
    if isinstance(field, SingleSelectField):
        return words | words.map(lambda word: [word])
    return st.lists(words, max_size=len(values) + 2) | st.lists(words, max_size=2).map(tuple)


def _only_field(schema: dict[str, Any]) -> FormField:
    return parse_form({"type": "object", "properties": {"x": schema}})["x"]


def _jsonschema_accepts(field: FormField, value: object) -> bool:
    """jsonschema's verdict on ``value``, and JSON's own: NaN and infinities are no numbers.

    A field checks its pattern itself (with a deadline), so the pattern goes back into
    the schema here: jsonschema's ``re`` is the reference the field's ``regex`` meets."""
    finite = not (isinstance(value, float) and not math.isfinite(value))
    schema = field.validation_schema()
    if isinstance(field, StringField) and field.pattern is not None:
        schema["pattern"] = field.pattern
    return finite and schema_errors(new_validator(schema), value) == []


@PROPERTIES
@given(st.data(), field_schemas())
def test_a_field_accepts_exactly_what_jsonschema_accepts(
    data: st.DataObject, schema: dict[str, Any]
) -> None:
    field = _only_field(schema)
    for value in (
        data.draw(values_of(field)),
        data.draw(values_near(field)),
        data.draw(ANYTHING),
    ):
        assert (field.problems(value) == []) == _jsonschema_accepts(field, value), value
    plain = not (isinstance(field, StringField) and field.format is not None)
    if plain:  # the shortcut is taken: a valid plain value never waits for jsonschema
        assert field._plainly_fits(data.draw(values_of(field)))  # pyright: ignore[reportPrivateUsage]


class _Text(str):
    """A ``str`` subclass: jsonschema takes it as a string, the shortcut leaves it to it."""


EDGES: list[tuple[dict[str, Any], list[Any]]] = [
    (
        {"type": "string", "minLength": 2, "maxLength": 3},
        ["a", "ab", "abc", "abcd", "", _Text("ab"), 12, None, ["ab"]],
    ),
    ({"type": "string", "pattern": "^a+$"}, ["aa", "ab"]),
    ({"type": "string", "format": "email"}, ["ada@example.com", "ada"]),
    (
        {"type": "integer", "minimum": 1, "maximum": 3},
        [0, 1, 3, 4, 2.0, 2.5, 0.5, True, False, math.nan, math.inf, Decimal(2), "2"],
    ),
    (
        {"type": "number", "minimum": -1.5, "maximum": 2},
        [-1.5, -1.6, 2, 2.0000001, 1, True, math.nan, -math.inf, Decimal("0.5"), None],
    ),
    ({"type": "number"}, [0.5, 1e308, math.nan, math.inf, -math.inf]),
    ({"type": "boolean"}, [True, False, 0, 1, "true", None]),
    ({"type": "string", "enum": ["a", "b"]}, ["a", "A", "a ", "c", ["a"], _Text("a"), 1]),
    (
        {"type": "string", "oneOf": [{"const": "a", "title": "A"}, {"const": "b", "title": "B"}]},
        ["a", "b", "A", None],
    ),
    (
        {
            "type": "array",
            "items": {"type": "string", "enum": ["a", "b", "c"]},
            "minItems": 1,
            "maxItems": 2,
        },
        [["a"], ["a", "b"], [], ["a", "b", "c"], ["a", "a"], ("a",), ["a", 1], ["d"], "a"],
    ),
]


@pytest.mark.parametrize(("schema", "values"), EDGES)
def test_a_field_accepts_exactly_what_jsonschema_accepts_at_the_edges(
    schema: dict[str, Any], values: list[Any]
) -> None:
    field = _only_field(schema)
    for value in values:
        assert (field.problems(value) == []) == _jsonschema_accepts(field, value), value


def typed(field: FormField, value: Any) -> str:
    """What a person would type for ``value``."""
    if isinstance(field, BooleanField):
        return "yes" if value else "no"
    if isinstance(field, NumberField):
        return repr(value)
    if isinstance(field, MultiSelectField):
        line = io.StringIO()
        csv.writer(line, quoting=csv.QUOTE_ALL, lineterminator="").writerow(value)
        return line.getvalue()
    return str(value)


@PROPERTIES
@given(answered(forms()))
def test_typing_a_valid_answer_gives_it_back(case: tuple[Form, dict[str, Any]]) -> None:
    form, answer = case
    for name, value in answer.items():
        field = form[name]
        text = typed(field, value)
        if not text.strip() or value == []:
            assert field.coerce(text) is None  # blank text is no answer
            continue
        coerced = field.coerce(text)
        assert coerced == value
        assert type(coerced) is type(value)


# --- random pydantic models --------------------------------------------------------------


@st.composite
def choices(draw: st.DrawFn) -> tuple[str, ...]:
    return tuple(draw(st.lists(WORDS, min_size=1, max_size=4, unique=True)))


def _enum(values: tuple[str, ...]) -> type[enum.Enum]:
    members = {f"OPTION_{index}": value for index, value in enumerate(values)}
    return cast(type[enum.Enum], enum.Enum("Choice", members))


@st.composite
def field_types(draw: st.DrawFn) -> tuple[Any, Any]:
    """A field type the form accepts, and its ``Field`` (or default)."""
    kind = draw(
        st.sampled_from(
            [
                "str",
                "int",
                "float",
                "bool",
                "literal",
                "enum",
                "literals",
                "enums",
                "email",
                "date",
                "datetime",
                "url",
            ]
        )
    )
    if kind == "str":
        low = draw(st.integers(0, 3))
        return str, Field(min_length=low, max_length=draw(st.integers(low, 10)))
    if kind == "int":
        low = draw(st.integers(-50, 50))
        return int, Field(ge=low, le=draw(st.integers(low, 100)))
    if kind == "float":
        return float, Field(ge=draw(st.floats(-1e3, 1e3)))
    if kind == "bool":
        return bool, draw(st.sampled_from([..., True, False]))
    if kind == "literal":
        return Literal[draw(choices())], ...
    if kind == "enum":
        return _enum(draw(choices())), ...
    if kind == "literals":
        values = draw(choices())
        return list[Literal[values]], Field(min_length=draw(st.integers(0, len(values))))
    if kind == "enums":
        return set[_enum(draw(choices()))], ...  # type: ignore[misc]
    return {"email": EmailStr, "date": datetime.date, "datetime": datetime.datetime, "url": AnyUrl}[
        kind
    ], ...


@st.composite
def models(draw: st.DrawFn) -> type[BaseModel]:
    fields: dict[str, Any] = {}
    for index in range(draw(st.integers(0, 6))):
        annotation, field = draw(field_types())
        optional = draw(st.sampled_from(["no", "nullable", "nullable with default"]))
        if optional != "no" and field is ...:
            annotation = annotation | None
            field = None if optional == "nullable with default" else ...
        fields[f"f{index}"] = (annotation, field)
    return create_model("Generated", **fields)


@PROPERTIES
@given(st.data(), models())
def test_every_model_form_parses_and_answers_come_back(
    data: st.DataObject, model: type[BaseModel]
) -> None:
    schema = form_schema(model)
    if SPEC.is_file():
        assert _spec_errors(schema) == []
    form = parse_form(schema)
    assert form.schema == schema
    _, answer = data.draw(answered(st.just(form)))
    built = validate_answer(model, answer)
    dumped = built.model_dump(mode="json", by_alias=True)
    again = form.check({name: dumped[name] for name in answer})
    for name, value in answer.items():
        field = form[name]
        if isinstance(field, MultiSelectField):
            assert sorted(cast(list[str], again[name])) == sorted(value)  # a set keeps no order
        elif isinstance(field, StringField) and field.format in ("uri", "date-time"):
            continue  # pydantic writes these its own way; that they still pass is enough
        else:
            assert again[name] == value


@cache
def _request_validator() -> Draft202012Validator:
    definitions = json.loads(SPEC.read_text())["$defs"]
    return Draft202012Validator({"$ref": "#/$defs/ElicitRequestFormParams", "$defs": definitions})


def _spec_errors(schema: dict[str, Any]) -> list[str]:
    params = {"message": "?", "requestedSchema": schema}
    return [error.message for error in schema_errors(_request_validator(), params)]


def test_the_spec_is_here_or_we_say_so() -> None:
    if not SPEC.is_file():
        pytest.skip(f"{SPEC} is absent: the properties above ran without the wire-schema check")
    assert _spec_errors({"type": "object", "properties": {"n": {"type": "string"}}}) == []
    assert _spec_errors({"type": "object", "properties": {"n": {"type": "object"}}}) != []
