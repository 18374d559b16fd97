"""Turning bytes into envelopes and back, shared by the byte-stream transports.

JSON is strict both ways. ``NaN`` and ``Infinity`` are not JSON: a peer that sends them
gets a parse error, and a message of ours that holds one (a tool returning
``float("inf")``) is refused before it reaches the wire, where it would break the peer's
parser and leave its request waiting. So is text that UTF-8 cannot write (a lone
surrogate, which a file name that is not UTF-8 holds once decoded by ``os.listdir``), and
anything else that cannot be written as JSON: a message that cannot be written must
still answer its request. ``undeliverable`` says what to do instead.
"""

from __future__ import annotations

import codecs
import contextlib
import json
import logging
from collections.abc import Callable
from typing import Any

import anyio
import pydantic_core
from anyio.streams.memory import MemoryObjectSendStream

from answerback._options import positive_int
from answerback.jsonrpc import Envelope, JSONObject, MalformedMessage, RequestId, WriteStream
from answerback.jsonrpc._channel import ChannelSender
from answerback.jsonrpc._endpoint import SkippedAnswer, as_object, as_request_id
from answerback.types._errors import INTERNAL_ERROR, INVALID_REQUEST

logger = logging.getLogger("answerback.transports")


class UnencodableMessage(ValueError):
    """A message of ours holds a value JSON cannot carry (``NaN``, ``Infinity``, a lone
    surrogate) or is too large for its connection."""


_SURROGATE_ADVICE = (
    "the message holds text with a lone surrogate (as a file name that is not UTF-8 "
    "does, once decoded with errors='surrogateescape'), which UTF-8 cannot write; send "
    "such text escaped, e.g. name.encode('utf-8', 'backslashreplace').decode()"
)


JSON_DEPTH_LIMIT = 200
"""How deep arrays and objects may nest in a message this side reads: pydantic-core's
parser refuses deeper ones (its own fixed limit, pinned by a test)."""


def decode(data: bytes | str, transport_context: Any = None) -> Envelope | MalformedMessage:
    """One JSON text as an envelope, or the reason it is not (strict) JSON.

    A UTF-8 byte order mark before the text is ignored, as RFC 8259 allows: Windows
    editors save files with one (``server < requests.jsonl``). It is looked for only once
    parsing has failed, so it costs the usual message nothing.

    Text that is not JSON may still say, in its first members, what it was: a response
    to one of our requests becomes an error answer to it (see ``unreadable_answer``), and
    a request's ``MalformedMessage`` carries its id. Either way the call behind it fails
    instead of waiting for an answer that cannot come.
    """
    try:
        message = pydantic_core.from_json(data, allow_inf_nan=False)
    except ValueError as exc:
        without_mark = _without_byte_order_mark(data)
        if without_mark is None:
            return _unparsed(data, exc, transport_context)
        try:
            message = pydantic_core.from_json(without_mark, allow_inf_nan=False)
        except ValueError:
            return _unparsed(data, exc, transport_context)
    return Envelope(message, transport_context=transport_context, size=len(data))


def _unparsed(
    data: bytes | str, exc: ValueError, transport_context: Any
) -> Envelope | MalformedMessage:
    """What stands in for ``data``, which the parser refused with ``exc``."""
    reason = str(exc)
    too_deep = reason.startswith("recursion limit exceeded")
    if too_deep:
        reason = (
            f"arrays and objects nest more than {JSON_DEPTH_LIMIT} levels deep, more than "
            f"this reader parses ({reason}); send flatter data"
        )
    head = (data.encode(errors="replace") if isinstance(data, str) else data)[:_HEAD_BYTES]
    found = _identified(head)
    if found is None:
        return MalformedMessage(reason)
    request_id, is_request = found
    if is_request:
        return MalformedMessage(reason, request_id=request_id)
    answer = _unreadable_error(request_id, reason if too_deep else f"not JSON: {reason}")
    return Envelope(StandIn(answer), transport_context=transport_context, size=len(data))


class StandIn(dict[str, Any]):
    """The error answer ``decode`` stands in for a response that is not JSON: a reader
    that must tell it from an error answer the peer sent (the HTTP server refuses the
    first with 400) checks its type, instead of parsing the text again."""

    __slots__ = ()


def _without_byte_order_mark(data: bytes | str) -> bytes | str | None:
    """``data`` after the byte order mark it starts with; ``None`` if it has none."""
    if isinstance(data, str):
        return data[1:] if data.startswith("\ufeff") else None
    return data[len(codecs.BOM_UTF8) :] if data.startswith(codecs.BOM_UTF8) else None


def encode(message: Any) -> bytes:
    """Compact JSON, UTF-8, no embedded newlines (JSON strings escape them).

    Raises ``UnencodableMessage`` for ``NaN`` or an infinity anywhere in ``message``, and
    for anything pydantic cannot write (a lone surrogate, an object that is not JSON data).
    The NaN check costs nothing on the usual path: only output that contains the words
    pydantic writes for them is looked at again, strictly.
    """
    try:
        data = pydantic_core.to_json(message)
    except pydantic_core.PydanticSerializationError as exc:
        # Its text may quote the surrogate itself, which no message of ours can then hold.
        if "surrogates not allowed" in str(exc).encode("utf-8", "backslashreplace").decode():
            raise UnencodableMessage(_SURROGATE_ADVICE) from None
        reason = ascii(str(exc))[1:-1]
        raise UnencodableMessage(f"the message holds a value JSON cannot carry ({reason})") from exc
    if b"NaN" in data or b"Infinity" in data:
        try:
            json.dumps(pydantic_core.to_jsonable_python(message), allow_nan=False)
        except ValueError as exc:
            raise UnencodableMessage(
                "the message holds NaN or Infinity, which JSON cannot carry; send such "
                "numbers as strings or null"
            ) from exc
    return data


def undeliverable(message: Any, reason: str) -> tuple[JSONObject | None, JSONObject | None]:
    """What to do with a message that could not be sent: ``(to_peer, to_self)``.

    A response becomes an error response to the same id (the peer still gets an answer);
    a request becomes an error answer delivered to our own side (the caller fails at once
    instead of waiting); a notification is only lost (both ``None``).
    """
    decoded = as_object(message) or {}
    request_id = as_request_id(decoded.get("id"))
    if request_id is None:
        return None, None
    what = "request" if "method" in decoded else "result"
    error: JSONObject = {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {"code": INTERNAL_ERROR, "message": f"Could not send the {what}: {reason}."},
    }
    return (None, error) if what == "request" else (error, None)


# -- newline-delimited streams (stdio) ---------------------------------------------------

DEFAULT_MAX_MESSAGE_BYTES = 64 * 1024 * 1024
"""The largest message a line-framed connection carries, either way, unless told otherwise."""
_HEAD_BYTES = 64 * 1024
"""How much of an oversized message is kept: enough to read the id at its start."""
_MIB = 1024 * 1024


def size_text(size: int) -> str:
    """A byte count as a person reads it: ``64 MiB``, ``4096 bytes``."""
    return f"{size // _MIB} MiB" if size >= _MIB and size % _MIB == 0 else f"{size} bytes"


def checked_message_limit(limit: object) -> int:
    """``limit`` if it can be a ``max_message_bytes`` (a whole number of bytes, at least
    1); else raises ``TypeError`` (not an ``int``; a ``bool`` is not one here) or
    ``ValueError``. The one check of every public way to set a line-framed limit."""
    return positive_int("max_message_bytes", limit, "bytes")


def encode_line(message: Any, limit: int, setting: str) -> bytes:
    """``message`` as one newline-terminated line of at most ``limit`` bytes (newline aside).

    Raises ``UnencodableMessage`` if it holds NaN or Infinity or is larger than ``limit``:
    the peer would refuse it, and the request it answers would wait for ever. ``setting``
    says where this side's limit is raised (``mcp.run(max_message_bytes=...)``).
    """
    data = encode(message)
    if len(data) > limit:
        raise UnencodableMessage(
            f"the message is {len(data)} bytes, over this connection's limit of "
            f"{size_text(limit)} per message; raise the limit with {setting}"
        )
    return data + b"\n"


def deliver(
    stream: WriteStream | ChannelSender[Any] | MemoryObjectSendStream[Any], item: Any
) -> None:
    """Put ``item`` on an unbounded stream this code does not own, unless it is closed
    (then the connection is ending, and nothing waits for the item any more)."""
    with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
        stream.send_nowait(item)


def line_for(
    envelope: Envelope,
    limit: int,
    incoming: ChannelSender[Envelope | Exception] | MemoryObjectSendStream[Envelope | Exception],
    setting: str,
) -> bytes:
    """What to write for an outgoing message: its line, or what replaces it if it cannot go.

    A response that cannot go is replaced by an error response to the same id; a request
    that cannot go fails on our side at once (its error answer is put on ``incoming``,
    where our endpoint reads the peer's answers); a notification is dropped (``b""``).
    ``setting`` says where this side's ``limit`` is raised, for the error's message.
    """
    try:
        return encode_line(envelope.message, limit, setting)
    except UnencodableMessage as exc:
        to_peer, to_self = undeliverable(envelope.message, str(exc))
        if to_self is not None:
            deliver(incoming, Envelope(to_self))
        if to_peer is None:
            if to_self is None:
                logger.warning("dropped a notification that could not be sent: %s", exc)
            return b""
        logger.warning("could not send the answer to request %r: %s", to_peer["id"], exc)
        return encode(to_peer) + b"\n"


_CR = ord("\r")

FAULTS_SHOWN = 10
"""How many of a peer's unreadable messages are each reported in full."""
FAULTS_SUMMARY_SECONDS = 60.0
"""How often, past those, one report says how many more there were."""


class Repeated:
    """Reports a kind of fault a peer may repeat without end (lines that are not
    JSON-RPC, say), so the log does not fill: the first ``FAULTS_SHOWN`` in full, then at
    most one summary per ``FAULTS_SUMMARY_SECONDS``, counting those left unsaid and
    showing the latest, and a last one at the connection's end (``say_left``) for those
    still unsaid. The first is never lost. ``clock`` is read only past the first ones (a
    test sets its own)."""

    def __init__(self, clock: Callable[[], float] = anyio.current_time) -> None:
        self._clock = clock
        self._seen = 0
        self._unsaid = 0
        self._latest: Exception | None = None
        self._due = 0.0

    def report(
        self,
        fault: Exception,
        summary: Callable[[int, Exception], Exception],
        last_in_full: Callable[[Exception], Exception],
    ) -> Exception | None:
        """What to report for ``fault``: itself (the last shown in full as
        ``last_in_full(fault)``, which says what follows), a ``summary(count, latest)``
        of it and the ones left unsaid since the last report, or ``None`` (counted, said
        later)."""
        self._seen += 1
        if self._seen < FAULTS_SHOWN:
            return fault
        if self._seen == FAULTS_SHOWN:
            self._due = self._clock() + FAULTS_SUMMARY_SECONDS
            return last_in_full(fault)
        self._unsaid += 1
        self._latest = fault
        now = self._clock()
        if now < self._due:
            return None
        count, self._unsaid = self._unsaid, 0
        self._due = now + FAULTS_SUMMARY_SECONDS
        return summary(count, fault)

    def say_left(
        self,
        summary: Callable[[int, Exception], Exception],
        sink: ChannelSender[Envelope | Exception] | MemoryObjectSendStream[Envelope | Exception],
    ) -> None:
        """At the connection's end, put the ``summary`` of the faults counted and not yet
        said on ``sink`` (our side's reader), or log it if that reader has gone: the
        faults may have stopped before the next summary was due, and their count would
        be lost."""
        latest = self._latest
        if not self._unsaid or latest is None:
            return
        left = summary(self._unsaid, latest)
        self._unsaid = 0
        try:
            sink.send_nowait(left)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            logger.warning("%s", left)


class LineReader:
    """Turns the bytes of a newline-delimited stream into messages, ``limit`` bytes at most.

    A line over the limit is not kept: its first bytes are, to read its id, and the rest
    is skipped as it arrives (never parsed as messages of its own). The request behind it
    still ends: an oversized request gets an error response, and our request whose answer
    was oversized fails on our side (see ``oversized_replies``). ``setting`` says where
    this side's limit is raised (``StdioServer(..., max_message_bytes=...)``), for those
    errors' messages.
    """

    def __init__(self, limit: int = DEFAULT_MAX_MESSAGE_BYTES, *, setting: str) -> None:
        self.limit = limit
        self.setting = setting
        self._buffer = bytearray()
        self._skipping = False

    def feed(self, chunk: bytes) -> tuple[list[Envelope | Exception], list[JSONObject]]:
        """The messages ``chunk`` completes, for our side and (errors) for the peer."""
        incoming: list[Envelope | Exception] = []
        replies: list[JSONObject] = []
        if self._skipping:
            end = chunk.find(b"\n")
            if end < 0:
                return incoming, replies
            chunk = chunk[end + 1 :]
            self._skipping = False
        buffer = self._buffer
        # Lines are cut from the chunk itself when nothing is left over from before (the
        # usual case: a message per chunk), else from the buffer it is added to.
        data: bytes | bytearray = chunk
        scanned = 0
        if buffer:
            scanned = len(buffer)  # the buffer holds no newline: search only the chunk
            buffer += chunk
            data = buffer
        start = 0
        while (end := data.find(b"\n", max(start, scanned))) >= 0:
            # A CRLF line's CR is not part of the message (Windows peers end lines so).
            if end - start - (end > start and data[end - 1] == _CR) > self.limit:
                self._oversized(bytes(data[start : start + _HEAD_BYTES]), incoming, replies)
            elif (line := bytes(data[start:end]).strip()) and (
                item := self.decode_line(line)
            ) is not None:
                incoming.append(item)
            start = end + 1
        if data is buffer:
            del buffer[:start]
        elif start < len(chunk):
            buffer += chunk[start:]
        if len(buffer) > self.limit + 1:  # room for the CR of a CRLF line still to end
            self._oversized(bytes(buffer[:_HEAD_BYTES]), incoming, replies)
            buffer.clear()
            self._skipping = True
        return incoming, replies

    def finish(self) -> list[Envelope | Exception]:
        """The message on the stream's last line, if the stream ended without a newline
        after it (a file saved without one, ``printf`` in a shell): ``feed`` only ever
        reads a line at its newline."""
        line = b"" if self._skipping else bytes(self._buffer).strip()
        self._buffer.clear()
        item = self.decode_line(line) if line else None
        return [] if item is None else [item]

    def decode_line(self, line: bytes) -> Envelope | Exception | None:
        """One complete line (within the limit, never blank) as a message or an error;
        ``None``: nothing to pass on (a fault counted, to be reported later)."""
        return decode(line)

    def _oversized(
        self, head: bytes, incoming: list[Envelope | Exception], replies: list[JSONObject]
    ) -> None:
        to_peer, to_self = oversized_replies(head, self.limit, self.setting)
        if to_peer is not None:
            replies.append(to_peer)
        if isinstance(to_self, Exception):
            incoming.append(to_self)
        elif to_self is not None:
            incoming.append(Envelope(to_self))


def oversized_replies(
    head: bytes, limit: int, setting: str
) -> tuple[JSONObject | None, JSONObject | MalformedMessage | None]:
    """What answers a received message over the limit, from its first bytes: ``(to_peer,
    to_self)``.

    A request gets an error response (the peer's call fails instead of waiting); a
    response becomes an error answer on our side (our call fails). Which it is, and its
    id, are read from the members before its first nested value, where senders put
    ``id`` and ``method``; if they are not there, our side gets a transport error (a
    ``SkippedAnswer`` if it may be an answer: the engine finds its request). The errors
    say the limit is raised with ``setting`` (our side's).
    """
    found = _identified(head)
    if found is not None and found[1]:
        return _error(
            found[0],
            INVALID_REQUEST,
            f"Invalid request: the request is larger than this connection's limit of "
            f"{size_text(limit)} per message; send less in one message, or raise the "
            f"limit with {setting}.",
        ), None
    if found is not None:
        return None, _error(
            found[0],
            INTERNAL_ERROR,
            f"The answer was larger than this connection's limit of {size_text(limit)} per "
            f"message and was dropped; ask for less at a time, or raise the limit with "
            f"{setting}.",
        )
    reason = (
        f"a message larger than this connection's limit of {size_text(limit)} was "
        "skipped, and its start does not say which request it belongs to"
    )
    members, nested_key = _leading_members(head)
    if "method" in members or nested_key == "params":
        return None, MalformedMessage(reason)
    return None, SkippedAnswer(
        reason,
        failure=f"The answer was larger than this connection's limit of {size_text(limit)} "
        "per message and was dropped (it did not start with its id; of the requests "
        "waiting when it came, this one got no other answer); ask for less at a time, or "
        f"raise the limit with {setting}.",
    )


def unreadable_answer(line: bytes, why: str) -> JSONObject | None:
    """The error answer that stands in for a response that cannot be read (not JSON, or
    not JSON-RPC), if its first members say which request it answers: that call fails,
    saying ``why``, instead of waiting for an answer that has come and gone."""
    found = _identified(line)
    if found is None or found[1]:
        return None
    return _unreadable_error(found[0], why)


def _unreadable_error(request_id: RequestId, why: str) -> JSONObject:
    return _error(
        request_id,
        INTERNAL_ERROR,
        f"The answer could not be read ({why}) and was dropped. The peer sent a "
        "malformed message; report it to its authors.",
    )


def _identified(head: bytes) -> tuple[RequestId, bool] | None:
    """The id a message's first members name, and whether it is a request (true) or a
    response; ``None`` if they say neither. Senders put ``id`` and ``method`` before
    the nested values, so a message too large or too broken to parse still says them."""
    members, nested_key = _leading_members(head)
    request_id = as_request_id(members.get("id"))
    if request_id is None:
        return None
    if "method" in members or nested_key == "params":
        return request_id, True
    if "result" in members or "error" in members or nested_key in ("result", "error"):
        return request_id, False
    return None


def _leading_members(head: bytes) -> tuple[JSONObject, str | None]:
    """The members of the JSON object starting ``head`` that come before its first nested
    object or array, and the key of that nested value (``None`` if none starts in
    ``head``). Only complete members count: a number cut off at the end of ``head``
    could read as another id."""
    text = head.lstrip()
    if not text.startswith(b"{"):
        return {}, None
    in_string = escaped = False
    last_comma = 0
    nested_at = -1
    for index in range(1, len(text)):
        byte = text[index]
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte == 0x2C:  # comma
            last_comma = index
        elif byte in (0x7B, 0x5B):  # { or [
            nested_at = index
            break
    members = _json_or_none(text[:last_comma] + b"}") if last_comma else None
    nested_key: object = None
    if nested_at >= 0:
        key_text = text[last_comma + 1 : nested_at].strip().removesuffix(b":").strip()
        nested_key = _json_or_none(key_text)
    return (
        as_object(members) or {},
        nested_key if isinstance(nested_key, str) else None,
    )


def _json_or_none(data: bytes) -> object:
    try:
        return pydantic_core.from_json(data, allow_inf_nan=False)
    except ValueError:
        return None


def _error(request_id: RequestId, code: int, message: str) -> JSONObject:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
