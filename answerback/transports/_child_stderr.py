"""Where a stdio server's stderr goes, and the last lines of it kept for error messages.

The child's stderr is its log. Left on the terminal it corrupts a full-screen client, so
the host chooses: the terminal (``"inherit"``), nowhere (``"discard"``), a
``logging.Logger``, a file object or a path. Whatever the choice, the last lines are
kept in memory: when a server dies before answering, its last words (a traceback, a
"module not found") are the message the developer needs.

Lines sent to a logger are logged at INFO, prefixed with the server's command. A stderr
carries everything a program says, from start-up chatter to tracebacks, and nothing in a
line says how serious it is; WARNING would make every healthy server look broken in the
host's logs. The tail still reaches the developer when it matters: in the error raised
when the server exits before answering.
"""

from __future__ import annotations

import codecs
import io
import logging
import os
import sys
from collections import deque
from collections.abc import Callable, Generator
from contextlib import contextmanager
from typing import IO, Any, Literal, TypeAlias, cast

import anyio
from anyio.abc import ByteReceiveStream

StderrTarget: TypeAlias = (
    Literal["inherit", "discard"] | logging.Logger | IO[str] | IO[bytes] | os.PathLike[str]
)
"""Where a stdio server's stderr goes (see ``StdioServer``)."""

TAIL_LINES = 20
"""How many of the last stderr lines are kept for the error of a server that died."""
_LINE_CHARS = 1000
"""A longer line is cut: in the tail (it is for reading), and for the logger as it
arrives (a line that never ends must not grow without bound)."""

_Write: TypeAlias = Callable[[bytes, str], None]

logger = logging.getLogger("answerback.transports")


def check_stderr_target(target: object) -> StderrTarget:
    """``target`` if it is a place ``StdioServer`` can send stderr to.

    Raises ``ValueError`` for a string other than ``"inherit"`` or ``"discard"`` (a file
    name must be a ``pathlib.Path``, so a typo is not taken for one) and ``TypeError``
    for anything else that is not a logger, a path or a writable file.
    """
    if isinstance(target, str):
        if target in ("inherit", "discard"):
            return cast(StderrTarget, target)
        raise ValueError(
            f"stderr={target!r} is not one of 'inherit' or 'discard'. To write the server's "
            f"stderr to a file, pass a path: stderr=pathlib.Path({target!r})."
        )
    if isinstance(target, logging.Logger | os.PathLike) or callable(getattr(target, "write", None)):
        return cast(StderrTarget, target)
    raise TypeError(
        f"stderr={target!r}: pass 'inherit', 'discard', a logging.Logger, a writable file "
        "or a pathlib.Path."
    )


class ChildStderr:
    """Copies what a child writes to its stderr to ``target``, keeping the last lines.

    Bytes go on as they arrive (a progress line without a newline still shows); only a
    logger waits for whole lines. Undecodable bytes are replaced, never fatal.
    """

    def __init__(self, target: StderrTarget, label: str) -> None:
        self._target = target
        self._label = label
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._partial = ""
        self._tail: deque[str] = deque(maxlen=TAIL_LINES)
        self._write = self._writer(target)
        self.finished = anyio.Event()
        """Set once the child's stderr has ended (or can no longer be read)."""

    @property
    def tail(self) -> list[str]:
        """The last lines written so far (the unfinished last line included)."""
        return [*self._tail, *([self._partial] if self._partial else [])]

    async def copy(self, stream: ByteReceiveStream) -> None:
        """Read ``stream`` until it ends, passing everything on."""
        try:
            async for chunk in stream:
                self._take(chunk)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            pass
        finally:
            self._take(b"", final=True)
            self.finished.set()

    def _take(self, chunk: bytes, *, final: bool = False) -> None:
        text = self._decoder.decode(chunk, final=final)
        if self._write is not None and chunk:
            try:
                self._write(chunk, text)
            except (OSError, ValueError) as exc:  # a closed file, a full disk...
                # ...must not end the connection: the output is dropped, the tail kept.
                logger.warning(
                    "could not pass on the stderr of %s (%s); the rest of it is dropped",
                    self._label,
                    exc,
                )
                self._write = None
        *lines, self._partial = (self._partial + text).split("\n")
        if final and self._partial:
            lines.append(self._partial)
            self._partial = ""
        if len(self._partial) > _LINE_CHARS:
            lines.append(self._partial)
            self._partial = ""
        for line in lines:
            line = _cut(line.rstrip("\r"))
            self._tail.append(line)
            if isinstance(self._target, logging.Logger):
                self._target.info("%s: %s", self._label, line)

    def _writer(self, target: StderrTarget) -> _Write | None:
        """How a chunk reaches ``target`` (``None`` for a logger, which takes lines, and
        for ``"discard"``); a path has been opened by ``child_stderr`` already."""
        if target == "inherit":
            return _to_our_stderr
        if target == "discard" or isinstance(target, logging.Logger):
            return None
        return _to_file(cast(IO[Any], target))


def _to_our_stderr(chunk: bytes, text: str) -> None:
    """Our own ``sys.stderr``, looked up each time (tests and hosts may swap it)."""
    if sys.stderr is not None:
        _to_file(cast(IO[Any], sys.stderr))(chunk, text)


def _to_file(file: IO[Any]) -> _Write:
    binary = isinstance(file, io.RawIOBase | io.BufferedIOBase) or "b" in getattr(file, "mode", "")

    def write(chunk: bytes, text: str) -> None:
        file.write(chunk if binary else text)
        file.flush()

    return write


@contextmanager
def child_stderr(target: StderrTarget, label: str) -> Generator[ChildStderr, None, None]:
    """A ``ChildStderr`` for ``target``: a path is opened for appending (and closed after
    the block); anything else is used as it is."""
    if not isinstance(target, os.PathLike):
        yield ChildStderr(target, label)
        return
    with open(target, "ab") as file:
        yield ChildStderr(file, label)


def _cut(line: str) -> str:
    if len(line) <= _LINE_CHARS:
        return line
    return f"{line[:_LINE_CHARS]}… ({len(line) - _LINE_CHARS} more characters)"
