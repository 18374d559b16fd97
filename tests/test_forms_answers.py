"""Answers: ``check`` names every bad field, ``coerce`` reads typed text by the same
rules, ``with_defaults`` fills what was left out."""

from __future__ import annotations

from typing import Any

import pytest

from answerback.forms import AnswerError, FieldError, Form, FormValue, parse_form

ORDER = parse_form(
    {
        "type": "object",
        "properties": {
            "name": {"type": "string", "minLength": 2, "maxLength": 10},
            "code": {"type": "string", "pattern": "^[A-Z]{3}$"},
            "email": {"type": "string", "format": "email"},
            "site": {"type": "string", "format": "uri"},
            "day": {"type": "string", "format": "date"},
            "at": {"type": "string", "format": "date-time"},
            "copies": {"type": "integer", "minimum": 1, "maximum": 5, "default": 1},
            "weight": {"type": "number", "minimum": 0.5},
            "gift": {"type": "boolean", "default": False},
            "size": {"type": "string", "enum": ["S", "M", "L"]},
            "color": {
                "type": "string",
                "oneOf": [{"const": "#f00", "title": "Red"}, {"const": "#0f0", "title": "Green"}],
            },
            "extras": {
                "type": "array",
                "items": {"type": "string", "enum": ["wrap", "card", "ribbon"]},
                "minItems": 1,
                "maxItems": 2,
                "default": ["card"],
            },
            "notify": {
                "type": "array",
                "items": {
                    "anyOf": [{"const": "me", "title": "Me"}, {"const": "them", "title": "Them"}]
                },
            },
        },
        "required": ["name", "email", "size"],
    }
)

GOOD: dict[str, FormValue] = {
    "name": "Ada",
    "code": "ABC",
    "email": "ada@example.com",
    "site": "https://example.com/a?b=c",
    "day": "2025-01-31",
    "at": "2025-01-31T14:30:00Z",
    "copies": 2,
    "weight": 1.25,
    "gift": True,
    "size": "M",
    "color": "#0f0",
    "extras": ["wrap", "ribbon"],
    "notify": [],
}


def errors_of(form: Form, answer: object) -> list[FieldError]:
    with pytest.raises(AnswerError) as caught:
        form.check(answer)
    return list(caught.value.errors)


def test_a_good_answer_comes_back_as_a_new_dict() -> None:
    checked = ORDER.check(GOOD)
    assert checked == GOOD
    assert checked is not GOOD


def test_whole_numbers_for_an_integer_field_come_back_as_ints() -> None:
    checked = ORDER.check({**GOOD, "copies": 3.0})
    assert checked["copies"] == 3
    assert isinstance(checked["copies"], int)


def test_every_bad_field_is_named_with_what_is_wrong() -> None:
    answer: dict[str, Any] = {
        "name": "A",
        "code": "abc",
        "email": "ada@",
        "site": "example.com",
        "day": "31/01/2025",
        "at": "2025-01-31 14:30",
        "copies": 9,
        "weight": 0.1,
        "gift": "yes",
        "size": "XL",
        "color": "Red",
        "extras": ["wrap", "wrap", "bow"],
        "notify": "me",
        "coupon": "FREE",
    }
    errors = errors_of(ORDER, answer)
    assert [str(error) for error in errors] == [
        "name: must be at least 2 characters",
        "code: must match the pattern ^[A-Z]{3}$",
        "email: is not a valid email address: There must be something after the @-sign",
        "site: must be an absolute URI with a scheme, like https://example.com/page "
        "(non-ASCII characters percent-encoded)",
        "day: must be a date like 2025-01-31",
        "at: must be a date and time with a time zone, like 2025-01-31T14:30:00Z",
        "copies: must be at most 5",
        "weight: must be at least 0.5",
        'gift: must be true or false, not "yes"',
        'size: must be one of "S", "M", "L", not "XL"',
        'color: must be one of "#f00" (Red), "#0f0" (Green), not "Red"',
        'extras: "bow" is not one of the choices "wrap", "card", "ribbon"',
        "extras: must not pick the same choice twice",
        "extras: must pick at most 2 choices",
        'notify: must be a list of choices, not "me"',
        "coupon: is not a field of this form",
    ]


def test_missing_required_fields_and_nulls() -> None:
    errors = errors_of(ORDER, {"name": None, "gift": None})
    assert [str(error) for error in errors] == [
        "name: must be text, not null (leave out a field with no answer)",
        "email: is required",
        "gift: must be true or false, not null (leave out a field with no answer)",
        "size: is required",
    ]


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf")])
def test_numbers_json_cannot_carry_are_refused(value: float) -> None:
    errors = errors_of(ORDER, {**GOOD, "weight": value})
    assert [error.field for error in errors] == ["weight"]
    assert "finite" in errors[0].message
    with pytest.raises(AnswerError, match="finite"):
        ORDER["weight"].check(value)


@pytest.mark.parametrize("answer", [None, [], "name=Ada", 3])
def test_an_answer_that_is_not_an_object(answer: object) -> None:
    assert errors_of(ORDER, answer) == [
        FieldError(None, "the answer must be an object of field values")
    ]


def test_the_message_lists_everything_on_one_line() -> None:
    with pytest.raises(AnswerError) as caught:
        ORDER.check({"name": "Ada", "size": "XL"})
    assert str(caught.value) == (
        'The answer does not fit the form: email: is required; size: must be one of "S", "M", '
        '"L", not "XL".'
    )


def test_booleans_are_not_numbers_and_whole_floats_are_integers() -> None:
    assert [error.field for error in errors_of(ORDER, {**GOOD, "copies": True})] == ["copies"]
    assert [error.field for error in errors_of(ORDER, {**GOOD, "copies": 2.5})] == ["copies"]


# --- formats -------------------------------------------------------------------------------

FORMATS: list[tuple[str, str, bool]] = [
    ("email", "ada@example.com", True),
    ("email", "ada.lovelace+maths@sub.example.co.uk", True),
    ("email", "ada@münchen.de", True),
    ("email", "ada@example", False),
    ("email", "@example.com", False),
    ("email", "ada@@example.com", False),
    ("email", "ada..l@example.com", False),
    ("email", "Ada <ada@example.com>", False),
    ("email", "ada@localhost", False),
    ("email", "ada example@example.com", False),
    ("uri", "https://example.com", True),
    ("uri", "mailto:ada@example.com", True),
    ("uri", "urn:isbn:0451450523", True),
    ("uri", "http://[::1]:8080/path", True),
    ("uri", "example.com", False),
    ("uri", "/relative/path", False),
    ("uri", "https://exa mple.com/", False),
    ("uri", "https://example.com/%zz", False),
    ("uri", "https://münchen.de/", False),
    ("date", "2024-02-29", True),
    ("date", "2023-02-29", False),
    ("date", "2025-1-5", False),
    ("date", "20250105", False),
    ("date", "2025-W01-1", False),
    ("date", "2025-01-31T00:00:00Z", False),
    ("date-time", "2025-01-31T14:30:00Z", True),
    ("date-time", "2025-01-31t14:30:00z", True),
    ("date-time", "2025-01-31T14:30:00.123+05:30", True),
    ("date-time", "2025-01-31T14:30:00", False),
    ("date-time", "2025-01-31 14:30:00Z", False),
    ("date-time", "2025-02-30T14:30:00Z", False),
    ("date-time", "2025-01-31", False),
]


@pytest.mark.parametrize(("fmt", "value", "valid"), FORMATS)
def test_formats(fmt: str, value: str, valid: bool) -> None:
    field = parse_form({"type": "object", "properties": {"f": {"type": "string", "format": fmt}}})[
        "f"
    ]
    if valid:
        assert field.check(value) == value
    else:
        with pytest.raises(AnswerError) as caught:
            field.check(value)
        assert [error.field for error in caught.value.errors] == ["f"]


# --- defaults ------------------------------------------------------------------------------


def test_with_defaults_fills_only_what_was_left_out() -> None:
    assert ORDER.with_defaults({"name": "Ada", "copies": 99}) == {
        "name": "Ada",
        "copies": 99,
        "gift": False,
        "extras": ["card"],
    }


def test_defaults_are_fresh_each_time() -> None:
    first = ORDER.with_defaults({})
    extras = first["extras"]
    assert isinstance(extras, list)
    extras.append("wrap")
    assert ORDER.with_defaults({})["extras"] == ["card"]


# --- coercion ------------------------------------------------------------------------------

COERCED: list[tuple[str, str, FormValue | None]] = [
    ("name", "Ada", "Ada"),
    ("name", "  Ada ", "  Ada "),
    ("name", "   ", None),
    ("name", "", None),
    ("email", "  ada@example.com\n", "ada@example.com"),
    ("day", " 2025-01-31 ", "2025-01-31"),
    ("copies", "5", 5),
    ("copies", " +3 ", 3),
    ("copies", "2.0", 2),
    ("copies", "1e0", 1),
    ("weight", "5", 5),
    ("weight", "2.5", 2.5),
    ("weight", ".75", 0.75),
    ("weight", "1e3", 1000.0),
    ("gift", "yes", True),
    ("gift", "Y", True),
    ("gift", "true", True),
    ("gift", "on", True),
    ("gift", "1", True),
    ("gift", "No", False),
    ("gift", "n", False),
    ("gift", "FALSE", False),
    ("gift", "off", False),
    ("gift", "0", False),
    ("size", "M", "M"),
    ("size", " l ", "L"),
    ("color", "#f00", "#f00"),
    ("color", "Green", "#0f0"),
    ("color", "green", "#0f0"),
    ("extras", "wrap", ["wrap"]),
    ("extras", "wrap, Ribbon", ["wrap", "ribbon"]),
    ("extras", "wrap,wrap", ["wrap"]),
    ("extras", " , wrap, ", ["wrap"]),
    ("notify", "Me, them", ["me", "them"]),
]


@pytest.mark.parametrize(("name", "text", "expected"), COERCED)
def test_coerce(name: str, text: str, expected: FormValue | None) -> None:
    value = ORDER[name].coerce(text)
    assert value == expected
    assert type(value) is type(expected)


NOT_COERCED: list[tuple[str, str, str]] = [
    ("name", "A", "must be at least 2 characters"),
    ("email", "ada", "is not a valid email address"),
    ("copies", "five", "must be a whole number like 42"),
    ("copies", "2.5", "must be a whole number, not 2.5"),
    ("copies", "9", "must be at most 5"),
    ("copies", "1,000", "must be a whole number like 42"),
    ("copies", "1e400", "too large"),
    ("weight", "nan", "must be a number like 42 or 3.5"),
    ("weight", "inf", "must be a number like 42 or 3.5"),
    ("weight", "0x10", "must be a number"),
    ("weight", "0.1", "must be at least 0.5"),
    ("gift", "maybe", 'must be yes or no, not "maybe"'),
    ("size", "XL", '"XL" is not one of the choices "S", "M", "L"'),
    ("color", "Blue", '"Blue" is not one of the choices "#f00" (Red), "#0f0" (Green)'),
    ("extras", "wrap, bow, tie", '"bow" is not one of the choices'),
    ("extras", "wrap, card, ribbon", "must pick at most 2 choices"),
]


@pytest.mark.parametrize(("name", "text", "expected"), NOT_COERCED)
def test_coerce_refuses(name: str, text: str, expected: str) -> None:
    with pytest.raises(AnswerError) as caught:
        ORDER[name].coerce(text)
    assert [error.field for error in caught.value.errors] == [name]
    assert expected in caught.value.errors[0].message


def test_a_choice_is_found_by_value_first_then_title_then_either_in_any_case() -> None:
    field = parse_form(
        {
            "type": "object",
            "properties": {
                "f": {
                    "type": "string",
                    "oneOf": [
                        {"const": "a", "title": "b"},
                        {"const": "b", "title": "Bee"},
                        {"const": "A", "title": "Big A"},
                    ],
                }
            },
        }
    )["f"]
    assert field.coerce("b") == "b"  # the value wins over the other option's title
    assert field.coerce("a") == "a"
    assert field.coerce("A") == "A"
    assert field.coerce("bee") == "b"
    assert field.coerce("big a") == "A"


def test_a_choice_holding_a_comma_is_quoted() -> None:
    field = parse_form(
        {
            "type": "object",
            "properties": {
                "f": {"type": "array", "items": {"type": "string", "enum": ["Smith, J", "Doe"]}}
            },
        }
    )["f"]
    assert field.coerce('"Smith, J", Doe') == ["Smith, J", "Doe"]
    with pytest.raises(AnswerError, match='"Smith" is not one of the choices'):
        field.coerce("Smith, J")


def test_form_coerce_reads_everything_and_reports_everything() -> None:
    answer = ORDER.coerce({"name": "Ada", "email": "ada@example.com", "size": "s", "gift": ""})
    assert answer == {
        "name": "Ada",
        "email": "ada@example.com",
        "size": "S",
        "copies": 1,
        "gift": False,
        "extras": ["card"],
    }
    with pytest.raises(AnswerError) as caught:
        ORDER.coerce({"name": "Ada", "copies": "many", "gift": "perhaps", "colour": "red"})
    assert [str(error) for error in caught.value.errors] == [
        "email: is required",
        'copies: must be a whole number like 42, not "many"',
        'gift: must be yes or no, not "perhaps"',
        "size: is required",
        "colour: is not a field of this form",
    ]


def test_choices_on_separate_lines_are_read_too() -> None:
    assert ORDER["extras"].coerce("wrap\nribbon") == ["wrap", "ribbon"]
    assert ORDER["extras"].coerce('"wrap"\ncard') == ["wrap", "card"]


def test_a_value_of_the_wrong_type_is_told_only_its_type() -> None:
    assert [str(error) for error in errors_of(ORDER, {**GOOD, "name": float("nan")})] == [
        "name: must be text, not NaN"
    ]
    assert [str(error) for error in errors_of(ORDER, {**GOOD, "size": 3})] == [
        "size: must be one of the choices, not 3"
    ]
