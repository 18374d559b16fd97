"""Server-Sent Events framing: writing events, and reading them back incrementally."""

from __future__ import annotations

from dataclasses import dataclass


def encode_event(data: str, event_id: str | None = None, retry_ms: int | None = None) -> bytes:
    """One SSE event; ``data`` must not contain newlines (compact JSON never does)."""
    lines: list[str] = []
    if event_id is not None:
        lines.append(f"id: {event_id}")
    if retry_ms is not None:
        lines.append(f"retry: {retry_ms}")
    lines.append("event: message" if data else "data: ")
    if data:
        lines.append(f"data: {data}")
    return ("\n".join(lines) + "\n\n").encode()


KEEPALIVE = b": keep-alive\n\n"


@dataclass(slots=True)
class Event:
    """One received event. ``data`` is empty for priming events that only carry an id."""

    data: str
    event: str
    event_id: str | None
    retry_ms: int | None


class EventParser:
    """Feeds on text lines and yields complete events (the SSE parsing rules, minimal)."""

    def __init__(self) -> None:
        self._data: list[str] = []
        self._event = "message"
        self._id: str | None = None
        self._retry: int | None = None
        self._has_fields = False

    def feed(self, line: str) -> Event | None:
        """Consume one line (without its newline); return an event when one completes."""
        if not line:
            if not self._has_fields:
                return None
            event = Event("\n".join(self._data), self._event, self._id, self._retry)
            self._data, self._event, self._retry, self._has_fields = [], "message", None, False
            self._id = None
            return event
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        self._has_fields = True
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id" and "\0" not in value:
            self._id = value
        elif name == "retry" and value.isdigit():
            self._retry = int(value)
        return None
