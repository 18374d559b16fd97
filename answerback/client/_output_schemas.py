"""Checking a tool's structured result against the output schema it was listed with.

The specification says clients SHOULD validate ``structuredContent`` against a tool's
``outputSchema``. The client learns the schemas from the ``tools/list`` results it
receives; it does not list them just to check a call (a host lists tools before
offering them to a model, and a hidden round trip on a first call would surprise), so a
tool that was never listed is not checked. A changed tool list forgets them all.

The schema is the server's, so it is treated as hostile: it is checked with the one
checker both ends share (``forms/_json_schema.py``), whose patterns run with a deadline
and a budget for the whole result (content they are too slow to check is refused, not
waited for), and which never fetches a ``$ref``; and a schema that is not valid JSON
Schema, or that the validator cannot apply (a ``$ref`` that loops for ever), is skipped
for that tool with one warning rather than failing every call.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from answerback.client._session import InvalidServerResultError, describe_server
from answerback.forms._json_schema import SchemaCheck, compile_schema, cut
from answerback.forms._patterns import BUDGET_WORDS
from answerback.types import CallToolResult, Implementation, Tool
from answerback.types._errors import shown_problems

logger = logging.getLogger("answerback.client")

SCHEMAS_KEPT = 4096
"""Tools whose output schema is remembered; the oldest listed are forgotten first."""

VALIDATORS_KEPT = 256
"""Compiled validators kept (one per tool called); the oldest built are dropped first."""

PATTERNS_KEPT = 4096
"""Compiled patterns the kept validators may hold in all (each keeps its schema's own,
up to ``SCHEMA_PATTERNS_KEPT``); past it, the oldest built are dropped first. Counted by
validators alone, a server listing hundreds of tools of hundreds of patterns each could
make the client hold hundreds of MB."""


class _Unchecked:
    """A tool whose schema cannot be applied: its results are passed on unchecked."""


_UNCHECKED = _Unchecked()


class OutputSchemas:
    """The output schema of each listed tool, and a validator for each tool called."""

    def __init__(self) -> None:
        self._schemas: dict[str, dict[str, Any]] = {}
        self._validators: dict[str, SchemaCheck | _Unchecked] = {}

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
            verdict = validator.judge(result.structured_content, "structuredContent")
        except Exception as exc:  # RecursionError, an unresolvable $ref: not the result's fault
            self._validators[name] = _UNCHECKED
            reason = (
                "the schema refers to itself without end, or the result nests too deeply"
                if isinstance(exc, RecursionError)
                else cut(str(exc))
            )
            logger.warning(
                "%s listed tool %r with an outputSchema that could not be applied (%s); its "
                "results are not checked",
                describe_server(server),
                name,
                reason,
            )
            return
        problems = verdict.problems
        if verdict.too_slow:
            found = shown_problems(problems) if problems else "nothing wrong before it stopped"
            raise InvalidServerResultError(
                f"{describe_server(server)} sent structuredContent for tool {name!r} that "
                "could not be checked against the tool's outputSchema: its patterns took more "
                f"than the time one result may spend on them ({BUDGET_WORDS}; {found}). The "
                "server's patterns are too slow to check; report it to its "
                "authors.",
                _data(server, name, problems),
            )
        if not problems:
            return
        raise InvalidServerResultError(
            f"{describe_server(server)} sent structuredContent for tool {name!r} that does not "
            f"fit the tool's outputSchema: {shown_problems(problems)}. The server breaks its "
            "own schema; report it to its authors.",
            _data(server, name, problems),
        )

    def _validator(
        self, server: Implementation | None, name: str, schema: dict[str, Any]
    ) -> SchemaCheck | _Unchecked:
        """The tool's validator, built on its first call; ``_UNCHECKED`` (after one
        warning) for a schema that cannot be used."""
        validator = self._validators.get(name)
        if validator is not None:
            return validator
        try:
            validator = compile_schema(schema)
        except Exception as exc:  # SchemaError, or whatever a hostile schema provokes
            logger.warning(
                "%s listed tool %r with an outputSchema this client cannot use "
                "(%s); its results are not checked",
                describe_server(server),
                name,
                cut(getattr(exc, "message", None) or str(exc)),
            )
            validator = _UNCHECKED
        self._make_room(_patterns_held(validator))
        self._validators[name] = validator
        return validator

    def _make_room(self, patterns: int) -> None:
        """Drop the oldest validators until one more, holding ``patterns`` compiled
        patterns, fits both ``VALIDATORS_KEPT`` and ``PATTERNS_KEPT``. Counted afresh
        each time: a validator may have kept more patterns while checking results."""
        validators = self._validators
        held = sum(map(_patterns_held, validators.values()))
        while validators and (
            len(validators) >= VALIDATORS_KEPT or held + patterns > PATTERNS_KEPT
        ):
            held -= _patterns_held(validators.pop(next(iter(validators))))


def _patterns_held(validator: SchemaCheck | _Unchecked) -> int:
    return 0 if isinstance(validator, _Unchecked) else len(validator.patterns)


def _data(server: Implementation | None, name: str, problems: list[str]) -> dict[str, Any]:
    return {
        "server": server.to_wire() if server is not None else None,
        "method": "tools/call",
        "tool": name,
        "problems": problems,
    }
