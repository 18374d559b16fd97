"""A whole form: its fields in order, and the checks that look at the answer as a whole.

The form judges the answer's shape (an object, every required field there, no field it
never asked for); each field judges its own value with its own jsonschema validator.
Everything wrong is found in one pass and reported together, each under its field's
name. One validator for the whole answer would say the same, at several times the cost
per answer: jsonschema builds a child validator for every property it descends into.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any, cast

from answerback.forms._errors import AnswerError, FieldError
from answerback.forms._fields import FormField, FormValue
from answerback.forms._patterns import PatternBudget, PatternBudgetSpent, pattern_budget


def repeated(items: Iterable[str]) -> list[str]:
    """The items listed more than once, sorted: in one pass, for a server may send a
    hundred thousand of them (counting each again took minutes)."""
    return sorted(item for item, times in Counter(items).items() if times > 1)


@dataclass(frozen=True)
class Form:
    """The fields of an elicitation form, in the order the server listed them.

    Build one with ``parse_form`` (from a received ``requestedSchema``) or from a model
    with ``parse_form(form_schema(Model))``; ``form["name"]`` is one field.
    """

    fields: tuple[FormField, ...]

    def __post_init__(self) -> None:
        names = [field.name for field in self.fields]
        twice = repeated(names)
        if twice:
            raise ValueError(f"a form's fields need distinct names; repeated: {twice}")

    def __getitem__(self, name: str) -> FormField:
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"{name!r} is not a field of this form: {list(self._by_name)}") from None

    @cached_property
    def _by_name(self) -> dict[str, FormField]:
        return {field.name: field for field in self.fields}

    @property
    def schema(self) -> dict[str, Any]:
        """The form as a restricted ``requestedSchema``, in canonical spelling (a new dict).

        Legacy ``enumNames`` titles come out as ``oneOf``, the spelling 2025-11-25 keeps.
        """
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {field.name: field.schema() for field in self.fields},
        }
        required = [field.name for field in self.fields if field.required]
        if required:
            schema["required"] = required
        return schema

    def check(self, answer: object) -> dict[str, FormValue]:
        """The answer, if it fits the form, as a new dict (whole floats of integers as ints).

        Raises ``AnswerError`` naming every bad field: a required one left out, one the
        form does not have, null, or a value of the wrong type, length, range, format or
        choice, or one the server's patterns are too slow to check (all the answer's
        pattern checks share one ``pattern_budget``). Defaults are not filled in
        here; see ``with_defaults``.
        """
        if isinstance(answer, Mapping):
            answer = dict(cast(Mapping[str, object], answer))
        with pattern_budget():
            errors = self._errors(answer)
        if errors:
            raise AnswerError(errors)
        values = cast(dict[str, Any], answer)
        return {name: self[name].normalize(value) for name, value in values.items()}

    def _errors(self, answer: object) -> list[FieldError]:
        if not isinstance(answer, dict):
            return [FieldError(None, "the answer must be an object of field values")]
        values = cast(dict[str, object], answer)
        found: list[FieldError] = []
        for field in self.fields:
            if field.name in values:
                try:
                    problems = field.problems(values[field.name])
                except PatternBudgetSpent as exc:
                    # Each further pattern would say the same: the answer is refused here.
                    return [*found, FieldError(field.name, str(exc))]
                found.extend(FieldError(field.name, problem) for problem in problems)
            elif field.required:
                found.append(FieldError(field.name, "is required"))
        unknown = (name for name in values if name not in self._by_name)
        return [*found, *(FieldError(name, "is not a field of this form") for name in unknown)]

    def with_defaults(self, answer: Mapping[str, FormValue]) -> dict[str, FormValue]:
        """A new answer with each left-out field that has a default set to that default.

        Values that are there stay as they are, right or wrong; ``check`` judges them.
        """
        filled = dict(answer)
        for field in self.fields:
            default = field.default_value()
            if field.name not in filled and default is not None:
                filled[field.name] = default
        return filled

    def coerce(self, entries: Mapping[str, object]) -> dict[str, FormValue]:
        """What a person entered in each field, as a checked answer: ``field.coerce`` for
        each entry (text as typed, or a value a widget typed: a GUI's or a web page's
        form may post both), defaults for blank or missing ones, then ``check`` of the
        whole.

        Raises ``AnswerError`` naming every field whose entry could not be read or is of
        the wrong type, plus whatever ``check`` finds in the fields that could (and one
        for ``entries`` that are not a mapping, as a page may post). Reading and checking
        share one pattern budget, as ``check`` alone does.
        """
        if not isinstance(cast(object, entries), Mapping):
            raise AnswerError([FieldError(None, "the answer must be an object of field values")])
        with pattern_budget() as budget:
            return self._coerce(entries, budget)

    def _coerce(self, entries: Mapping[str, object], budget: PatternBudget) -> dict[str, FormValue]:
        answer: dict[str, FormValue] = {}
        unreadable: list[FieldError] = []
        for name, entry in entries.items():
            if name not in self._by_name:
                unreadable.append(FieldError(name, "is not a field of this form"))
                continue
            try:
                value = self[name].coerce(entry)
            except AnswerError as exc:
                unreadable.extend(exc.errors)
                if budget.spent_up:  # every further pattern would say so too
                    raise AnswerError(unreadable) from None
                continue
            if value is not None:
                answer[name] = value
        failed = {error.field for error in unreadable}
        remaining = [
            error for error in self._errors(self.with_defaults(answer)) if error.field not in failed
        ]
        if unreadable or remaining:
            order = {field.name: index for index, field in enumerate(self.fields)}
            everything = [*unreadable, *remaining]
            everything.sort(key=lambda error: order.get(error.field or "", len(order)))
            raise AnswerError(everything)
        return self.check(self.with_defaults(answer))
