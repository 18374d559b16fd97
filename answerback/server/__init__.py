"""The server half: ``MCPServer``, what a tool sees of the client (``Context``), and
OAuth protection for HTTP servers (``ResourceServer`` and its token verifiers)."""

from answerback._public import publish
from answerback.forms import FormSchemaError
from answerback.server._auth import ResourceServer
from answerback.server._auth_introspection import IntrospectionVerifier
from answerback.server._auth_jwt import JWTVerifier
from answerback.server._auth_verifier import (
    InvalidTokenError,
    TokenVerifier,
    VerifierUnavailableError,
)
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
from answerback.transports.http import AuthInfo

__all__ = [
    "AcceptedElicitation",
    "AcceptedUrlElicitation",
    "AuthInfo",
    "CancelledElicitation",
    "Context",
    "DeclinedElicitation",
    "ElicitationResult",
    "FormSchemaError",
    "IntrospectionVerifier",
    "InvalidTokenError",
    "JWTVerifier",
    "MCPServer",
    "PathOutsideRootsError",
    "ResourceServer",
    "SampleResult",
    "SamplingLoopError",
    "ServerSession",
    "TokenVerifier",
    "UrlElicitationResult",
    "VerifierUnavailableError",
    "form_schema",
]

publish(globals())
