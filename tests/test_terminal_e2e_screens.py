"""The terminal screens in a real terminal (tmux), where a probe found them wanting: a
paste of several lines, a resized or narrow window, the order of what is said around a
screen, a model that cannot be reached, a server slow to start.

The harness (``Terminal``, ``connect``) is ``test_terminal_e2e``'s.
"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path

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
    """The model's failure was cut to one row ("...http://127.0.0.1:1/v1/cha"); the
    person is told where the request went, which the server that asked is not."""
    connect(terminal, TEAROOM, options="--model-url http://127.0.0.1:1/v1 --model m")
    terminal.type("call summarise text=hi")
    terminal.wait_for(r"a approve")
    terminal.keys("a")
    screen = terminal.wait_for(r"Type a reply, or deny\.")
    said = " ".join(screen.split())
    assert "The model at http://127.0.0.1:1/v1/chat/completions failed: " in said
    assert "The OpenAI-compatible endpoint could not be reached (" in said
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


TABS_SERVER = """
from typing import Literal

from pydantic import BaseModel, Field

from answerback.server import Context, MCPServer

mcp = MCPServer("tabs")


class Tea(BaseModel):
    blend: str = Field(default="Earl\\tGrey", title="Blend\\tname", description="Which\\tblend")
    pot: Literal["small\\tpot", "large"] = Field(default="large", description="The pot")


@mcp.tool()
async def order(ctx: Context) -> str:
    answer = await ctx.elicit("Which tea?", schema=Tea)
    return f"sent {answer.data.blend!r}" if answer.action == "accept" else answer.action


if __name__ == "__main__":
    mcp.run()
"""


def test_a_tab_in_a_default_or_a_label_is_shown_as_space_not_as_caret_i(
    terminal: Terminal, tmp_path: Path
) -> None:
    """A default holding a tab was prefilled as ``Earl^IGrey`` (and a tab in a label,
    description or option as ``^I``): the default now shows a space, which is what is
    sent, as for a tab typed or pasted; the rest is spaced to the next tab stop, as the
    card above them spaces its text."""
    server = tmp_path / "tabs.py"
    server.write_text(TABS_SERVER, encoding="utf-8")
    connect(terminal, f"{sys.executable} {server}")
    terminal.type("call order")
    screen = terminal.wait_for(FORM_KEYS)
    assert "^I" not in screen, screen
    assert re.search(r"^  > Earl Grey\s*$", screen, re.MULTILINE), screen
    assert re.search(r"^Blend   name  \(text\)$", screen, re.MULTILINE), screen
    assert re.search(r"^  Which blend$", screen, re.MULTILINE), screen
    assert re.search(r"^  \( \) small     pot$", screen, re.MULTILINE), screen
    terminal.keys("C-s")
    terminal.wait_for(r"^sent 'Earl Grey'$")


def test_a_paste_of_several_lines_on_the_arguments_line_is_one_line_shown_and_sent(
    terminal: Terminal,
) -> None:
    """The arguments line (a schema a form cannot ask) showed a pasted JSON object on
    three lines, and sent it with its line breaks: one inside a string reached the tool.
    Now it is joined as a form's text field joins it, and that line is what is sent."""
    connect(terminal, TEAROOM)
    terminal.type("call plan")
    terminal.wait_for(r"^plan arguments:\s*$")
    paste(terminal, '{"stops":\n ["Oslo\nS",\n "Bergen"]}')
    terminal.wait_for(r'^plan arguments: \{"stops":  \["Oslo S",  "Bergen"\]\}\s*$')
    terminal.keys("Enter")
    terminal.wait_for(r"^Oslo S -> Bergen$")


def test_a_wider_taller_or_shorter_window_leaves_no_copy_of_the_form_behind(
    terminal: Terminal,
) -> None:
    """Every resize scrolled the screen up into the scrollback before drawing it again
    (twice: prompt_toolkit hears of a resize twice), so the scrollback filled with
    copies of the form. A resize that does not narrow the window re-wraps no row, and
    the form is cleared and drawn again where it was."""
    connect(terminal, TEAROOM)
    terminal.type("call order_tea")
    terminal.wait_for(FORM_KEYS)
    for columns, rows in ((130, 36), (140, 44), (150, 44)):
        terminal.run("resize-window", "-x", str(columns), "-y", str(rows))
        terminal.wait_for(rf"^╰─{{{columns - 2}}}╯$")
        scrollback = terminal.run("capture-pane", "-p", "-J", "-S", "-")
        assert scrollback.count("What would you like?") == 1, scrollback
    terminal.keys("Escape")
    terminal.wait_for(r"No order \(cancel\)\.")


def test_lines_typed_for_the_prompt_never_answer_a_form_that_opens(terminal: Terminal) -> None:
    """The probe's keys: a form opening while "call echo⏎call sample⏎" was typed took
    them, and the Space of the second line pressed Accept (the yes/no ticked by the
    first). Keys typed as the form opens are dropped now, and Enter on its last field
    stays there (so the keys cannot answer it even on a machine so slow that they come
    after the form takes keys); the form waits for the person."""
    connect(terminal, TEAROOM)
    terminal.type("call subscribe")
    terminal.wait_for(r"Stay in touch\?")  # drawn: the keys below reach the form
    terminal.type("call echo")
    terminal.type("call sample")
    screen = terminal.wait_for(FORM_KEYS)
    assert "Newsletter:" not in screen, screen
    assert "form accepted" not in screen, screen
    terminal.keys("Escape")
    screen = terminal.wait_for(r"No subscription \(cancel\)\.")
    assert "Newsletter:" not in screen, screen


def test_a_paste_without_bracketed_paste_neither_answers_a_form_nor_runs(
    terminal: Terminal,
) -> None:
    """A terminal without bracketed paste sends a pasted line break as Enter: the first
    line accepted the form and the others ran at the prompt as commands."""
    connect(terminal, TEAROOM)
    terminal.type("call subscribe")
    terminal.wait_for(FORM_KEYS)
    terminal.run("set-buffer", "-b", "pasted", "first line\nsecond line\nthird")
    terminal.run("paste-buffer", "-b", "pasted")  # without -p: not bracketed
    terminal.wait_for(r"This is the last field")
    terminal.keys("Escape")
    screen = terminal.wait_for(r"No subscription \(cancel\)\.")
    terminal.type("status")
    screen = terminal.wait_for(r"terminal_server", after=r"answerback> status")
    assert "Unknown command" not in screen, screen
    assert "Newsletter:" not in screen, screen


def test_a_form_taller_than_the_window_leaves_no_copy_in_the_scrollback(
    terminal: Terminal,
) -> None:
    """Erased from the window's top-left corner, a form as tall as the window was taken
    by tmux for a cleared screen and copied, typed values and all, into the scrollback."""
    connect(terminal, TEAROOM)
    terminal.run("resize-window", "-x", "100", "-y", "12")
    terminal.run("clear-history")
    terminal.type("call order_tea")
    terminal.wait_for(FORM_KEYS)
    terminal.keys("Escape")
    terminal.wait_for(r"No order \(cancel\)\.")
    everything = terminal.run("capture-pane", "-p", "-J", "-S", "-")
    assert "Which tea" not in everything, everything


LONG_SERVER = """
from pydantic import BaseModel, Field

from answerback.server import Context, MCPServer

mcp = MCPServer("long")


class Note(BaseModel):
    note: str = Field(title="Note", description=" ".join(f"d{n}" for n in range(300)))
    other: str = Field(default="", title="Other")


@mcp.tool()
async def ask(ctx: Context) -> str:
    message = "\\n".join(f"line {n}" for n in range(40))
    answer = await ctx.elicit(message, schema=Note)
    return f"noted {answer.data.note!r}" if answer.action == "accept" else answer.action


if __name__ == "__main__":
    mcp.run()
"""


def test_a_cut_message_and_description_are_read_whole_with_ctrl_r(
    terminal: Terminal, tmp_path: Path
) -> None:
    """A form's message was cut with no way to read the rest, and a long description
    pushed the other fields off the window. Both are cut, say so where, and Ctrl-R
    shows them whole, each row of the server's words barred; q goes back."""
    server = tmp_path / "long.py"
    server.write_text(LONG_SERVER, encoding="utf-8")
    connect(terminal, f"{sys.executable} {server}")
    terminal.type("call ask")
    screen = terminal.wait_for(FORM_KEYS)
    assert re.search(r"^│ │ line 0 ", screen, re.MULTILINE), screen
    assert re.search(r"^│ │ … 32 more lines: Ctrl-R shows them whole", screen, re.M), screen
    assert re.search(r"^  … 10 more lines: Ctrl-R shows them whole$", screen, re.M), screen
    assert "Other  (text)" in screen, screen
    terminal.keys("C-r")
    screen = terminal.wait_for(r"Esc/q back")
    assert "The message from " in screen, screen
    assert re.search(r"^│ line 0\s*$", screen, re.MULTILINE), screen
    terminal.keys("PageDown", "PageDown", "PageDown")
    screen = terminal.wait_for(r"d299")
    said = [row for row in screen.splitlines() if "d2" in row]
    assert said, screen
    assert all(row.startswith("│ ") for row in said), screen
    terminal.keys("q")
    terminal.wait_for(FORM_KEYS)
    terminal.type("Ada", enter=False)
    terminal.keys("C-s")
    terminal.wait_for(r"^noted 'Ada'$")


def test_a_paste_whose_tab_reaches_accept_never_presses_it(terminal: Terminal) -> None:
    """Pasted without bracketed paste, "Ada⇥⇥Lovelace and more": the Tabs went on to
    Accept and the first space pressed it, sending a half-pasted answer unread."""
    connect(terminal, TEAROOM)
    terminal.type("call greet")
    terminal.wait_for(FORM_KEYS)
    terminal.run("set-buffer", "-b", "pasted", "Ada\t\tLovelace and more")  # Times kept
    terminal.run("paste-buffer", "-b", "pasted")  # without -p: not bracketed
    screen = terminal.wait_for(r"Not pressed: the keys before it came all at once")
    assert "Hello," not in screen, screen
    assert re.search(r"^  > Ada\s*$", screen, re.MULTILINE), screen
    terminal.keys("C-s")
    terminal.wait_for(r"^Hello, Ada!$")
