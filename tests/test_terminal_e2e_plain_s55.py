"""Plain lines in a real terminal (tmux), after review 3 of stop 55.

What a person had half typed at ``connect --plain``'s prompt became the answer to a
question that arrived meanwhile, never shown at the question; ``call --plain`` asked on
stderr, so ``2>/dev/null`` asked unseen and still read the answer; Ctrl-Z stopped the
session (and its servers) though the docs say it does nothing; and Ctrl-C at a plain
``call``'s question ended the command, where the full screen cancels the question.

The harness (``Terminal``) is ``test_terminal_e2e``'s.
"""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path

from test_terminal_e2e import PROMPT, TEAROOM, Terminal, connect, terminal

__all__ = ["terminal"]  # the fixture the tests below take

CALL_PLAIN = " ".join(
    shlex.quote(word)
    for word in (sys.executable, "-m", "answerback", "call", "--plain", TEAROOM, "order_tea")
)
TEA_CHOICES = r"^  3\) oolong$"


def test_a_line_half_typed_at_the_prompt_never_answers_the_question(
    terminal: Terminal, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    connect(terminal, TEAROOM, options="--plain")
    terminal.type(f"call order_tea gate={gate}")
    terminal.wait_for(PROMPT, after=r"call order_tea…")
    terminal.type("green", enter=False)
    terminal.wait_for(r"^answerback> green$")
    gate.write_text("go")  # the server asks now, while the person is typing
    terminal.wait_for(TEA_CHOICES)
    terminal.type("")  # Enter alone: "green" is gone, so nothing is picked
    terminal.wait_for(r"^  ✗ is required$")
    terminal.type("black")
    terminal.wait_for(r"^Cups \* \(whole number")
    terminal.type("1")
    terminal.wait_for(r"^  Tea: black\n  Cups: 1\nSend this answer\?")
    terminal.type("a")
    terminal.wait_for(r"Order: 1 x black\.$")


def test_plain_call_asks_where_it_is_seen_with_stderr_sent_away(terminal: Terminal) -> None:
    terminal.start(f"{CALL_PLAIN} 2>/dev/null")
    terminal.wait_for(TEA_CHOICES)
    terminal.type("oolong")
    terminal.wait_for(r"^Cups \* \(whole number")
    terminal.type("2")
    terminal.wait_for(r"^Send this answer\?")
    terminal.type("a")
    terminal.wait_for(r"^Order: 2 x oolong\.$")
    terminal.wait_for(r"\[exited 0\]")


def test_ctrl_z_does_nothing_in_plain_lines(terminal: Terminal) -> None:
    """Run from a shell with job control, where Ctrl-Z would stop the command."""
    terminal.start("PS1='shell> ' bash --norc --noprofile -i")
    terminal.wait_for(r"^shell> $")
    terminal.type(f"{CALL_PLAIN}; echo exit=$?")
    terminal.wait_for(TEA_CHOICES)
    terminal.keys("C-z")
    terminal.type("green")  # read by the question, not by the shell
    terminal.wait_for(r"^Cups \* \(whole number")
    terminal.type("3")
    terminal.wait_for(r"^Send this answer\?")
    terminal.type("a")
    screen = terminal.wait_for(r"^exit=0$")
    assert "Order: 3 x green." in screen
    assert "Stopped" not in screen


def test_ctrl_c_at_a_plain_calls_question_cancels_it_as_on_the_full_screen(
    terminal: Terminal,
) -> None:
    terminal.start(CALL_PLAIN)
    terminal.wait_for(TEA_CHOICES)
    terminal.keys("C-c")
    terminal.wait_for(r"^Ctrl-C: cancelled the form from terminal_server\.$")
    terminal.wait_for(r"^No order \(cancel\)\.$")
    terminal.wait_for(r"\[exited 0\]")
