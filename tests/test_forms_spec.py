"""``answerback.forms`` against the wire schemas in ``../shared/spec``.

Each example below is checked to *be* the schema variant it is named after (it
validates against that ``$defs`` entry of each protocol version), so the parser is tested
on what the specification defines, not on what we think it defines. Another test
notices when a version adds a variant or a keyword that the parser does not know.
Everything skips, saying why, where the spec folder is absent.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from support import schema_errors

from answerback.forms import (
    BooleanField,
    FormField,
    MultiSelectField,
    NumberField,
    SingleSelectField,
    StringField,
    parse_form,
)

SPEC_DIR = Path(__file__).parents[2] / "shared" / "spec"
VERSIONS = ["2025-11-25", "2026-07-28"]

# One example per variant of ``PrimitiveSchemaDefinition``, using every keyword the
# variant defines (``test_examples_use_every_keyword`` holds us to that).
VARIANTS: dict[str, tuple[dict[str, Any], type[FormField]]] = {
    "StringSchema": (
        {
            "type": "string",
            "title": "Work email",
            "description": "Where the report goes",
            "minLength": 6,
            "maxLength": 80,
            "format": "email",
            "default": "team@example.com",
        },
        StringField,
    ),
    "NumberSchema": (
        {
            "type": "integer",
            "title": "Copies",
            "description": "How many to print",
            "minimum": 1,
            "maximum": 20,
            "default": 2,
        },
        NumberField,
    ),
    "BooleanSchema": (
        {"type": "boolean", "title": "Duplex", "description": "Both sides", "default": True},
        BooleanField,
    ),
    "UntitledSingleSelectEnumSchema": (
        {
            "type": "string",
            "title": "Paper",
            "description": "Paper size",
            "enum": ["A4", "A3", "Letter"],
            "default": "A4",
        },
        SingleSelectField,
    ),
    "TitledSingleSelectEnumSchema": (
        {
            "type": "string",
            "title": "Tray",
            "description": "Which tray to use",
            "oneOf": [{"const": "t1", "title": "Upper tray"}, {"const": "t2", "title": "Lower"}],
            "default": "t2",
        },
        SingleSelectField,
    ),
    "LegacyTitledEnumSchema": (
        {
            "type": "string",
            "title": "Quality",
            "description": "Print quality",
            "enum": ["draft", "best"],
            "enumNames": ["Draft (fast)", "Best (slow)"],
            "default": "draft",
        },
        SingleSelectField,
    ),
    "UntitledMultiSelectEnumSchema": (
        {
            "type": "array",
            "title": "Finishing",
            "description": "Any of these",
            "minItems": 0,
            "maxItems": 2,
            "items": {"type": "string", "enum": ["staple", "punch", "fold"]},
            "default": ["staple"],
        },
        MultiSelectField,
    ),
    "TitledMultiSelectEnumSchema": (
        {
            "type": "array",
            "title": "Notify",
            "description": "Who hears when it is done",
            "minItems": 1,
            "maxItems": 3,
            "items": {
                "anyOf": [
                    {"const": "me", "title": "Me"},
                    {"const": "team", "title": "My team"},
                    {"const": "ops", "title": "Operations"},
                ]
            },
            "default": ["me"],
        },
        MultiSelectField,
    ),
}


@cache
def _defs(version: str) -> dict[str, Any]:
    path = SPEC_DIR / version / "schema.json"
    if not path.is_file():
        pytest.skip(f"wire schema {path} is absent (the spec folder lives beside the project)")
    return json.loads(path.read_text())["$defs"]


def _errors(version: str, definition: str, instance: object) -> list[str]:
    validator = Draft202012Validator({"$ref": f"#/$defs/{definition}", "$defs": _defs(version)})
    return [error.message for error in schema_errors(validator, instance)]


def _form(field: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"field": field}, "required": ["field"]}


@pytest.mark.parametrize("version", VERSIONS)
def test_the_spec_has_the_variants_we_know(version: str) -> None:
    variants = [
        ref["$ref"].split("/")[-1] for ref in _defs(version)["PrimitiveSchemaDefinition"]["anyOf"]
    ]
    assert sorted(variants) == sorted(VARIANTS)


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_examples_use_every_keyword(version: str, variant: str) -> None:
    example, _ = VARIANTS[variant]
    defined = _defs(version)[variant]["properties"]
    assert set(example) == set(defined)
    if "items" in defined:
        assert set(example["items"]) == set(defined["items"]["properties"])


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_each_variant_parses_and_writes_back_valid(version: str, variant: str) -> None:
    example, kind = VARIANTS[variant]
    assert _errors(version, variant, example) == []
    form = parse_form(_form(example))
    field = form["field"]
    assert isinstance(field, kind)
    assert (field.title, field.description, field.required) == (
        example["title"],
        example["description"],
        True,
    )
    assert field.default_value() == example["default"]
    params = {"message": "Print settings", "requestedSchema": form.schema}
    assert _errors(version, "ElicitRequestFormParams", params) == []
    # The default is an answer the field accepts.
    assert form.check({"field": example["default"]}) == {"field": example["default"]}


@pytest.mark.parametrize("version", VERSIONS)
def test_every_string_format_the_spec_lists_is_known(version: str) -> None:
    formats = _defs(version)["StringSchema"]["properties"]["format"]["enum"]
    for fmt in formats:
        field = parse_form(_form({"type": "string", "format": fmt}))["field"]
        assert isinstance(field, StringField)
        assert field.format == fmt


@pytest.mark.parametrize("version", VERSIONS)
def test_a_whole_form_of_every_variant_is_a_valid_request(version: str) -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {name: example for name, (example, _) in VARIANTS.items()},
        "required": ["StringSchema", "TitledMultiSelectEnumSchema"],
    }
    form = parse_form(schema)
    assert [field.name for field in form.fields] == list(VARIANTS)
    params = {"mode": "form", "message": "Settings", "requestedSchema": form.schema}
    assert _errors(version, "ElicitRequestFormParams", params) == []
