"""MCP models inside a tool's own data (a dict of images, blocks in a dataclass or a
TypedDict, a model under ``-> object``, structured content holding one) are written as
top-level content is: without ``null`` for their unset optional fields, which the
schemas do not allow."""

from __future__ import annotations

import json
import runpy
import shutil
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from pydantic import TypeAdapter
from support import PATIENCE_SECONDS, REPO, SERVERS

from answerback import Client
from answerback.types import CallToolResult, ImageContent, MCPModel, TextContent

SERVER = SERVERS / "nested_models_server.py"

NODE = shutil.which("node")
TYPESCRIPT_CLIENT = REPO / "interop" / "typescript_client.mjs"
SDK = REPO / "interop" / "node_modules" / "@modelcontextprotocol" / "sdk"
SPEC = Path(__file__).parents[2] / "shared" / "spec" / "2025-11-25" / "schema.json"

# tool: the structured content it sends, each block as written at the top level
SENT: dict[str, Any] = {
    "pictures": {"dot": {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}},
    "note": {
        "title": "hello",
        "lines": [{"type": "text", "text": "one"}, {"type": "text", "text": "two"}],
    },
    "page": {"blocks": [{"type": "text", "text": "one"}]},
    "anything": {"result": {"block": {"type": "text", "text": "one"}}},
    "built": {"block": {"type": "text", "text": "one"}},
}


def _server() -> Any:
    return runpy.run_path(str(SERVER), run_name="nested_models_server")["mcp"]


def _blocks(value: Any) -> list[dict[str, Any]]:
    """Every content block (a dict with a ``type``) anywhere in ``value``."""
    if isinstance(value, list):
        return [block for item in value for block in _blocks(item)]  # pyright: ignore[reportUnknownVariableType]
    if not isinstance(value, dict):
        return []
    found: list[dict[str, Any]] = [value] if "type" in value else []  # pyright: ignore[reportUnknownVariableType]
    return found + [block for item in value.values() for block in _blocks(item)]  # pyright: ignore[reportUnknownVariableType,reportUnknownMemberType]


@pytest.mark.anyio
async def test_nested_models_are_sent_without_nulls() -> None:
    async with Client(_server()) as client:
        for tool, expected in SENT.items():
            result = await client.call_tool(tool, {})
            assert result.is_error is False, result.content
            assert result.structured_content == expected, tool
            sent = json.dumps(result.to_wire())
            assert "null" not in sent, f"{tool}: {sent}"


@pytest.mark.anyio
async def test_nested_blocks_fit_the_spec_schema() -> None:
    jsonschema = pytest.importorskip("jsonschema")
    if not SPEC.is_file():
        pytest.skip(f"wire schema {SPEC} is absent (the spec folder lives beside the project)")
    schema = {"$ref": "#/$defs/ContentBlock", "$defs": json.loads(SPEC.read_text())["$defs"]}
    validator = jsonschema.Draft202012Validator(schema)
    async with Client(_server()) as client:
        for tool in SENT:
            result = await client.call_tool(tool, {})
            text = result.content[0]
            assert isinstance(text, TextContent)
            in_text: Any = json.loads(text.text) if tool != "built" else None
            blocks = _blocks(result.structured_content) + _blocks(in_text)
            assert blocks, tool
            for block in blocks:
                errors = [error.message for error in validator.iter_errors(block)]
                assert not errors, f"{tool}: {block}: {errors}"


def every_model(base: type[MCPModel]) -> list[type[MCPModel]]:
    found: list[type[MCPModel]] = []
    for model in base.__subclasses__():
        found += [model, *every_model(model)]
    return found


def test_every_wire_model_leaves_each_field_absent_by_default_out_while_none() -> None:
    models = every_model(MCPModel)
    assert len(models) > 100  # answerback.types is imported: every wire model is here
    unmarked = [
        f"{model.__name__}.{name}"
        for model in models
        for name, field in model.model_fields.items()
        if field.default is None and field.exclude_if is None
    ]
    assert unmarked == []
    assert TextContent in models


def test_any_dump_of_a_model_leaves_unset_optional_fields_out() -> None:
    image = ImageContent(data="aGk=", mime_type="image/png")
    expected = {"type": "image", "data": "aGk=", "mimeType": "image/png"}
    assert TypeAdapter(dict[str, ImageContent]).dump_python({"a": image}, mode="json") == {
        "a": expected
    }
    assert json.loads(image.model_dump_json()) == expected
    assert image.model_dump(mode="json") == expected
    # None the tool put in its own data is its data, kept as it is.
    result = CallToolResult(content=[], structured_content={"left": None})
    assert result.to_wire()["structuredContent"] == {"left": None}


@pytest.mark.anyio
@pytest.mark.interop
@pytest.mark.skipif(NODE is None, reason="node is not installed")
@pytest.mark.skipif(not SDK.exists(), reason=f"{SDK} is missing: run `npm ci --prefix interop`")
async def test_typescript_client_receives_no_nulls() -> None:
    assert NODE is not None
    command = [NODE, str(TYPESCRIPT_CLIENT), ",".join(SENT), sys.executable, str(SERVER)]
    with anyio.fail_after(PATIENCE_SECONDS * 3):
        done = await anyio.run_process(command, cwd=REPO, check=False)
    assert done.returncode == 0, done.stderr.decode()
    calls = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert [call["tool"] for call in calls] == list(SENT)
    for call in calls:
        assert "error" not in call, f"{call['tool']}: {call.get('error')}"
        assert call["result"]["structuredContent"] == SENT[call["tool"]]
        assert "null" not in json.dumps(call["result"]), call
