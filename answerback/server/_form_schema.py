"""The ``requestedSchema`` a server sends for a model: ``answerback.forms``, spelt as pydantic.

What a form may hold, and every refusal, is decided by ``answerback.forms.form_schema``
(the same rules a client parses the form with). This module only dresses that form the way
a pydantic model's own JSON Schema looks, because that is what the seed documents show a
callback receiving and what the official SDK sends: the model's ``title`` (and docstring
``description``) at the top, and every object's keys in sorted order, with the fields kept
in the order the model declares them.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any, cast

import pydantic_core
from pydantic import BaseModel

from answerback.forms import form_schema as restricted_form_schema
from answerback.jsonrpc import JSONObject
from answerback.server._arguments import wrong_type
from answerback.server._asking import content_digest
from answerback.types import ElicitRequestFormParams

FORM_QUESTIONS_KEPT = 256
"""Distinct (message, model) questions ``form_question`` keeps; messages that name what
they ask about differ on every call, and must not grow the cache without end."""


def form_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The exact ``requestedSchema`` ``ctx.elicit(message, model)`` sends, as a new dict.

    Raises ``FormSchemaError`` naming every field the form cannot hold and how to write
    it instead (``Literal[1, 2, 3]``, say, offers numbers where a form's choices are
    strings). Built once per model; each caller gets its own copy to change. Anything
    but a pydantic model class raises ``TypeError``.
    """
    given = cast(object, model)
    if not (isinstance(given, type) and issubclass(given, BaseModel)):
        raise wrong_type(
            "form_schema()",
            "model",
            "a pydantic model class",
            model,
            "Pass the class of a pydantic model whose fields are the form's (strings, "
            "numbers, booleans, choices), e.g. form_schema(Booking), not an instance.",
        )
    return cast(dict[str, Any], pydantic_core.from_json(_form_schema_json(model)))


@dataclass(frozen=True, slots=True)
class FormQuestion:
    """The params of ``ctx.elicit(message, model)`` as they go out, and their digest.

    Built once per message and model: a 2026-07-28 tool asks the same question again on
    every retry, and building the params model, dumping it and digesting the result
    each time cost 5 to 10 % of such a call (in-process, client and server together).
    """

    wire: bytes
    """The params as JSON: each ask gets a fresh dict from it (see ``form_schema``)."""
    digest: str
    """Their ``content_digest``, the key a 2026-07-28 answer is found by."""

    def params(self) -> JSONObject:
        """The params, as a dict of the caller's own."""
        return cast(JSONObject, pydantic_core.from_json(self.wire))


@functools.lru_cache(maxsize=FORM_QUESTIONS_KEPT)
def form_question(message: str, model: type[BaseModel]) -> FormQuestion:
    """The question ``ctx.elicit`` sends; ``FormSchemaError`` as ``form_schema`` raises it."""
    params = ElicitRequestFormParams(message=message, requested_schema=form_schema(model))
    wire = params.to_wire()
    return FormQuestion(pydantic_core.to_json(wire), content_digest("elicitation/create", wire))


@functools.cache
def _form_schema_json(model: type[BaseModel]) -> bytes:
    # Kept as JSON: parsing it is the cheapest way to hand out a fresh copy (a fifth of
    # a deep copy's cost, on every question asked).
    form = restricted_form_schema(model)
    own = model.model_json_schema()
    labels = {key: own[key] for key in ("title", "description") if key in own}
    return pydantic_core.to_json(_sorted({**form, **labels}))


def _sorted(schema: Any) -> Any:
    """``schema`` with the keys of every object sorted, as pydantic sorts them: the field
    names under ``properties`` keep their order, and a ``default`` is left as it is."""
    if isinstance(schema, list):
        return [_sorted(item) for item in cast(list[Any], schema)]
    if not isinstance(schema, dict):
        return schema
    found = cast(dict[str, Any], schema)
    result: dict[str, Any] = {}
    for key in sorted(found):
        value = found[key]
        if key == "properties" and isinstance(value, dict):
            fields = cast(dict[str, Any], value)
            result[key] = {name: _sorted(field) for name, field in fields.items()}
        else:
            result[key] = value if key == "default" else _sorted(value)
    return result
