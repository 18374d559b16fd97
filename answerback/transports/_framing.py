"""Turning bytes into envelopes and back, shared by the byte-stream transports."""

from __future__ import annotations

from typing import Any

import pydantic_core

from answerback.jsonrpc import Envelope, MalformedMessage


def decode(data: bytes | str, transport_context: Any = None) -> Envelope | MalformedMessage:
    """One JSON text as an envelope, or the reason it is not JSON."""
    try:
        return Envelope(pydantic_core.from_json(data), transport_context=transport_context)
    except ValueError as exc:
        return MalformedMessage(str(exc))


def encode(message: Any) -> bytes:
    """Compact JSON, UTF-8, no embedded newlines (JSON strings escape them)."""
    return pydantic_core.to_json(message)
