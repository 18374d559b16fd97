"""Typed form fields: what a renderer shows, and how one field's value is checked.

Each field knows three things about itself: its canonical restricted schema (what goes
on the wire), the JSON Schema that checks a value (run by jsonschema), and how to read a
value from typed text. The wording of every complaint lives here too, so a renderer and
a server say the same thing about the same mistake.

Most answers are right, and jsonschema takes several times longer to say so than the
check itself needs (it walks its keywords and type checker in Python). So a field first
asks ``_plainly_fits``, which says yes only to a value whose rules are plain (its exact
JSON type, a length, bounds, a choice) and that meets them; for anything else (a pattern,
a format, a subclass of ``str``, a ``Decimal``) it says no, and jsonschema judges. Every
complaint but a pattern's therefore comes from jsonschema, and a property test holds the
shortcut to jsonschema's verdict.

A ``pattern`` is the server's own regular expression, run on what the person typed.
jsonschema runs it with Python's ``re``, which cannot be stopped: ``^(a+)+$`` takes
minutes on thirty characters, freezing the client. So a string field checks its pattern
itself, with a deadline (``pattern_search``, shared with the client's check of tool
results).
"""

from __future__ import annotations

import csv
import json
import math
import re
from abc import ABC, abstractmethod
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Context, Decimal
from functools import cached_property
from typing import TYPE_CHECKING, Any, TypeAlias, cast

from answerback.forms._errors import AnswerError, FieldError
from answerback.forms._formats import FORMAT_HINTS, StringFormat, new_validator
from answerback.forms._patterns import PatternBudgetSpent, PatternTooSlow, pattern_search

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator, ValidationError

FormValue: TypeAlias = str | int | float | bool | list[str]
"""A value in an accepted answer: text, a number, a yes/no, or the picked choices."""

_NUMBER_TEXT = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_INTEGER_TEXT = re.compile(r"[+-]?\d+")
_LARGEST_EXPONENT = 308  # beyond this a float is infinite and an int is absurd to build
_YES = frozenset({"yes", "y", "true", "t", "1", "on"})
_NO = frozenset({"no", "n", "false", "f", "0", "off"})
_SHOWN_OPTIONS = 10
_EXACT_DIGITS = 17  # every float's digits, and room for 2**53 + 1 written out
_EXACT_BELOW = 10**_EXACT_DIGITS

MAX_PATTERN_LENGTH = 1024
"""Characters in a field's ``pattern``; a longer one makes the form unsupported."""


def validation_errors(validator: Draft202012Validator, value: object) -> list[ValidationError]:
    """Every way ``value`` breaks the validator's schema (jsonschema types it loosely)."""
    found: Iterable[ValidationError] = validator.iter_errors(value)  # pyright: ignore[reportUnknownMemberType, reportArgumentType]
    return list(found)


def not_finite(value: float, *path: str) -> ValidationError:
    """An error for NaN or infinity: JSON has neither, and jsonschema lets them pass."""
    from jsonschema import ValidationError

    return ValidationError(f"{value} is not finite", validator="finite", instance=value, path=path)


def _is_json_value(value: object) -> bool:
    """Whether ``value`` is of a type JSON has (``bool`` is an ``int``): anything else
    is named by its type, since ``show`` writes it as the JSON type it resembles (a
    tuple as a list)."""
    return isinstance(value, dict | list | str | int | float | None)


def show(value: object) -> str:
    """A value as JSON, cut short: error messages quote what was sent, never all of it."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        try:
            text = repr(value)
        except ValueError:  # an int of more digits than Python turns into text
            text = "a number too large to show"
    return text if len(text) <= 60 else text[:59] + "…"


def number_text(value: float) -> str:
    """A bound as a message states it: whole numbers in full up to ``_EXACT_DIGITS``
    digits, longer ones in exponent form (``1e+308``, not 309 digits)."""
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < _EXACT_BELOW else repr(value)
    if abs(value) < _EXACT_BELOW:
        return str(value)
    return format(Context(prec=_EXACT_DIGITS).create_decimal(value).normalize(), "e")


def _within(measure: float, least: float | None, most: float | None) -> bool:
    """Whether ``measure`` lies within the inclusive bounds given (``None``: unbounded)."""
    return (least is None or measure >= least) and (most is None or measure <= most)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


@dataclass(frozen=True)
class Option:
    """One choice of a select field: the ``value`` sent, and the ``title`` shown if any."""

    value: str
    title: str | None = None

    @property
    def label(self) -> str:
        """What to show the person: the title, or the value itself when untitled."""
        return self.value if self.title is None else self.title


@dataclass(frozen=True, kw_only=True)
class _Field(ABC):
    """What every field has; the subclasses add their own constraints and default."""

    name: str
    title: str | None = None
    description: str | None = None
    required: bool = False

    @property
    def label(self) -> str:
        """What to show the person: the title, or the field's name when untitled."""
        return self.name if self.title is None else self.title

    def schema(self) -> dict[str, Any]:
        """This field as the restricted schema sends it (one ``properties`` entry)."""
        schema = self._head()
        schema.update(self._constraints())
        default = self.default_value()
        if default is not None:
            schema["default"] = default
        return schema

    def check(self, value: object) -> FormValue:
        """``value`` if it fits this field (whole floats of an integer field become ints).

        Raises ``AnswerError`` with everything wrong with it; that includes a pattern
        too slow to check it, alone or with the other checks of an open
        ``pattern_budget`` (a whole answer's or form's).
        """
        try:
            messages = self.problems(value)
        except PatternBudgetSpent as exc:
            raise AnswerError([FieldError(self.name, str(exc))]) from None
        if messages:
            raise AnswerError(FieldError(self.name, message) for message in messages)
        return self.normalize(value)

    def coerce(self, entered: object) -> FormValue | None:
        """Read what a person entered as this field's value, checked with the same rules
        as ``check``.

        Text (typed at a terminal, an ``<input>``'s value) is read as a person writes
        it: ``"yes"``, ``"3"``, ``"a, b"``. Anything else is a value a widget already
        typed (a checkbox's ``True``, a multi-select's list, a number input's ``3``, as
        a web page posts them in JSON), checked as it is: one of the wrong type is an
        ``AnswerError`` naming the field, like any other mistake. Blank text and
        ``None`` are no answer (``None``): the caller leaves the field out, so its
        default applies or ``required`` is reported. Raises ``AnswerError`` otherwise.
        """
        if entered is None or (isinstance(entered, str) and not entered.strip()):
            return None
        if not isinstance(entered, str):
            return self.check(entered)
        try:
            value = self._read(entered)
        except ValueError as exc:
            raise AnswerError([FieldError(self.name, str(exc))]) from None
        return self.check(value)

    # --- for subclasses and the form ---------------------------------------------------

    def _head(self) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": self._json_type()}
        if self.title is not None:
            schema["title"] = self.title
        if self.description is not None:
            schema["description"] = self.description
        return schema

    @abstractmethod
    def _json_type(self) -> str:
        """The JSON ``type`` of this field's values."""

    @abstractmethod
    def default_value(self) -> FormValue | None:
        """The default as it goes into an answer (a fresh list for a multi-select)."""

    @abstractmethod
    def _expects(self) -> str:
        """What a value must be, as the end of "must be ..."."""

    def _constraints(self) -> dict[str, Any]:
        return {}

    def validation_schema(self) -> dict[str, Any]:
        """The JSON Schema jsonschema checks a value with (titles and defaults left out).

        A form checks a whole answer with these in one validator; it can be stricter than
        ``schema()`` (a multi-select refuses the same choice picked twice).
        """
        return {"type": self._json_type(), **self._constraints()}

    @cached_property
    def _validator(self) -> Draft202012Validator:
        return new_validator(self.validation_schema())

    def _errors(self, value: object) -> list[ValidationError]:
        errors = validation_errors(self._validator, value)
        if isinstance(value, float) and not math.isfinite(value):
            errors.append(not_finite(value))
        return errors

    def _plainly_fits(self, value: object) -> bool:
        """Whether ``value`` certainly fits, seen without jsonschema (see the module's
        docstring); false means only that jsonschema must look."""
        return False

    @abstractmethod
    def _read(self, text: str) -> FormValue:
        """Typed text as a value of this field's type; ``ValueError`` says what to type."""

    def normalize(self, value: Any) -> FormValue:
        """A value that passed the checks in its canonical form (an integer field's
        whole floats as ints, a multi-select's picks as a list)."""
        return value

    def problems(self, value: object) -> list[str]:
        """Everything wrong with ``value`` as sentences, each said once (none: it fits).

        A value of the wrong type (or NaN, or infinite) is told only that, not every rule
        it then breaks. Raises ``PatternBudgetSpent`` past an open ``pattern_budget``: a
        form checking many values stops there.
        """
        if self._plainly_fits(value):
            return []
        errors = self._errors(value)
        kinds: dict[tuple[str | int, ...], set[str]] = {}
        for error in errors:
            kinds.setdefault(tuple(error.path), set()).add(str(error.validator))
        said: list[str] = []
        for error in errors:
            here = kinds[tuple(error.path)]
            dominant = next((kind for kind in ("type", "finite") if kind in here), None)
            if dominant is not None and error.validator != dominant:
                continue
            message = self._explain(error, item=bool(error.path))
            if message not in said:
                said.append(message)
        return said

    def _explain(self, error: ValidationError, *, item: bool) -> str:
        """One jsonschema error as a sentence about this field (``item``: about one pick)."""
        keyword, limit = error.validator, cast(Any, error.validator_value)
        if keyword == "type":
            if error.instance is None:
                return f"must be {self._expects()}, not null (leave out a field with no answer)"
            if not _is_json_value(error.instance):
                # A tuple is shown as JSON shows it, a list: name what it was instead.
                return f"must be {self._expects()}, not a {type(error.instance).__name__}"
            return f"must be {self._expects()}, not {show(error.instance)}"
        if keyword == "finite":
            return f"must be a finite number, not {error.instance}"
        if keyword == "minLength":
            return "must not be empty" if limit == 1 else f"must be at least {limit} characters"
        if keyword == "maxLength":
            return f"must be at most {_plural(limit, 'character')}"
        if keyword == "pattern":
            return f"must match the pattern {limit}"
        if keyword == "format":
            from email_validator import EmailNotValidError

            if isinstance(error.cause, EmailNotValidError):
                return f"is not a valid email address: {str(error.cause).rstrip('.')}"
            return FORMAT_HINTS.get(str(limit), error.message)
        if keyword == "minimum":
            return f"must be at least {number_text(limit)}"
        if keyword == "maximum":
            return f"must be at most {number_text(limit)}"
        return error.message


@dataclass(frozen=True, kw_only=True)
class StringField(_Field):
    """Free text, optionally bounded in length, matching a pattern, or of a ``format``."""

    min_length: int | None = None
    max_length: int | None = None
    pattern: str | None = None
    format: StringFormat | None = None
    default: str | None = None

    def _json_type(self) -> str:
        return "string"

    def default_value(self) -> str | None:
        return self.default

    def _expects(self) -> str:
        return "text"

    def _constraints(self) -> dict[str, Any]:
        found = {
            "minLength": self.min_length,
            "maxLength": self.max_length,
            "pattern": self.pattern,
            "format": self.format,
        }
        return {key: value for key, value in found.items() if value is not None}

    def validation_schema(self) -> dict[str, Any]:
        schema = super().validation_schema()
        schema.pop("pattern", None)  # checked by ``matches``, with a deadline
        return schema

    def matches(self, text: str) -> bool:
        """Whether ``text`` matches the field's ``pattern`` (anywhere, as JSON Schema
        says); true without one. Raises ``PatternTooSlow`` past ``PATTERN_SECONDS``, and
        ``PatternBudgetSpent`` past the open ``pattern_budget``."""
        return self.pattern is None or pattern_search(self.pattern, text)

    def _errors(self, value: object) -> list[ValidationError]:
        errors = super()._errors(value)
        if self.pattern is not None and isinstance(value, str):
            from jsonschema import ValidationError

            try:
                if not self.matches(value):
                    errors.append(
                        ValidationError(
                            f"{value!r} does not match {self.pattern!r}",
                            validator="pattern",
                            validator_value=self.pattern,
                            instance=value,
                        )
                    )
            except PatternBudgetSpent:
                raise  # the whole answer's budget: every further pattern would say so too
            except PatternTooSlow as exc:
                errors.append(ValidationError(str(exc), validator="patternTime", instance=value))
        return errors

    def _plainly_fits(self, value: object) -> bool:
        if type(value) is not str or self.pattern is not None or self.format is not None:
            return False
        return _within(len(value), self.min_length, self.max_length)

    def _read(self, text: str) -> str:
        # Free text is taken as typed; an email, URI or date never has edge spaces.
        return text if self.format is None else text.strip()


@dataclass(frozen=True, kw_only=True)
class NumberField(_Field):
    """A number, or a whole number when ``integer``, optionally within inclusive bounds."""

    integer: bool = False
    minimum: int | float | None = None
    maximum: int | float | None = None
    default: int | float | None = None

    def _json_type(self) -> str:
        return "integer" if self.integer else "number"

    def default_value(self) -> int | float | None:
        return self.default

    def _expects(self) -> str:
        return "a whole number" if self.integer else "a number"

    def _constraints(self) -> dict[str, Any]:
        found = {"minimum": self.minimum, "maximum": self.maximum}
        return {key: value for key, value in found.items() if value is not None}

    def _plainly_fits(self, value: object) -> bool:
        # Exactly int or float: bool is an int to Python but not a number to JSON Schema.
        if type(value) is float:
            if not math.isfinite(value) or (self.integer and not value.is_integer()):
                return False
        elif type(value) is not int:
            return False
        return _within(value, self.minimum, self.maximum)

    def _read(self, text: str) -> int | float:
        """Decimal notation; an integer field takes "5.0" or "1e3" as whole numbers."""
        text = text.strip()
        example = "a whole number like 42" if self.integer else "a number like 42 or 3.5"
        if not _NUMBER_TEXT.fullmatch(text):
            raise ValueError(f"must be {example}, not {show(text)}")
        if _INTEGER_TEXT.fullmatch(text) and len(text) <= _LARGEST_EXPONENT:
            return int(text)
        exact = Decimal(text)
        if exact.adjusted() > _LARGEST_EXPONENT:
            raise ValueError(f"must be {example}; {text} is too large")
        if not self.integer:
            return float(exact)
        if exact != exact.to_integral_value():
            raise ValueError(f"must be a whole number, not {text}")
        return int(exact)

    def normalize(self, value: Any) -> FormValue:
        if self.integer and isinstance(value, float) and value.is_integer():
            return int(value)
        return value


@dataclass(frozen=True, kw_only=True)
class BooleanField(_Field):
    """Yes or no."""

    default: bool | None = None

    def _json_type(self) -> str:
        return "boolean"

    def default_value(self) -> bool | None:
        return self.default

    def _expects(self) -> str:
        return "true or false"

    def _plainly_fits(self, value: object) -> bool:
        return type(value) is bool

    def _read(self, text: str) -> bool:
        """yes/no, y/n, true/false, t/f, on/off or 1/0, in any case."""
        word = text.strip().casefold()
        if word in _YES:
            return True
        if word in _NO:
            return False
        raise ValueError(f"must be yes or no, not {show(text.strip())}")


def _pick(options: tuple[Option, ...], text: str) -> str:
    """The value ``text`` means: a value, else a title, else either ignoring case, if unique.

    Edge spaces are ignored unless a value has them itself.
    """
    stripped = text.strip()
    folded = stripped.casefold()
    for found in (
        [option.value for option in options if option.value == text],
        [option.value for option in options if option.value == stripped],
        [option.value for option in options if option.title in (text, stripped)],
        [
            option.value
            for option in options
            if folded in (option.value.strip().casefold(), option.label.strip().casefold())
        ],
    ):
        if len(set(found)) == 1:
            return found[0]
    raise ValueError(f"{show(stripped)} is not one of the choices {_listing(options)}")


def _listing(options: tuple[Option, ...]) -> str:
    shown = [
        show(option.value) if option.title is None else f"{show(option.value)} ({option.title})"
        for option in options[:_SHOWN_OPTIONS]
    ]
    more = ", …" if len(options) > _SHOWN_OPTIONS else ""
    return ", ".join(shown) + more


@dataclass(frozen=True, kw_only=True)
class _ChoiceField(_Field):
    """What both select fields have: the options to choose from."""

    options: tuple[Option, ...]

    @property
    def titled(self) -> bool:
        """Whether the options carry display titles."""
        return any(option.title is not None for option in self.options)

    @cached_property
    def _values(self) -> frozenset[str]:
        return frozenset(option.value for option in self.options)


@dataclass(frozen=True, kw_only=True)
class SingleSelectField(_ChoiceField):
    """Pick exactly one of ``options`` (sent as ``enum``, or ``oneOf`` when titled)."""

    default: str | None = None

    def _json_type(self) -> str:
        return "string"

    def default_value(self) -> str | None:
        return self.default

    def _expects(self) -> str:
        return "one of the choices"

    def _constraints(self) -> dict[str, Any]:
        if self.titled:
            return {"oneOf": [{"const": o.value, "title": o.label} for o in self.options]}
        return {"enum": [option.value for option in self.options]}

    def validation_schema(self) -> dict[str, Any]:
        return {"type": "string", "enum": [option.value for option in self.options]}

    def _plainly_fits(self, value: object) -> bool:
        return type(value) is str and value in self._values

    def _read(self, text: str) -> str:
        """A choice by its value or its title, in any case when that is unambiguous."""
        return _pick(self.options, text)

    def _explain(self, error: ValidationError, *, item: bool) -> str:
        if error.validator == "enum":
            return f"must be one of {_listing(self.options)}, not {show(error.instance)}"
        return super()._explain(error, item=item)


@dataclass(frozen=True, kw_only=True)
class MultiSelectField(_ChoiceField):
    """Pick any number of ``options``, between ``min_items`` and ``max_items``, each once."""

    min_items: int | None = None
    max_items: int | None = None
    default: tuple[str, ...] | None = None

    def _json_type(self) -> str:
        return "array"

    def default_value(self) -> list[str] | None:
        return None if self.default is None else list(self.default)

    def _expects(self) -> str:
        return "a list of choices"

    def _constraints(self) -> dict[str, Any]:
        found: dict[str, Any] = {"minItems": self.min_items, "maxItems": self.max_items}
        bounds = {key: value for key, value in found.items() if value is not None}
        if self.titled:
            choices = [{"const": o.value, "title": o.label} for o in self.options]
            return {**bounds, "items": {"anyOf": choices}}
        return {**bounds, "items": {"type": "string", "enum": [o.value for o in self.options]}}

    def validation_schema(self) -> dict[str, Any]:
        # Picking a choice twice means nothing, so an answer that does is refused.
        values = [option.value for option in self.options]
        bounds = {key: value for key, value in self._constraints().items() if key != "items"}
        return {
            "type": "array",
            "items": {"type": "string", "enum": values},
            "uniqueItems": True,
            **bounds,
        }

    def _plainly_fits(self, value: object) -> bool:
        if type(value) is not list:
            return False
        picks = cast(list[object], value)
        if not all(type(pick) is str and pick in self._values for pick in picks):
            return False
        return len(set(picks)) == len(picks) and _within(len(picks), self.min_items, self.max_items)

    def _read(self, text: str) -> list[str]:
        """Choices separated by commas or line breaks (quote one that holds a comma)."""
        picked: list[str] = []
        problems: list[str] = []
        lines = csv.reader(text.splitlines(), skipinitialspace=True)
        for part in (part for line in lines for part in line):
            if not part.strip():
                continue
            try:
                value = _pick(self.options, part)
            except ValueError as exc:
                problems.append(str(exc))
                continue
            if value not in picked:
                picked.append(value)
        if problems:
            raise ValueError("; ".join(problems))
        return picked

    def normalize(self, value: Any) -> FormValue:
        return list(value)

    def _explain(self, error: ValidationError, *, item: bool) -> str:
        keyword, limit = error.validator, cast(Any, error.validator_value)
        if item:
            return f"{show(error.instance)} is not one of the choices {_listing(self.options)}"
        if keyword == "minItems":
            return f"must pick at least {_plural(limit, 'choice')}"
        if keyword == "maxItems":
            return f"must pick at most {_plural(limit, 'choice')}"
        if keyword == "uniqueItems":
            return "must not pick the same choice twice"
        return super()._explain(error, item=item)


FormField: TypeAlias = (
    StringField | NumberField | BooleanField | SingleSelectField | MultiSelectField
)
"""Any field of a form; ``match`` on the class to render each kind."""
