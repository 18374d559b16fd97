"""A question withdrawn while the server's next one waits, in ``answerback call`` at a
real terminal (tmux).

The broker shows the next question before it knows why the last one left (that takes
a ping). The "question withdrawn" line was then printed straight to the terminal, onto
the next form's input line, where it stayed. It goes above the form now.

The harness (``Terminal``) is ``test_terminal_e2e``'s.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import sys
from pathlib import Path

from test_terminal_e2e import FORM_KEYS, SERVERS, Terminal, terminal

__all__ = ["terminal"]  # the fixture the tests below take

WITHDRAWING = SERVERS / "withdrawing_server.py"

WITHDRAWN_ABOVE_THE_FORM = re.compile(
    r"^withdrawing_server: question withdrawn: "
    r"the server withdrew it, or the call that asked it was cancelled\n"
    r"╭─ Form — from withdrawing_server ─+╮\n"
    r"│ │ Second question: your name\? +│\n"
    r"╰─+╯\n"
    r"Name \*  \(text\)\n"
    r"  > *\n",
    re.MULTILINE,
)
"""The withdrawn line, then the next form whole, its input line empty."""

LEFT_IN_THE_SCROLLBACK = (
    r"^withdrawing_server: question withdrawn: "
    r"the server withdrew it, or the call that asked it was cancelled\n"
    r"withdrawing_server: form accepted\n"
    r"The second answer came from Ada\.$"
)
"""What the terminal keeps once the call is over: one line for each question, then the
result."""


def test_the_withdrawn_line_goes_above_the_next_question_not_into_it(
    terminal: Terminal, tmp_path: Path
) -> None:
    pid_file = tmp_path / "server.pid"
    terminal.start(
        f"{shlex.quote(sys.executable)} -m answerback call --mode legacy "
        f"{shlex.quote(str(WITHDRAWING))} ask_twice "
        f"pid_file={shlex.quote(str(pid_file))}"
    )
    terminal.wait_for(r"First question, to be withdrawn")
    os.kill(int(pid_file.read_text()), signal.SIGUSR1)  # the server withdraws it
    terminal.wait_for(r"Second question: your name\?")
    terminal.wait_for(r"question withdrawn")
    screen = terminal.wait_for(FORM_KEYS, after=r"question withdrawn")
    assert WITHDRAWN_ABOVE_THE_FORM.search(screen), screen
    terminal.type("Ada", enter=False)
    terminal.keys("C-s")
    screen = terminal.wait_for(r"\[exited 0\]")
    assert re.search(LEFT_IN_THE_SCROLLBACK, screen, re.MULTILINE), screen
