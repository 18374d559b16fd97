"""The contract between transports and the layers above them."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Protocol, runtime_checkable

from answerback.jsonrpc import ReadStream, WriteStream

StreamPair = tuple[ReadStream, WriteStream]


@runtime_checkable
class ClientTransport(Protocol):
    """Something a ``Client`` can connect through.

    ``connect()`` opens the connection and yields the streams the client's JSON-RPC
    engine reads from and writes to; leaving the context closes everything it opened.
    """

    def connect(self) -> AbstractAsyncContextManager[StreamPair]:
        """Open the connection; the streams are the engine's until the block ends."""
        ...


@runtime_checkable
class StreamControl(Protocol):
    """A transport's handle on the stream answering one request (streamable HTTP)."""

    def close_stream(self) -> None:
        """End this request's response stream now; the client reconnects to resume."""
        ...


@runtime_checkable
class ConnectionServer(Protocol):
    """A server that can answer one connection given its streams (``MCPServer`` does)."""

    async def serve_connection(self, read_stream: ReadStream, write_stream: WriteStream) -> None:
        """Answer the connection until its read stream ends."""
        ...
