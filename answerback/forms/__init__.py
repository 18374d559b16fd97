"""MCP elicitation forms, the same rules at both ends.

A server asks with a form (``requestedSchema``, a restricted subset of JSON Schema); a
client shows it and sends back an answer. When both ends build, read and check that form
with one piece of code, a server never sends a form a client must refuse, and a bad
answer is caught, field by field, before it costs a tool call.

- server side: ``form_schema(Model)`` builds a spec-exact form from a pydantic model and
  ``validate_answer(Model, content)`` turns the answer back into the model;
- client side: ``parse_form(requested_schema)`` gives typed fields to render;
  ``form.coerce`` reads what a person typed, ``form.check`` judges an answer and
  ``form.with_defaults`` fills in what was left out;
- both: ``MAX_FIELDS``, ``MAX_CHOICES`` and ``MAX_TEXT_LENGTH`` bound what one form may
  hold; ``parse_form`` and ``check_message`` refuse more with ``FormTooLarge``, and
  ``parse_form`` refuses a form whose patterns are too slow to check with ``FormTooSlow``.

Pure code: no I/O, nothing here knows about sessions or transports.
"""

from __future__ import annotations

from answerback._public import publish
from answerback.forms._errors import (
    AnswerError,
    FieldError,
    FormSchemaError,
    FormTooLarge,
    FormTooSlow,
    UnsupportedForm,
)
from answerback.forms._fields import (
    BooleanField,
    FormField,
    FormValue,
    MultiSelectField,
    NumberField,
    Option,
    SingleSelectField,
    StringField,
)
from answerback.forms._form import Form
from answerback.forms._formats import StringFormat
from answerback.forms._limits import MAX_CHOICES, MAX_FIELDS, MAX_TEXT_LENGTH, check_message
from answerback.forms._model import Titles, form_schema, validate_answer
from answerback.forms._parse import parse_form

__all__ = [
    "MAX_CHOICES",
    "MAX_FIELDS",
    "MAX_TEXT_LENGTH",
    "AnswerError",
    "BooleanField",
    "FieldError",
    "Form",
    "FormField",
    "FormSchemaError",
    "FormTooLarge",
    "FormTooSlow",
    "FormValue",
    "MultiSelectField",
    "NumberField",
    "Option",
    "SingleSelectField",
    "StringField",
    "StringFormat",
    "Titles",
    "UnsupportedForm",
    "check_message",
    "form_schema",
    "parse_form",
    "validate_answer",
]

publish(globals())
