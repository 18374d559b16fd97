"""How much one form may hold, so that a host refuses an outsized form instead of freezing.

MCP sets no sizes, and a server sent answerback's terminal client ten thousand fields, a
hundred thousand choices and a megabyte of message: each took hundreds of megabytes and
seconds per keystroke, or minutes to appear. The limits below are far above any form a
person fills in, and low enough for any host, terminal or GUI, to lay out a form that
keeps them. ``parse_form`` (so ``form_schema`` too, on the server) and ``check_message``
refuse more with ``FormTooLarge``, naming the limit and the size. They look at sizes
only, before anything is read item by item, so a refusal costs next to nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from answerback.forms._errors import FieldError, FormTooLarge
from answerback.forms._fields import show

MAX_FIELDS = 256
"""Fields in one form. A person fills in a screenful or two; 256 leaves room for a long
generated form, and a terminal still shows it at once (10,000 took 635 MB)."""

MAX_CHOICES = 4096
"""Choices in one field (``enum``, ``oneOf``, a multi-select's ``items``, its
``default``): more than any list a person picks from (every time zone, currency or
country, several times over); a list of 100,000 froze the terminal."""

MAX_TEXT_LENGTH = 64 * 1024
"""Characters in any one text a form shows: the message, a field's name, title,
description, pattern or default, a choice's value or title. Pages of reading, and far
short of the megabyte message that made each keystroke take seconds."""


def check_message(message: str) -> None:
    """Raise ``FormTooLarge`` if an elicitation's ``message``, shown above its form, is
    longer than ``MAX_TEXT_LENGTH``."""
    if len(message) > MAX_TEXT_LENGTH:
        raise FormTooLarge([FieldError(None, _too_long("the message", message))])


def cut_description(description: str) -> str:
    """A tool's ``description`` cut to ``MAX_TEXT_LENGTH``, saying how much is not shown.

    It is shown above the form that asks the tool's arguments: refusing it would refuse
    the call the person chose to make, so it is cut instead (a server's question with
    too long a message is refused, ``check_message``).
    """
    if len(description) <= MAX_TEXT_LENGTH:
        return description
    left_out = len(description) - MAX_TEXT_LENGTH
    kept = description[:MAX_TEXT_LENGTH]
    return f"{kept}… (description cut: {left_out:,} characters not shown)"


def check_size(requested_schema: Mapping[str, Any]) -> None:
    """Raise ``FormTooLarge`` if the form holds more than the limits allow.

    A part of the wrong type is left alone: ``parse_form`` names it afterwards.
    """
    found, listed = requested_schema.get("properties"), requested_schema.get("required")
    properties: Mapping[str, Any] = (
        cast(Mapping[str, Any], found) if isinstance(found, Mapping) else {}
    )
    required = cast(list[object], listed) if isinstance(listed, list) else []
    if len(properties) > MAX_FIELDS:
        too_many = f"holds {len(properties):,} fields, more than the {MAX_FIELDS:,} a form may have"
        raise FormTooLarge([FieldError(None, f'"properties" {too_many}')])
    if len(required) > MAX_FIELDS:
        too_many = (
            f"lists {len(required):,} names, more than the {MAX_FIELDS:,} fields a form may have"
        )
        raise FormTooLarge([FieldError(None, f'"required" {too_many}')])
    problems: list[FieldError] = []
    for name, definition in properties.items():
        if isinstance(name, str) and len(name) > MAX_TEXT_LENGTH:  # pyright: ignore[reportUnnecessaryIsInstance]
            problems.append(FieldError(None, _too_long(f"the field name {show(name)}", name)))
        elif isinstance(definition, Mapping):
            field_problems = _field_problems(cast(Mapping[str, Any], definition))
            problems.extend(FieldError(name, problem) for problem in field_problems)
    if problems:
        raise FormTooLarge(problems)


def _field_problems(definition: Mapping[str, Any]) -> list[str]:
    problems = [
        _too_long(f'"{key}"', text)
        for key in ("title", "description", "pattern", "default")
        if isinstance(text := definition.get(key), str) and len(text) > MAX_TEXT_LENGTH
    ]
    items = definition.get("items")
    lists = [(f'"{key}"', definition.get(key)) for key in ("enum", "enumNames", "oneOf", "default")]
    if isinstance(items, Mapping):
        items = cast(Mapping[str, Any], items)
        lists += [(f'"items.{key}"', items.get(key)) for key in ("enum", "anyOf")]
    for where, value in lists:
        if isinstance(value, list):
            problems.extend(_choices_problems(where, cast(list[object], value)))
    return problems


def _choices_problems(where: str, choices: list[object]) -> list[str]:
    if len(choices) > MAX_CHOICES:
        count = len(choices)
        return [f"{where} holds {count:,} choices, more than the {MAX_CHOICES:,} a field may offer"]
    texts: list[str] = []
    for choice in choices:
        if isinstance(choice, str):
            texts.append(choice)
        elif isinstance(choice, Mapping):
            entry = cast(Mapping[str, Any], choice)
            texts.extend(
                text for text in (entry.get("const"), entry.get("title")) if isinstance(text, str)
            )
    longest = max(texts, key=len, default="")
    return [_too_long(f"a choice in {where}", longest)] if len(longest) > MAX_TEXT_LENGTH else []


def _too_long(what: str, text: str) -> str:
    return (
        f"{what} is {len(text):,} characters long, more than the {MAX_TEXT_LENGTH:,} a form shows"
    )
