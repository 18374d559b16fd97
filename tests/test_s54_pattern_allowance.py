"""The compile allowance of the pattern budget (stop 54): it stops growing after as many
compiles as a form has fields, and an output schema keeps its own compiled patterns, so
one with more than the shared cache holds is not compiled again for every result."""

from __future__ import annotations

from typing import Any

from answerback.forms import MAX_FIELDS
from answerback.forms._json_schema import compile_schema
from answerback.forms._patterns import PatternBudgetSpent, compiled_pattern, pattern_budget

PATTERNS_IN_SCHEMA = 300
"""More distinct patterns than the shared cache keeps (256)."""


class CountingClock:
    """A fake clock that moves one second each time it is read: read before and after
    each compile, it makes each cost one second, half its allowance here."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def compiles_until_spent(most: int) -> int:
    """How many new patterns compile before the budget is spent (``most`` if never)."""
    with pattern_budget(seconds=10, clock=CountingClock(), per_check=0, per_compile=2):
        for n in range(most):
            try:
                compiled_pattern(f"^new-{n}$")
            except PatternBudgetSpent:
                return n
    return most


def test_compiles_past_the_allowed_number_draw_on_the_budget_whole() -> None:
    """Patterns that compile in less than their allowance never used the budget up: a
    peer could send new ones without end. Past as many as a form has fields, they do:
    256 compiles add 512 s to the 10, used up by the 522nd compile of one second."""
    compiled_pattern.cache_clear()
    assert compiles_until_spent(4 * MAX_FIELDS) == 10 + 2 * MAX_FIELDS


def many_patterns_schema() -> dict[str, Any]:
    properties = {
        f"p{n}": {"type": "string", "pattern": f"^item-{n}-[a-z]+$"}
        for n in range(PATTERNS_IN_SCHEMA)
    }
    return {"type": "object", "properties": properties}


def test_a_schema_with_more_patterns_than_the_cache_compiles_them_once() -> None:
    """The budget's clock stands still: compiling hundreds of patterns may take longer
    than the budget allows on a slow machine, and what is counted here is compiles."""
    compiled_pattern.cache_clear()
    content = {f"p{n}": f"item-{n}-ok" for n in range(PATTERNS_IN_SCHEMA)}
    with pattern_budget(clock=lambda: 0.0):
        check = compile_schema(many_patterns_schema())
        misses = compiled_pattern.cache_info().misses
        for _ in range(2):
            verdict = check.judge(content, "structuredContent")
            assert verdict.problems == []
            assert not verdict.too_slow
    assert compiled_pattern.cache_info().misses == misses, "compiled again for each result"
