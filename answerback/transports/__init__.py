"""Transports: how envelopes travel between a client and a server."""

from answerback._public import publish
from answerback.transports._base import (
    ClientTransport,
    ConnectionServer,
    StreamControl,
    StreamPair,
)
from answerback.transports._child_stderr import StderrTarget
from answerback.transports._memory import InProcessTransport, create_stream_pairs
from answerback.transports._stdio import (
    ServerExitedError,
    StdioServer,
    StrayOutputError,
    default_environment,
)
from answerback.transports._stdio_server import stdio_server_streams

__all__ = [
    "ClientTransport",
    "ConnectionServer",
    "InProcessTransport",
    "ServerExitedError",
    "StderrTarget",
    "StdioServer",
    "StrayOutputError",
    "StreamControl",
    "StreamPair",
    "create_stream_pairs",
    "default_environment",
    "stdio_server_streams",
]

publish(globals())
