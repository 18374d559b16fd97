"""The form that asks a tool's arguments at ``answerback connect``, built from the input
schema pydantic really writes for Python functions (registered on an ``MCPServer``, or
from a ``TypeAdapter``): Enums come as ``$ref`` into ``$defs``, optional arguments as
``anyOf`` with ``null``, and neither may change what is sent.
"""

from __future__ import annotations

import copy
from enum import Enum, IntEnum
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, TypeAdapter
from rich.console import Console

from answerback import Client
from answerback.cli import _ask_arguments, _connect
from answerback.cli._argument_form import ArgumentForm, argument_form
from answerback.cli._connect import Session
from answerback.cli._targets import Target
from answerback.forms import (
    BooleanField,
    Form,
    MultiSelectField,
    NumberField,
    Option,
    SingleSelectField,
    StringField,
    parse_form,
)
from answerback.interact import Roots
from answerback.server import MCPServer
from answerback.types import Tool


class Colour(Enum):
    """A colour of paint."""

    RED = "red"
    OCHRE = "ochre"


class Size(IntEnum):
    SMALL = 1
    LARGE = 2


class Point(BaseModel):
    x: int
    y: int


class Node(BaseModel):
    name: str
    children: list[Node] = []


def _not_null(value: object) -> object:
    if value is None:
        raise ValueError("was sent as null instead of being left out")
    return value


mcp = MCPServer("Paint shop")


@mcp.tool()
def paint(colour: Colour, coats: Annotated[int | None, BeforeValidator(_not_null)] = None) -> str:
    """Paint the wall."""
    return f"{colour.value}, coats: {'not given' if coats is None else coats}"


@mcp.tool()
def optionals(
    needed: str,
    count: int | None = None,
    note: str | None = None,
    shiny: bool | None = None,
    matte: bool | None = False,
    glossy: bool = False,
) -> str:
    return "ok"


@mcp.tool()
def tint(
    tint: Colour | None = None,
    described: Annotated[
        Colour, Field(title="Paint colour", description="Which colour to use")
    ] = Colour.OCHRE,
    colours: list[Colour] | None = None,
) -> str:
    return "ok"


@mcp.tool()
def shapes(size: Size, at: Point | None = None, tree: Node | None = None) -> str:
    return "ok"


@mcp.tool()
def place(at: Point, label: str) -> str:
    return "ok"


def schema_of(name: str) -> dict[str, Any]:
    """The input schema ``MCPServer`` lists for one of the tools above."""
    return mcp._registry.tools[name].definition.input_schema  # pyright: ignore[reportPrivateUsage]


def form_of(name: str) -> tuple[ArgumentForm, Form]:
    asked = argument_form(schema_of(name))
    return asked, parse_form(asked.schema)


def test_pydantic_writes_what_a_form_refuses() -> None:
    """The premise: without the rewrite, none of these tools could be asked on a form."""
    from answerback.forms import UnsupportedForm

    for name in ("paint", "optionals", "tint", "shapes"):
        with pytest.raises(UnsupportedForm):
            parse_form(schema_of(name))


def test_an_enum_is_a_choice_of_its_values() -> None:
    schema = schema_of("paint")
    assert schema["properties"]["colour"] == {"$ref": "#/$defs/Colour"}
    asked, form = form_of("paint")
    assert asked.left_off == ()
    assert asked.unaskable == ()
    assert form["colour"] == SingleSelectField(
        name="colour",
        description="A colour of paint.",  # the Enum's docstring, kept as help
        required=True,
        options=(Option("red"), Option("ochre")),
    )  # no title: "Colour" names the type, so the field is labelled by its name


def test_an_optional_argument_loses_its_null_and_its_null_default() -> None:
    asked, form = form_of("optionals")
    assert form["count"] == NumberField(name="count", title="Count", integer=True)
    assert form["note"] == StringField(name="note", title="Note")
    assert asked.schema["properties"]["count"] == {"type": "integer", "title": "Count"}
    assert asked.schema["required"] == ["needed"]


def test_an_optional_yes_or_no_without_a_default_is_asked_and_may_stay_unanswered() -> None:
    """``bool | None = None`` is on the form like any optional argument: the form starts
    it unanswered (it was left off while the terminal's checkbox could only answer yes
    or no), and an answer without it is a whole answer, so the tool's default applies."""
    asked, form = form_of("optionals")
    assert asked.left_off == ()
    assert asked.schema["properties"]["shiny"] == {"type": "boolean", "title": "Shiny"}
    assert form["shiny"] == BooleanField(name="shiny", title="Shiny")
    assert form["matte"] == BooleanField(name="matte", title="Matte", default=False)
    assert form["glossy"] == BooleanField(name="glossy", title="Glossy", default=False)
    names = ["needed", "count", "note", "shiny", "matte", "glossy"]
    assert [field.name for field in form.fields] == names
    assert form.check({"needed": "x"}) == {"needed": "x"}
    assert form.with_defaults({"needed": "x"}) == {"needed": "x", "matte": False, "glossy": False}


def test_an_optional_enum_its_own_title_description_and_default_are_kept() -> None:
    schema = schema_of("tint")
    assert schema["properties"]["described"] == {
        "$ref": "#/$defs/Colour",
        "default": "ochre",
        "title": "Paint colour",
        "description": "Which colour to use",
    }
    asked, form = form_of("tint")
    assert asked.left_off == ()
    assert asked.unaskable == ()
    options = (Option("red"), Option("ochre"))
    assert form["tint"] == SingleSelectField(
        name="tint", description="A colour of paint.", options=options
    )
    assert form["described"] == SingleSelectField(
        name="described",
        title="Paint colour",
        description="Which colour to use",
        options=options,
        default="ochre",
    )
    assert form["colours"] == MultiSelectField(name="colours", title="Colours", options=options)


def test_what_a_form_cannot_show_is_left_off_when_optional() -> None:
    """An IntEnum's values are numbers, which a choice cannot hold; a model is a nested
    object (a recursive one too): required, the form cannot be had; optional, left off."""
    asked = argument_form(schema_of("shapes"))
    assert asked.unaskable == ("size",)
    assert asked.left_off == ("at", "tree")
    assert asked.schema == {"type": "object", "properties": {}}
    asked, form = form_of("place")
    assert asked.unaskable == ("at",)
    assert [field.name for field in form.fields] == ["label"]


def _with(definitions: dict[str, Any], **properties: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": ["needed"],
        "$defs": definitions,
    }


def test_a_reference_to_a_reference_is_not_followed() -> None:
    colour = TypeAdapter(Colour).json_schema()
    definitions = {
        "Colour": colour,
        "Again": {"$ref": "#/$defs/Again"},
        "Alias": {"$ref": "#/$defs/Colour"},
    }
    schema = _with(
        definitions,
        needed={"$ref": "#/$defs/Colour"},
        looped={"$ref": "#/$defs/Again"},
        aliased={"anyOf": [{"$ref": "#/$defs/Alias"}, {"type": "null"}], "default": None},
    )
    asked = argument_form(schema)
    assert asked.left_off == ("looped", "aliased")
    assert list(asked.schema["properties"]) == ["needed"]
    asked = argument_form({**schema, "required": ["needed", "looped"]})
    assert asked.unaskable == ("looped",)


def test_a_reference_that_is_not_local_or_not_there_is_not_followed() -> None:
    colour = TypeAdapter(Colour).json_schema()
    schema = _with(
        {"Colour": colour},
        needed={"type": "string"},
        remote={"$ref": "https://example.com/schemas.json#/$defs/Colour"},
        missing={"$ref": "#/$defs/Missing"},
        inner={"$ref": "#/$defs/Colour/enum"},
        older={"$ref": "#/definitions/Colour"},
    )
    asked = argument_form(schema)
    assert asked.left_off == ("remote", "missing", "inner", "older")
    asked = argument_form({**schema, "definitions": {"Colour": colour}})
    assert asked.left_off == ("remote", "missing", "inner")
    assert parse_form(asked.schema)["older"] == SingleSelectField(
        name="older", description="A colour of paint.", options=(Option("red"), Option("ochre"))
    )


def test_the_root_keeps_only_what_a_form_has() -> None:
    class Order(BaseModel):
        model_config = ConfigDict(extra="forbid", title="An order")
        colour: Colour
        coats: int | None = None

    schema = TypeAdapter(Order).json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    assert {"$defs", "title", "additionalProperties", "$schema"} <= set(schema)
    before = copy.deepcopy(schema)
    asked = argument_form(schema)
    assert schema == before  # the tool's schema is left as it was
    assert set(asked.schema) == {"type", "properties", "required"}
    assert parse_form(asked.schema).schema == {
        "type": "object",
        "properties": {
            "colour": {
                "type": "string",
                "description": "A colour of paint.",
                "enum": ["red", "ochre"],
            },
            "coats": {"type": "integer", "title": "Coats"},
        },
        "required": ["colour"],
    }


def test_a_nullable_type_list_and_what_is_not_one_schema_or_null() -> None:
    schema = {
        "type": "object",
        "properties": {
            "count": {"type": ["integer", "null"], "default": None},
            "either": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
            "three": {"anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}]},
            "nothing": {"type": ["null", "null"]},
        },
        "required": ["count"],
    }
    asked = argument_form(schema)
    assert asked.schema["properties"] == {"count": {"type": "integer"}}
    assert asked.left_off == ("either", "three", "nothing")


def test_a_required_argument_that_is_not_a_property_cannot_be_asked() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a", "b"]}
    assert argument_form(schema).unaskable == ("b",)


@pytest.mark.anyio
async def test_what_the_form_answers_is_what_the_tool_takes() -> None:
    """The Enum's value is sent as it is, and an optional left empty is not sent at all
    (``paint`` refuses a null for ``coats``)."""
    _, form = form_of("paint")
    left_empty = form.coerce({"colour": "Ochre", "coats": ""})
    assert left_empty == {"colour": "ochre"}
    given = form.coerce({"colour": "red", "coats": "2"})
    async with Client(mcp) as client:
        result = await client.call_tool("paint", left_empty)
        assert not result.is_error, result
        assert result.content[0].model_dump()["text"] == "ochre, coats: not given"
        result = await client.call_tool("paint", given)
        assert result.content[0].model_dump()["text"] == "red, coats: 2"


@pytest.mark.anyio
async def test_connect_asks_a_form_and_names_the_optional_arguments_it_leaves_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked: list[Form] = []

    async def ask_form(form: Form, *, title: str, message: str, server: str) -> dict[str, Any]:
        asked.append(form)
        return {"size": "2"}

    monkeypatch.setattr(_ask_arguments, "ask_form", ask_form)
    session = Session(
        [], Roots([tmp_path]), history=tmp_path / "history", timeout=None, log_level="info"
    )
    schema = {
        "type": "object",
        "properties": {
            "size": {"type": "string"},
            "at": {"anyOf": [{"$ref": "#/$defs/Point"}, {"type": "null"}], "default": None},
        },
        "required": ["size"],
        "$defs": {"Point": TypeAdapter(Point).json_schema()},
    }
    session.console = Console(record=True, width=200)
    tool = Tool(name="shapes", input_schema=schema)
    server = _connect.Server(target=Target(name="tearoom"))
    answer = await session._ask_arguments(server, tool)  # pyright: ignore[reportPrivateUsage]
    assert answer == {"size": "2"}
    assert [field.name for field in asked[0].fields] == ["size"]
    assert session.console.export_text().splitlines() == [
        "The form for shapes leaves out the optional at, which a form cannot ask: to give "
        "it, type call shapes at=... instead."
    ]
