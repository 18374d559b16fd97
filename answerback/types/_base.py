"""The one base class every wire model derives from.

Python attributes are snake_case and the wire is camelCase; ``_meta`` is spelled
``meta`` on the Python side. Unknown fields are kept (``extra="allow"``) so a message
from a newer peer survives a round trip through an older answerback untouched.

No ``float`` field takes NaN or Infinity (``allow_inf_nan=False``): JSON cannot carry
them, so a model that held one would fail only later, on the wire, and only on some
transports. Building it fails at once instead, alike for every transport and in-process.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


def _wire_alias(name: str) -> str:
    return "_meta" if name == "meta" else to_camel(name)


class MCPModel(BaseModel):
    """Base for wire models: camelCase aliases, lenient about unknown fields."""

    model_config = ConfigDict(
        alias_generator=_wire_alias,
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
        extra="allow",
        allow_inf_nan=False,
    )

    def __repr_args__(self) -> Any:
        # Show only what carries information, so a repr reads like the wire message:
        # TextContent(type='text', text='hi') rather than a row of ``None`` fields.
        return [(name, value) for name, value in super().__repr_args__() if value is not None]

    def to_wire(self) -> dict[str, Any]:
        """The JSON-ready dict for this model: aliases, and no ``None`` fields."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)
