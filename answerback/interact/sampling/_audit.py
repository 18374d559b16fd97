"""``AuditLog``: one JSON line per sampling request and one per its outcome.

Sampling runs a model, with the host's credentials, on text a server wrote. Afterwards
someone will want to know which server asked what, which model answered and why that
one, how many tokens were granted, and whether the person or the policy said no. JSON
lines are easy to append, to ``grep`` and to load; each line is complete on its own and
written at once, so a crash loses at most the line being written.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TextIO


class AuditLog:
    """Appends audit lines to a file (``target`` a path, opened for each line) or a text
    stream (flushed after each line). ``clock`` gives the time (``datetime.now(UTC)``).

    Every line has ``time`` (ISO 8601, UTC), ``event`` (``request`` or ``outcome``),
    ``server`` and ``request`` (a number shared by a request's two lines), then what the
    event tells: see ``docs/sampling.md`` for the fields.
    """

    def __init__(
        self,
        target: str | os.PathLike[str] | TextIO,
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.target = target
        self._clock = clock

    def write(self, event: str, **fields: Any) -> None:
        """Append one line: ``event`` and ``fields`` (``None`` values left out)."""
        record: dict[str, Any] = {"time": self._clock().isoformat(), "event": event}
        record.update((key, value) for key, value in fields.items() if value is not None)
        line = json.dumps(record, ensure_ascii=False, default=str) + "\n"
        if isinstance(self.target, str | os.PathLike):
            with open(self.target, "a", encoding="utf-8") as file:
                file.write(line)
        else:
            self.target.write(line)
            self.target.flush()
