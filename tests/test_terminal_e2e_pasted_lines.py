"""Command lines pasted into ``answerback connect`` as a terminal without bracketed paste
sends them (each line ended by Enter), while one of them opens a form, in a real
terminal (tmux).

A probe pasted three lines whose first asked a form: the other lines' output was drawn
over the form, the form then took no key (only Esc, sometimes), and once the last
pasted lines were lost. The form had opened while the prompt started again: both ran,
and the prompt, ending last, left no application reading the keys.

The harness (``Terminal``, ``connect``) is ``test_terminal_e2e``'s.
"""

from __future__ import annotations

import re

from test_terminal_e2e import FORM_KEYS, PROMPT, TEAROOM, Terminal, connect, terminal

__all__ = ["terminal"]  # the fixture the tests below take


def paste_as_typed(terminal: Terminal, text: str) -> None:
    """Paste ``text`` without bracketed paste, each line break sent as Enter: as a
    terminal that does not bracket pastes (or tmux's ``paste-buffer`` without ``-p``)."""
    terminal.run("set-buffer", "-b", "pasted", text)
    terminal.run("paste-buffer", "-b", "pasted")


FORM_TOP = re.compile(
    r"^╭─ Form — from terminal_server ─+╮\n│ │ What would you like\? +│\n╰─+╯\nTea \*",
    re.MULTILINE,
)
"""The top of ``order_tea``'s form, whole: the rows the probe saw drawn over."""


def test_lines_pasted_with_one_that_asks_run_and_the_form_takes_the_keys(
    terminal: Terminal,
) -> None:
    connect(terminal, TEAROOM)
    paste_as_typed(terminal, "call order_tea\ncall greet name=B\ncall greet name=C\n")
    terminal.wait_for(r"^Hello, B!$")
    terminal.wait_for(r"^Hello, C!$")
    screen = terminal.wait_for(FORM_KEYS)
    assert FORM_TOP.search(screen), screen  # the results went above it, not over it
    terminal.keys("Space", "Tab")  # green, then to the cups
    terminal.type("2", enter=False)
    terminal.keys("C-s")
    terminal.wait_for(r"^Order: 2 x green\.$")
    terminal.wait_for(PROMPT, after=r"Order: 2 x green")


def test_a_line_pasted_after_one_that_opens_a_form_runs_once_the_form_is_answered(
    terminal: Terminal,
) -> None:
    """The rest of the paste was read by the prompt before the form opened: it is run
    after the form, not dropped by the form as keys typed before it was seen."""
    connect(terminal, TEAROOM)
    paste_as_typed(terminal, "call greet\ncall menu\n")
    terminal.wait_for(FORM_KEYS)  # greet's arguments
    terminal.type("Ada", enter=False)
    terminal.keys("C-s")
    terminal.wait_for(r"^Hello, Ada!$")
    terminal.wait_for(r'^\{"green": 2\.5, "black": 2\.0\}$')
