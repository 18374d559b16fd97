"""JSON-RPC 2.0 envelopes, as the MCP schemas define them.

The JSON-RPC layer reads and writes these; they know nothing about MCP methods, so
``params`` and ``result`` stay plain dicts until ``_methods`` says which model they are.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeAlias

from pydantic import Discriminator, Tag

from answerback.types._base import MCPModel
from answerback.types._errors import ErrorData
from answerback.types._models import RequestId

JSONRPC_VERSION: Literal["2.0"] = "2.0"


class JSONRPCRequest(MCPModel):
    """A request that expects a response with the same ``id``."""

    jsonrpc: Literal["2.0"] = "2.0"
    id: RequestId
    method: str
    params: dict[str, Any] | None = None


class JSONRPCNotification(MCPModel):
    """A one-way message: no ``id``, no response."""

    jsonrpc: Literal["2.0"] = "2.0"
    method: str
    params: dict[str, Any] | None = None


class JSONRPCResultResponse(MCPModel):
    """A successful response."""

    jsonrpc: Literal["2.0"] = "2.0"
    id: RequestId
    result: dict[str, Any]


class JSONRPCErrorResponse(MCPModel):
    """A failed response; ``id`` is absent when the request could not be read at all."""

    jsonrpc: Literal["2.0"] = "2.0"
    id: RequestId | None = None
    error: ErrorData


def _message_kind(value: Any) -> str | None:
    """Which envelope a message is, from its keys (as JSON-RPC 2.0 defines it)."""
    if isinstance(value, MCPModel):
        return type(value).__name__
    if not isinstance(value, dict):
        return None
    data: dict[str, Any] = value  # pyright: ignore[reportUnknownVariableType]
    if "method" in data:
        return "JSONRPCRequest" if "id" in data else "JSONRPCNotification"
    if "error" in data:
        return "JSONRPCErrorResponse"
    if "result" in data:
        return "JSONRPCResultResponse"
    return None


JSONRPCResponse: TypeAlias = Annotated[
    Annotated[JSONRPCResultResponse, Tag("JSONRPCResultResponse")]
    | Annotated[JSONRPCErrorResponse, Tag("JSONRPCErrorResponse")],
    Discriminator(_message_kind),
]
"""A response of either kind."""

JSONRPCMessage: TypeAlias = Annotated[
    Annotated[JSONRPCRequest, Tag("JSONRPCRequest")]
    | Annotated[JSONRPCNotification, Tag("JSONRPCNotification")]
    | Annotated[JSONRPCResultResponse, Tag("JSONRPCResultResponse")]
    | Annotated[JSONRPCErrorResponse, Tag("JSONRPCErrorResponse")],
    Discriminator(_message_kind),
]
"""Any single JSON-RPC message."""
