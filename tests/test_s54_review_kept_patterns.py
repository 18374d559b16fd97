"""What output-schema validators keep of their compiled patterns is bounded (stop 54,
review1 finding 5): one schema keeps at most ``SCHEMA_PATTERNS_KEPT`` (past it the
shared cache serves), and the validators a client keeps hold at most ``PATTERNS_KEPT``
in all. Before, each kept every pattern its schema had, and a client kept 256 of them:
a server listing many tools of many patterns could make it hold hundreds of MB. The
bound is checked by counting what is held, not by measuring memory."""

from __future__ import annotations

from typing import Any

import pytest

import answerback.client._output_schemas as output_schemas
from answerback.client._output_schemas import OutputSchemas
from answerback.forms._json_schema import SchemaCheck, compile_schema
from answerback.forms._patterns import SCHEMA_PATTERNS_KEPT, pattern_budget
from answerback.types import CallToolResult, Tool


def patterns_schema(count: int, tag: str) -> dict[str, Any]:
    properties = {
        f"p{n}": {"type": "string", "pattern": f"^{tag}-{n}-[a-z]+$"} for n in range(count)
    }
    return {"type": "object", "properties": properties}


def test_one_schema_keeps_at_most_its_share_of_patterns() -> None:
    """Compiling a thousand patterns takes longer than the budget allows on a slow or
    busy machine: the budget's clock stands still here (what is counted is held, not
    how long it took)."""
    count = SCHEMA_PATTERNS_KEPT + 20
    content = {f"p{n}": f"share-{n}-ok" for n in range(count)}
    with pattern_budget(clock=lambda: 0.0):
        check = compile_schema(patterns_schema(count, "share"))
        verdict = check.judge(content, "structuredContent")
    assert verdict.problems == []
    assert not verdict.too_slow
    assert len(check.patterns) == SCHEMA_PATTERNS_KEPT


def test_the_validators_kept_hold_a_bounded_number_of_patterns_in_all(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Ten tools of 30 patterns each against a bound of 100 (the real one, 4096, is
    the same rule at a size slow to build here): the oldest validators go, the newest
    stays."""
    monkeypatch.setattr(output_schemas, "PATTERNS_KEPT", 100, raising=False)
    tools = [
        Tool(
            name=f"tool{t}",
            input_schema={"type": "object"},
            output_schema=patterns_schema(30, f"t{t}"),
        )
        for t in range(10)
    ]
    schemas = OutputSchemas()
    schemas.remember(tools)
    for t in range(10):
        content = {f"p{n}": f"t{t}-{n}-ok" for n in range(30)}
        schemas.check(None, f"tool{t}", CallToolResult(structured_content=content))
    kept = schemas._validators  # pyright: ignore[reportPrivateUsage]
    held = sum(len(v.patterns) for v in kept.values() if isinstance(v, SchemaCheck))
    assert held <= 100, f"the kept validators hold {held} compiled patterns"
    assert list(kept) == ["tool7", "tool8", "tool9"]
