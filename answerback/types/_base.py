"""The one base class every wire model derives from.

Python attributes are snake_case and the wire is camelCase; ``_meta`` is spelled
``meta`` on the Python side. Unknown fields are kept (``extra="allow"``) so a message
from a newer peer survives a round trip through an older answerback untouched.

A field whose default is ``None`` is left out of every dump while it holds ``None``,
wherever the model sits (a tool's ``dict[str, ImageContent]``, a block inside a
dataclass): the schemas allow no ``null`` for an absent optional field. Each such
field is marked (``exclude_if``) as its class is made, rather than a serializer on the
model doing it, which pydantic would call in Python for every model dumped.

No ``float`` field takes NaN or Infinity (``allow_inf_nan=False``): JSON cannot carry
them, so a model that held one would fail only later, on the wire, and only on some
transports. Building it fails at once instead, alike for every transport and in-process.
"""

from __future__ import annotations

import inspect
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticUndefined


def _is_none(value: object) -> bool:
    return value is None


def optional_field(**kwargs: Any) -> Any:
    """A field of a wire model that is absent by default, and left out of dumps while it
    holds ``None`` (``kwargs`` go to ``Field``)."""
    return Field(default=None, exclude_if=_is_none, **kwargs)


def _wire_alias(name: str) -> str:
    return "_meta" if name == "meta" else to_camel(name)


class MCPModel(BaseModel):
    """Base for wire models: camelCase aliases, lenient about unknown fields."""

    # Declared a ClassVar as BaseModel declares it: unannotated, type checkers (pyright
    # --verifytypes) see it as an unknown attribute of every wire model.
    model_config: ClassVar[ConfigDict] = ConfigDict(
        alias_generator=_wire_alias,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="allow",
        allow_inf_nan=False,
    )

    def __init_subclass__(cls, **kwargs: Any) -> None:
        # Called as the class is made, before pydantic collects its fields: a plain
        # default of None becomes ``optional_field()`` (a ``Field`` is left as given).
        # Marking the collected fields after, and rebuilding each model's serializer,
        # cost a tenth more import time.
        super().__init_subclass__(**kwargs)
        for name in inspect.get_annotations(cls):
            default = cls.__dict__.get(name, PydanticUndefined)
            if default is None:
                setattr(cls, name, optional_field())

    def __repr_args__(self) -> Any:
        # Show only what carries information, so a repr reads like the wire message:
        # TextContent(type='text', text='hi') rather than a row of ``None`` fields.
        return [(name, value) for name, value in super().__repr_args__() if value is not None]

    def to_wire(self) -> dict[str, Any]:
        """The JSON-ready dict for this model: aliases, and no ``None`` fields (the
        model's own; ``None`` inside a dict field, such as tool arguments, is kept)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)
