"""The server half: ``MCPServer`` and what a tool sees of the client (``Context``)."""

from answerback.server._context import (
    AcceptedElicitation,
    CancelledElicitation,
    Context,
    DeclinedElicitation,
    ElicitationResult,
)
from answerback.server._form_schema import FormSchemaError, form_schema
from answerback.server._server import MCPServer
from answerback.server._session import ServerSession

__all__ = [
    "AcceptedElicitation",
    "CancelledElicitation",
    "Context",
    "DeclinedElicitation",
    "ElicitationResult",
    "FormSchemaError",
    "MCPServer",
    "ServerSession",
    "form_schema",
]
