"""Checking a tool's structured result against the output schema it was listed with.

The specification says clients SHOULD validate ``structuredContent`` against a tool's
``outputSchema``. The client learns the schemas from the ``tools/list`` results it
receives; it does not list them just to check a call (a host lists tools before
offering them to a model, and a hidden round trip on a first call would surprise), so a
tool that was never listed is not checked. A changed tool list forgets them all.

The schema is the server's, so it is treated as hostile. Its patterns run with a
deadline (``pattern_search``, as forms do), never with Python's ``re``, which cannot be
stopped; ``$ref`` is never fetched from the network; and a schema that is not valid
JSON Schema, or that the validator cannot apply (a ``$ref`` that loops for ever), is
skipped for that tool with one warning rather than failing every call.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Iterator, Mapping, Sequence
from functools import cache
from typing import TYPE_CHECKING, Any, cast

from answerback.client._session import InvalidServerResultError, describe_server
from answerback.forms._patterns import PatternTooSlow, pattern_search
from answerback.types import CallToolResult, Implementation, Tool
from answerback.types._errors import shown_problems

if TYPE_CHECKING:
    from jsonschema import ValidationError
    from jsonschema.protocols import Validator

logger = logging.getLogger("answerback.client")

SCHEMAS_KEPT = 4096
"""Tools whose output schema is remembered; the oldest listed are forgotten first."""

VALIDATORS_KEPT = 256
"""Compiled validators kept (one per tool called); the oldest built are dropped first."""

PROBLEMS_KEPT = 20
"""Problems collected from one result: enough to report, and a bound on the time a
hostile result can cost (each pattern that backtracks costs ``PATTERN_SECONDS``)."""

_PROBLEM_CHARS = 300
_VALUE_CHARS = 60


class _Unchecked:
    """A tool whose schema cannot be applied: its results are passed on unchecked."""


_UNCHECKED = _Unchecked()


class OutputSchemas:
    """The output schema of each listed tool, and a validator for each tool called."""

    def __init__(self) -> None:
        self._schemas: dict[str, dict[str, Any]] = {}
        self._validators: dict[str, Validator | _Unchecked] = {}

    def remember(self, tools: Sequence[Tool]) -> None:
        """Learn the output schemas of a page of tools (a newer listing wins)."""
        for tool in tools:
            schema = tool.output_schema
            old = self._schemas.pop(tool.name, None)
            if old is not None and old != schema:
                self._validators.pop(tool.name, None)
            if schema is None:
                self._validators.pop(tool.name, None)
                continue
            if len(self._schemas) >= SCHEMAS_KEPT:
                oldest = next(iter(self._schemas))
                del self._schemas[oldest]
                self._validators.pop(oldest, None)
            self._schemas[tool.name] = schema

    def forget(self) -> None:
        """The tool list changed: a schema from the old list may no longer hold."""
        self._schemas.clear()
        self._validators.clear()

    def check(self, server: Implementation | None, name: str, result: CallToolResult) -> None:
        """Raise ``InvalidServerResultError`` if a successful ``result`` of tool ``name``
        lacks the structured content its schema promises, or the content breaks it."""
        schema = self._schemas.get(name)
        if schema is None or result.is_error:
            return
        if result.structured_content is None:
            raise InvalidServerResultError(
                f"{describe_server(server)} sent a CallToolResult for tool {name!r} without "
                "structuredContent, which the tool's outputSchema requires. The server breaks "
                "the MCP specification; report it to its authors.",
                _data(server, name, ["structuredContent: missing"]),
            )
        validator = self._validator(server, name, schema)
        if isinstance(validator, _Unchecked):
            return
        try:
            found = list(
                itertools.islice(_errors(validator, result.structured_content), PROBLEMS_KEPT)
            )
        except Exception as exc:  # RecursionError, an unresolvable $ref: not the result's fault
            self._validators[name] = _UNCHECKED
            reason = (
                "the schema refers to itself without end, or the result nests too deeply"
                if isinstance(exc, RecursionError)
                else _cut(str(exc))
            )
            logger.warning(
                "%s listed tool %r with an outputSchema that could not be applied (%s); its "
                "results are not checked",
                describe_server(server),
                name,
                reason,
            )
            return
        if not found:
            return
        problems = [_problem(error) for error in found]
        raise InvalidServerResultError(
            f"{describe_server(server)} sent structuredContent for tool {name!r} that does not "
            f"fit the tool's outputSchema: {shown_problems(problems)}. The server breaks its "
            "own schema; report it to its authors.",
            _data(server, name, problems),
        )

    def _validator(
        self, server: Implementation | None, name: str, schema: dict[str, Any]
    ) -> Validator | _Unchecked:
        """The tool's validator, built on its first call; ``_UNCHECKED`` (after one
        warning) for a schema that cannot be used."""
        validator = self._validators.get(name)
        if validator is not None:
            return validator
        try:
            validator = _compile(schema)
        except Exception as exc:  # SchemaError, or whatever a hostile schema provokes
            logger.warning(
                "%s listed tool %r with an outputSchema this client cannot use "
                "(%s); its results are not checked",
                describe_server(server),
                name,
                _cut(getattr(exc, "message", None) or str(exc)),
            )
            validator = _UNCHECKED
        if len(self._validators) >= VALIDATORS_KEPT:
            del self._validators[next(iter(self._validators))]
        self._validators[name] = validator
        return validator


def _compile(schema: dict[str, Any]) -> Validator:
    """A validator for ``schema`` in its ``$schema`` dialect (2020-12 without one, the
    specification's default), with timed patterns and no network."""
    from jsonschema import Draft202012Validator, SchemaError
    from jsonschema.validators import validator_for
    from jsonschema_specifications import REGISTRY  # pyright: ignore[reportMissingTypeStubs]

    dialect = schema.get("$schema")
    if dialect is not None and not isinstance(dialect, str):
        raise SchemaError(f"$schema is {type(dialect).__name__}, not a URI")
    cls = validator_for(schema, default=Draft202012Validator)
    if dialect is not None and cls is Draft202012Validator and "2020-12" not in dialect:
        raise SchemaError(f"the dialect {dialect} is not one this client knows")
    if _untimed_patterns(schema):
        raise SchemaError(
            "patternProperties next to unevaluatedProperties would run the server's "
            "patterns without a deadline"
        )
    cls.check_schema(schema)
    # REGISTRY holds the dialects' own meta-schemas and retrieves nothing, where
    # jsonschema's default registry would fetch any remote $ref from the network.
    return _timed(cls)(schema, registry=REGISTRY)


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
    import regex

    try:
        return pattern_search(pattern, text)
    except PatternTooSlow as exc:
        return str(exc)
    except regex.error as exc:
        return f"the pattern {pattern} does not compile ({exc})"


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


def _errors(validator: Validator, instance: object) -> Iterator[ValidationError]:
    return validator.iter_errors(cast(Any, instance))


def _problem(error: ValidationError) -> str:
    """``where: what``, as the client's other result errors put it."""
    where = ".".join(["structuredContent", *(str(part) for part in error.absolute_path)])
    return f"{where}: {_cut(error.message)}"


def _cut(text: str, most: int = _PROBLEM_CHARS) -> str:
    return text if len(text) <= most else text[: most - 3] + "..."


def _shown(value: str) -> str:
    """A string from the result, quoted and cut short for a problem to quote."""
    return _cut(repr(value), _VALUE_CHARS)


def _data(server: Implementation | None, name: str, problems: list[str]) -> dict[str, Any]:
    return {
        "server": server.to_wire() if server is not None else None,
        "method": "tools/call",
        "tool": name,
        "problems": problems,
    }
