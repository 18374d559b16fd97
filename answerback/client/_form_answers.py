"""Form answers checked before they leave the client.

The specification asks clients to validate a form answer against its schema before
sending it. Doing it here, with the same ``answerback.forms`` code the server checks
with, means a mistake is caught where it can still be fixed (a renderer can ask the
person again) and is reported field by field, instead of a tool call failing on the
server with a message that names nothing.
"""

from __future__ import annotations

from typing import Any

from answerback.forms import (
    MAX_TEXT_LENGTH,
    AnswerError,
    FieldError,
    Form,
    FormTooLarge,
    FormTooSlow,
    UnsupportedForm,
)
from answerback.types import ElicitResult, ErrorData
from answerback.types._errors import INTERNAL_ERROR, INVALID_PARAMS


def fitted(form: Form, answer: ElicitResult) -> ElicitResult:
    """An accepted ``answer`` with the form's defaults filled in and its values in
    canonical form; ``AnswerError`` naming every bad field if it does not fit."""
    given: dict[str, Any] = dict(answer.content or {})  # a null value is for check to name
    content = form.check(form.with_defaults(given))
    return answer.model_copy(update={"content": content})


def _listed(errors: tuple[FieldError, ...]) -> list[dict[str, str | None]]:
    return [{"field": error.field, "message": error.message} for error in errors]


def unsupported_form(exc: UnsupportedForm) -> ErrorData:
    """The server's answer to a ``requestedSchema`` outside the restricted subset, or too
    large to show: invalid params (the question itself is wrong), every reason in
    ``data["errors"]``."""
    if isinstance(exc, FormTooLarge):
        advice = "Ask for less at a time: split the form, or shorten its text."
    elif isinstance(exc, FormTooSlow):
        advice = "Use patterns that do not backtrack, and fewer different ones."
    else:
        advice = "Send a flat form as the MCP specification restricts it."
    return ErrorData(
        code=INVALID_PARAMS, message=f"{exc} {advice}", data={"errors": _listed(exc.errors)}
    )


def link_message_too_long(exc: FormTooLarge, message: str) -> ErrorData:
    """The server's answer to a URL-mode elicitation whose ``message`` is past the limit
    a form's message has (``check_message``): invalid params, as for a form too large."""
    return ErrorData(
        code=INVALID_PARAMS,
        message=(
            f"The link's message is {len(message):,} characters long, more than the "
            f"{MAX_TEXT_LENGTH:,} a client shows. Shorten it: the page behind the link "
            "can say the rest."
        ),
        data={"errors": _listed(exc.errors)},
    )


def unfit_answer(exc: AnswerError, source: str) -> ErrorData:
    """The error that replaces an answer which does not fit its form: the client's own
    fault (internal error), every bad field in the message and in ``data["errors"]``."""
    listing = "; ".join(map(str, exc.errors))
    return ErrorData(
        code=INTERNAL_ERROR,
        message=(
            f"The client's answer does not fit the requested form: {listing}. "
            f"{source} must answer every field as the form asks."
        ),
        data={"errors": _listed(exc.errors)},
    )
