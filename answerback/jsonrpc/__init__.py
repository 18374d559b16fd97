"""JSON-RPC 2.0 for MCP: requests in flight both ways, cancellation, progress, timeouts.

This layer knows the JSON-RPC envelope and MCP's generic utilities (``ping``,
``notifications/cancelled``, ``notifications/progress``) but no other MCP method.
"""

from answerback._public import publish
from answerback.jsonrpc._endpoint import (
    Endpoint,
    IncomingRequest,
    ProgressCallback,
    RequestHandler,
)
from answerback.jsonrpc._envelope import (
    Envelope,
    JSONObject,
    MalformedMessage,
    ReadStream,
    RequestId,
    WriteStream,
)

__all__ = [
    "Endpoint",
    "Envelope",
    "IncomingRequest",
    "JSONObject",
    "MalformedMessage",
    "ProgressCallback",
    "ReadStream",
    "RequestHandler",
    "RequestId",
    "WriteStream",
]

publish(globals())
