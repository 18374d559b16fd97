"""What can be wrong with a form or an answer, always named by field.

A person fixing a form (or a server author fixing a model) needs every problem at once,
each tied to the field it is about, not the first one in a generic message. So each
error here carries a tuple of ``FieldError`` and a one-line message that lists them all.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class FieldError:
    """One problem with one field: ``field`` is ``None`` when it is about the whole thing."""

    field: str | None
    message: str

    def __str__(self) -> str:
        return self.message if self.field is None else f"{self.field}: {self.message}"


def _listing(errors: tuple[FieldError, ...]) -> str:
    return "; ".join(str(error) for error in errors)


class UnsupportedForm(ValueError):
    """A ``requestedSchema`` is outside MCP's restricted form schema.

    A client cannot render or check such a form; a host should answer the server with
    an error (or a decline) that carries this message, never crash.
    """

    errors: tuple[FieldError, ...]
    _HEADLINE = (
        "The requested form is not an MCP elicitation form (a flat object of strings, "
        "numbers, booleans and choices)"
    )

    def __init__(self, errors: Iterable[FieldError]) -> None:
        self.errors = tuple(errors)
        super().__init__(f"{self._HEADLINE}: {_listing(self.errors)}.")


class FormTooLarge(UnsupportedForm):
    """A ``requestedSchema`` (or its message) holds more than a client shows: more fields,
    choices or text than the limits in ``answerback.forms`` allow.

    An ``UnsupportedForm``, so every host that refuses a form it cannot show refuses
    this one too, early and with the sizes named, instead of freezing while it lays the
    form out.
    """

    _HEADLINE = "The requested form is too large to show"


class FormTooSlow(UnsupportedForm):
    """A ``requestedSchema`` whose patterns are too slow to check its own defaults: one
    past ``PATTERN_SECONDS``, or all of them together past their budget (``pattern_budget``).

    An ``UnsupportedForm``, refused where any other is, at once rather than after the
    client has spent seconds (or, across a form's fields, minutes) on the patterns.
    """

    _HEADLINE = "The requested form's patterns are too slow to check"


class AnswerError(ValueError):
    """An answer does not fit its form; ``errors`` names every bad field and what is wrong.

    A renderer can show each error next to its field and ask again; a server can send
    the whole list back instead of failing on the first problem.
    """

    errors: tuple[FieldError, ...]

    def __init__(self, errors: Iterable[FieldError]) -> None:
        self.errors = tuple(errors)
        super().__init__(f"The answer does not fit the form: {_listing(self.errors)}.")


class FormSchemaError(TypeError):
    """A pydantic model cannot be asked for as an elicitation form.

    Raised when the server builds the form, before anything is sent, so the author
    learns which fields to change instead of a client refusing the question later.
    """

    errors: tuple[FieldError, ...]

    def __init__(self, model_name: str, errors: Iterable[FieldError]) -> None:
        self.errors = tuple(errors)
        super().__init__(
            f"{model_name} cannot be asked for in an elicitation form, which holds only "
            f"strings, numbers, booleans and choices between strings: {_listing(self.errors)}."
        )
