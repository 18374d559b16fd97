"""The terminal client where a probe (stop 55) found it failing real terminals: a locale
that cannot hold its characters, a result redirected to a file, Ctrl-Z, a machine with
no browser, and Esc's wait.

The harness (``Terminal``, ``connect``) is ``test_terminal_e2e``'s.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest
from test_terminal_e2e import FORM_KEYS, PROMPT, TEAROOM, Terminal, connect, terminal

from answerback.forms import parse_form
from answerback.interact.terminal import FormScreen

__all__ = ["terminal"]  # the fixture the tests below take

PYTHON = shlex.quote(sys.executable)


def test_connect_in_a_locale_that_cannot_hold_its_characters_runs_and_answers(
    terminal: Terminal,
) -> None:
    """An ASCII (or Latin-1) standard output ended the session at its first "…" with a
    UnicodeEncodeError; what it cannot hold is written as a \\u escape instead."""
    terminal.start(f"PYTHONIOENCODING=ascii {PYTHON} -m answerback connect {shlex.quote(TEAROOM)}")
    screen = terminal.wait_for(PROMPT)
    assert r"Connecting to terminal_server\u2026" in screen, screen
    terminal.type("status")
    terminal.wait_for(r"question\(s\) waiting", after="status")
    terminal.type("call order_tea")
    terminal.wait_for(FORM_KEYS)
    terminal.keys("Down", "Down", "Space", "Tab")
    terminal.type("3", enter=False)
    terminal.keys("C-s")
    screen = terminal.wait_for(r"^Order: 3 x oolong\.$")
    assert "form accepted" in screen
    assert "Traceback" not in screen


@pytest.mark.parametrize("stderr_too", [False, True])
def test_call_with_its_result_going_to_a_file_asks_at_the_terminal(
    terminal: Terminal, tmp_path: Path, stderr_too: bool
) -> None:
    """stdin a terminal and stdout a file: the form was declined as "no terminal". It
    is drawn on stderr, or on /dev/tty when stderr goes to a file too."""
    result = tmp_path / "result.txt"
    also = f" 2> {tmp_path / 'err.txt'}" if stderr_too else ""
    terminal.start(f"{PYTHON} -m answerback call {shlex.quote(TEAROOM)} order_tea > {result}{also}")
    screen = terminal.wait_for(FORM_KEYS)
    assert "What would you like?" in screen
    terminal.keys("Down", "Down", "Space", "Tab")
    terminal.type("3", enter=False)
    terminal.keys("C-s")
    screen = terminal.wait_for(r"\[exited 0\]")
    assert "form accepted" in screen
    assert result.read_text(encoding="utf-8").strip() == "Order: 3 x oolong."


def test_connect_with_its_output_in_a_file_says_standard_output_is_no_terminal(
    terminal: Terminal, tmp_path: Path
) -> None:
    terminal.start(
        f"{PYTHON} -m answerback connect {shlex.quote(TEAROOM)} > {tmp_path / 'out.txt'}"
    )
    screen = terminal.wait_for(r"\[exited 2\]")
    assert "its standard output is not one" in screen, screen


def test_ctrl_z_changes_no_answer_and_no_command(terminal: Terminal) -> None:
    """Ctrl-Z typed ``\\x1a`` into the field, and it was sent with the answer."""
    connect(terminal, TEAROOM)
    terminal.type("hel", enter=False)
    terminal.keys("C-z")
    terminal.type("p")
    terminal.wait_for(r"^help: this list$")
    terminal.type("call greet")
    terminal.wait_for(FORM_KEYS)
    terminal.type("Ada", enter=False)
    terminal.keys("C-z")
    terminal.type("x", enter=False)
    terminal.keys("C-s")
    terminal.wait_for(r"^Hello, Adax!$")
    terminal.type("call plan")
    terminal.wait_for(r"^plan arguments:\s*$")
    terminal.type('{"stops": ["Oslo"', enter=False)
    terminal.keys("C-z")
    terminal.type("]}")
    terminal.wait_for(r"^Oslo$")
    terminal.type("call summarise text=teapots")
    terminal.wait_for(r"a approve")
    terminal.keys("a")
    terminal.wait_for(r"Ctrl-S send reply")
    terminal.type("Pots", enter=False)
    terminal.keys("C-z")
    terminal.type(" for tea.", enter=False)
    terminal.keys("C-s")
    terminal.wait_for(r"summary: Pots for tea\.")


def test_with_no_browser_the_person_opens_the_link_and_says_so(terminal: Terminal) -> None:
    """No browser opened the link: "cancel" was sent while the person was told to open
    it themselves. Now they may say they did (accept), still decline, or cancel; a
    high-risk link still needs its second key first."""
    # No browser can be found without a PATH (the server runs by its full path).
    terminal.start(f"PATH=/nonexistent {PYTHON} -m answerback connect {shlex.quote(TEAROOM)}")
    terminal.wait_for(PROMPT)
    terminal.type("call visit url=https://github.com/login")
    terminal.wait_for(r"o open in browser")
    terminal.keys("o")
    screen = terminal.wait_for(r"a I opened it myself")
    assert "no browser could be opened; open https://github.com/login yourself" in screen
    assert "Open the link printed above yourself, then press a." in screen
    terminal.keys("a")
    screen = terminal.wait_for(r"visit: accept")
    assert "link opened by hand, as the person says" in screen

    terminal.type("call visit url=https://paypa1.com/login")
    terminal.wait_for(r"o open in browser", after="visit: accept")
    terminal.keys("o")
    terminal.wait_for(r"This link is high risk\.")
    terminal.keys("y")
    screen = terminal.wait_for(r"a I opened it myself", after="paypa1")
    assert "If you still want it, open https://paypa1.com/login yourself" in screen
    terminal.keys("d")
    terminal.wait_for(r"visit: decline")


def test_esc_waits_a_tenth_of_a_second_and_alt_keys_still_work(terminal: Terminal) -> None:
    """prompt_toolkit waited 0.5 s, then 1 s, before taking a lone Esc: a screen took
    1.5 s to close, and what was typed meanwhile was lost. An Alt key comes in one
    piece from the terminal, so it is still read as one (Alt-B: a word back)."""
    form = parse_form({"type": "object", "properties": {"name": {"type": "string"}}})
    application = FormScreen(form, title="Form", message="", server="s").application
    assert application.ttimeoutlen <= 0.1
    assert application.timeoutlen is not None
    assert application.timeoutlen <= 0.1
    connect(terminal, TEAROOM)
    terminal.type("call greet")
    terminal.wait_for(FORM_KEYS)
    terminal.type("Ada Lovelace", enter=False)
    terminal.keys("M-b")
    terminal.type("X", enter=False)
    terminal.keys("C-s")
    terminal.wait_for(r"^Hello, Ada XLovelace!$")
