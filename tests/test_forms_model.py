"""``form_schema`` (a pydantic model as a spec-exact form) and ``validate_answer`` (back)."""

from __future__ import annotations

import datetime
import enum
from typing import Annotated, Any, Literal, cast

import pytest
from pydantic import (
    AnyUrl,
    BaseModel,
    EmailStr,
    Field,
    HttpUrl,
    SecretStr,
    field_validator,
    model_validator,
)

from answerback.forms import (
    AnswerError,
    FormSchemaError,
    Titles,
    form_schema,
    parse_form,
    validate_answer,
)


class Size(enum.StrEnum):
    SMALL = "s"
    EXTRA_LARGE = "xl"


class Plain(enum.Enum):
    red = "red"
    DarkBlue = "navy"


def one_field(annotation: Any, field: Any = ...) -> dict[str, Any]:
    """The form schema of a model whose only field ``f`` is ``annotation = field``."""
    namespace: dict[str, Any] = {"__annotations__": {"f": annotation}}
    if field is not ...:
        namespace["f"] = field
    model = type("One", (BaseModel,), namespace)
    return form_schema(model)["properties"]["f"]


def required_of(model: type[BaseModel]) -> list[str]:
    return form_schema(model).get("required", [])


@pytest.mark.parametrize(
    ("annotation", "field", "expected"),
    [
        pytest.param(str, ..., {"type": "string", "title": "F"}, id="str"),
        pytest.param(
            str,
            Field(min_length=1, max_length=9, pattern="^a", title="Name", description="Yours"),
            {
                "type": "string",
                "title": "Name",
                "description": "Yours",
                "minLength": 1,
                "maxLength": 9,
                "pattern": "^a",
            },
            id="str constraints",
        ),
        pytest.param(
            EmailStr, ..., {"type": "string", "title": "F", "format": "email"}, id="email"
        ),
        pytest.param(
            AnyUrl, ..., {"type": "string", "title": "F", "minLength": 1, "format": "uri"}, id="url"
        ),
        pytest.param(
            HttpUrl,
            ...,
            {"type": "string", "title": "F", "minLength": 1, "maxLength": 2083, "format": "uri"},
            id="http url",
        ),
        pytest.param(
            datetime.date,
            datetime.date(2025, 1, 31),
            {"type": "string", "title": "F", "format": "date", "default": "2025-01-31"},
            id="date",
        ),
        pytest.param(
            datetime.datetime, ..., {"type": "string", "title": "F", "format": "date-time"}, id="dt"
        ),
        pytest.param(
            int,
            Field(default=3, ge=1, le=5),
            {"type": "integer", "title": "F", "minimum": 1, "maximum": 5, "default": 3},
            id="int",
        ),
        pytest.param(
            int,
            Field(gt=0, lt=10),
            {"type": "integer", "title": "F", "minimum": 1, "maximum": 9},
            id="int exclusive bounds",
        ),
        pytest.param(
            int,
            Field(gt=0, lt=10, ge=3),
            {"type": "integer", "title": "F", "minimum": 3, "maximum": 9},
            id="int mixed bounds",
        ),
        pytest.param(
            float, Field(ge=0.5), {"type": "number", "title": "F", "minimum": 0.5}, id="float"
        ),
        pytest.param(bool, False, {"type": "boolean", "title": "F", "default": False}, id="bool"),
        pytest.param(
            Literal["a", "b"],
            "b",
            {"type": "string", "title": "F", "enum": ["a", "b"], "default": "b"},
            id="literal",
        ),
        pytest.param(
            Literal["only"], ..., {"type": "string", "title": "F", "enum": ["only"]}, id="const"
        ),
        pytest.param(
            Size,
            Size.SMALL,
            {
                "type": "string",
                "title": "F",
                "oneOf": [
                    {"const": "s", "title": "Small"},
                    {"const": "xl", "title": "Extra large"},
                ],
                "default": "s",
            },
            id="str enum",
        ),
        pytest.param(
            Plain,
            ...,
            {
                "type": "string",
                "title": "F",
                "oneOf": [{"const": "red", "title": "Red"}, {"const": "navy", "title": "DarkBlue"}],
            },
            id="enum of strings",
        ),
        pytest.param(
            Annotated[Literal["#f00", "#0f0"], Titles({"#f00": "Red", "#0f0": "Green"})],
            ...,
            {
                "type": "string",
                "title": "F",
                "oneOf": [{"const": "#f00", "title": "Red"}, {"const": "#0f0", "title": "Green"}],
            },
            id="titled literal",
        ),
        pytest.param(
            Annotated[Size, Titles(s="Tiny", xl="Huge")],
            ...,
            {
                "type": "string",
                "title": "F",
                "oneOf": [{"const": "s", "title": "Tiny"}, {"const": "xl", "title": "Huge"}],
            },
            id="retitled enum",
        ),
        pytest.param(
            list[Literal["x", "y"]],
            Field(default=["x"], min_length=1, max_length=2),
            {
                "type": "array",
                "title": "F",
                "minItems": 1,
                "maxItems": 2,
                "items": {"type": "string", "enum": ["x", "y"]},
                "default": ["x"],
            },
            id="list of literals",
        ),
        pytest.param(
            set[Size],
            ...,
            {
                "type": "array",
                "title": "F",
                "items": {
                    "anyOf": [
                        {"const": "s", "title": "Small"},
                        {"const": "xl", "title": "Extra large"},
                    ]
                },
            },
            id="set of enums",
        ),
        pytest.param(
            Annotated[list[Literal["a"]], Titles(a="Alpha")],
            ...,
            {"type": "array", "title": "F", "items": {"anyOf": [{"const": "a", "title": "Alpha"}]}},
            id="titled list",
        ),
        pytest.param(str | None, None, {"type": "string", "title": "F"}, id="optional"),
        pytest.param(
            # As a value, pyright has no type for `Annotated[...] | None`; it runs fine.
            cast(Any, Annotated[str, Field(max_length=3)]) | None,
            None,
            {"type": "string", "title": "F", "maxLength": 3},
            id="optional with constraint",
        ),
        pytest.param(
            Size | None,
            None,
            {
                "type": "string",
                "title": "F",
                "oneOf": [
                    {"const": "s", "title": "Small"},
                    {"const": "xl", "title": "Extra large"},
                ],
            },
            id="optional enum",
        ),
    ],
)
def test_fields(annotation: Any, field: Any, expected: dict[str, Any]) -> None:
    assert one_field(annotation, field) == expected


def test_a_nullable_field_without_default_is_optional_and_answers_none() -> None:
    class Profile(BaseModel):
        name: str
        nickname: str | None
        age: int | None = Field(default=None, ge=0)

    assert required_of(Profile) == ["name"]
    profile = validate_answer(Profile, {"name": "Ada"})
    assert (profile.name, profile.nickname, profile.age) == ("Ada", None, None)
    assert validate_answer(Profile, {"name": "Ada", "nickname": "A"}).nickname == "A"


def test_required_follows_defaults() -> None:
    class Order(BaseModel):
        item: str
        count: int = 1
        gift: bool

    assert required_of(Order) == ["item", "gift"]


def test_an_alias_is_the_field_name_on_the_wire() -> None:
    class Person(BaseModel):
        full_name: str = Field(alias="fullName")

    assert list(form_schema(Person)["properties"]) == ["fullName"]
    assert validate_answer(Person, {"fullName": "Ada"}).full_name == "Ada"


def test_the_schema_is_spec_exact_and_a_fresh_copy() -> None:
    class Thing(BaseModel):
        """A docstring, which is not part of a form."""

        model_config = {"title": "Something", "extra": "forbid"}
        name: str = Field(examples=["Ada"])

    schema = form_schema(Thing)
    assert schema == {
        "type": "object",
        "properties": {"name": {"type": "string", "title": "Name"}},
        "required": ["name"],
    }
    schema["properties"]["name"]["title"] = "changed"
    assert form_schema(Thing)["properties"]["name"]["title"] == "Name"
    assert parse_form(form_schema(Thing)).schema == form_schema(Thing)


class Inner(BaseModel):
    a: int


REFUSED: list[tuple[str, Any, Any, str]] = [
    (
        "int literal",
        Literal[1, 2, 3],
        ...,
        'write Literal["1", "2", "3"] (or a StrEnum), or use an int field with Field(ge=1, le=3)',
    ),
    ("mixed literal", Literal["a", 1], ..., 'write Literal["a", "1"]'),
    ("int enum", enum.IntEnum("Level", "LOW HIGH"), ..., "a form's choices are strings"),
    ("list of int literals", list[Literal[1, 2]], ..., 'write list[Literal["1", "2"]]'),
    ("nested model", Inner, ..., "is a nested model"),
    ("dict", dict[str, int], ..., "is a nested model or a dict"),
    ("free list", list[str], ..., "is a list of free values"),
    ("tuple", tuple[str, str], ..., "is a list of free values"),
    ("union", int | str, ..., "is a union of several types"),
    ("decimal", __import__("decimal").Decimal, ..., "is a union of several types"),
    ("secret", SecretStr, ..., "URL-mode elicitation"),
    ("uuid", __import__("uuid").UUID, ..., "has format 'uuid'"),
    ("time", datetime.time, ..., "has format 'time'"),
    ("float exclusive bound", float, Field(gt=0), "use Field(ge=..., le=...)"),
    ("multiple of", int, Field(multiple_of=5), "multiple_of"),
    ("crossed bounds", int, Field(ge=5, le=1), "which no value has"),
    ("bad default", Literal["a", "b"], "c", "its default"),
    ("too few choices", list[Literal["a"]], Field(min_length=2), "offers 1"),
]


@pytest.mark.parametrize(
    ("annotation", "field", "expected"),
    [pytest.param(a, f, e, id=case) for case, a, f, e in REFUSED],
)
def test_refusals_name_the_field_and_say_how(annotation: Any, field: Any, expected: str) -> None:
    with pytest.raises(FormSchemaError) as caught:
        one_field(annotation, field)
    assert [error.field for error in caught.value.errors] == ["f"]
    assert expected in caught.value.errors[0].message
    assert str(caught.value).startswith("One cannot be asked for in an elicitation form")


def test_every_bad_field_is_listed_at_once() -> None:
    class Survey(BaseModel):
        name: str
        level: Literal[1, 2, 3]
        address: Inner
        tags: list[str]
        rating: int = Field(ge=5, le=1)
        ok: bool

    with pytest.raises(FormSchemaError) as caught:
        form_schema(Survey)
    assert [error.field for error in caught.value.errors] == ["level", "address", "tags", "rating"]


def test_a_model_of_no_fields_is_a_confirmation_and_a_root_model_is_refused() -> None:
    class Confirm(BaseModel):
        pass

    assert form_schema(Confirm) == {"type": "object", "properties": {}}

    from pydantic import RootModel

    with pytest.raises(FormSchemaError, match="a form needs named fields"):
        form_schema(RootModel[str])


def test_titles_must_match_the_choices() -> None:
    with pytest.raises(TypeError, match=r"no title for \['b'\], not a choice: \['c'\]"):
        one_field(Annotated[Literal["a", "b"], Titles(a="A", c="C")])
    with pytest.raises(TypeError, match="titles choices between strings"):
        one_field(Annotated[str, Titles(a="A")])


def test_titles_also_work_in_a_models_own_json_schema() -> None:
    class Pick(BaseModel):
        color: Annotated[Literal["#f00"], Titles({"#f00": "Red"})]

    assert Pick.model_json_schema()["properties"]["color"]["oneOf"] == [
        {"const": "#f00", "title": "Red"}
    ]
    assert repr(Titles(a="A")) == "Titles({'a': 'A'})"


# --- validate_answer -----------------------------------------------------------------------


class Booking(BaseModel):
    name: str = Field(min_length=2)
    email: EmailStr
    day: datetime.date
    sizes: set[Size] = set()
    guests: int = Field(default=1, ge=1, le=4)

    @field_validator("name")
    @classmethod
    def not_bob(cls, value: str) -> str:
        if value == "Bob":
            raise ValueError("Bob has booked enough")
        return value

    @model_validator(mode="after")
    def weekdays_only(self) -> Booking:
        if self.day.weekday() >= 5:
            raise ValueError("we are closed at weekends")
        return self


def test_validate_answer_builds_the_model() -> None:
    booking = validate_answer(
        Booking,
        {"name": "Ada", "email": "ada@example.com", "day": "2025-01-31", "sizes": ["xl"]},
    )
    assert booking == Booking(
        name="Ada",
        email="ada@example.com",
        day=datetime.date(2025, 1, 31),
        sizes={Size.EXTRA_LARGE},
    )


def test_validate_answer_lists_every_form_error() -> None:
    with pytest.raises(AnswerError) as caught:
        validate_answer(Booking, {"name": "A", "email": "ada@", "sizes": ["m"], "guests": 9})
    assert [error.field for error in caught.value.errors] == [
        "name",
        "email",
        "day",
        "sizes",
        "guests",
    ]


def test_validate_answer_reports_the_models_own_validators_by_field() -> None:
    with pytest.raises(AnswerError) as caught:
        validate_answer(Booking, {"name": "Bob", "email": "bob@example.com", "day": "2025-01-31"})
    assert [(e.field, e.message) for e in caught.value.errors] == [
        ("name", "Value error, Bob has booked enough")
    ]
    with pytest.raises(AnswerError) as caught:
        validate_answer(Booking, {"name": "Ada", "email": "ada@example.com", "day": "2025-02-01"})
    assert [(e.field, e.message) for e in caught.value.errors] == [
        (None, "Value error, we are closed at weekends")
    ]


def test_validate_answer_works_for_strict_models() -> None:
    class Strict(BaseModel):
        model_config = {"strict": True}
        day: datetime.date
        sizes: set[Size]

    strict = validate_answer(Strict, {"day": "2025-01-31", "sizes": ["s"]})
    assert strict == Strict(day=datetime.date(2025, 1, 31), sizes={Size.SMALL})


def test_the_official_sdk_asks_for_the_same_form() -> None:
    """A model asked for by the official Python SDK's server parses on our client side,
    to the very form that ``form_schema`` builds for it."""
    elicitation = pytest.importorskip("mcp.server.elicitation")

    class Signup(BaseModel):
        name: str = Field(min_length=1, description="Full name")
        nickname: str | None = None
        plan: Literal["free", "pro"] = "free"
        seats: int = Field(default=1, ge=1, le=50)
        email: EmailStr
        features: list[Literal["sso", "audit"]] = []
        newsletter: bool = False

    theirs = elicitation.render_elicitation_schema(Signup)
    assert parse_form(theirs) == parse_form(form_schema(Signup))
