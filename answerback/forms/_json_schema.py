"""Checking structured content against a whole JSON Schema: a tool's ``outputSchema``.

Both ends check a tool's structured result against the output schema it declares: the
server before it sends a ``CallToolResult`` the tool built itself, the client after it
receives one (as the specification says each should). They share this one checker, so
both judge the same content against the same schema alike.

The schema may be a peer's, so it is treated as hostile. Its patterns run with a
deadline (``pattern_search``, as forms do), never with Python's ``re``, which cannot be
stopped; ``$ref`` is never fetched from the network; and a schema whose patterns
jsonschema would run itself is refused, as one that is not valid JSON Schema is.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, cast

from answerback.forms._ecma_regex import PatternError
from answerback.forms._patterns import (
    PatternTooSlow,
    keeping,
    kept_pattern,
    pattern_budget,
    pattern_search,
)
from answerback.forms._plain_schema import plain_test

if TYPE_CHECKING:
    import regex
    from jsonschema import FormatChecker, ValidationError
    from jsonschema.protocols import Validator

PROBLEMS_KEPT = 20
"""Problems collected from one result: enough to report, and a bound on the time a
hostile result can cost in values that fail. Values that pass slowly are bounded by the
result's pattern budget (``pattern_budget``)."""

_PROBLEM_CHARS = 300
_VALUE_CHARS = 60


@dataclass(frozen=True, slots=True)
class Verdict:
    """What a check of content found: its ``problems``, and whether the schema's
    patterns were too slow to check it whole (``too_slow``: the last problem says where
    checking stopped, and the rest was not looked at)."""

    problems: list[str]
    too_slow: bool


@dataclass(frozen=True, slots=True)
class SchemaCheck:
    """A schema ready to check content against: jsonschema's validator, and for a plain
    schema a quick yes for content that fits it (``_plain_schema``)."""

    validator: Validator
    plainly_fits: Callable[[object], bool] | None
    patterns: dict[str, regex.Pattern[str]]
    """The schema's own patterns, compiled once (``keeping``)."""

    def judge(self, content: object, whole: str) -> Verdict:
        """What in ``content`` breaks the schema, at most ``PROBLEMS_KEPT``, each as
        ``where: what`` (``whole`` names the content itself). All its pattern checks
        share one budget; once it is spent, checking stops there. Raises what jsonschema
        does for a schema it cannot apply (``RecursionError`` for a ``$ref`` that loops
        for ever, an unresolvable ``$ref``): not the content's fault."""
        if self.plainly_fits is not None and self.plainly_fits(content):
            return Verdict([], too_slow=False)
        problems: list[str] = []
        with keeping(self.patterns), pattern_budget() as budget:
            errors = self.validator.iter_errors(cast(Any, content))
            for error in itertools.islice(errors, PROBLEMS_KEPT):
                problems.append(_problem(error, whole))
                if budget.spent_up:
                    break
        # Spent even with no problem found: a branch of anyOf or not may have hidden one.
        return Verdict(problems, too_slow=budget.spent_up)


def compile_schema(schema: dict[str, Any]) -> SchemaCheck:
    """The check of ``schema`` in its ``$schema`` dialect (2020-12 without one, the
    specification's default), with timed patterns and no network. Raises
    ``jsonschema.SchemaError`` (or whatever a hostile schema provokes) for a schema that
    cannot be used, ``PatternBudgetSpent`` for one whose patterns take longer to compile
    than one result's budget (a new pattern in every property)."""
    from jsonschema import Draft202012Validator, SchemaError
    from jsonschema.validators import validator_for
    from jsonschema_specifications import REGISTRY  # pyright: ignore[reportMissingTypeStubs]

    dialect = schema.get("$schema")
    if dialect is not None and not isinstance(dialect, str):
        raise SchemaError(f"$schema is {type(dialect).__name__}, not a URI")
    cls = validator_for(schema, default=Draft202012Validator)
    if dialect is not None and cls is Draft202012Validator and "2020-12" not in dialect:
        raise SchemaError(f"the dialect {dialect} is not one answerback knows")
    if _untimed_patterns(schema):
        raise SchemaError(
            "patternProperties next to unevaluatedProperties would run the schema's "
            "patterns without a deadline"
        )
    # format_checker is jsonschema's own parameter; its type stubs leave it out.
    patterns: dict[str, regex.Pattern[str]] = {}
    with keeping(patterns), pattern_budget():
        cast(Any, cls).check_schema(schema, format_checker=_pattern_formats())
    # REGISTRY holds the dialects' own meta-schemas and retrieves nothing, where
    # jsonschema's default registry would fetch any remote $ref from the network.
    validator = _timed(cls)(schema, registry=REGISTRY)
    return SchemaCheck(validator, plain_test(schema), patterns)


def cut(text: str, most: int = _PROBLEM_CHARS) -> str:
    """``text``, cut short to ``most`` characters for a message to quote."""
    return text if len(text) <= most else text[: most - 3] + "..."


@cache
def _pattern_formats() -> FormatChecker:
    """The formats checked in a schema itself: its patterns, translated from ECMA-262
    and compiled as they will run (``kept_pattern``: kept with the schema). jsonschema's
    own check compiles them with ``re``, which refuses ECMA-262 patterns such as
    ``\\p{Lu}`` (which pydantic and zod write), so such a schema was called unusable and
    its content went unchecked."""
    from jsonschema import FormatChecker

    checker = FormatChecker(formats=())
    checker.checks("regex", raises=PatternError)(_compiles)
    return checker


def _compiles(pattern: object) -> bool:
    if isinstance(pattern, str):
        kept_pattern(pattern)
    return True


@cache
def _timed(cls: type[Validator]) -> type[Validator]:
    """``cls`` with the keywords that run patterns replaced by ones with a deadline."""
    from jsonschema import validators

    keywords: dict[str, Any] = {"pattern": _pattern, "patternProperties": _pattern_properties}
    if "additionalProperties" in cls.VALIDATORS:
        keywords["additionalProperties"] = _additional_properties(
            cls.VALIDATORS["additionalProperties"]
        )
    return cast("type[Validator]", cast(Any, validators).extend(cls, keywords))


def _untimed_patterns(schema: object) -> bool:
    """Whether ``schema`` has both ``patternProperties`` and ``unevaluatedProperties``:
    jsonschema then matches the patterns itself, with ``re``."""
    seen: set[str] = set()
    stack: list[object] = [schema]
    while stack and len(seen) < 2:
        node = stack.pop()
        if isinstance(node, Mapping):
            mapping = cast(Mapping[str, object], node)
            seen.update(
                key for key in ("patternProperties", "unevaluatedProperties") if key in mapping
            )
            stack.extend(mapping.values())
        elif isinstance(node, list):
            stack.extend(cast(list[object], node))
    return len(seen) == 2


def _matches(pattern: str, text: str) -> bool | str:
    """Whether ``pattern`` matches ``text``, or why it could not be told."""
    try:
        return pattern_search(pattern, text)
    except PatternTooSlow as exc:
        return str(exc)
    except PatternError as exc:
        return f"cannot be checked: the pattern {pattern} {exc}"


def _pattern(
    validator: Validator, pattern: str, instance: object, schema: object
) -> Iterator[ValidationError]:
    from jsonschema import ValidationError

    if not isinstance(instance, str):
        return
    verdict = _matches(pattern, instance)
    if isinstance(verdict, str):
        yield ValidationError(f"{_shown(instance)} {verdict}")
    elif not verdict:
        yield ValidationError(f"{_shown(instance)} does not match {pattern!r}")


def _pattern_properties(
    validator: Validator, patterns: Mapping[str, Any], instance: object, schema: object
) -> Iterator[ValidationError]:
    from jsonschema import ValidationError

    if not isinstance(instance, Mapping):
        return
    properties = cast(Mapping[str, Any], instance)
    for pattern, subschema in patterns.items():
        for key, value in properties.items():
            verdict = _matches(pattern, key)
            if isinstance(verdict, str):
                yield ValidationError(f"the property {_shown(key)} {verdict}")
            elif verdict:
                yield from cast(Any, validator).descend(
                    value, subschema, path=key, schema_path=pattern
                )


def _additional_properties(original: Any) -> Any:
    """``additionalProperties``, which skips what ``patternProperties`` matches: with
    such patterns, the properties they match are found here with a deadline."""
    from jsonschema import ValidationError

    def additional_properties(
        validator: Validator, allowed: Any, instance: object, schema: Mapping[str, Any]
    ) -> Iterator[ValidationError]:
        patterns = schema.get("patternProperties")
        if not patterns or not isinstance(instance, Mapping):
            yield from original(validator, allowed, instance, schema)
            return
        properties = cast(Mapping[str, Any], instance)
        declared = schema.get("properties", {})
        extras: list[str] = []
        for key in properties:
            if key in declared:
                continue
            verdicts = [_matches(pattern, key) for pattern in patterns]
            if slow := [verdict for verdict in verdicts if isinstance(verdict, str)]:
                yield ValidationError(f"the property {_shown(key)} {slow[0]}")
            elif not any(verdicts):
                extras.append(key)
        if isinstance(allowed, Mapping):
            for extra in extras:
                yield from cast(Any, validator).descend(properties[extra], allowed, path=extra)
        elif allowed is False and extras:
            shown = ", ".join(_shown(extra) for extra in sorted(extras))
            yield ValidationError(f"{shown} not allowed: no property or pattern names them")

    return additional_properties


def _problem(error: ValidationError, whole: str) -> str:
    """``where: what``, as the other errors about a message's content put it."""
    where = ".".join([whole, *(str(part) for part in error.absolute_path)])
    return f"{where}: {cut(error.message)}"


def _shown(value: str) -> str:
    """A string from the content, quoted and cut short for a problem to quote."""
    return cut(repr(value), _VALUE_CHARS)
