"""Where the library's own warnings go while the command runs.

Without a handler, Python prints a warning's bare message (no source, no level) through
its last-resort handler. The command gives them one recognisable shape instead, and
writes them to whatever ``sys.stderr`` is at that moment: inside ``connect``,
prompt_toolkit has replaced it so that lines appear above the prompt rather than
through it.
"""

from __future__ import annotations

import logging
import sys
from typing import TextIO

from answerback.cli._interface import redacted
from answerback.interact import clean

LIBRARY_LOGGER = "answerback"


class _CurrentStderr(logging.StreamHandler[TextIO]):
    """A stream handler that looks ``sys.stderr`` up for every record, and writes out
    the control characters of each line (a warning may quote what a server sent) and
    hides the credentials of the URLs it quotes."""

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr
        super().emit(record)

    def format(self, record: logging.LogRecord) -> str:
        return clean(redacted(super().format(record)))


def show_library_warnings() -> None:
    """Print the library's warnings (a stray line on a server's stdout, a transport
    error) on stderr as ``answerback: warning: ...``; quieter levels stay silent."""
    handler = _CurrentStderr()
    handler.setFormatter(logging.Formatter("answerback: %(levelname)s: %(message)s"))
    library = logging.getLogger(LIBRARY_LOGGER)
    library.addHandler(handler)
    library.setLevel(logging.WARNING)
    library.propagate = False
