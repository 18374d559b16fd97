"""The screens in a real terminal (tmux) too small for all they show, where a probe
found the first field's title scrolled away at 40x12, no buttons nor Esc at 20x8, and a
link card cut above its verdict whose ``o`` still acted.

The harness (``Terminal``, ``connect``) is ``test_terminal_e2e``'s.
"""

from __future__ import annotations

from test_terminal_e2e import FORM_KEYS, TEAROOM, Terminal, connect, terminal

__all__ = ["terminal"]  # the fixture the tests below take

TEA_FIELD = r"^Tea \*  \(pick one\) *\n  Which tea *\n  \( \) green *$"
"""The first field's title, its "*" and what it expects, above its description and input."""


def resize(terminal: Terminal, columns: int, rows: int) -> None:
    terminal.run("resize-window", "-x", str(columns), "-y", str(rows))


def test_a_short_window_keeps_the_focused_fields_title_above_its_input(
    terminal: Terminal,
) -> None:
    connect(terminal, TEAROOM)
    resize(terminal, 40, 12)
    terminal.type("call order_tea")
    terminal.wait_for(FORM_KEYS)  # all of the form, its keys too
    terminal.wait_for(TEA_FIELD)
    terminal.keys("Tab")
    terminal.wait_for(r"^Cups \*")
    terminal.keys("BTab")
    terminal.wait_for(TEA_FIELD)
    terminal.keys("Escape")
    terminal.wait_for(r"No order \(cancel\)\.")


def test_a_window_too_small_for_the_form_says_so_and_esc_still_cancels(
    terminal: Terminal,
) -> None:
    connect(terminal, TEAROOM)
    resize(terminal, 20, 8)
    terminal.type("call order_tea")
    terminal.wait_for(r"^This window is too *\nsmall for this form:")
    terminal.wait_for(r"^Esc cancel *$")  # shown once the screen takes keys
    terminal.keys("Space", "C-s")  # would choose green and send it, unseen
    resize(terminal, 60, 30)
    terminal.wait_for(FORM_KEYS)
    terminal.wait_for(r"^  \( \) green *$")  # not chosen
    terminal.keys("Escape")
    terminal.wait_for(r"No order \(cancel\)\.")


def test_a_link_card_cut_above_its_verdict_says_so_and_o_waits(terminal: Terminal) -> None:
    connect(terminal, TEAROOM)
    resize(terminal, 40, 11)
    terminal.type("call visit url=https://paypa1.com/login")
    terminal.wait_for(r"more lines: a taller window")
    terminal.wait_for(r"^The link and its verdict do not fit: *$")  # once it takes keys
    terminal.keys("o", "C-r")  # the reader opens once "o" has been handled
    terminal.wait_for(r"Esc/q back")
    terminal.keys("q")
    resize(terminal, 100, 30)
    screen = terminal.wait_for(r"^o open in browser  d decline  c/Esc cancel *$")
    assert "paypa1.com looks like paypal.com but is a different site." in screen, screen
    assert "This link is high risk." not in screen, screen
    terminal.keys("o")
    terminal.wait_for(r"This link is high risk\.")
    terminal.keys("c")
    terminal.wait_for(r"visit: cancel")
