"""The quick yes for plain output schemas (``answerback/forms/_plain_schema.py``) never
says yes where jsonschema says no, is there for the schemas pydantic writes, and stands
aside for any schema that is not plain; a structured result is still judged, and its
problems worded, by jsonschema alone."""

from __future__ import annotations

from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft7Validator, Draft202012Validator
from pydantic import BaseModel, TypeAdapter
from support import schema_errors

from answerback import Client
from answerback.forms._json_schema import compile_schema
from answerback.forms._plain_schema import plain_test
from answerback.server import MCPServer

TYPES = ["string", "integer", "number", "boolean", "null", "array", "object"]
KEYS = ["a", "b", "c"]

json_values: st.SearchStrategy[Any] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.floats(-3, 3, allow_nan=False)
    | st.sampled_from([0.0, 1.0, -2.0])
    | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(KEYS), inner),
    max_leaves=8,
)


def _object_schema(
    props: dict[str, Any], required: list[str], additional: Any, typed: bool
) -> dict[str, Any]:
    schema: dict[str, Any] = {"properties": props, "required": required}
    if typed:
        schema["type"] = "object"
    if additional is not None:
        schema["additionalProperties"] = additional
    return schema


def _array_schema(items: Any) -> dict[str, Any]:
    return {"type": "array", "items": items}


def _any_of(branches: list[Any]) -> dict[str, Any]:
    return {"anyOf": branches}


def _typed(name: str | list[str]) -> dict[str, Any]:
    return {"type": name, "title": "T"}


def _with_children(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(
        st.builds(
            _object_schema,
            st.dictionaries(st.sampled_from(KEYS), inner, max_size=3),
            st.lists(st.sampled_from(KEYS), max_size=2, unique=True),
            st.none() | st.booleans() | inner,
            st.booleans(),
        ),
        st.builds(_array_schema, inner),
        st.builds(_any_of, st.lists(inner, min_size=1, max_size=3)),
    )


plain_schemas: st.SearchStrategy[Any] = st.recursive(
    st.one_of(
        st.builds(_typed, st.sampled_from(TYPES)),
        st.builds(_typed, st.lists(st.sampled_from(TYPES), min_size=1, max_size=3, unique=True)),
        st.just({}),
        st.just({"description": "anything"}),
        # A vendor's keyword, here one that reads like a schema: every dialect ignores it.
        st.just({"type": "string", "x-vendor": {"minLength": 5, "type": "integer"}}),
    ),
    _with_children,
    max_leaves=6,
)


@settings(max_examples=600, deadline=None)
@given(schema=plain_schemas, value=json_values)
def test_the_quick_yes_agrees_with_jsonschema(schema: dict[str, Any], value: Any) -> None:
    test = plain_test(schema)
    assert test is not None  # every schema drawn here is plain
    if test(value):
        assert not schema_errors(Draft202012Validator(schema), value), (schema, value)
        assert not schema_errors(cast(Any, Draft7Validator(schema)), value), (schema, value)


class Point(BaseModel):
    x: int
    y: float
    label: str | None = None


class Route(BaseModel):
    start: Point
    stops: list[Point]
    name: str


@pytest.mark.parametrize(
    ("annotation", "value"),
    [
        (Point, {"x": 1, "y": 2.5}),
        (Point, {"x": 1, "y": 2, "label": None}),
        (
            Route,
            {"start": {"x": 0, "y": 0}, "stops": [{"x": 1, "y": 1, "label": "a"}], "name": "r"},
        ),
        (list[str], ["a", "b"]),
        (dict[str, int], {"a": 1}),
    ],
    ids=["flat", "optional", "nested-refs", "list", "dict"],
)
def test_pydantic_schemas_are_plain_and_their_values_take_the_quick_yes(
    annotation: Any, value: Any
) -> None:
    schema = TypeAdapter(annotation).json_schema()
    test = plain_test(schema)
    assert test is not None, schema
    assert test(value)
    assert not schema_errors(Draft202012Validator(schema), value)


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "string", "pattern": "^a+$"},
        {"type": "string", "minLength": 2},
        {"enum": [1, 2]},
        {"const": True},
        {"type": "string", "format": "email"},
        {"type": "array", "items": [{"type": "string"}]},
        {"type": "object", "patternProperties": {"^x": {"type": "string"}}},
        {"type": "any"},
        {"$ref": "#/$defs/me", "$defs": {"me": {"$ref": "#/$defs/me"}}},
        {"$ref": "#/$defs/missing"},
        {"$ref": "https://example.com/schema"},
        {"$ref": "#/$defs/a", "type": "object", "$defs": {"a": {"type": "object"}}},
        {"type": "object", "required": "a"},
        {"not": {"type": "string"}},
        {"anyOf": []},
        {"type": "object", "properties": {"a": False}},
        # Not ignored though no dialect validates with them: they move a $ref's base.
        {"type": "object", "id": "https://example.com/other"},
        {"type": "string", "$anchor": "here"},
        {"type": "object", "$id": "https://example.com/other"},
    ],
)
def test_anything_else_is_left_to_jsonschema(schema: Any) -> None:
    assert plain_test(schema) is None


@pytest.mark.anyio
async def test_an_answerback_tools_plain_result_takes_the_quick_yes() -> None:
    """Its output schema carries FastMCP's ``x-fastmcp-wrap-result`` mark, which no
    dialect acts on: it used to send every result of such a tool to jsonschema."""
    server = MCPServer("plain")

    @server.tool()
    def echo(text: str) -> str:
        return text

    async with Client(server, mode="2026-07-28") as client:
        [tool] = (await client.list_tools()).tools
    assert tool.output_schema is not None
    assert "x-fastmcp-wrap-result" in tool.output_schema
    test = plain_test(tool.output_schema)
    assert test is not None
    assert test({"result": "hi"})
    assert not test({"result": 1})


def test_an_integer_written_as_a_float_and_every_complaint_go_to_jsonschema() -> None:
    """``1.0`` is an integer to jsonschema in this dialect: the quick test does not say
    so, and the full check does; problems are jsonschema's, worded as always."""
    check = compile_schema(TypeAdapter(Point).json_schema())
    assert check.plainly_fits is not None
    assert not check.plainly_fits({"x": 1.0, "y": 0})
    assert check.judge({"x": 1.0, "y": 0}, "structuredContent").problems == []
    assert check.judge({"x": "one", "y": 0}, "structuredContent").problems == [
        "structuredContent.x: 'one' is not of type 'integer'"
    ]


def test_each_definition_is_compiled_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A hostile schema refers to each definition twice from the one before: compiling a
    definition again for each reference would take 2**depth steps (here 65,536)."""
    import answerback.forms._plain_schema as plain

    depth = 16
    definitions = {
        f"d{level}": {
            "type": "object",
            "properties": {
                "x": {"$ref": f"#/$defs/d{level + 1}"},
                "y": {"$ref": f"#/$defs/d{level + 1}"},
            },
        }
        for level in range(depth)
    }
    definitions[f"d{depth}"] = {"type": "string"}
    calls: list[object] = []
    compiled = plain._compiled  # pyright: ignore[reportPrivateUsage]

    def counted(schema: object, known: Any) -> Any:
        calls.append(schema)
        return compiled(schema, known)

    monkeypatch.setattr(plain, "_compiled", counted)
    test = plain_test({"$ref": "#/$defs/d0", "$defs": definitions})
    assert test is not None
    assert len(calls) < 4 * (depth + 1)
    assert test({"x": {"y": {}}, "y": {"x": {}}})
    assert not test({"x": 5})
