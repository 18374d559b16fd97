"""The terminal screens in a real terminal (tmux), where a probe found them wanting: a
paste of several lines, a resized or narrow window, the order of what is said around a
screen, a model that cannot be reached, a server slow to start.

The harness (``Terminal``, ``connect``) is ``test_terminal_e2e``'s.
"""

from __future__ import annotations

import re
import shlex
import sys

from test_terminal_e2e import FORM_KEYS, PROMPT, TEAROOM, Terminal, connect, terminal

__all__ = ["terminal"]  # the fixture the tests below take


def paste(terminal: Terminal, text: str) -> None:
    """Paste ``text`` as a terminal does (bracketed paste, which prompt_toolkit asks for)."""
    terminal.run("set-buffer", "-b", "pasted", text)
    terminal.run("paste-buffer", "-p", "-b", "pasted")


def test_a_paste_of_several_lines_is_one_line_shown_and_sent(terminal: Terminal) -> None:
    """The field showed only the last pasted line, without its ``>``, and sent all
    three; now it shows them joined by spaces, and that is what is sent."""
    connect(terminal, TEAROOM)
    terminal.type("call greet")
    terminal.wait_for(FORM_KEYS)
    paste(terminal, "Ada\nLovelace\nthird line")
    terminal.wait_for(r"^  > Ada Lovelace third line\s*$")
    terminal.keys("C-s")
    terminal.wait_for(r"^Hello, Ada Lovelace third line!$")


def test_a_resized_window_shows_the_form_once_and_its_keys_whole(terminal: Terminal) -> None:
    """Narrowed, the window kept a row of the old box above the new one; at 50 columns
    the keys line was cut before "Esc cancel". Now the form is drawn once, and its keys
    wrap between two keys."""
    connect(terminal, TEAROOM)
    terminal.type("call order_tea")
    terminal.wait_for(FORM_KEYS)
    terminal.run("resize-window", "-x", "60", "-y", "40")
    screen = terminal.wait_for(r"^Ctrl-Q mute terminal_server$")
    assert screen.count("What would you like?") == 1, screen
    terminal.run("resize-window", "-x", "50", "-y", "40")
    screen = terminal.wait_for(r"^Ctrl-D decline  Esc cancel   \* required$")
    assert screen.count("What would you like?") == 1, screen
    assert re.search(r"^╰─+╯$", screen, re.MULTILINE), screen
    terminal.keys("Escape")
    terminal.wait_for(r"No order \(cancel\)\.")


def test_ctrl_x_is_said_before_the_calls_result(terminal: Terminal) -> None:
    connect(terminal, TEAROOM)
    terminal.type("call order_tea")
    terminal.wait_for(FORM_KEYS)
    terminal.keys("C-x")
    screen = terminal.wait_for(r"No order \(cancel\)\.")
    said = screen.index("terminal_server: cancelled everything it asked")
    assert said < screen.index("No order (cancel).")


def test_connect_says_which_server_it_is_connecting_to(terminal: Terminal) -> None:
    """A slow server left the screen blank until it answered."""
    connect(terminal, TEAROOM)
    screen = terminal.wait_for(PROMPT)
    assert screen.index("Connecting to terminal_server…") < screen.index("Connected to")


def test_a_model_that_cannot_be_reached_is_said_whole(terminal: Terminal) -> None:
    """The model's failure was cut to one row ("...http://127.0.0.1:1/v1/cha")."""
    connect(terminal, TEAROOM, options="--model-url http://127.0.0.1:1/v1 --model m")
    terminal.type("call summarise text=hi")
    terminal.wait_for(r"a approve")
    terminal.keys("a")
    screen = terminal.wait_for(r"Type a reply, or deny\.")
    said = " ".join(screen.split())
    assert "The model failed: The OpenAI-compatible endpoint at " in said
    assert "/v1/chat/completions could not be reached (" in said
    assert "SamplingProviderError" not in said
    terminal.keys("Escape")
    terminal.wait_for(r"User rejected sampling request")


def test_call_names_the_arguments_the_form_leaves_off(terminal: Terminal) -> None:
    """``answerback call`` at a terminal: the note said ``name=value``, an argument
    ``paint`` does not have; it names ``rooms`` now."""
    terminal.start(f"{shlex.quote(sys.executable)} -m answerback call {shlex.quote(TEAROOM)} paint")
    screen = terminal.wait_for(FORM_KEYS)
    assert "put rooms=... after paint on the command line instead." in " ".join(screen.split())
    terminal.keys("Escape")
    terminal.wait_for(r"\[exited \d+\]")
