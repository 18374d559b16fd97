"""``answerback connect`` used as a person would: in a real terminal (tmux), typing keys
and reading the screen.

Each test starts tmux on a socket of its own (``tmux -L``), runs ``answerback connect``
in a 120x40 window against real servers (answerback's own test servers and the
TypeScript reference server), types with ``send-keys`` and waits until the screen
(``capture-pane``) shows what a person would wait for, under one deadline per wait. The
home, state and history directories are temporary, so nothing of the user's is read or
written.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from http_support import EVERYTHING_ENTRY, served_by_answerback
from support import ended

REPO = Path(__file__).resolve().parents[1]
SERVERS = REPO / "tests" / "servers"
TEAROOM = f"{sys.executable} {SERVERS / 'terminal_server.py'}"
ASKING = f"{sys.executable} {SERVERS / 'asking_server.py'}"
LIBRARY = f"{sys.executable} {REPO / 'examples' / 'library_server.py'}"
LINE_FORM = f"{sys.executable} {SERVERS / 'line_form.py'}"
DEADLINE_SECONDS = 60.0
"""How long one wait for the screen may take (a busy machine starts Python slowly)."""


def _tmux() -> str | None:
    """tmux, installed with apt-get if it is missing and we may (root)."""
    found = shutil.which("tmux")
    if found is None and os.geteuid() == 0 and shutil.which("apt-get"):
        subprocess.run(
            ["apt-get", "install", "-y", "-qq", "tmux"],
            capture_output=True,
            timeout=300,
            check=False,
        )
        found = shutil.which("tmux")
    return found


TMUX = _tmux()

pytestmark = pytest.mark.skipif(
    TMUX is None,
    reason="tmux is missing and could not be installed (not root): apt-get install tmux",
)


class Terminal:
    """One tmux window running a command: type into it, read it."""

    def __init__(self, tmux: str, socket: str, home: Path) -> None:
        self.tmux = tmux
        self.socket = socket
        self.home = home
        self.started = False

    def run(self, *args: str) -> str:
        done = subprocess.run(
            [self.tmux, "-L", self.socket, *args],
            capture_output=True,
            text=True,
            timeout=DEADLINE_SECONDS,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"tmux {' '.join(args)} failed: {done.stderr.strip()}")
        return done.stdout

    def start(self, command: str) -> None:
        env = {
            "HOME": str(self.home),
            "XDG_STATE_HOME": str(self.home / "state"),
            "TERM": "xterm-256color",
            "PATH": os.environ.get("PATH", ""),
            "LANG": "C.UTF-8",
            "BROWSER": "true",  # "open in browser" runs `true`, never a real browser
        }
        exports = " ".join(f"{key}={shlex.quote(value)}" for key, value in env.items())
        shell = f"env -i {exports} {command}; echo '[exited' $?']'; sleep 600"
        if self.started:
            # A second command replaces the first in the same pane: killing the session
            # ends the tmux server, and a new session started while it exits can fail.
            self.run("respawn-pane", "-k", "-c", str(REPO), shell)
            self.run("clear-history")
        else:
            self.run("new-session", "-d", "-x", "120", "-y", "40", "-c", str(REPO), shell)
            self.started = True

    def screen(self) -> str:
        return self.run("capture-pane", "-p", "-J")

    def keys(self, *keys: str) -> None:
        """Send keys by tmux name (``Enter``, ``Tab``, ``C-d``, ``Down``)."""
        self.run("send-keys", *keys)

    def type(self, text: str, *, enter: bool = True) -> None:
        self.run("send-keys", "-l", text)
        if enter:
            self.keys("Enter")

    def wait_for(self, pattern: str, *, after: str | None = None) -> str:
        """Wait until the screen matches ``pattern`` (a regular expression), looking
        only below the last line matching ``after`` if given; returns the screen."""
        deadline = time.monotonic() + DEADLINE_SECONDS
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            part = screen
            if after is not None:
                spots = [m.end() for m in re.finditer(after, screen)]
                part = screen[spots[-1] :] if spots else ""
            if re.search(pattern, part, re.MULTILINE):
                return screen
            time.sleep(0.05)
        raise AssertionError(f"{pattern!r} never appeared; the screen was:\n{screen}")

    def wait_gone(self, pattern: str) -> str:
        deadline = time.monotonic() + DEADLINE_SECONDS
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if not re.search(pattern, screen, re.MULTILINE):
                return screen
            time.sleep(0.05)
        raise AssertionError(f"{pattern!r} never went away; the screen was:\n{screen}")


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[Terminal]:
    assert TMUX is not None
    socket = f"answerback-test-{uuid.uuid4().hex[:12]}"
    home = tmp_path / "home"
    home.mkdir()
    term = Terminal(TMUX, socket, home)
    try:
        yield term
    finally:
        subprocess.run(
            [TMUX, "-L", socket, "kill-server"], capture_output=True, timeout=30, check=False
        )


def connect(terminal: Terminal, *targets: str, options: str = "") -> None:
    command = " ".join(shlex.quote(t) for t in targets)
    terminal.start(f"{shlex.quote(sys.executable)} -m answerback connect {options} {command}")
    terminal.wait_for(PROMPT)


PROMPT = r"^answerback>\s*$"
"""The command prompt, waiting on a line of its own."""


def test_list_call_complete_status_and_history(terminal: Terminal) -> None:
    connect(terminal, TEAROOM)
    screen = terminal.wait_for("Connected to terminal_server")
    assert "Tearoom" in screen
    terminal.type("tools")
    terminal.wait_for(r"order_tea\s+│ Ask what tea")
    terminal.type("sta", enter=False)
    terminal.keys("Tab")
    terminal.wait_for(r"answerback> status\s*$")
    terminal.keys("C-u")
    terminal.type("call gre", enter=False)
    terminal.keys("Tab")
    terminal.wait_for(r"answerback> call greet\s*$")
    terminal.type(" name=Ada times=2")
    terminal.wait_for(r"Hello, Ada! Hello, Ada!")
    terminal.type("call brew steps=2")
    terminal.wait_for(r"terminal_server: brew █+ 2/2 step 2")
    terminal.wait_for(r"INFO\s+terminal_server: brewed step 2")
    terminal.type("call picture")
    terminal.wait_for(r"\[image image/png, 12 KB\]")
    terminal.type("status")
    screen = terminal.wait_for(r"0 question\(s\) waiting")
    assert re.search(r"terminal_server .* connected", screen)
    log = terminal.home / "state" / "answerback" / "logs" / "terminal_server.log"
    assert f"terminal_server writes its stderr to {log}" in screen
    terminal.type("quit")
    terminal.wait_for(r"\[exited 0\]")
    history = (terminal.home / "state" / "answerback" / "history").read_text()
    assert "call greet name=Ada times=2" in history


FORM_KEYS = "Ctrl-S accept"


def test_a_tools_required_arguments_are_asked_on_a_form(terminal: Terminal) -> None:
    connect(terminal, TEAROOM)
    terminal.type("call greet")
    screen = terminal.wait_for(FORM_KEYS)
    assert "Greet someone, perhaps more than once." in screen
    terminal.type("Ada", enter=False)
    terminal.keys("C-s")
    terminal.wait_for(r"^Hello, Ada!$")


def test_arguments_a_form_cannot_ask_are_typed_on_a_line(terminal: Terminal) -> None:
    """A list and an object are no form fields: the person is told which arguments,
    types them as after ``call TOOL`` (JSON or name=value), or leaves the line empty."""
    connect(terminal, TEAROOM)
    terminal.type("call plan")
    screen = terminal.wait_for(r"^plan arguments:\s*$")
    assert "A form cannot ask the arguments of plan (its stops)" in screen
    assert "type them as stops=..." in screen  # the tool's own argument, not name=value
    terminal.type('{"stops": ["Oslo", "Bergen"]}')
    terminal.wait_for(r"^Oslo -> Bergen$")
    terminal.type("call plan")
    terminal.wait_for(r"^plan arguments:\s*$", after=r"Oslo -> Bergen")
    terminal.type("""stops='["Oslo", "Voss"]' budget='{"nok": 900}'""")
    terminal.wait_for(r"^Oslo -> Voss within \{'nok': 900\}$")
    terminal.type("call plan")
    terminal.wait_for(r"^plan arguments:\s*$", after=r"Oslo -> Voss")
    terminal.type("")
    terminal.wait_for(r"^Not called\.$")
    terminal.type("call plan")
    terminal.wait_for(r"^plan arguments:\s*$", after=r"Not called")
    terminal.type('stops=\'["Oslo"')
    terminal.wait_for(r"The line could not be read \(No closing quotation\): a value with spaces")
    terminal.wait_for(r"^plan arguments: stops='\[\"Oslo\"\s*$")  # asked again, as typed


def test_ctrl_c_or_ctrl_d_on_the_arguments_line_calls_nothing(terminal: Terminal) -> None:
    """Ctrl-C there ended the whole session with a traceback, and Ctrl-D said "call
    failed (EOFError: ); ... a bug in answerback"; both now leave the line as empty."""
    connect(terminal, TEAROOM)
    for key in ("C-c", "C-d"):
        terminal.type("call plan")
        terminal.wait_for(r"^plan arguments:\s*$", after=r"answerback> call plan")
        # A key pressed as the line is drawn may reach it before it reads the keyboard:
        # wait until it echoes one, as a person sees the line working before giving up.
        terminal.type("x", enter=False)
        terminal.wait_for(r"^plan arguments: x\s*$", after=r"answerback> call plan")
        terminal.keys("BSpace")
        terminal.wait_for(r"^plan arguments:\s*$", after=r"answerback> call plan")
        terminal.keys(key)
        terminal.wait_for(r"^Not called\.\n(.*\n)*answerback>\s*$", after=r"answerback> call plan")
    screen = terminal.screen()
    assert "Traceback" not in screen
    assert "a bug in answerback" not in screen


def test_a_wrong_value_is_asked_again_then_the_right_one_is_sent(terminal: Terminal) -> None:
    connect(terminal, TEAROOM)
    terminal.type("call order_tea")
    screen = terminal.wait_for(FORM_KEYS)
    assert "What would you like?" in screen
    assert "terminal_server" in screen
    terminal.keys("Space", "Tab")  # green, then to the cups
    terminal.type("9", enter=False)
    terminal.keys("C-s")
    screen = terminal.wait_for(r"must be at most 5")
    assert "Order:" not in screen
    terminal.keys("BSpace")
    terminal.type("2", enter=False)
    terminal.keys("C-s")
    terminal.wait_for(r"Order: 2 x green\.")
    terminal.wait_gone(FORM_KEYS)


def test_an_enum_and_an_optional_argument_are_asked_on_a_form(terminal: Terminal) -> None:
    """pydantic writes an Enum as a $ref and an optional argument as anyOf with null:
    the form shows the Enum's values as choices and sends the one picked, leaves the
    optional number empty and unsent, and names the optional list it cannot show."""
    connect(terminal, TEAROOM)
    terminal.type("call paint")
    screen = terminal.wait_for(FORM_KEYS)
    assert "Paint the walls" in screen
    assert re.search(r"\( \) red\s+\( \) ochre", screen), screen
    assert "Coats" in screen
    assert (
        "The form for paint leaves out the optional rooms, which a form cannot ask: to "
        "give it, type call paint rooms=... instead."
    ) in screen
    terminal.keys("Down", "Space")  # ochre
    terminal.keys("C-s")
    # coats left empty is not sent: the server refuses a null for it
    terminal.wait_for(r"^Painted ochre, coats: not given, rooms: all\.$")
    terminal.wait_gone(FORM_KEYS)


def test_an_optional_yes_or_no_may_be_left_unanswered(terminal: Terminal) -> None:
    """Left unanswered it is not sent (a checkbox sent "no"); Space answers it."""
    connect(terminal, TEAROOM)
    terminal.type("call subscribe")
    screen = terminal.wait_for(FORM_KEYS)
    asked = "Newsletter  (yes or no)\n  The monthly newsletter\n  ( ) yes  ( ) no  — unanswered"
    assert asked in screen
    terminal.keys("C-s")
    terminal.wait_for(r"^Newsletter: not answered\.$")
    terminal.type("call subscribe")
    terminal.wait_for(FORM_KEYS)
    terminal.keys("Space", "Space")
    terminal.wait_for(r"\( \) yes  \(•\) no *$")  # spaces where "— unanswered" was
    terminal.keys("C-s")
    terminal.wait_for(r"^Newsletter: no\.$")


def test_line_mode_takes_an_earlier_answer_away_with_a_dash(terminal: Terminal) -> None:
    """Line mode at a real keyboard: Enter keeps what the brackets show, ``-`` alone
    leaves an optional field unanswered (its hint says so), whatever it showed."""
    terminal.start(LINE_FORM)
    terminal.wait_for(r"^Name \* \(text\) \[Ada\]\n>\s*$")
    terminal.keys("Enter")
    terminal.wait_for(r"^Note \(text; -: unanswered\) \[by the window\]\n>\s*$")
    terminal.type("-")
    terminal.wait_for(r"^Guests \(whole number; -: unanswered\) \[2\]\n>\s*$")
    terminal.type("-")
    terminal.wait_for(r"^Send this answer\? .*\n>\s*$")
    terminal.keys("Enter")
    terminal.wait_for(r'^\{"name": "Ada"\}\n\[exited 0\]$')


def test_decline_and_cancel(terminal: Terminal) -> None:
    connect(terminal, TEAROOM)
    terminal.type("call order_tea")
    terminal.wait_for(FORM_KEYS)
    terminal.keys("C-d")
    terminal.wait_for(r"No order \(decline\)\.")
    terminal.type("call order_tea")
    terminal.wait_for(FORM_KEYS, after=r"No order \(decline\)")
    terminal.keys("Escape")
    terminal.wait_for(r"No order \(cancel\)\.")


def test_a_url_card_for_a_safe_link(terminal: Terminal) -> None:
    connect(terminal, TEAROOM)
    terminal.type("call visit url=https://github.com/login")
    screen = terminal.wait_for(r"o open in browser")
    assert "Open a link? — from terminal_server" in screen
    assert "https://github.com/login" in screen
    assert "Site: github.com" in screen
    terminal.keys("o")
    terminal.wait_for(r"visit: accept")


def test_a_url_card_for_a_lookalike_link_needs_a_second_key(terminal: Terminal) -> None:
    connect(terminal, TEAROOM)
    terminal.type("call visit url=https://paypa1.com/login")
    screen = terminal.wait_for(r"o open in browser")
    assert "HIGH RISK" in screen
    assert "paypa1.com looks like paypal.com but is a different site." in screen
    terminal.keys("o")
    terminal.wait_for(r"This link is high risk\.")
    terminal.keys("n")
    terminal.wait_for(r"o open in browser")
    terminal.keys("d")
    terminal.wait_for(r"visit: decline")


def test_a_sampling_request_is_approved_with_a_typed_reply(terminal: Terminal) -> None:
    connect(terminal, TEAROOM)
    terminal.type("call summarise text=teapots")
    screen = terminal.wait_for(r"a approve")
    assert "Sampling request — from terminal_server" in screen
    assert "Summarise: teapots" in screen
    assert "Be brief." in screen
    terminal.keys("a")
    terminal.wait_for(r"Ctrl-S send reply")
    terminal.type("Pots for tea.", enter=False)
    terminal.keys("C-s")
    terminal.wait_for(r"summary: Pots for tea\.")


@pytest.fixture
def model_url() -> Iterator[str]:
    """An OpenAI-compatible endpoint on loopback (tests/servers/fake_openai_server.py)."""
    with subprocess.Popen(
        [sys.executable, str(SERVERS / "fake_openai_server.py")],
        stdout=subprocess.PIPE,
        text=True,
    ) as process:
        try:
            assert process.stdout is not None
            line = process.stdout.readline()  # the server prints it once it listens
            assert line.startswith("listening at "), line
            yield line.removeprefix("listening at ").strip()
        finally:
            process.kill()


def test_a_configured_model_drafts_the_sampling_reply(
    terminal: Terminal, model_url: str, tmp_path: Path
) -> None:
    """With --model-url, the approval screen opens on the model's draft; the person edits
    nothing and sends it, and the audit log records who answered."""
    audit = tmp_path / "audit.jsonl"
    connect(
        terminal,
        TEAROOM,
        options=f"--model-url {model_url} --model tiny-model --sampling-audit {audit}",
    )
    terminal.type("call summarise text=teapots")
    terminal.wait_for(r"a approve")
    terminal.keys("a")
    screen = terminal.wait_for(r"Ctrl-S send reply")
    assert "Model draft for: Summarise: teapots" in screen
    terminal.keys("C-s")
    terminal.wait_for(r"summary: Model draft for: Summarise: teapots")
    lines = [json.loads(line) for line in audit.read_text().splitlines()]
    assert [(line["event"], line["outcome"]) for line in lines] == [
        ("request", "admitted"),
        ("outcome", "answered"),
    ]
    assert lines[1]["model"] == "tiny-model"


def test_model_url_without_a_model_is_a_usage_error(terminal: Terminal) -> None:
    terminal.start(
        f"{shlex.quote(sys.executable)} -m answerback connect --model-url http://127.0.0.1:9/v1 "
        f"{shlex.quote(TEAROOM)}"
    )
    terminal.wait_for(r"needs a model name: pass --model NAME or set OPENAI_MODEL")
    terminal.wait_for(r"\[exited 2\]")


def test_a_slow_person_outlasts_the_call_timeout(terminal: Terminal) -> None:
    """The call may go unanswered for 1 second; the person takes three. The timer stands
    still while the form is up, so the call still succeeds. (The tea room is served
    already: its start, on a busy machine, could outlast the second for connecting.)"""
    with served_by_answerback(SERVERS / "terminal_server.py") as tearoom:
        connect(terminal, tearoom, options="--timeout 1")
        terminal.type("call order_tea")
        terminal.wait_for(FORM_KEYS)
        time.sleep(3)  # the person thinking: the time under test, not a synchronisation
        terminal.keys("Down", "Space", "Tab")
        terminal.type("1", enter=False)
        terminal.keys("C-s")
        screen = terminal.wait_for(r"Order: 1 x black\.")
    assert "timed out" not in screen.lower()


def test_a_server_that_dies_takes_its_form_away_with_a_message(
    terminal: Terminal, tmp_path: Path
) -> None:
    pidfile = tmp_path / "server.pid"
    connect(terminal, TEAROOM)
    terminal.type(f"call vanish pidfile={pidfile}")
    terminal.wait_for(r"A form whose server will die")
    os.kill(int(pidfile.read_text()), signal.SIGKILL)
    screen = terminal.wait_gone(FORM_KEYS)
    terminal.wait_for(r"went away")
    screen = terminal.wait_for(r"\[1\] cannot talk to terminal_server")
    assert "server disconnected" in screen or "went away" in screen
    terminal.type("status")
    terminal.wait_for(r"lost: ")


def test_two_servers_asking_at_once_are_shown_one_at_a_time(
    terminal: Terminal, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    connect(terminal, TEAROOM, LIBRARY)
    terminal.wait_for("Connected to library_server")
    terminal.type(f"call order_tea gate={gate}")
    terminal.wait_for(r"\[1\] terminal_server: call order_tea…")
    terminal.type("call issue_card")
    screen = terminal.wait_for(r"What name should go on the card\?")
    assert "from library_server" in screen
    terminal.wait_for(FORM_KEYS)  # it takes keys (it drops those typed as it opened)
    gate.write_text("go")  # now the tea room asks too, while the library's form is up
    terminal.type("Ada", enter=False)
    terminal.keys("C-s")
    screen = terminal.wait_for(r"What would you like\?")
    assert "from terminal_server" in screen
    terminal.wait_for(r"Card issued to Ada\.")
    terminal.wait_for(FORM_KEYS, after=r"What would you like\?")
    terminal.keys("C-d")
    terminal.wait_for(r"No order \(decline\)\.")


def test_call_at_a_terminal_asks_the_person(terminal: Terminal) -> None:
    terminal.start(
        f"{shlex.quote(sys.executable)} -m answerback call {shlex.quote(TEAROOM)} order_tea"
    )
    screen = terminal.wait_for(FORM_KEYS)
    assert "What would you like?" in screen
    terminal.keys("Down", "Down", "Space", "Tab")
    terminal.type("3", enter=False)
    terminal.keys("C-s")
    terminal.wait_for(r"^Order: 3 x oolong\.$")
    terminal.wait_for(r"\[exited 0\]")


def test_call_at_a_terminal_asks_a_tools_required_arguments(terminal: Terminal) -> None:
    """Given none, they were sent as none, and the server's refusal of the call ("name:
    Field required") exited 1 as if the tool had failed; connect's form asks them."""
    terminal.start(f"{shlex.quote(sys.executable)} -m answerback call {shlex.quote(TEAROOM)} greet")
    screen = terminal.wait_for(FORM_KEYS)
    assert "Greet someone, perhaps more than once." in screen
    terminal.type("Ada", enter=False)
    terminal.keys("C-s")
    terminal.wait_for(r"^Hello, Ada!$")
    terminal.wait_for(r"\[exited 0\]")


@pytest.mark.parametrize(
    ("target", "tool", "said"),
    [
        (TEAROOM, "no_such_tool", r"answerback: Tearoom has no tool 'no_such_tool' \(its tools:"),
        (
            ASKING,
            "ask_model_with_tools",
            r"answerback: asking_server asks for a model's reply that may call tools "
            r"\(sampling with tools\), which this command does not offer\.",
        ),
    ],
    ids=["no-such-tool", "sampling-with-tools"],
)
def test_call_at_a_terminal_that_fails_says_why_and_exits_4(
    terminal: Terminal, target: str, tool: str, said: str
) -> None:
    """It was a traceback (the failure came out of the question broker's task group, in
    an exception group) and exit 1; and a refusal for want of sampling with tools told a
    person already at a terminal to run the command at a terminal."""
    terminal.start(f"{shlex.quote(sys.executable)} -m answerback call {shlex.quote(target)} {tool}")
    screen = terminal.wait_for(r"\[exited \d+\]")
    assert re.search(said, screen), screen
    assert "[exited 4]" in screen
    assert "Traceback" not in screen


def test_a_refusal_for_sampling_with_tools_says_the_session_does_not_offer_it(
    terminal: Terminal,
) -> None:
    """It quoted the library's advice to a program's author (pass sampling_capabilities=)."""
    connect(terminal, ASKING)
    terminal.type("call ask_model_with_tools")
    screen = terminal.wait_for(r"which this command does not offer\.")
    assert "asks for a model's reply that may call tools (sampling with tools)" in screen
    assert "sampling_capabilities" not in screen


def test_roots_added_at_run_time_reach_the_server(terminal: Terminal, tmp_path: Path) -> None:
    connect(terminal, ASKING)
    terminal.type(f"roots add {tmp_path}")
    terminal.wait_for(f"Added root {tmp_path}")
    terminal.type("call list_my_roots")
    terminal.wait_for(re.escape(tmp_path.as_uri()))
    terminal.type(f"roots remove {tmp_path}")
    terminal.wait_for(f"Removed root {tmp_path}")


def test_a_muted_server_is_declined_unseen(terminal: Terminal) -> None:
    connect(terminal, TEAROOM)
    terminal.type("mute terminal_server")
    terminal.wait_for("Muted terminal_server")
    terminal.type("call order_tea")
    screen = terminal.wait_for(r"No order \(decline\)\.")
    assert FORM_KEYS not in screen
    terminal.type("status")
    terminal.wait_for(r"connected, muted")
    terminal.type("unmute terminal_server")
    terminal.type("call order_tea")
    terminal.wait_for(FORM_KEYS)
    terminal.keys("Escape")
    terminal.wait_for(r"No order \(cancel\)\.")


def test_the_form_mutes_its_server_with_ctrl_q(terminal: Terminal) -> None:
    """The keys every screen offers against a pestering server: Ctrl-Q answers what is
    on screen and declines the server's next questions unseen."""
    connect(terminal, TEAROOM)
    terminal.type("call order_tea")
    screen = terminal.wait_for(FORM_KEYS)
    assert "Ctrl-Q mute terminal_server" in screen
    terminal.keys("C-q")
    terminal.wait_for(r"No order \((decline|cancel)\)\.")
    terminal.type("call order_tea")
    screen = terminal.wait_for(r"No order \(decline\)\.", after=r"answerback> call order_tea")
    assert FORM_KEYS not in screen.split("answerback> call order_tea")[-1]
    terminal.type("status")
    terminal.wait_for(r"connected, muted")


def test_a_stray_print_is_a_warning_and_the_server_stays(terminal: Terminal) -> None:
    """A server that prints on stdout is still usable: the line is reported once as a
    warning above the prompt, and the server is not taken for gone."""
    connect(terminal, f"{sys.executable} {SERVERS / 'stray_output_server.py'}")
    terminal.type("call echo text=still-here")
    screen = terminal.wait_for(r"^still-here$")
    assert "answerback: WARNING: stray_output_server: The server `" in screen
    assert "went away" not in screen
    terminal.type("status")
    terminal.wait_for(r"stray_output_server.*connected")


def order_tea_at_the_gate(terminal: Terminal, gate: Path, arguments: str = "") -> None:
    """Connect to the tea room and start ``order_tea``, which asks once something is
    written to the FIFO ``gate``; returns with the prompt back."""
    os.mkfifo(gate)
    connect(terminal, TEAROOM)
    terminal.type(f"call order_tea gate={gate} {arguments}".rstrip())
    terminal.wait_for(r"\[1\] terminal_server: call order_tea…")
    terminal.wait_for(PROMPT, after=r"call order_tea…")


def test_a_question_arriving_while_typing_takes_the_screen_and_gives_the_line_back(
    terminal: Terminal, tmp_path: Path
) -> None:
    gate = tmp_path / "gate"
    order_tea_at_the_gate(terminal, gate)
    terminal.type("call gre", enter=False)
    terminal.wait_for(r"^answerback> call gre$")
    gate.write_text("go")  # the server asks now, while the person is typing
    terminal.wait_for(FORM_KEYS)
    terminal.keys("Escape")
    terminal.wait_for(r"No order \(cancel\)\.")
    terminal.wait_for(r"^answerback> call gre$", after=r"No order")
    terminal.type("et name=Ada")
    terminal.wait_for(r"^Hello, Ada!$")


def test_a_question_waits_for_the_arguments_form_open_before_it(
    terminal: Terminal, tmp_path: Path
) -> None:
    """A server's question arriving while a tool's arguments form is up waits for it:
    it does not open over the form and take the keys typed for the form."""
    gate = tmp_path / "gate"
    order_tea_at_the_gate(terminal, gate, "announce=true")
    terminal.type("call greet")
    terminal.wait_for("Greet someone, perhaps more than once.")
    terminal.wait_for(FORM_KEYS)  # it takes keys (it drops those typed as it opened)
    gate.write_text("go")  # the server asks now, while the arguments form is up
    terminal.wait_for("asking what tea")
    terminal.type("Ada", enter=False)
    terminal.keys("C-s")
    terminal.wait_for(r"^Hello, Ada!$")
    terminal.wait_for(FORM_KEYS, after=r"What would you like\?")
    terminal.keys("Escape")
    terminal.wait_for(r"No order \(cancel\)\.")


NO_SUCH_PROGRAM = "no-such-program-for-answerback --flag"
"""A command line whose program is not installed (a word on its own, which names no config
entry, is refused before anything is started)."""


def test_a_server_that_cannot_start_is_reported_and_the_others_carry_on(
    terminal: Terminal,
) -> None:
    connect(terminal, NO_SUCH_PROGRAM, TEAROOM)
    screen = terminal.wait_for("Connected to terminal_server")
    assert "cannot talk to no-such-program-for-answerback" in screen
    terminal.type("status")
    terminal.wait_for(r"no-such-program-for-answerback .* not connected")


def test_connect_exits_3_when_no_server_can_be_reached(terminal: Terminal) -> None:
    terminal.start(
        f"{shlex.quote(sys.executable)} -m answerback connect {shlex.quote(NO_SUCH_PROGRAM)}"
    )
    screen = terminal.wait_for(r"\[exited 3\]")
    assert "No server could be reached." in screen


def test_cancel_stops_a_servers_running_calls(terminal: Terminal, tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    os.mkfifo(gate)  # nobody writes: the call waits until it is cancelled
    connect(terminal, TEAROOM)
    terminal.type(f"call order_tea gate={gate}")
    terminal.wait_for(r"\[1\] terminal_server: call order_tea…")
    terminal.type("cancel terminal_server")
    terminal.wait_for(r"Cancelled 0 question\(s\) and 1 call\(s\) of terminal_server\.")
    terminal.wait_for(r"\[1\] call order_tea: cancelled")
    terminal.type("call greet name=Bo")
    terminal.wait_for(r"^Hello, Bo!$")
    # The cancelled call's thread still waits to open the FIFO, and a thread cannot be
    # cancelled: let it finish, or the server could not exit once the test ends.
    with contextlib.suppress(OSError):  # nobody reads it any more: nothing to release
        os.close(os.open(gate, os.O_WRONLY | os.O_NONBLOCK))


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc to see a process's state")
def test_closing_the_terminal_closes_the_servers(terminal: Terminal, tmp_path: Path) -> None:
    """Closing the window sends SIGHUP, which stops the session as Ctrl-C would: the
    client closes its server and ends the server's process group, helper included.
    (The server's group is its own, so the terminal's SIGHUP does not reach it.)"""
    pidfile = tmp_path / "helper.pid"
    connect(terminal, TEAROOM)
    terminal.type(f"call leave_a_helper pidfile={pidfile}")
    terminal.wait_for(r"\[1\] terminal_server: call leave_a_helper…")
    deadline = time.monotonic() + DEADLINE_SECONDS
    while not pidfile.exists() or not pidfile.read_text():
        assert time.monotonic() < deadline, "the tool never started its helper"
        time.sleep(0.05)
    terminal.run("kill-server")
    helper = int(pidfile.read_text())
    while not ended(helper):
        assert time.monotonic() < deadline + DEADLINE_SECONDS, "the helper outlived the terminal"
        time.sleep(0.05)


def test_a_state_directory_that_cannot_be_written_is_said_and_the_session_works(
    terminal: Terminal,
) -> None:
    """The state directory is a file (or on a read-only disk): the history and the
    server's log cannot be kept. Each is said once, with what to do, and the session
    works without them."""
    not_a_directory = terminal.home / "state-file"
    not_a_directory.write_text("")
    terminal.start(
        f"ANSWERBACK_STATE_DIR={shlex.quote(str(not_a_directory))} "
        f"{shlex.quote(sys.executable)} -m answerback connect {shlex.quote(TEAROOM)}"
    )
    screen = terminal.wait_for(PROMPT)
    assert re.search(
        r"^The command history is not kept: .*File exists.*\. Pass --history FILE, "
        r"or set ANSWERBACK_STATE_DIR to a writable directory\.$",
        screen,
        re.MULTILINE,
    )
    assert re.search(
        r"^terminal_server's stderr is not kept: .*Not a directory.*\. To keep it, "
        r"set ANSWERBACK_STATE_DIR to a writable directory\.$",
        screen,
        re.MULTILINE,
    )
    terminal.type("call greet name=Ada")
    terminal.wait_for(r"^Hello, Ada!$")
    terminal.type("status")
    terminal.wait_for(r"^terminal_server's stderr is discarded: its log cannot be written$")
    terminal.type("quit")
    terminal.wait_for(r"\[exited 0\]")
    assert not_a_directory.read_text() == ""


def test_a_history_that_stops_taking_writes_is_said_once_and_kept_in_memory(
    terminal: Terminal,
) -> None:
    """Writing the history fails mid-session (here no file may grow: ``ulimit -f 0``, as
    on a full disk): the session says so once and goes on, Up still walks the history."""
    connect_command = f"{shlex.quote(sys.executable)} -m answerback connect {shlex.quote(TEAROOM)}"
    terminal.start(f"sh -c {shlex.quote(f'ulimit -f 0 && exec {connect_command}')}")
    terminal.wait_for(PROMPT)
    terminal.type("call greet name=Ada")
    screen = terminal.wait_for(r"^Hello, Ada!$")
    warning = "The command history is kept in memory only from now on: [Errno 27] File too large."
    assert warning in screen
    terminal.type("call greet name=Bo")
    terminal.wait_for(r"^Hello, Bo!$")
    terminal.keys("Up")
    terminal.keys("Up")
    terminal.wait_for(r"answerback> call greet name=Ada\s*$", after=r"Hello, Bo!")
    terminal.keys("C-u")
    terminal.type("quit")
    screen = terminal.wait_for(r"\[exited 0\]")
    assert screen.count(warning) == 1


def test_a_server_run_by_hand_says_how_to_talk_to_it(terminal: Terminal) -> None:
    """A person who starts a stdio server in a terminal is told what it waits for, and
    the command it gives connects to it; a line typed to it is answered, and Ctrl-C
    ends it with the shell's status for an interrupted program."""
    terminal.start(LIBRARY)
    screen = terminal.wait_for(r"Ctrl-C stops it\.$")
    hint = re.search(
        r"^answerback: Library speaks MCP on stdin and stdout, and waits for a client\. "
        r"To use it yourself: answerback connect (.+)\. Ctrl-C stops it\.$",
        screen,
        re.MULTILINE,
    )
    assert hint is not None, screen
    [command] = shlex.split(hint.group(1))
    terminal.type('{"jsonrpc": "2.0", "id": 1, "method": "ping"}')
    terminal.wait_for(r'^\{"jsonrpc":"2\.0","id":1,"result":\{\}\}$')
    terminal.keys("C-c")
    terminal.wait_for(r"\[exited 130\]")
    connect(terminal, command)
    terminal.wait_for(r"Connected to library_server \(Library")


EVERYTHING = f"node {EVERYTHING_ENTRY} stdio"


@pytest.mark.skipif(
    shutil.which("node") is None or not EVERYTHING_ENTRY.exists(),
    reason="the TypeScript reference server is not installed: npm ci --prefix interop",
)
def test_the_typescript_reference_server_asks_a_form(terminal: Terminal) -> None:
    connect(terminal, EVERYTHING)
    terminal.wait_for(r"Connected to server-everything")
    terminal.type("call trigger-elicitation-request")
    screen = terminal.wait_for(FORM_KEYS)
    assert "from server-everything" in screen
    terminal.keys("C-d")
    terminal.wait_for(r"\[1\] server-everything: call trigger-elicitation-request →")
