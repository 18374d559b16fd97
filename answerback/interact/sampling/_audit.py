"""``AuditLog``: one JSON line per sampling request and one per its outcome.

Sampling runs a model, with the host's credentials, on text a server wrote. Afterwards
someone will want to know which server asked what, which model answered and why that
one, how many tokens were granted, and whether the person or the policy said no. JSON
lines are easy to append, to ``grep`` and to load; each line is complete on its own and
written at once, so a crash loses at most the line being written.
"""

from __future__ import annotations

import io
import json
import os
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, TextIO, cast


class AuditLog:
    """Appends audit lines to a file (``target`` a path, opened for each line) or a text
    stream (flushed after each line). ``clock`` gives the time (``datetime.now(UTC)``).

    A relative path is taken against the current directory when the log is made, and
    kept absolute (``target`` is then that absolute path, a string): the file is opened
    again for each line, and a later ``os.chdir`` must not move the audit elsewhere.

    Every line has ``time`` (ISO 8601, UTC), ``event`` (``request`` or ``outcome``),
    ``server`` and ``request`` (a number shared by a request's two lines), then what the
    event tells: see ``docs/sampling.md`` for the fields.

    Refused when made, not at the first line: a path that is empty, names a directory or
    lies in a directory that does not exist (``ValueError``), a stream opened in binary
    mode or something else that cannot be written to, a ``clock`` that cannot be called
    (``TypeError``).
    """

    def __init__(
        self,
        target: str | os.PathLike[str] | TextIO,
        *,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.target = _checked_target(target)
        if not callable(clock):
            raise TypeError(f"clock must be a function returning a datetime, got {clock!r}")
        self._clock = clock

    def __repr__(self) -> str:
        if isinstance(self.target, str):
            return f"AuditLog({self.target!r})"
        return f"AuditLog({type(self.target).__name__})"

    def write(self, event: str, **fields: Any) -> None:
        """Append one line: ``event`` and ``fields`` (``None`` values left out)."""
        record: dict[str, Any] = {"time": self._clock().isoformat(), "event": event}
        record.update((key, value) for key, value in fields.items() if value is not None)
        line = json.dumps(record, ensure_ascii=False, default=str) + "\n"
        if isinstance(self.target, str):
            with open(self.target, "a", encoding="utf-8") as file:
                file.write(line)
        else:
            self.target.write(line)
            self.target.flush()


def _checked_target(target: object) -> str | TextIO:
    """``target`` if an audit line can be appended to it; a path made absolute."""
    if isinstance(target, str | os.PathLike):
        path: object = os.fspath(cast("str | os.PathLike[str] | os.PathLike[bytes]", target))
        if not isinstance(path, str) or not path:
            raise ValueError(
                f"target must name the audit file, such as 'audit.jsonl', got {path!r}"
            )
        if os.path.isdir(path):
            raise ValueError(f"target must be a file, not the directory {path!r}")
        # Absolute now, not at each line: a relative path read against whatever the
        # current directory is when a line is written would scatter the audit.
        absolute = os.path.abspath(path)
        folder = os.path.dirname(absolute)
        if not os.path.isdir(folder):
            raise ValueError(
                f"target {path!r} is in a directory that does not exist ({folder}): create it first"
            )
        return absolute
    if isinstance(target, io.RawIOBase | io.BufferedIOBase):
        raise TypeError(
            "target must be a path or a text stream, got a stream opened in binary mode "
            f"({target!r}): open it with 'a' rather than 'ab', or pass the path"
        )
    if not all(callable(getattr(target, method, None)) for method in ("write", "flush")):
        raise TypeError(
            "target must be a path (str or Path) or a text stream (with write() and flush()), "
            f"got {target!r}"
        )
    return cast(TextIO, target)
