"""The JSON Schema of what a tool sends: the ``outputSchema`` of its return annotation.

Hosts check a tool's structured content against this schema, and some check strictly:
the TypeScript SDK's client, under most hosts, asserts every ``format`` and fails the
whole call on any mismatch. So the schema must describe the JSON that pydantic *writes*,
which is not always what the annotation would *accept*:

- It is written in serialization mode, so a computed field and a field with its own
  serializer are described as they are sent (a validation-mode schema of a model that
  forbids extra fields refuses its own computed fields).
- A ``datetime`` or ``time`` that may be naive carries no ``date-time`` or ``time``
  format: pydantic writes a naive value without a UTC offset, which RFC 3339 requires.
  ``AwareDatetime`` (or ``time`` with ``tz_constraint``) keeps the format.
- A ``timedelta`` that may be negative carries no ``duration`` format: pydantic writes
  ``-PT1H``, and RFC 3339's durations have no sign.

A value JSON does not always write as an object (an ``int``, a list) is sent wrapped as
``{"result": value}``, and its schema says so (``wrapped_output_schema``).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from pydantic import TypeAdapter
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema


def output_json_schema(adapter: TypeAdapter[Any]) -> dict[str, Any]:
    """The schema of the JSON that ``adapter`` dumps (see the module's docstring)."""
    return adapter.json_schema(mode="serialization", schema_generator=_SentJsonSchema)


WRAPPED_RESULT_KEYWORD = "x-fastmcp-wrap-result"
"""The mark on a wrapped output schema that FastMCP's client reads: with it, its
``CallToolResult.data`` is the value inside ``result``; without it, an object holding
one. Every other client ignores a keyword it does not know (JSON Schema 2020-12 allows
unknown keywords), so the mark costs them nothing."""


def wrapped_output_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The object schema of ``{"result": value}``, ``schema`` being the value's. The
    value's ``$defs`` move to the root, where its ``"#/$defs/..."`` references point: left
    inside ``result`` they would point nowhere, and a client would be unable to check (or
    would refuse) the schema of every ``-> list[Model]`` tool."""
    inner = dict(schema)
    definitions = inner.pop("$defs", None)
    wrapped: dict[str, Any] = {
        "type": "object",
        "properties": {"result": inner},
        "required": ["result"],
        WRAPPED_RESULT_KEYWORD: True,
    }
    if definitions is not None:
        wrapped["$defs"] = definitions
    return wrapped


class _SentJsonSchema(GenerateJsonSchema):
    """pydantic's schema, without the formats its own output does not always meet."""

    def datetime_schema(self, schema: core_schema.DatetimeSchema) -> JsonSchemaValue:
        if _may_be_naive(schema.get("tz_constraint")):
            return {"type": "string"}
        return super().datetime_schema(schema)

    def time_schema(self, schema: core_schema.TimeSchema) -> JsonSchemaValue:
        if _may_be_naive(schema.get("tz_constraint")):
            return {"type": "string"}
        return super().time_schema(schema)

    def timedelta_schema(self, schema: core_schema.TimedeltaSchema) -> JsonSchemaValue:
        described = super().timedelta_schema(schema)
        if described.get("format") == "duration" and not _never_negative(schema):
            return {key: value for key, value in described.items() if key != "format"}
        return described


def _may_be_naive(tz_constraint: object) -> bool:
    # "aware" or a fixed offset in seconds means every value has an offset.
    return tz_constraint is None or tz_constraint == "naive"


def _never_negative(schema: core_schema.TimedeltaSchema) -> bool:
    lowest = schema.get("ge", schema.get("gt"))
    return isinstance(lowest, timedelta) and lowest >= timedelta(0)
