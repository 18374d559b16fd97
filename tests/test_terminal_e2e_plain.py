"""The plain-line mode of ``answerback connect`` and ``call`` in a real terminal (tmux):
``TERM=dumb`` (Emacs ``M-x shell``, some IDE panes) and ``--plain``.

On a dumb terminal a server's question stayed invisible until Enter or Ctrl-C was
pressed at the prompt (prompt_toolkit's dumb prompt never stepped aside for it), and
then came as a full screen of cursor codes. Now every question is asked in plain lines,
in order, and nothing written to the terminal holds an escape character. Every byte
written is recorded from the start (``tmux pipe-pane``).

The harness (``Terminal``) is ``test_terminal_e2e``'s.
"""

from __future__ import annotations

import re
import shlex
import sys
import time
from pathlib import Path

from test_terminal_e2e import (
    ASKING,
    DEADLINE_SECONDS,
    FORM_KEYS,
    TEAROOM,
    Terminal,
    terminal,
)

__all__ = ["terminal"]  # the fixture the tests below take

PROMPT = r"^answerback> $"
CURSOR_OR_SCREEN_CODE = re.compile(rb"\x1b\[[0-9;?]*[A-Za-ln-z]")
"""A control sequence that is not a colour or style (those end in ``m``): it moves the
cursor, erases or hides something."""


def start_recorded(terminal: Terminal, command: str, raw: Path, term: str) -> None:
    """Run ``command`` with ``TERM=term``, every byte it writes recorded in ``raw``
    (the command waits for Enter until the recording has begun)."""
    inner = f"read _; TERM={term} exec {command}"
    terminal.start(f"sh -c {shlex.quote(inner)}")
    terminal.run("pipe-pane", "-o", f"cat >> {shlex.quote(str(raw))}")
    terminal.keys("Enter")


def recorded(raw: Path, last: str) -> bytes:
    """What was written, once the recording has reached ``last``."""
    deadline = time.monotonic() + DEADLINE_SECONDS
    while time.monotonic() < deadline:
        written = raw.read_bytes() if raw.exists() else b""
        if last.encode() in written:
            return written
        time.sleep(0.05)
    raise AssertionError(f"{last!r} was never written")


def answerback(*words: str) -> str:
    return " ".join([shlex.quote(sys.executable), "-m", "answerback", *map(shlex.quote, words)])


def test_a_dumb_terminal_asks_every_question_in_plain_lines(
    terminal: Terminal, tmp_path: Path
) -> None:
    raw = tmp_path / "written.bin"
    start_recorded(terminal, answerback("connect", TEAROOM, ASKING), raw, "dumb")
    terminal.wait_for(PROMPT)

    terminal.type("call order_tea")  # shown at once: nothing more is typed at the prompt
    terminal.wait_for(r"^Tea \* \(pick one\): Which tea$", after="call order_tea")
    terminal.type("3")
    terminal.wait_for(r"^Cups \* \(whole number")
    terminal.type("2")
    terminal.wait_for(r"^Send this answer\?")
    terminal.type("a")
    terminal.wait_for(r"^Order: 2 x oolong\.$")

    terminal.type("call visit url=https://paypa1.com/login")
    terminal.wait_for(r"^Open it in your browser\?", after="call visit")
    screen = terminal.screen()
    assert "HIGH RISK" in screen
    assert "paypa1.com looks like paypal.com but is a different site." in screen
    terminal.type("o")
    terminal.wait_for(r"Type yes to open it anyway")
    terminal.type("no")
    terminal.wait_for(r"^visit: decline$")

    terminal.type("call summarise text=teapots")
    terminal.wait_for(r"^\[a\]pprove or \[d\]eny", after="call summarise")
    assert "Summarise: teapots" in terminal.screen()
    terminal.type("a")
    terminal.wait_for(r"^Type the reply")
    terminal.type("Pots for tea.")
    terminal.type(".")
    terminal.wait_for(r"^summary: Pots for tea\.$")

    terminal.type("call terminal_server:greet")  # its required argument, asked in lines too
    terminal.wait_for(r"^Name \* \(text\)", after="call terminal_server:greet")
    terminal.type("Ada")
    terminal.wait_for(r"^Times ", after="> Ada")
    terminal.type("")
    terminal.wait_for(r"^Send this answer\?", after="> Ada")
    terminal.type("a")
    terminal.wait_for(r"^Hello, Ada!$")

    terminal.type(f"roots add {tmp_path}")
    terminal.wait_for(f"Added root {re.escape(str(tmp_path))}")
    terminal.type("call list_my_roots")
    terminal.wait_for(re.escape(tmp_path.as_uri()), after="call list_my_roots")

    terminal.type("call order_tea")  # Ctrl-C cancels the question, not the session
    terminal.wait_for(r"^Tea \* \(pick one\): Which tea$", after="call order_tea")
    terminal.keys("C-c")
    terminal.wait_for(r"^Ctrl-C: cancelled the form from terminal_server\.$")
    terminal.wait_for(r"^No order \(cancel\)\.$")

    terminal.type("quit")
    terminal.wait_for(r"\[exited 0\]")
    written = recorded(raw, "[exited 0]")
    assert b"\x1b" not in written, "an escape code reached the dumb terminal"
    assert FORM_KEYS.encode() not in written, "a full screen was drawn"


def test_call_on_a_dumb_terminal_asks_in_plain_lines(terminal: Terminal, tmp_path: Path) -> None:
    raw = tmp_path / "written.bin"
    start_recorded(terminal, answerback("call", TEAROOM, "order_tea"), raw, "dumb")
    terminal.wait_for(r"^Tea \* \(pick one\): Which tea$")
    terminal.type("green")
    terminal.wait_for(r"^Cups \* \(whole number")
    terminal.type("1")
    terminal.wait_for(r"^Send this answer\?")
    terminal.type("")  # Enter accepts
    terminal.wait_for(r"^Order: 1 x green\.$")
    terminal.wait_for(r"\[exited 0\]")
    assert b"\x1b" not in recorded(raw, "[exited 0]")


def test_plain_asks_in_lines_on_a_terminal_that_draws_screens(
    terminal: Terminal, tmp_path: Path
) -> None:
    raw = tmp_path / "written.bin"
    command = answerback("call", "--plain", TEAROOM, "order_tea")
    start_recorded(terminal, command, raw, "xterm-256color")
    terminal.wait_for(r"^  3\) oolong$")
    terminal.type("2")
    terminal.wait_for(r"^Cups \* \(whole number")
    terminal.type("5")
    terminal.wait_for(r"^Send this answer\?")
    terminal.type("d")
    terminal.wait_for(r"^No order \(decline\)\.$")
    terminal.wait_for(r"\[exited 0\]")
    written = recorded(raw, "[exited 0]")
    assert FORM_KEYS.encode() not in written, "a full screen was drawn"
    assert not CURSOR_OR_SCREEN_CODE.search(written), "a cursor or screen code was written"
