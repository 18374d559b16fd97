"""The server half: ``MCPServer``, what a tool sees of the client (``Context``), and
OAuth protection for HTTP servers (``ResourceServer`` and its token verifiers).

The resource server and its verifiers need starlette, authlib and joserfc, which a stdio
server must not pay for: they load on first use (PEP 562).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from answerback._public import lazy_exports, publish
from answerback.forms import FormSchemaError
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
from answerback.server._sampling import SampleResult, SamplingLoopError, SamplingTools
from answerback.server._server import MCPServer
from answerback.server._session import ServerSession
from answerback.transports.http import AuthInfo

if TYPE_CHECKING:
    from answerback.server._auth import ResourceServer
    from answerback.server._auth_introspection import IntrospectionVerifier
    from answerback.server._auth_jwt import JWTVerifier

_LAZY = {
    "IntrospectionVerifier": "_auth_introspection",
    "JWTVerifier": "_auth_jwt",
    "ResourceServer": "_auth",
}


__getattr__, __dir__ = lazy_exports(globals(), _LAZY)


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
    "SamplingTools",
    "ServerSession",
    "TokenVerifier",
    "UrlElicitationResult",
    "VerifierUnavailableError",
    "form_schema",
]

publish(globals())
