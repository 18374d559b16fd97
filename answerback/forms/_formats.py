"""The four string formats a form may ask for, checked the way their standards say.

jsonschema's own checks are too loose for what a person types (its email check only
looks for "@") and change with whatever optional packages happen to be installed, so
the checker here is built from nothing and names exactly one library per format.

jsonschema and the format libraries are imported on the first check, not with the
package: they cost more to import than the rest of answerback's client, and a program
that is never asked a question never needs them.
"""

from __future__ import annotations

import re
from datetime import date
from functools import cache
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

if TYPE_CHECKING:
    from jsonschema import Draft202012Validator, FormatChecker

StringFormat: TypeAlias = Literal["email", "uri", "date", "date-time"]
FORMATS: tuple[StringFormat, ...] = ("email", "uri", "date", "date-time")

FORMAT_HINTS: dict[str, str] = {
    "email": "must be an email address like name@example.com",
    "uri": "must be an absolute URI with a scheme, like https://example.com/page "
    "(non-ASCII characters percent-encoded)",
    "date": "must be a date like 2025-01-31",
    "date-time": "must be a date and time with a time zone, like 2025-01-31T14:30:00Z",
}
"""What a value of each format looks like, said to the person who typed something else."""

_FULL_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def new_validator(schema: dict[str, Any]) -> Draft202012Validator:
    """A Draft 2020-12 validator for ``schema`` that checks the form formats."""
    from jsonschema import Draft202012Validator

    return Draft202012Validator(schema, format_checker=_format_checker())


@cache
def _format_checker() -> FormatChecker:
    from email_validator import EmailNotValidError
    from jsonschema import FormatChecker

    checker = FormatChecker(formats=())
    checker.checks("email", raises=EmailNotValidError)(_is_email)
    checker.checks("uri")(_is_uri)
    checker.checks("date")(_is_date)
    checker.checks("date-time")(_is_date_time)
    return checker


def _is_email(value: object) -> bool:
    # Syntax only: a form check must not touch the network (no DNS, no deliverability).
    from email_validator import validate_email

    if isinstance(value, str):
        validate_email(value, check_deliverability=False)
    return True


def _is_uri(value: object) -> bool:
    # RFC 3986 "URI": a scheme is required, so "example.com" and "/path" are not URIs.
    from rfc3986_validator import validate_rfc3986  # pyright: ignore[reportMissingTypeStubs, reportUnknownVariableType]

    return not isinstance(value, str) or validate_rfc3986(value, rule="URI") is not None


def _is_date(value: object) -> bool:
    # RFC 3339 full-date only: Python's fromisoformat alone also takes "20250131" and
    # week dates, which are not what a "date" field promises the server.
    if not isinstance(value, str):
        return True
    if not _FULL_DATE.fullmatch(value):
        return False
    try:
        date.fromisoformat(value)
    except ValueError:
        return False
    return True


def _is_date_time(value: object) -> bool:
    # RFC 3339 lets "T" and "Z" be lower case; the validator only knows upper case.
    from rfc3339_validator import validate_rfc3339

    return not isinstance(value, str) or bool(validate_rfc3339(value.upper()))
