"""Bounds on a request's head (its request line and headers) under uvicorn's httptools
parser, which has none of its own.

Without them a client could send one header that never ends (the server grew to
300 MB) or dribble a head a byte at a time on thousands of connections (each held open
for ever, until the process ran out of file descriptors and real clients were refused).
uvicorn's h11 parser bounds a head's size, but costs a quarter to a third more CPU per
request, so answerback keeps httptools and bounds the head here: ``MAX_HEAD_BYTES`` in
size, ``HEAD_SECONDS`` in time, counted from a request's first byte, or from the
connection's opening for its first request. Past either, the client is told why (431 or
408) and the connection is closed.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol, RequestResponseCycle

MAX_HEAD_BYTES = 64 * 1024
"""The most a request's line and headers may hold together: many times a real client's
(a bearer token included), and the most the server keeps while it waits for the rest."""

HEAD_SECONDS = 10.0
"""How long a request's head may take to arrive in full; a client on any real network
sends it in one packet or a few."""


class HeadBoundedProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol, refusing a head too large or too slow to arrive."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_bytes = 0
        self._reading_head = False
        self._head_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._start_head_timer()  # a connection that never sends a request is closed too

    def connection_lost(self, exc: Exception | None) -> None:
        self._stop_head_timer()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        # Counted after parsing, which begins a head (resetting the count) or completes
        # one (ending it): a chunk counts if a head is still unfinished at its end.
        if not self._reading_head:
            return
        self._head_bytes += len(data)
        if self._head_bytes > MAX_HEAD_BYTES:
            self._refuse(
                431,
                "Request Header Fields Too Large",
                f"the request line and headers may hold at most {MAX_HEAD_BYTES} bytes.",
            )

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._reading_head = True
        self._head_bytes = 0
        if self._head_timer is None:
            self._start_head_timer()

    def on_headers_complete(self) -> None:
        self._reading_head = False
        self._stop_head_timer()
        super().on_headers_complete()

    def _start_head_timer(self) -> None:
        self._head_timer = self.loop.call_later(HEAD_SECONDS, self._head_too_slow)

    def _stop_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_too_slow(self) -> None:
        self._head_timer = None
        if self._reading_head:
            self._refuse(
                408,
                "Request Timeout",
                f"the request line and headers did not arrive within {HEAD_SECONDS:g} s.",
            )
        elif self._current_cycle() is None and not self.transport.is_closing():
            self.transport.close()  # opened, and no request ever began

    def _current_cycle(self) -> RequestResponseCycle | None:
        """The request being answered: uvicorn types it as always set, but it is
        ``None`` until a connection's first request."""
        return cast("RequestResponseCycle | None", self.cycle)

    def _refuse(self, status: int, phrase: str, why: str) -> None:
        self._reading_head = False
        self._stop_head_timer()
        if self.transport.is_closing():
            return
        cycle = self._current_cycle()
        if cycle is not None and not cycle.response_complete:
            self.transport.close()  # a head pipelined behind a response still being sent
            return
        body = f"{phrase}: {why}\n".encode()
        self.transport.write(
            b"HTTP/1.1 %d %s\r\ncontent-type: text/plain; charset=utf-8\r\n"
            b"content-length: %d\r\nconnection: close\r\n\r\n%s"
            % (status, phrase.encode(), len(body), body)
        )
        self.transport.close()
