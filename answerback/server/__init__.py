"""The server half: ``MCPServer`` and what a tool sees of the client (``Context``)."""

from answerback._public import publish
from answerback.forms import FormSchemaError
from answerback.server._context import (
    AcceptedElicitation,
    AcceptedUrlElicitation,
    CancelledElicitation,
    Context,
    DeclinedElicitation,
    ElicitationResult,
    UrlElicitationResult,
)
from answerback.server._form_schema import form_schema
from answerback.server._roots_guard import PathOutsideRootsError
from answerback.server._sampling import SampleResult, SamplingLoopError
from answerback.server._server import MCPServer
from answerback.server._session import ServerSession

__all__ = [
    "AcceptedElicitation",
    "AcceptedUrlElicitation",
    "CancelledElicitation",
    "Context",
    "DeclinedElicitation",
    "ElicitationResult",
    "FormSchemaError",
    "MCPServer",
    "PathOutsideRootsError",
    "SampleResult",
    "SamplingLoopError",
    "ServerSession",
    "UrlElicitationResult",
    "form_schema",
]

publish(globals())
