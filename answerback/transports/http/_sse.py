"""Server-Sent Events framing: writing events, and reading them back incrementally.

Reading follows the WHATWG "event stream interpretation" rules exactly: only CR, LF and
CRLF end a line (never U+2028, U+2029 or U+0085, which may appear inside JSON strings),
a leading byte order mark is dropped, ``id`` values holding NUL are ignored, ``retry``
takes ASCII digits only, and the last event id carries over between events and across
reconnections. The parser works on raw byte chunks as they arrive, so a line or an event
may be split anywhere, and it bounds what it buffers for one event.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

_LINE_END = re.compile(rb"\r\n|\r|\n")
_DATA_LINE_END = re.compile(r"\r\n|\r|\n")
_BOM = b"\xef\xbb\xbf"
_RETRY_DIGITS = 12
"""A ``retry`` longer than this many digits (over 30 years in milliseconds) is read as
the longest: ``int()`` of thousands of digits is slow, and past 4,300 it raises."""


def encode_event(data: str, event_id: str | None = None, retry_ms: int | None = None) -> bytes:
    """One SSE event carrying ``data`` (an empty ``data`` makes a priming event).

    Compact JSON never holds a raw CR or LF (JSON strings escape them), but any text is
    framed safely: each line of ``data`` becomes a ``data:`` line of its own, which the
    reader joins back with LF. An ``event_id`` that could break the framing is refused.
    """
    lines: list[str] = []
    if event_id is not None:
        if "\n" in event_id or "\r" in event_id or "\0" in event_id:
            raise ValueError(f"SSE event id {event_id!r} holds CR, LF or NUL; use plain text")
        lines.append(f"id: {event_id}")
    if retry_ms is not None:
        lines.append(f"retry: {int(retry_ms)}")
    if not data:
        lines.append("data: ")
    else:
        lines.append("event: message")
        if "\n" in data or "\r" in data:
            lines.extend(f"data: {part}" for part in _DATA_LINE_END.split(data))
        else:
            lines.append(f"data: {data}")
    return ("\n".join(lines) + "\n\n").encode()


def encode_event_pieces(data: bytes, event_id: str, most: int) -> Iterator[bytes]:
    """``encode_event(data.decode(), event_id)`` as writes of at most ``most`` bytes of
    ``data`` each.

    A stored event is replayed to every client that resumes its stream: framed whole, a
    large one is copied whole for each of them, and a client that does not read keeps
    its copy. Data on one line (compact JSON: all a server stores) is sent as slices of
    the stored bytes instead; anything else is framed whole.
    """
    if len(data) <= most or b"\n" in data or b"\r" in data:
        yield encode_event(data.decode(), event_id)
        return
    head = encode_event("-", event_id)
    yield head[: -len("-\n\n")]  # up to and including "data: "
    view = memoryview(data)
    for start in range(0, len(data), most):
        yield bytes(view[start : start + most])
    yield b"\n\n"


def encode_retry(retry_ms: int) -> bytes:
    """A block that only sets the reconnection delay: no data, so no event is dispatched
    and no id is set (a stream whose first messages carry the first ids opens with it)."""
    return f"retry: {int(retry_ms)}\n\n".encode()


KEEPALIVE = b": keep-alive\n\n"


class MessageTooLarge(ValueError):
    """A message (one SSE event, or a JSON body) is bigger than the reader's limit."""


@dataclass(slots=True)
class Event:
    """One event block of a stream (the fields up to a blank line).

    ``data`` is empty for blocks that only carry an id or a retry hint (the priming
    event); ``event_id`` is the stream's last event id once this block is read (ids
    carry over from earlier blocks, as the SSE rules say), ``None`` while there is
    none; ``retry_ms`` is the retry hint given in this block, if any.
    """

    data: str
    event: str
    event_id: str | None
    retry_ms: int | None


class EventParser:
    """Feeds on the raw bytes of one SSE response and yields complete event blocks.

    ``last_event_id`` and ``retry_ms`` survive ``restart()``, which a reader calls
    before reading a reconnected stream: that is what ``Last-Event-ID`` and the
    reconnection delay are built from.
    """

    def __init__(self, max_event_bytes: int | None = None) -> None:
        self.max_event_bytes = max_event_bytes
        self.last_event_id = ""
        """The id to resume from ("" when there is none), committed at each blank line."""
        self.retry_ms: int | None = None
        """The latest reconnection delay the server asked for, in milliseconds."""
        self._id_buffer = ""
        self.restart()

    def restart(self) -> None:
        """Forget a half-read stream; keep the last event id and retry hint."""
        self._id_buffer = self.last_event_id
        self._head: bytes | None = b""  # the stream's first bytes, until the BOM is settled
        self._after_cr = False
        self._partial = bytearray()
        self._data = bytearray()
        """Each ``data`` line and an LF, as the SSE rules build it: one buffer, so what
        the size limit counts is what it holds (a list of lines holds far more)."""
        self._event = b""
        self._block_retry: int | None = None
        self._has_fields = False

    def feed(self, chunk: bytes) -> list[Event]:
        """Consume the next bytes of the stream; return the blocks they complete.

        Raises ``MessageTooLarge`` when one event grows beyond ``max_event_bytes``.
        """
        if self._head is not None:
            chunk = self._head + chunk
            if len(chunk) < len(_BOM) and _BOM.startswith(chunk):
                self._head = chunk
                return []
            self._head = None
            chunk = chunk.removeprefix(_BOM)
        if not chunk:
            return []
        if self._after_cr and chunk.startswith(b"\n"):
            chunk = chunk[1:]  # the LF of a CRLF split between two chunks
        self._after_cr = chunk.endswith(b"\r")
        events: list[Event] = []
        start = 0
        for match in _LINE_END.finditer(chunk):
            piece = chunk[start : match.start()]
            if self._partial:
                self._partial += piece
                line = bytes(self._partial)
                self._partial.clear()
            else:
                line = piece
            self._line(line, events)
            start = match.end()
        self._partial += chunk[start:]
        self._check_size(len(self._partial))
        return events

    def _line(self, line: bytes, events: list[Event]) -> None:
        if not line:
            self._dispatch(events)
            return
        if line.startswith(b":"):
            return
        name, colon, value = line.partition(b":")
        if colon and value.startswith(b" "):
            value = value[1:]
        self._has_fields = True
        if name == b"data":
            self._data += value
            self._data += b"\n"
            self._check_size(0)
        elif name == b"event":
            self._event = value
        elif name == b"id" and b"\0" not in value:
            self._id_buffer = value.decode("utf-8", "replace")
        elif name == b"retry" and value.isdigit():  # bytes.isdigit: ASCII digits only
            digits = value.lstrip(b"0")
            retry_ms = int(digits or b"0") if len(digits) <= _RETRY_DIGITS else 10**_RETRY_DIGITS
            self.retry_ms = self._block_retry = retry_ms

    def _dispatch(self, events: list[Event]) -> None:
        self.last_event_id = self._id_buffer
        if self._has_fields:
            events.append(
                Event(
                    self._data.removesuffix(b"\n").decode("utf-8", "replace"),
                    self._event.decode("utf-8", "replace") or "message",
                    self.last_event_id or None,
                    self._block_retry,
                )
            )
        self._data, self._event = bytearray(), b""
        self._block_retry, self._has_fields = None, False

    def _check_size(self, pending: int) -> None:
        limit = self.max_event_bytes
        # The event's data is the buffer less its last LF.
        if limit is not None and max(len(self._data) - 1, 0) + pending > limit:
            raise MessageTooLarge(f"the server sent an SSE event larger than {limit} bytes")
