"""``Literal`` values as a client sends them, read back into the values themselves.

pydantic checks a ``Literal`` with ``==``, so a value a client can only write one way
is refused in that form: a member of a plain ``Enum`` (``Literal[Color.RED]``, where
``RED = "red"``) equals neither ``"red"`` in a tool's JSON arguments nor the text of a
prompt argument or a URI, and ``Literal[1, 2]`` equals no text. The schema and the
descriptions list those forms (``"red"``, ``1``), so the functions here wrap such an
annotation in a validator that reads each listed form back as the value it stands for,
before pydantic compares: the function receives the member, and a value not listed is
still refused in pydantic's words.
"""

from __future__ import annotations

import json
from enum import Enum
from types import UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BeforeValidator


def choice_text(value: Any) -> str:
    """One allowed value as a client writes it in text: an ``Enum`` member
    (``Literal[Mode.FAST]``) by its value, a string as it is, anything else as JSON, or
    as its ``str()`` where it has no JSON form (a description must never stop a function
    from registering)."""
    if isinstance(value, Enum):
        value = value.value
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return str(value)


def literal_values(annotation: Any) -> tuple[Any, ...]:
    """The values of the ``Literal`` ``annotation`` is or holds (inside ``Annotated`` or
    a union, as ``Literal[...] | None``); ``()`` when there is none."""
    origin = get_origin(annotation)
    if origin is Literal:
        return get_args(annotation)
    if origin is Annotated:
        return literal_values(get_args(annotation)[0])
    if origin in (Union, UnionType):
        return tuple(value for arg in get_args(annotation) for value in literal_values(arg))
    return ()


def reading_literal_text(annotation: Any) -> Any:
    """``annotation``, taking the text ``choice_text`` gives a ``Literal`` value (a
    prompt argument, a URI placeholder) as that value: ``"red"`` as ``Color.RED``,
    ``"2"`` as ``2``; ``annotation`` itself where every value is its own text."""
    by_text = {choice_text(value): value for value in literal_values(annotation)}
    by_text = {text: value for text, value in by_text.items() if value != text}
    if not by_text:
        return annotation

    def value_of(given: object) -> object:
        return by_text.get(given, given) if isinstance(given, str) else given

    return Annotated[annotation, BeforeValidator(value_of)]


def reading_member_values(annotation: Any) -> Any:
    """``annotation``, taking a JSON value (a tool argument) equal to the value of a
    plain ``Enum`` member in its ``Literal`` as that member: ``"red"`` as ``Color.RED``
    (the member of a ``str`` or ``int`` ``Enum`` equals its value already);
    ``annotation`` itself where there is no such member. Keyed by type as well, so
    ``True`` never stands for a member whose value is ``1``."""
    by_value = {
        (type(value.value), value.value): value
        for value in literal_values(annotation)
        if isinstance(value, Enum) and value != value.value and isinstance(value.value, _SCALARS)
    }
    if not by_value:
        return annotation

    def member_of(given: object) -> object:
        return by_value.get((type(given), given), given) if isinstance(given, _SCALARS) else given

    return Annotated[annotation, BeforeValidator(member_of)]


_SCALARS = (str, int, float, bool)
"""The JSON values a member's value is matched with (hashable, unlike a list)."""
