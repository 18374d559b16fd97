"""Telling a program that echoes its input (``cat``) from an MCP server.

Such a program sends the command's own request back. The client takes it for a request
from the server, refuses it (it does not know ``server/discover`` or ``initialize`` as a
request to a client), and the echo of that refusal comes back as the answer to its own
request: the command used to report "cat refused: Method not found: 'initialize'", as if
a server had refused. The sign of an echo is on the way out: the client refusing, as
unknown, a request with the id and the method of one it sent itself.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import AsyncGenerator
from typing import Any, cast

from answerback.jsonrpc import Envelope, WriteStream
from answerback.transports import ClientTransport, StreamPair
from answerback.types import METHOD_NOT_FOUND

_REMEMBERED = 64
"""How many of its latest requests the command remembers: an echo comes back at once."""


class EchoedMessages(Exception):
    """The program started as the server sent the command's own messages back."""

    def __init__(self, method: str) -> None:
        super().__init__(method)
        self.method = method


class EchoWatch:
    """A client transport that notes when its peer echoes the client's requests, and
    then fails the connection with ``EchoedMessages`` whatever it failed with."""

    def __init__(self, transport: ClientTransport) -> None:
        self.transport = transport
        self.sent: OrderedDict[Any, str] = OrderedDict()
        """Ids of the client's latest requests, with their methods."""
        self.echoed: str | None = None
        """The method of a request of ours the peer sent back, once one was."""

    @contextlib.asynccontextmanager
    async def connect(self) -> AsyncGenerator[StreamPair]:
        try:
            async with self.transport.connect() as (read_stream, write_stream):
                yield read_stream, _WatchedWrites(write_stream, self)
        except Exception as exc:
            if self.echoed is None:
                raise
            raise EchoedMessages(self.echoed) from exc

    def saw(self, message: Any) -> None:
        """Note an outgoing message: a request of ours, or a refusal of an echo of one."""
        if not isinstance(message, dict) or "id" not in message:
            return
        fields = cast(dict[str, Any], message)
        request_id = fields["id"]
        if isinstance(method := fields.get("method"), str):
            self.sent[request_id] = method
            while len(self.sent) > _REMEMBERED:
                self.sent.popitem(last=False)
            return
        error = fields.get("error")
        ours = self.sent.get(request_id) if isinstance(request_id, str | int) else None
        if ours is None or not isinstance(error, dict):
            return
        refusal = cast(dict[str, Any], error)
        # The refusal names the method: an id of ours reused by a real server for a
        # request of its own is no echo.
        if refusal.get("code") == METHOD_NOT_FOUND and repr(ours) in str(refusal.get("message")):
            self.echoed = ours


class _WatchedWrites:
    """The client's write stream, each envelope shown to the ``EchoWatch`` first."""

    def __init__(self, stream: WriteStream, watch: EchoWatch) -> None:
        self.stream = stream
        self.watch = watch

    def send_nowait(self, item: Envelope, /) -> None:
        self.watch.saw(item.message)
        self.stream.send_nowait(item)

    async def send(self, item: Envelope, /) -> None:
        self.watch.saw(item.message)
        await self.stream.send(item)

    def close(self) -> None:
        self.stream.close()
