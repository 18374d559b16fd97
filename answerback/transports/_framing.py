"""Turning bytes into envelopes and back, shared by the byte-stream transports.

JSON is strict both ways. ``NaN`` and ``Infinity`` are not JSON: a peer that sends them
gets a parse error, and a message of ours that holds one (a tool returning
``float("inf")``) is refused before it reaches the wire, where it would break the peer's
parser and leave its request waiting. ``undeliverable`` says what to do instead.
"""

from __future__ import annotations

import json
from typing import Any

import pydantic_core

from answerback.jsonrpc import Envelope, JSONObject, MalformedMessage
from answerback.jsonrpc._endpoint import as_object, as_request_id
from answerback.types._errors import INTERNAL_ERROR


class UnencodableMessage(ValueError):
    """A message of ours holds a value JSON cannot carry (``NaN``, ``Infinity``)."""


def decode(data: bytes | str, transport_context: Any = None) -> Envelope | MalformedMessage:
    """One JSON text as an envelope, or the reason it is not (strict) JSON."""
    try:
        message = pydantic_core.from_json(data, allow_inf_nan=False)
    except ValueError as exc:
        return MalformedMessage(str(exc))
    return Envelope(message, transport_context=transport_context)


def encode(message: Any) -> bytes:
    """Compact JSON, UTF-8, no embedded newlines (JSON strings escape them).

    Raises ``UnencodableMessage`` for ``NaN`` or an infinity anywhere in ``message``.
    The check costs nothing on the usual path: only output that contains the words
    pydantic writes for them is looked at again, strictly.
    """
    data = pydantic_core.to_json(message)
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
