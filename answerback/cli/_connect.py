"""``answerback connect``: an interactive session with one or more servers.

One person, many servers: every server's questions go through one ``Broker`` and are
shown by the terminal presenter, one at a time, each naming its server. The command
prompt and those screens share one terminal, so the prompt steps aside while a question
is on screen (``PromptSeat``) and comes back with what was being typed. Calls, reads and
prompts run in the background, so the prompt stays usable (``cancel SERVER`` ends a
server's questions and calls), and two servers can ask at once. Everything printed while
the prompt is up goes above it (prompt_toolkit's ``patch_stdout``), and each stdio
server's stderr goes to a log file (``status`` says where) instead of over the screen.
"""

from __future__ import annotations

import argparse
import contextlib
import shlex
import signal
import sys
import threading
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO, cast, get_args

import anyio
from anyio.abc import TaskGroup, TaskStatus
from prompt_toolkit import PromptSession
from prompt_toolkit.application import create_app_session
from prompt_toolkit.completion import (
    CompleteEvent,
    Completer,
    Completion,
    PathCompleter,
)
from prompt_toolkit.document import Document
from prompt_toolkit.history import FileHistory, History, InMemoryHistory
from prompt_toolkit.input.typeahead import get_typeahead, store_typeahead
from prompt_toolkit.key_binding import KeyPress
from prompt_toolkit.output import create_output
from prompt_toolkit.patch_stdout import patch_stdout
from rich.console import Console
from rich.table import Table
from rich.text import Text

from answerback.cli._argument_form import argument_form
from answerback.cli._arguments import (
    QUOTING,
    ArgumentsCancelled,
    ArgumentsError,
    parse_arguments,
)
from answerback.cli._ask_arguments import ask_arguments
from answerback.cli._interface import ExitCode, redacted
from answerback.cli._loop import run_async
from answerback.cli._model import model_sampler
from answerback.cli._oneshot import (
    call,
    connect_timeout,
    connected,
    failure,
    listing,
    one_shot_responder,
)
from answerback.cli._output import PlainConsole
from answerback.cli._plain import (
    LineSeat,
    LineSeatedPresenter,
    interruptible,
    plain_lines,
    suspend_ignored,
)
from answerback.cli._render import (
    log_line,
    print_listing,
    prompt_text,
    read_text,
    result_text,
    shown,
)
from answerback.cli._reporting import CommandResponder
from answerback.cli._targets import Target, state_dir
from answerback.client import Client, Responder
from answerback.client._session import told_by_server
from answerback.interact import Answer, Broker, Presenter, Question, Roots
from answerback.interact.sampling import ModelSampler
from answerback.interact.terminal import LinePresenter, TerminalPresenter
from answerback.interact.terminal._screen import ctrl_z_ignored
from answerback.types import (
    LoggingLevel,
    LoggingMessageNotificationParams,
    Prompt,
    Resource,
    ResourceTemplate,
    Tool,
)

LOG_BYTES_KEPT = 10 * 1024 * 1024
"""A server's stderr log over this size is set aside (as ``NAME.log.1``, replacing the
one before) when the next session starts, so a chatty server cannot fill the disk over
weeks of sessions."""


def server_log(name: str) -> Path:
    """The file a stdio server's stderr is appended to, its directory made, and set
    aside first if it has grown past ``LOG_BYTES_KEPT``. Raises ``OSError`` if it cannot
    be written."""
    logs = state_dir() / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    log = logs / f"{name}.log"
    with contextlib.suppress(FileNotFoundError):
        if log.stat().st_size > LOG_BYTES_KEPT:
            log.replace(log.with_name(f"{log.name}.1"))
    with log.open("ab"):  # made, and writable
        pass
    return log


STATE_ADVICE = "set ANSWERBACK_STATE_DIR to a writable directory"


class KeptHistory(FileHistory):
    """The command history in its file, which the session outlives: a history that
    cannot be written (the disk is full) is said once and kept in memory from then on,
    instead of ending the session at the next command."""

    def __init__(self, path: Path, warn: Callable[[str], None]) -> None:
        super().__init__(str(path))
        self.warn = warn
        self.failed = False

    def store_string(self, string: str) -> None:
        if self.failed:
            return
        try:
            super().store_string(string)
        except OSError as exc:
            self.failed = True
            self.warn(
                f"[yellow]The command history is kept in memory only from now on: "
                f"{shown(str(exc))}.[/]"
            )


def command_history(path: Path, warn: Callable[[str], None]) -> History:
    """The history kept in ``path``; where it cannot be (its directory cannot be made, or
    it cannot be written), one kept in memory, after a warning that says why."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("ab"):  # made, and writable
            pass
    except OSError as exc:
        warn(
            f"[yellow]The command history is not kept: {shown(str(exc))}. Pass --history "
            f"FILE, or {STATE_ADVICE}.[/]"
        )
        return InMemoryHistory()
    return KeptHistory(path, warn)


COMMANDS = {
    "tools": "tools [SERVER]: list the tools",
    "resources": "resources [SERVER]: list the resources",
    "prompts": "prompts [SERVER]: list the prompts",
    "call": "call [SERVER:]TOOL [key=value ... | JSON]: call a tool (none given: a form asks)",
    "read": "read [SERVER:]URI: read a resource",
    "prompt": "prompt [SERVER:]NAME [key=value ...]: get a prompt",
    "roots": "roots | roots add PATH | roots remove PATH: the directories servers may use",
    "loglevel": "loglevel LEVEL: the least severe log message servers send",
    "status": "status: servers, protocol versions, questions waiting, muted servers",
    "cancel": "cancel SERVER: answer 'cancel' to its questions and stop its calls",
    "reconnect": "reconnect [SERVER]: connect again (by default, to each server that went away)",
    "mute": "mute SERVER: decline its questions unseen from now on",
    "unmute": "unmute SERVER: show its questions again",
    "help": "help: this list",
    "quit": "quit: leave (Ctrl-D too)",
}


class _Suspended(Exception):
    """Ends the command prompt so a question can have the screen."""


class PromptSeat:
    """The one terminal, shared by the command prompt and the screens that ask (a
    server's question, a tool's arguments).

    A screen asks for the terminal with ``async with seat.screen()``: the prompt (if it
    is up) exits, keeping what was typed, and comes back when no screen wants the
    terminal any more. Screens take it one at a time: two would both draw and both read
    the keys, and a server's question opening over a tool's arguments form got what the
    person typed for the form."""

    def __init__(self, session: PromptSession[str]) -> None:
        self.session = session
        self.wanted = 0
        self.free = anyio.Event()
        self.free.set()
        self.prompt_closed: anyio.Event | None = None
        self.saved = ""
        self.typed_ahead: list[KeyPress] = []
        """Keys the prompt read before a screen took the terminal, run once it is back."""
        self.one_screen = anyio.Lock()

    @asynccontextmanager
    async def screen(self) -> AsyncGenerator[None]:
        self.wanted += 1
        if self.free.is_set():
            self.free = anyio.Event()
        try:
            closed = self.prompt_closed
            app = self.session.app
            if closed is not None:
                if app.is_running and app.future is not None and not app.future.done():
                    self.saved = app.current_buffer.text
                    app.exit(exception=_Suspended())
                await closed.wait()
            # Keys the prompt read and had not run yet (the rest of a paste) are the
            # prompt's: the screen would take them as typed ahead and drop them.
            self.typed_ahead += get_typeahead(app.input)
            async with self.one_screen:
                yield
        finally:
            self.wanted -= 1
            if self.wanted == 0:
                self.free.set()

    async def read(self, message: str) -> str:
        """The next command line, once no question holds the screen (raises
        ``EOFError`` on Ctrl-D, ``KeyboardInterrupt`` on Ctrl-C)."""
        while True:
            # Waiting lets other tasks run even when the terminal is free, and a screen
            # may take it meanwhile: the prompt must not start under it (both drew, and
            # the prompt, closing last, left the screen deaf to every key).
            while not self.free.is_set():
                await self.free.wait()
            closed = self.prompt_closed = anyio.Event()
            default, self.saved = self.saved, ""
            # Before any keys a screen left on closing: those were typed later.
            left_by_screen = get_typeahead(self.session.app.input)
            store_typeahead(self.session.app.input, [*self.typed_ahead, *left_by_screen])
            self.typed_ahead = []
            try:
                return await self.session.prompt_async(
                    message, default=default, handle_sigint=False
                )
            except _Suspended:
                continue
            finally:
                self.prompt_closed = None
                closed.set()


class SeatedPresenter:
    """A presenter that takes the screen from the prompt for as long as it shows."""

    def __init__(self, inner: Presenter, seat: PromptSeat) -> None:
        self.inner = inner
        self.seat = seat

    async def present(self, question: Question) -> Answer:
        async with self.seat.screen():
            return await self.inner.present(question)

    async def withdrawn(self, question: Question, reason: str) -> None:
        await self.inner.withdrawn(question, reason)


@dataclass(eq=False)
class Holding:
    """One connection's own task, seen from outside: a client's ``async with`` must be
    left in the task that entered it (anyio's cancel scopes nest per task), so each
    server's lives in a task of its own, and any one closes, in any order, by telling
    that task to let go."""

    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    settled: anyio.Event = field(default_factory=anyio.Event)
    """Set once it has connected or failed to."""
    stop: anyio.Event = field(default_factory=anyio.Event)
    done: anyio.Event = field(default_factory=anyio.Event)
    """Set once its client has closed."""
    quiet: bool = False
    """Its server had gone away: its close failing says nothing new."""

    async def close(self) -> None:
        """Let go of the connection and wait until it has closed: gracefully once
        connected, by cancelling while still connecting (a frozen server never answers)."""
        self.stop.set()
        if not self.settled.is_set():
            self.scope.cancel()
        await self.done.wait()


@dataclass(eq=False)
class Server:
    """One connected server as the session knows it."""

    target: Target
    client: Client | None = None
    stderr_log: Path | None = None
    lost: str | None = None
    tools: list[Tool] = field(default_factory=list[Tool])
    resources: list[Resource] = field(default_factory=list[Resource])
    templates: list[ResourceTemplate] = field(default_factory=list[ResourceTemplate])
    prompts: list[Prompt] = field(default_factory=list[Prompt])
    calls: dict[anyio.CancelScope, str] = field(default_factory=dict[anyio.CancelScope, str])
    """Its calls, reads and prompts running, each with its job's label."""
    holding: Holding | None = None
    """The task holding its connection (the latest one started)."""

    @property
    def name(self) -> str:
        return self.target.name


class SessionCompleter(Completer):
    """Completes commands, then what each command takes: tool, resource and prompt
    names (``server:name`` when several servers are connected), server names, levels,
    paths. ``servers`` are the live ones; ``everyone`` those gone too, which only
    ``reconnect`` takes."""

    def __init__(
        self, servers: Callable[[], list[Server]], everyone: Callable[[], list[Server]]
    ) -> None:
        self.servers = servers
        self.everyone = everyone
        self.paths = PathCompleter(only_directories=True, expanduser=True)

    def get_completions(
        self, document: Document, complete_event: CompleteEvent
    ) -> Iterable[Completion]:
        text = document.text_before_cursor
        words = text.split()
        if not words or (len(words) == 1 and not text.endswith(" ")):
            prefix = words[0] if words else ""
            yield from _matching(prefix, COMMANDS)
            return
        command = words[0]
        arguments = words[1:] if text.endswith(" ") else words[1:-1]
        current = "" if text.endswith(" ") else words[-1]
        if arguments and command not in ("roots",):
            return
        if command == "reconnect":
            yield from _matching(current, [s.name for s in self.everyone()])
            return
        servers = self.servers()
        if command in ("tools", "resources", "prompts", "cancel", "mute", "unmute"):
            yield from _matching(current, [s.name for s in servers])
        elif command == "call":
            yield from _matching(current, _qualified(servers, _tools))
        elif command == "read":
            yield from _matching(current, _qualified(servers, _uris))
        elif command == "prompt":
            yield from _matching(current, _qualified(servers, _prompts))
        elif command == "loglevel":
            yield from _matching(current, get_args(LoggingLevel))
        elif command == "roots":
            if not arguments:
                yield from _matching(current, ["add", "remove"])
            elif len(arguments) == 1 and arguments[0] in ("add", "remove"):
                sub = Document(current, len(current))
                yield from self.paths.get_completions(sub, complete_event)


def _tools(server: Server) -> list[str]:
    return [tool.name for tool in server.tools]


def _uris(server: Server) -> list[str]:
    return [resource.uri for resource in server.resources]


def _prompts(server: Server) -> list[str]:
    return [prompt.name for prompt in server.prompts]


def _matching(prefix: str, names: Iterable[str]) -> Iterable[Completion]:
    for name in names:
        if name.startswith(prefix):
            yield Completion(name, start_position=-len(prefix))


def _qualified(servers: list[Server], names: Callable[[Server], list[str]]) -> list[str]:
    if len(servers) == 1:
        return names(servers[0])
    found = [f"{s.name}:{n}" for s in servers for n in names(s)]
    plain = [n for s in servers for n in names(s)]
    return found + [n for n in plain if plain.count(n) == 1]


class UsageError(Exception):
    """A command typed wrong; the message says how to type it."""


class Session:
    """The interactive session: servers, the broker, the prompt and the commands."""

    def __init__(
        self,
        targets: list[Target],
        roots: Roots,
        *,
        history: Path,
        timeout: float | None,
        log_level: LoggingLevel,
        sampler: ModelSampler | None = None,
        plain: bool = False,
    ) -> None:
        self.servers = [Server(target) for target in targets]
        self.sampler = sampler
        self.roots = roots
        self.timeout = timeout
        self.log_level: LoggingLevel = log_level
        reply = sampler.reply if sampler is not None else None
        self.lines: LinePresenter | None = None
        """In plain-line mode, what asks the questions and reads the command lines."""
        self.seat: PromptSeat | LineSeat
        if plain:
            # Styled only where the terminal says it can be (never on a dumb one).
            self.console: Console = PlainConsole()
            self.lines = LinePresenter(output=sys.stdout, sampler=reply)
            self.seat = LineSeat(self.lines)
            self.broker = Broker(LineSeatedPresenter(self.lines, self.seat))
        else:
            self.console = PlainConsole(force_terminal=sys.stdout.isatty())
            prompt: PromptSession[str] = PromptSession(
                history=command_history(history, self.say),
                completer=SessionCompleter(self.live_servers, lambda: self.servers),
                complete_while_typing=False,
                key_bindings=ctrl_z_ignored(),
            )
            self.seat = PromptSeat(prompt)
            presenter = TerminalPresenter(console=self.console, sampler=reply)
            self.broker = Broker(SeatedPresenter(presenter, self.seat))
            presenter.controls = self.broker  # Ctrl-X: cancel all from a server; Ctrl-Q: mute
        self.jobs = 0
        self.task_group: TaskGroup | None = None
        self.foreground: anyio.CancelScope | None = None
        """The command the prompt waits on (a ``reconnect``, a listing), which Ctrl-C
        stops."""

    def live_servers(self) -> list[Server]:
        return [s for s in self.servers if s.client is not None and s.lost is None]

    def say(self, markup: str) -> None:
        if self.lines is not None:
            # Above a prompt waiting for a line, which is written again below it.
            self.lines.note(Text.from_markup(markup).plain)
        else:
            self.console.print(markup, soft_wrap=True)

    def _aside(self) -> contextlib.AbstractContextManager[None]:
        """Around what a command prints on the console itself: in plain lines, a
        question's prompt waiting for its answer stays the last thing written."""
        return contextlib.nullcontext() if self.lines is None else self.lines.aside()

    # -- connecting ------------------------------------------------------------------

    async def run(self) -> int:
        async with self.broker, anyio.create_task_group() as task_group:
            self.task_group = task_group
            await self._connect(self.servers)
            if not self.live_servers():
                self.say("[red]No server could be reached.[/]")
                task_group.cancel_scope.cancel()
                return ExitCode.CONNECTION
            self.say("Type [bold]help[/] for the commands, [bold]quit[/] to leave.")
            try:
                await self._loop()
            finally:
                task_group.cancel_scope.cancel()
        return ExitCode.OK

    async def _connect(self, servers: list[Server]) -> None:
        """Connect to ``servers`` all at once, each in its own task, and return once
        each has connected or failed: a server that never answers holds up neither the
        others nor the prompt for longer than its timeout."""
        assert self.task_group is not None
        for server in servers:
            server.holding = Holding()
            self.task_group.start_soon(self._hold, server, server.holding)
        for server in servers:
            assert server.holding is not None
            await server.holding.settled.wait()

    async def _hold(self, server: Server, holding: Holding) -> None:
        """Connect to ``server`` and hold the connection until ``holding`` is told to let
        go; says how connecting went."""
        try:
            with holding.scope:
                self.say(f"[dim]Connecting to {shown(server.name)}…[/]")  # else a blank
                try:
                    client = self._client(server)
                    async with connected(client, server.target, self.timeout):
                        await self._connected(server, client, holding)
                except Exception as exc:
                    if not holding.settled.is_set():
                        problem = failure(server.target, exc, timeout=self.timeout)
                        self.say(f"[red]{shown(str(problem))}[/]")
                    elif not holding.quiet:
                        self.say(
                            f"[yellow]{shown(server.name)}'s connection failed as it closed: "
                            f"{shown(str(failure(server.target, exc, timeout=self.timeout)))}[/]"
                        )
        finally:
            holding.settled.set()
            holding.done.set()

    async def _connected(self, server: Server, client: Client, holding: Holding) -> None:
        """The connection held: announced, roots told to it, its listing asked for in
        the background (a server that never lists keeps neither the other servers nor
        the prompt waiting), until ``holding`` is told to let go."""
        server.client = client
        detach = self.roots.attach(client)
        try:
            # Cut, and quoted unless a plain word, as every other line that quotes them.
            name = told_by_server(client.server_info.name)
            version = told_by_server(client.server_info.version.strip())
            self.say(
                f"Connected to [bold]{shown(server.name)}[/] ({shown(name)}"
                f"{' ' + shown(version) if version else ''}, protocol {client.protocol_version})"
            )
            holding.settled.set()
            assert self.task_group is not None
            self.task_group.start_soon(self._first_listing, server, client)
            await holding.stop.wait()
        finally:
            detach()

    def _client(self, server: Server) -> Client:
        """A client for ``server``, its stderr (stdio) going to its log file."""
        stderr: Any = None
        if server.target.is_stdio:
            try:
                server.stderr_log = stderr = server_log(server.name)
            except OSError as exc:
                stderr = "discard"
                self.say(
                    f"[yellow]{shown(server.name)}'s stderr is not kept: {shown(str(exc))}. "
                    f"To keep it, {STATE_ADVICE}.[/]"
                )
        responder = CommandResponder(
            asking_person(self.broker, server.name, self.roots, self.sampler),
            server.name,
            self.roots,
            self._show_log,
            self._lost,
        )
        return Client(
            server.target.client_target(stderr),
            responder=responder,
            read_timeout_seconds=self.timeout,
            connect_timeout_seconds=connect_timeout(self.timeout),
            log_level=self.log_level,
            mode=server.target.mode,
        )

    async def _first_listing(self, server: Server, client: Client) -> None:
        try:
            listed = await listing(client, server.name, self.timeout)
        except Exception as exc:
            if server.client is not client:
                return  # reconnect closed it (its listing failed with it): nothing to say
            self.say(
                f"[yellow]{shown(self._listing_failure(server, exc))} Type tools "
                f"{shown(server.name)} to try again.[/]"
            )
            return
        if server.client is client:
            server.tools, server.resources, server.templates, server.prompts = listed

    async def _refresh(self, server: Server) -> None:
        """What ``server`` offers, listed again; raises why it could not be."""
        assert server.client is not None
        server.tools, server.resources, server.templates, server.prompts = await listing(
            server.client, server.name, self.timeout
        )

    def _listing_failure(self, server: Server, exc: Exception) -> str:
        assert server.client is not None
        problem = failure(server.target, exc, server.client.session.capabilities, self.timeout)
        return f"Could not list what {server.name} offers: {problem}"

    def _show_log(self, server: str, params: LoggingMessageNotificationParams) -> None:
        console = self.console
        self.say(log_line(server, params, console.width if console.is_terminal else None))

    def _lost(self, server: str, exc: Exception) -> None:
        for known in self.servers:
            if known.name == server and known.client is not None and known.lost is None:
                known.lost = redacted(str(exc))
                self.say(
                    f"[red]Server [bold]{shown(server)}[/] went away: "
                    f"{shown(known.lost.removesuffix('.'))}. "
                    f"To use it again, type reconnect {shown(server)}.[/]"
                )

    # -- the prompt ------------------------------------------------------------------

    async def _loop(self) -> None:
        if self.lines is None:
            with patch_stdout(raw=True):
                await self._read_commands()
            return
        assert self.task_group is not None
        self.task_group.start_soon(self._interrupts)
        await self._read_commands()

    async def _interrupts(self) -> None:
        """Ctrl-C in plain-line mode, where no screen reads it as a key: it cancels the
        question being asked (or the tool's arguments), and at the prompt stops no call,
        as on the full screen."""
        seat = self.seat
        assert isinstance(seat, LineSeat)
        with anyio.open_signal_receiver(signal.SIGINT) as interrupts:
            async for _ in interrupts:
                if seat.interrupt() or self._stop_foreground():
                    continue
                if not self._stops_nothing():
                    # The terminal dropped the line being typed: a word, a fresh prompt.
                    self.say("Type quit (or press Ctrl-D) to leave.")

    async def _read_commands(self) -> None:
        warned = False
        while True:
            try:
                line = await self.seat.read("answerback> ")
            except EOFError:
                if warned or not self.running():
                    return
                warned = True
                self.say(
                    f"[yellow]{shown(self._running_note())}: Ctrl-D again (or quit) "
                    "leaves and stops them; cancel SERVER stops one server's.[/]"
                )
                continue
            except KeyboardInterrupt:
                self._stops_nothing()
                continue
            warned = False
            if not await self.run_line(line):
                return

    def _stops_nothing(self) -> bool:
        """Ctrl-C at the prompt: it stops no call, and says so (``True``) when some
        run."""
        if not self.running():
            return False
        self.say(
            f"[yellow]{shown(self._running_note())}: Ctrl-C at the prompt stops none of "
            "them; cancel SERVER stops one server's.[/]"
        )
        return True

    def running(self) -> list[str]:
        """The calls, reads and prompts running, labelled as their jobs print."""
        return [label for server in self.servers for label in server.calls.values()]

    def _running_note(self) -> str:
        running = self.running()
        return f"{len(running)} still running ({', '.join(running)})"

    async def run_line(self, line: str) -> bool:
        """Run one command line, or each of several pasted at once; ``False`` once one
        says to leave. A command that fails says why and leaves the session running,
        whatever it raised."""
        lines = line.splitlines()
        if len(lines) > 1:
            for each in lines:
                self.say(f"[dim]answerback> {shown(each)}[/]")
                if not await self.run_line(each):
                    return False
            return True
        try:
            words = shlex.split(line)
        except ValueError as exc:
            self.say(f"[red]The line could not be read ({shown(str(exc))}): {shown(QUOTING)}.[/]")
            return True
        if not words:
            return True
        if words[0] in ("quit", "exit"):
            return False
        try:
            with anyio.CancelScope() as self.foreground:
                async with self._ctrl_c_stops_foreground(words[0]):
                    await self.command(words[0], words[1:], line)
            if self.foreground.cancelled_caught:
                self.say(f"[yellow]Ctrl-C stopped {shown(words[0])}.[/]")
        except UsageError as exc:
            self.say(f"[red]{shown(str(exc))}[/]")
        except Exception as exc:  # a bug, or a server's answer nobody foresaw
            failed = f"{type(exc).__name__}: {exc}"
            self.say(
                f"[red]{shown(words[0])} failed ({shown(failed)}); the session carries "
                "on. This is a bug in answerback: please report it.[/]"
            )
        finally:
            self.foreground = None
        return True

    def _stop_foreground(self) -> bool:
        """Ctrl-C while a command holds the prompt: stop it (``False`` if none does)."""
        if self.foreground is None:
            return False
        self.foreground.cancel()
        return True

    @asynccontextmanager
    async def _ctrl_c_stops_foreground(self, command: str) -> AsyncGenerator[None]:
        """Ctrl-C stopping the command the prompt waits on, rather than the session: on
        the full screen no prompt reads it as a key then, and it ended the session
        (plain lines read it as a signal throughout: ``_interrupts``). Not around
        ``call``, whose argument line and call screen take Ctrl-C as a key themselves
        (a second SIGINT handler beside theirs would race them)."""
        if (
            command == "call"
            or self.lines is not None
            or threading.current_thread() is not threading.main_thread()
        ):
            yield
            return
        failed: Exception | None = None
        async with anyio.create_task_group() as group:

            async def watch(*, task_status: TaskStatus[None]) -> None:
                with anyio.open_signal_receiver(signal.SIGINT) as interrupts:
                    task_status.started()  # Ctrl-C from now on reaches it
                    async for _ in interrupts:
                        self.console.print()  # below the "^C" the terminal echoed
                        self._stop_foreground()

            await group.start(watch)
            try:
                yield
            except Exception as exc:  # raised as itself, not in the group's ExceptionGroup
                failed = exc
            finally:
                group.cancel_scope.cancel()
        if failed is not None:
            raise failed

    async def command(self, name: str, words: list[str], line: str) -> None:
        if name == "help":
            for usage in COMMANDS.values():
                self.say(shown(usage))
        elif name in ("tools", "resources", "prompts"):
            for server in self._servers_named(words):
                assert server.client is not None
                try:
                    await self._refresh(server)
                except Exception as exc:
                    self.say(f"[red]{shown(self._listing_failure(server, exc))}[/]")
                    continue
                with self._aside():
                    print_listing(
                        self.console, server.name, server.tools, server.resources,
                        server.templates, server.prompts, show=(name,),
                    )  # fmt: skip
        elif name == "call":
            await self._call(words, line)
        elif name == "read":
            self._read(words)
        elif name == "prompt":
            self._prompt(words)
        elif name == "roots":
            await self._roots(words)
        elif name == "loglevel":
            await self._loglevel(words)
        elif name == "status":
            self._status()
        elif name == "cancel":
            server = self._one_server(words, "cancel SERVER")
            count = self.broker.cancel_all(server.name)
            for scope in list(server.calls):
                scope.cancel()
            self.say(
                f"Cancelled {count} question(s) and {len(server.calls)} call(s) of "
                f"{shown(server.name)}."
            )
        elif name == "reconnect":
            await self._reconnect(words)
        elif name == "mute":
            server = self._one_server(words, "mute SERVER")
            self.broker.mute(server.name)
            self.say(f"Muted {shown(server.name)}: its questions are declined unseen.")
        elif name == "unmute":
            server = self._one_server(words, "unmute SERVER")
            self.broker.unmute(server.name)
            self.say(f"Unmuted {shown(server.name)}.")
        else:
            raise UsageError(f"Unknown command {name!r}: type help for the commands.")

    async def _reconnect(self, words: list[str]) -> None:
        """Connect again, to the same target, to the servers named (by default, every
        one that went away or never answered); what they ran is stopped first."""
        if words:
            names = {s.name: s for s in self.servers}
            if len(words) != 1 or words[0] not in names:
                usage = COMMANDS["reconnect"].split(":")[0]
                raise UsageError(f"Usage: {usage} (servers: {', '.join(names)}).")
            servers = [names[words[0]]]
        else:
            servers = [s for s in self.servers if s not in self.live_servers()]
            if not servers:
                self.say("Every server is connected: reconnect SERVER connects to one again.")
                return
        for server in servers:
            self.broker.cancel_all(server.name)
            for scope in list(server.calls):
                scope.cancel()
            if server.holding is not None:
                server.holding.quiet = server.lost is not None
            # No longer its client before it closes: what waited on it (its first
            # listing) fails as it closes, and says nothing of a connection replaced.
            server.client, server.lost = None, None
            server.tools, server.resources, server.templates, server.prompts = [], [], [], []
        # Each closes in its own task, so in any order; all at once, as they connect.
        async with anyio.create_task_group() as closing:
            for server in servers:
                if server.holding is not None:
                    closing.start_soon(server.holding.close)
        try:
            await self._connect(servers)
        finally:  # stopped (Ctrl-C): those still connecting stop too, and say so
            for server in servers:
                holding = server.holding
                if holding is not None and not holding.settled.is_set():
                    holding.scope.cancel()
                    self.say(
                        f"[yellow]{shown(server.name)} is not connected: reconnect "
                        f"{shown(server.name)} tries again.[/]"
                    )

    def _servers_named(self, words: list[str]) -> list[Server]:
        if not words:
            return self.live_servers()
        return [self._one_server(words, "SERVER")]

    def _one_server(self, words: list[str], usage: str) -> Server:
        names = {s.name: s for s in self.servers if s.client is not None}
        if len(words) != 1 or words[0] not in names:
            raise UsageError(f"Usage: {usage} (servers: {', '.join(names) or 'none'}).")
        return names[words[0]]

    def _find(
        self, spec: str, kind: str, names: Callable[[Server], list[str]]
    ) -> tuple[Server, str]:
        """``server:name`` or a ``name`` exactly one server offers."""
        live = self.live_servers()
        # The longest name before a colon: an HTTP server's own holds one (host:port).
        named = [s for s in live if spec.startswith(f"{s.name}:")]
        if named:
            server = max(named, key=lambda s: len(s.name))
            return server, spec[len(server.name) + 1 :]
        having = [s for s in live if spec in names(s)]
        if len(having) == 1:
            return having[0], spec
        if len(live) == 1:
            return live[0], spec
        if having:
            options = ", ".join(f"{s.name}:{spec}" for s in having)
            raise UsageError(f"Several servers have the {kind} {spec!r}: say which ({options}).")
        raise UsageError(f"No server has the {kind} {spec!r}: list them with {kind}s.")

    # -- background work -------------------------------------------------------------

    def _background(self, server: Server, label: str, work: Callable[[Client], Any]) -> None:
        """Run ``work`` without holding the prompt; print what it gives, or why not."""
        assert self.task_group is not None
        assert server.client is not None
        self.jobs += 1
        number = self.jobs
        client = server.client
        self.say(f"[dim][{number}] {shown(server.name)}: {shown(label)}…[/]")

        async def job() -> None:
            with anyio.CancelScope() as scope:
                server.calls[scope] = f"[{number}] {label}"
                try:
                    text, failed = await work(client)
                except Exception as exc:
                    problem = failure(server.target, exc, client.session.capabilities, self.timeout)
                    self.say(f"[red][{number}] {shown(str(problem))}[/]")
                    return
                finally:
                    del server.calls[scope]
                style = "red" if failed else "green"
                # One piece, so that a plain-line prompt is written again once, below.
                self.say(
                    f"[{style}][{number}] {shown(server.name)}: {shown(label)} →[/]\n{shown(text)}"
                )
            if scope.cancelled_caught:
                self.say(f"[yellow][{number}] {shown(label)}: cancelled[/]")

        self.task_group.start_soon(job)

    async def _call(self, words: list[str], line: str) -> None:
        if not words:
            raise UsageError("Usage: " + COMMANDS["call"])
        server, tool_name = self._find(words[0], "tool", _tools)
        tool = next((t for t in server.tools if t.name == tool_name), None)
        schema = tool.input_schema if tool is not None else None
        rest = line.split(None, 2)[2] if len(words) > 1 else ""
        try:
            if rest.lstrip().startswith("{"):
                arguments = parse_arguments([rest], schema)
            elif len(words) > 1:
                arguments = parse_arguments(words[1:], schema)
            else:
                arguments = await self._ask_arguments(server, tool)
        except ArgumentsError as exc:
            raise UsageError(str(exc)) from None
        except ArgumentsCancelled:
            arguments = None
        if arguments is None:
            self.say("Not called.")
            return

        async def work(client: Client) -> tuple[str, bool]:
            result = await client.call_tool(
                tool_name, arguments, progress_callback=self._progress(server.name, tool_name)
            )
            return result_text(result), result.is_error

        self._background(server, f"call {tool_name}", work)

    async def _ask_arguments(self, server: Server, tool: Tool | None) -> dict[str, Any] | None:
        """A tool's arguments asked at the terminal when it requires some (see
        ``ask_arguments``); ``None`` if the person declined."""
        if tool is None:
            return {}
        spec = tool.name if len(self.live_servers()) < 2 else f"{server.name}:{tool.name}"
        return await ask_arguments(
            tool,
            server=server.name,
            say=self.say,
            instead=f"type call {shown(spec)} {shown(left_off_example(tool))} instead",
            screen=self.seat.screen,
            lines=self.lines,
        )

    def _progress(
        self, server: str, label: str
    ) -> Callable[[float, float | None, str | None], Any]:
        async def report(progress: float, total: float | None, message: str | None) -> None:
            if total:
                filled = round(20 * min(progress / total, 1))
                bar = "█" * filled + "░" * (20 - filled)
                amount = f"{bar} {progress:g}/{total:g}"
            else:
                amount = f"{progress:g}"
            note = f" {message}" if message else ""
            self.say(
                f"[cyan]{shown(server)}: {shown(label)} {amount}{shown(note, newlines=False)}[/]"
            )

        return report

    def _read(self, words: list[str]) -> None:
        if len(words) != 1:
            raise UsageError("Usage: " + COMMANDS["read"])
        server, uri = self._find(words[0], "resource", _uris)
        if any(uri == template.uri_template for template in server.templates):
            raise UsageError(
                f"{uri} is a resource template: read it with each {{...}} replaced by a value."
            )

        async def work(client: Client) -> tuple[str, bool]:
            return read_text(await client.read_resource(uri)), False

        self._background(server, f"read {uri}", work)

    def _prompt(self, words: list[str]) -> None:
        if not words:
            raise UsageError("Usage: " + COMMANDS["prompt"])
        server, name = self._find(words[0], "prompt", _prompts)
        try:
            arguments = {k: str(v) for k, v in parse_arguments(words[1:], None).items()}
        except ArgumentsError as exc:
            raise UsageError(str(exc)) from None

        async def work(client: Client) -> tuple[str, bool]:
            return prompt_text(await client.get_prompt(name, arguments or None)), False

        self._background(server, f"prompt {name}", work)

    async def _roots(self, words: list[str]) -> None:
        try:
            if words[:1] == ["add"] and len(words) == 2:
                self.say(f"Added root {shown(str(await self.roots.add(words[1])))}")
            elif words[:1] == ["remove"] and len(words) == 2:
                self.say(f"Removed root {shown(str(await self.roots.remove(words[1])))}")
            elif words:
                raise UsageError("Usage: " + COMMANDS["roots"])
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        for path in self.roots.paths:
            self.say(f"root {shown(str(path))}")

    async def _loglevel(self, words: list[str]) -> None:
        levels = get_args(LoggingLevel)
        if len(words) != 1 or words[0] not in levels:
            raise UsageError(f"Usage: loglevel LEVEL ({', '.join(levels)}).")
        level = cast(LoggingLevel, words[0])
        self.log_level = level
        for server in self.live_servers():
            assert server.client is not None
            server.client.session.log_level = level
            if server.client.session.modern_version is None and (
                server.client.server_capabilities.logging is not None
            ):
                await server.client.set_logging_level(level)
        self.say(f"Log level {level}.")

    def _status(self) -> None:
        table = Table(title="servers", title_justify="left")
        for column in ("server", "target", "state", "protocol"):
            table.add_column(column)
        for server in self.servers:
            client = server.client
            if client is None:
                state, protocol = "not connected", ""
            else:
                state = f"lost: {server.lost}" if server.lost else "connected"
                era = "legacy" if client.session.modern_version is None else "modern"
                protocol = f"{client.protocol_version} ({era})"
                if self.broker.is_muted(server.name):
                    state += ", muted"
            table.add_row(
                shown(server.name), shown(server.target.describe()), shown(state), protocol
            )
        with self._aside():
            self.console.print(table)
        for server in self.servers:
            if server.stderr_log is not None:
                self.say(
                    f"{shown(server.name)} writes its stderr to {shown(str(server.stderr_log))}"
                )
            elif server.target.is_stdio and server.client is not None:
                self.say(f"{shown(server.name)}'s stderr is discarded: its log cannot be written")
        running = self.running()
        self.say(
            f"{len(running)} running" + ("" if not running else f": {shown(', '.join(running))}")
        )
        pending = self.broker.pending()
        self.say(f"{len(pending)} question(s) waiting" + ("" if not pending else ":"))
        for question in pending:
            self.say(f"  #{question.number} {shown(question.server)}: {question.kind}")
        roots = ", ".join(map(str, self.roots.paths))
        self.say(f"log level {self.log_level}; roots: {shown(roots)}")


def asking_person(
    broker: Broker, server: str, roots: Roots, sampler: ModelSampler | None
) -> Responder:
    """The broker's responder for ``server``; with a configured model, its sampling
    screen approves the model's draft (capped and audited by the sampler's policy)."""
    responder = broker.responder(server, roots=roots)
    return responder if sampler is None else sampler.responder(server, responder)


def history_file(explicit: str | None) -> Path:
    return Path(explicit).expanduser() if explicit else state_dir() / "history"


def connect(targets: list[Target], roots: Roots, args: argparse.Namespace, err: Console) -> int:
    """Run the interactive session until the person quits."""
    if not (sys.stdin.isatty() and sys.stdout.isatty()):
        which = "output" if sys.stdin.isatty() else "input"
        err.print(
            f"answerback connect needs a terminal, and its standard {which} is not one "
            "(a file or a pipe): run it at a terminal without redirecting it, or from a "
            "script use `answerback call` or `answerback list`.",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
        return ExitCode.USAGE
    session = Session(
        targets,
        roots,
        history=history_file(args.history),
        timeout=args.timeout,
        log_level=args.log_level,
        sampler=model_sampler(args),
        plain=plain_lines(args.plain),
    )
    with suspend_ignored() if session.lines is not None else contextlib.nullcontext():
        return run_async(session.run)


async def call_at_terminal(
    target: Target,
    roots: Roots,
    args: argparse.Namespace,
    out: Console,
    err: Console,
    screen: TextIO,
) -> int:
    """``answerback call`` with a person at the keyboard: questions drawn on ``screen``
    (standard output, or the terminal when the result goes to a file or a pipe), and
    what was answered said there; the result goes to ``out`` either way."""
    drawn_apart = screen is not sys.stdout
    session = create_app_session(output=create_output(stdout=screen)) if drawn_apart else None
    plain = suspend_ignored() if plain_lines(args.plain) else None
    with session or contextlib.nullcontext(), plain or contextlib.nullcontext():
        return await _call_at_terminal(
            target,
            roots,
            args,
            out,
            err,
            PlainConsole(file=screen) if drawn_apart else None,
            drawn_on=screen,
        )


async def _call_at_terminal(
    target: Target,
    roots: Roots,
    args: argparse.Namespace,
    out: Console,
    err: Console,
    screen: Console | None,
    *,
    drawn_on: TextIO,
) -> int:
    sampler = model_sampler(args)
    reply = sampler.reply if sampler is not None else None
    lines: LinePresenter | None = None
    seat: LineSeat | None = None
    presenter: Presenter
    if plain_lines(args.plain):
        # Where the full screen would draw: the terminal, whichever stream it is (stderr
        # may be sent away, ``2>/dev/null``, with the person still at the keyboard).
        lines = LinePresenter(output=drawn_on, sampler=reply)
        seat = LineSeat(lines)
        presenter = LineSeatedPresenter(lines, seat)
    else:
        presenter = TerminalPresenter(sampler=reply, console=screen)
    # The notes on the arguments where the questions are (not on stderr, which may be
    # sent away); in plain lines, through them, so that a waiting prompt stays last.
    said = screen or PlainConsole(file=drawn_on)

    def say(markup: str) -> None:
        if lines is None:
            said.print(markup, soft_wrap=True)
        else:
            lines.note(Text.from_markup(markup).plain)

    ended: Exception | None = None
    async with Broker(presenter) as broker:
        if isinstance(presenter, TerminalPresenter):
            presenter.controls = broker
        responder = one_shot_responder(
            target, roots, None, err, lambda name: asking_person(broker, name, roots, sampler)
        )

        async def ask(tool: Tool) -> dict[str, Any] | None:
            return await ask_arguments(
                tool,
                server=target.name,
                say=say,
                instead=(
                    f"put {shown(left_off_example(tool))} after {shown(tool.name)} on the "
                    "command line instead"
                ),
                lines=lines,
            )

        def calling() -> Awaitable[int]:
            return call(target, args, responder=responder, out=out, err=err, ask=ask)

        try:
            # Plain lines read no Ctrl-C as a key: a signal cancels the question instead.
            return await (calling() if seat is None else interruptible(seat, calling))
        except Exception as exc:  # out of the broker's task group it would come in a group
            ended = exc  # (a traceback, exit 1) instead of the command's message and code
    assert ended is not None, "the broker ended the call without a word"
    raise ended


def left_off_example(tool: Tool) -> str:
    """The optional arguments a tool's form leaves off, as they are typed (``rooms=...``):
    a hint that said ``name=value`` named an argument the tool did not have."""
    return " ".join(f"{name}=..." for name in argument_form(tool.input_schema).left_off)
