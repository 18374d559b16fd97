"""Host code as people write it passes pyright strict: a typing test.

``make typecheck`` runs pyright (strict) over this file, whose constructions are written
the way host code is, with a host's own narrow types (``dict[str, str]`` answers, a
``list[ToolUseContent]``). Dicts and lists are invariant, so before the result models
took mappings and sequences pyright refused each of them, as it did the examples in
docs/*.md that hosts copy. The tests also check, at run time, that what is stored and
sent is unchanged.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Mapping
from types import MappingProxyType
from typing import assert_type

import pytest

from answerback.types import (
    CreateMessageResult,
    ElicitResult,
    Result,
    SamplingMessageContentBlock,
    TextContent,
    ToolUseContent,
)
from answerback.types import _models as models
from answerback.types._models import ElicitationContentValue

# -- the result models take what a host has ------------------------------------------------


def test_an_elicit_result_takes_a_hosts_own_dict_of_answers() -> None:
    answers: dict[str, str] = {"name": "Grace Hopper"}
    mixed: dict[str, str | int] = {"name": "Grace", "badge_days": 3}
    frozen: Mapping[str, bool] = MappingProxyType({"agree": True})
    results = [ElicitResult(action="accept", content=c) for c in (answers, mixed, frozen)]
    # Read back, it is the dict pydantic stored, typed as precisely as before.
    assert_type(results[0].content, dict[str, ElicitationContentValue] | None)
    assert [type(result.content) for result in results] == [dict, dict, dict]
    assert [result.to_wire() for result in results] == [
        {"action": "accept", "content": {"name": "Grace Hopper"}},
        {"action": "accept", "content": {"name": "Grace", "badge_days": 3}},
        {"action": "accept", "content": {"agree": True}},
    ]


def test_a_create_message_result_takes_a_hosts_own_list_of_blocks() -> None:
    uses = [
        ToolUseContent(id="w1", name="weather", input={"city": "Paris"}),
        ToolUseContent(id="w2", name="weather", input={"city": "Oslo"}),
    ]
    result = CreateMessageResult(
        role="assistant", content=uses, model="scripted", stop_reason="toolUse"
    )
    texts = (TextContent(text="a"), TextContent(text="b"))
    from_tuple = CreateMessageResult(role="assistant", content=texts, model="m")
    assert_type(result.content, SamplingMessageContentBlock | list[SamplingMessageContentBlock])
    assert type(result.content) is list
    assert type(from_tuple.content) is list
    assert from_tuple.to_wire()["content"] == [
        {"type": "text", "text": "a"},
        {"type": "text", "text": "b"},
    ]
    assert result.to_wire()["content"][1] == {
        "type": "tool_use",
        "id": "w2",
        "name": "weather",
        "input": {"city": "Oslo"},
    }


@pytest.mark.parametrize("model", [ElicitResult, CreateMessageResult])
def test_the_constructor_pyright_sees_names_every_field(model: type[Result]) -> None:
    """The wider constructor is declared for type checkers only (pydantic builds the real
    one), so it must keep up with the fields: a new field missing from it would be an
    error in every host that passes it."""
    tree = ast.parse(inspect.getsource(models))
    [declared] = [
        node
        for cls in tree.body
        if isinstance(cls, ast.ClassDef) and cls.name == model.__name__
        for block in cls.body
        if isinstance(block, ast.If)
        for node in block.body
        if isinstance(node, ast.FunctionDef) and node.name == "__init__"
    ]
    assert {arg.arg for arg in declared.args.kwonlyargs} == set(model.model_fields)
