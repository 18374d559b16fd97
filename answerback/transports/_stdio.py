"""Stdio transport, client side: run the server as a child process and talk over its pipes.

The child gets a small, predictable environment (not the parent's secrets) and is always
reaped: on a clean exit we close its stdin and give it a moment, then terminate, then
kill. Its stderr goes where the host says (the terminal by default; see
``_child_stderr``), and its last lines are kept: a server that exits before answering
(a script that never calls ``mcp.run()``, an import that fails) raises
``ServerExitedError`` with its exit code and those lines, the message a developer needs.
If the child dies while requests are waiting, they fail with a ``ConnectionClosedError``
naming its exit code instead of hanging.

A line on the child's stdout that is not JSON-RPC (a stray ``print``) is skipped and
reported as a ``StrayOutputError``, which reaches the client's message handler like any
transport error (the default one logs a warning); the connection carries on. Past the
first few, such lines are counted and reported once a minute, and at the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import shlex
import signal
import subprocess
import sys
from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, NamedTuple, cast

import anyio
from anyio.abc import ByteReceiveStream, ByteSendStream, Process

from answerback.jsonrpc import Envelope, WriteStream
from answerback.jsonrpc._channel import ChannelReceiver, ChannelSender, open_channel
from answerback.transports._base import StreamPair
from answerback.transports._child_stderr import (
    ChildStderr,
    StderrTarget,
    check_stderr_target,
    child_stderr,
)
from answerback.transports._framing import (
    DEFAULT_MAX_MESSAGE_BYTES,
    FAULTS_SHOWN,
    FAULTS_SUMMARY_SECONDS,
    LineReader,
    Repeated,
    checked_message_limit,
    decode,
    deliver,
    line_for,
    unreadable_answer,
)
from answerback.transports._pipes import (
    Backlog,
    Held,
    PipeInput,
    PipeOutput,
    Take,
    UntakenMessages,
    pipes_by_protocol,
    until_drained,
)
from answerback.types._errors import ConnectionClosedError

_INHERITED_ENV = (
    (
        "APPDATA",
        "HOMEDRIVE",
        "HOMEPATH",
        "LOCALAPPDATA",
        "PATH",
        "PATHEXT",
        "PROCESSOR_ARCHITECTURE",
        "SYSTEMDRIVE",
        "SYSTEMROOT",
        "TEMP",
        "USERNAME",
        "USERPROFILE",
        "PROGRAMFILES",
    )
    if sys.platform == "win32"
    else ("HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR")
)
_SHUTDOWN_GRACE_SECONDS = 2.0
_GROUP_POLL_SECONDS = 0.01
_PROCESSES = Path("/proc")
_GROUPS = sys.platform != "win32"
"""Whether the server runs in a process group of its own (POSIX)."""
_COMMAND_CHARS = 100
_RAISED_WITH = "StdioServer(..., max_message_bytes=...)"
"""Where a client's message limit is raised, as its over-the-limit errors say."""
_clock: Callable[[], float] = anyio.current_time
"""What times the counts of stray output (a test sets its own)."""


def default_environment() -> dict[str, str]:
    """The parent variables a child server inherits: enough to run, nothing secret."""
    return {key: value for key in _INHERITED_ENV if (value := os.environ.get(key)) is not None}


class ServerExitedError(ConnectionClosedError):
    """The server program ended before it answered anything.

    A script that never calls ``mcp.run()`` exits at once with code 0; one that fails on
    import exits with 1 and a traceback on stderr. The message says which, with the last
    lines of its stderr; ``exit_code`` (negative: the signal that killed it, as in
    ``subprocess``) and ``stderr_tail`` hold them for a program.
    """

    def __init__(self, message: str, *, exit_code: int | None, stderr_tail: Sequence[str]) -> None:
        super().__init__(message)
        self.exit_code = exit_code
        self.stderr_tail = list(stderr_tail)


class StrayOutputError(Exception):
    """The server wrote a line to stdout that is not a JSON-RPC message (a stray
    ``print``); the line was skipped. ``line`` is the whole of it, decoded."""

    def __init__(self, message: str, line: str) -> None:
        super().__init__(message)
        self.line = line


def _arguments(args: object) -> list[str]:
    """``StdioServer(args=...)`` as a list, if it is a sequence of strings."""
    if isinstance(args, str | bytes) or not isinstance(args, Sequence):
        raise TypeError(
            f"args must be a list of strings, such as ['server.py', '--verbose'], got {args!r}"
        )
    for arg in cast(Sequence[object], args):
        if not isinstance(arg, str | os.PathLike):
            raise TypeError(f"args must hold strings (or paths), got {arg!r} in {args!r}")
    return [os.fspath(arg) for arg in cast(Sequence[str | os.PathLike[str]], args)]


def _environment(env: object) -> dict[str, str]:
    """``StdioServer(env=...)`` as a dict, if it maps strings to strings."""
    if env is None:
        return {}
    if not isinstance(env, Mapping):
        raise TypeError(f"env must be a dict of strings to strings, or None, got {env!r}")
    for key, value in cast(Mapping[object, object], env).items():
        if not isinstance(key, str) or not isinstance(value, str):
            raise TypeError(
                f"env must map strings to strings (convert values with str()), got "
                f"{key!r}: a {type(value).__name__} (values are not shown: they often hold "
                "secrets)"
            )
    return dict(cast(Mapping[str, str], env))


class StdioServer:
    """A server program to start as a subprocess and speak MCP with over stdin/stdout.

    ``env`` is added to a minimal inherited environment (``PATH``, ``HOME``, locale...),
    so API keys and tokens in the parent's environment are not handed to every server.
    ``stderr`` is where the server's own output (its log) goes: ``"inherit"`` (this
    process's stderr, the terminal), ``"discard"``, a ``logging.Logger`` (each line at
    INFO, prefixed with the command), a writable file object (text or binary) or a
    ``pathlib.Path`` (appended to). ``max_message_bytes`` caps one message either way: a
    call whose request or answer is larger fails with an error instead of waiting for
    ever.

    Raises ``ValueError`` for a ``stderr`` string other than the two words (a file name
    must be a ``Path``), ``TypeError`` or ``ValueError`` for a ``max_message_bytes``
    that is not a positive ``int``, and ``TypeError`` for a ``command`` or ``args`` that
    are not strings or paths (a lone string for ``args`` included), or an ``env`` that
    does not map strings to strings. Connecting raises ``ServerExitedError`` if the program ends
    before answering, and ``ConnectionClosedError`` if it cannot be started.
    """

    def __init__(
        self,
        command: str | os.PathLike[str],
        args: Sequence[str | os.PathLike[str]] = (),
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
        stderr: StderrTarget = "inherit",
        *,
        max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    ) -> None:
        if not isinstance(cast(object, command), str | os.PathLike):
            raise TypeError(
                f"command must be the program to run (a str or a pathlib.Path), such as "
                f"'python', got {command!r}"
            )
        self.command: str = os.fspath(command)
        if not self.command:
            raise ValueError("command must name the program to run, such as 'python', got ''")
        self.args = _arguments(args)
        self.env = _environment(env)
        if cwd is not None and not isinstance(cast(object, cwd), str | os.PathLike):
            raise TypeError(
                f"cwd must be a directory (a str or a pathlib.Path) or None, got {cwd!r}"
            )
        self.cwd = cwd
        self.stderr: StderrTarget = check_stderr_target(stderr)
        self.max_message_bytes = checked_message_limit(max_message_bytes)

    def __repr__(self) -> str:
        return f"StdioServer({self.command!r}, args={self.args!r})"

    @property
    def command_line(self) -> str:
        """The command as typed in a shell, for messages and log lines: on one line
        (newlines shown as ``\\n``), cut after 100 characters."""
        typed = shlex.join([self.command, *self.args]).replace("\n", "\\n")
        return typed if len(typed) <= _COMMAND_CHARS else f"{typed[:_COMMAND_CHARS]}…"

    @asynccontextmanager
    async def connect(self) -> AsyncGenerator[StreamPair, None]:
        """Start the server program and talk to it over its stdin and stdout; leaving the
        block closes its stdin and waits for it to exit (stopping it if it will not)."""
        with child_stderr(self.stderr, self.command_line) as stderr:
            child = _Child(stderr)
            incoming_send, incoming_read = open_channel[Envelope | Exception]()
            try:
                async with (
                    self._started(incoming_send) as (process, pipes),
                    self._connected(process, pipes, child, incoming_send),
                ):
                    yield incoming_read, pipes.outgoing
            except BaseException as exc:
                if child.heard or child.exit_code is None or not _connection_closed(exc):
                    raise
                raise self._exited_error(child) from None

    @asynccontextmanager
    async def _started(
        self, incoming: ChannelSender[Envelope | Exception]
    ) -> AsyncGenerator[tuple[Process, _Pipes], None]:
        """The running program and its stdin and stdout: on asyncio, pipes of our own
        that its callbacks read and that messages are written straight into (see
        ``_pipes``); elsewhere, ``anyio``'s process streams and a task for each."""
        limit = self.max_message_bytes
        if not pipes_by_protocol():
            process = await self._open_process(subprocess.PIPE, subprocess.PIPE)
            assert process.stdin is not None
            assert process.stdout is not None
            outgoing, outgoing_read = open_channel[Envelope]()
            write_all = functools.partial(
                _write_lines, outgoing_read, process.stdin, incoming, limit
            )
            read_all = functools.partial(_read_stream, process.stdout)
            unread = UntakenMessages(outgoing)
            yield process, _Pipes(read_all, outgoing, unread, write_all)
            return

        # We write to ``stdin`` and read ``stdout``; the program has the other ends.
        child_stdin, stdin = os.pipe()
        stdout, child_stdout = os.pipe()
        try:
            process = await self._open_process(child_stdin, child_stdout)
        except BaseException:
            os.close(stdin)
            os.close(stdout)
            raise
        finally:
            os.close(child_stdin)
            os.close(child_stdout)
        # Each file is the transport's to close from here on.
        stdin_file = os.fdopen(stdin, "wb", buffering=0)
        stdout_file = os.fdopen(stdout, "rb", buffering=0)
        loop = asyncio.get_running_loop()
        server_output = PipeInput(loop)
        try:
            reading, _ = await loop.connect_read_pipe(lambda: server_output, stdout_file)
            try:
                output = await PipeOutput.open(stdin_file, limit, incoming, _RAISED_WITH)
            except BaseException:
                reading.close()
                raise
        except BaseException:
            stdin_file.close()  # (closing a file twice does nothing)
            stdout_file.close()
            with anyio.CancelScope(shield=True):
                await _stop(process)
            raise
        try:
            yield process, _Pipes(server_output.read_all, output, output, None)
        finally:
            output.abort()  # the program has ended: what it did not read is dropped
            reading.close()

    async def _open_process(self, stdin: int, stdout: int) -> Process:
        try:
            return await anyio.open_process(
                [self.command, *self.args],
                env={**default_environment(), **self.env},
                cwd=self.cwd,
                stdin=stdin,
                stdout=stdout,
                stderr=subprocess.PIPE,
                # A process group of its own, which ``_stop`` ends as a whole: what the
                # program started (or the program itself, behind ``sh -c``) goes too.
                start_new_session=_GROUPS,
            )
        except (OSError, ValueError) as exc:  # ValueError: a NUL byte in an argument
            raise ConnectionClosedError(
                f"Could not start the server {self.command!r}: {exc}. Check the command "
                "and that it is installed and executable."
            ) from exc

    @asynccontextmanager
    async def _connected(
        self,
        process: Process,
        pipes: _Pipes,
        child: _Child,
        incoming: ChannelSender[Envelope | Exception],
    ) -> AsyncGenerator[None, None]:
        assert process.stderr is not None
        lines = _ServerOutput(self.max_message_bytes, self.command_line)
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(child.stderr.copy, process.stderr)
                tg.start_soon(_read_lines, pipes, process, lines, incoming, child)
                if pipes.write_all is not None:
                    tg.start_soon(pipes.write_all)
                try:
                    yield
                finally:
                    pipes.outgoing.close()
                    with anyio.CancelScope(shield=True):
                        await _stop(process)
                        # Its last words (a shutdown message) are still on their way.
                        with anyio.move_on_after(_SHUTDOWN_GRACE_SECONDS):
                            await child.stderr.finished.wait()
                    tg.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                # Its pipes are closed here, not when they end: a process the program
                # started may hold them open long after it exited.
                await process.aclose()

    def _exited_error(self, child: _Child) -> ServerExitedError:
        code = child.exit_code
        how = _ended(code)
        lines = [f"The server program exited before answering: `{self.command_line}` {how}."]
        if code == 0:
            lines.append(
                "A server script must keep running to serve: does it end with `mcp.run()` "
                "(or `if __name__ == '__main__': mcp.run()`, run as a script)?"
            )
        tail = child.stderr.tail
        if tail:
            lines.append("The last lines it wrote to stderr:")
            lines.extend(f"    {line}" for line in tail)
        else:
            lines.append(
                "It wrote nothing to stderr; run the command yourself to see what it does."
            )
        return ServerExitedError("\n".join(lines), exit_code=code, stderr_tail=tail)


class _Pipes(NamedTuple):
    """The program's stdin and stdout as the connection uses them."""

    read_all: Callable[[Take, Backlog], Awaitable[object]]
    """Hands what the program writes to stdout to ``take`` until it ends (a failed read
    ends it too: to the client, that program has stopped talking, as if it had exited),
    reading nothing while the ``Backlog`` is backed up."""
    outgoing: WriteStream
    """Where the engine's messages go (straight into stdin, or to ``write_all``)."""
    unread: Backlog
    """What the program has yet to read of ``outgoing``: past its bound no more of the
    program's output is read (a program that asks and never reads the answers)."""
    write_all: Callable[[], Coroutine[Any, Any, None]] | None
    """The task that writes ``outgoing``'s messages to stdin, where one is needed."""


class _Child:
    """What is known about the running server program."""

    def __init__(self, stderr: ChildStderr) -> None:
        self.stderr = stderr
        self.heard = False
        """Whether a JSON-RPC message has come from it (after which an exit is a crash,
        not a program that never started serving)."""
        self.exit_code: int | None = None


class _ServerOutput(LineReader):
    """The server's stdout: a line that is not JSON-RPC (not JSON, or JSON that is not a
    message) becomes a ``StrayOutputError`` instead of an error sent back to the server.
    A server that prints a line per request would log a warning each: past the first
    few, they are counted (``Repeated``), at no cost to the lines that are messages."""

    def __init__(self, limit: int, command_line: str) -> None:
        super().__init__(limit, setting=_RAISED_WITH)
        self._command_line = command_line
        self._stray = Repeated(_clock)

    def say_left(self, sink: ChannelSender[Envelope | Exception]) -> None:
        """At the end, the count of stray lines not yet reported (see ``Repeated``)."""
        self._stray.say_left(self._summary, sink)

    def decode_line(self, line: bytes) -> Envelope | Exception | None:
        item = decode(line)
        if isinstance(item, Envelope):
            message = item.message
            if isinstance(message, list) or (isinstance(message, dict) and "jsonrpc" in message):
                return item
            why = 'it has no "jsonrpc" member' if isinstance(message, dict) else "not an object"
            answer = unreadable_answer(line, why)
            if answer is not None:
                return Envelope(answer)
        elif item.request_id is not None:
            return item  # a request: the engine answers its id with a parse error
        text = line.decode("utf-8", errors="replace")
        stray = StrayOutputError(
            f"The server `{self._command_line}` wrote a line that is not JSON-RPC to stdout: "
            f"{_shown(text)}. It was skipped. A stdio server must write only protocol "
            "messages to stdout; log to stderr instead (print(..., file=sys.stderr), or "
            "logging).",
            text,
        )
        return self._stray.report(stray, self._summary, self._last_in_full)

    def _last_in_full(self, fault: Exception) -> Exception:
        assert isinstance(fault, StrayOutputError)
        return StrayOutputError(
            f"{fault} This is the {FAULTS_SHOWN}th such line: from now on they are "
            f"counted, and a count is reported every {FAULTS_SUMMARY_SECONDS:g} s while "
            "they go on.",
            fault.line,
        )

    def _summary(self, count: int, latest: Exception) -> Exception:
        assert isinstance(latest, StrayOutputError)
        lines, are, they = (
            ("1 more line", "is", "it was")
            if count == 1
            else (f"{count} more lines", "are", "they were")
        )
        return StrayOutputError(
            f"The server `{self._command_line}` wrote {lines} that {are} not JSON-RPC to "
            f"stdout since the last report (the latest: {_shown(latest.line)}); "
            f"{they} skipped. A stdio server must write only protocol messages to stdout; "
            "log to stderr instead.",
            latest.line,
        )


_SHOWN_CHARS = 120


def _shown(text: str) -> str:
    """``text`` quoted, cut to a readable length (saying how much is left out)."""
    if len(text) <= _SHOWN_CHARS:
        return repr(text)
    return f"{text[:_SHOWN_CHARS]!r}… ({len(text) - _SHOWN_CHARS} more characters)"


def _ended(code: int | None) -> str:
    """How a program ended, from its exit code (negative: the signal that killed it)."""
    if code is not None and code < 0:
        return f"was killed by signal {-code} ({_signal_name(-code)})"
    return f"exited with code {code}"


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return "unknown signal"


def _connection_closed(exc: BaseException) -> bool:
    """Whether ``exc`` is (only) the connection ending, possibly in exception groups."""
    if isinstance(exc, BaseExceptionGroup):
        matched, rest = cast(BaseExceptionGroup[BaseException], exc).split(ConnectionClosedError)
        return matched is not None and rest is None
    return isinstance(exc, ConnectionClosedError)


async def _read_lines(
    pipes: _Pipes,
    process: Process,
    lines: _ServerOutput,
    sink: ChannelSender[Envelope | Exception],
    child: _Child,
) -> None:
    engine_gone = False

    def take(chunk: bytes) -> bool:
        nonlocal engine_gone
        incoming, replies = lines.feed(chunk)
        for reply in replies:
            deliver(pipes.outgoing, Envelope(reply))
        try:
            for item in incoming:
                child.heard = child.heard or isinstance(item, Envelope)
                sink.send_nowait(item)  # unbounded; no checkpoint per message
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            engine_gone = True
        return not engine_gone

    async with sink:
        output_ended = False
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(_stop_reading_once_exited, process, tg.cancel_scope)
                await pipes.read_all(take, Held(UntakenMessages(sink), pipes.unread))
                output_ended = True
                tg.cancel_scope.cancel()
        finally:
            lines.say_left(sink)
        if engine_gone:
            return
        with anyio.move_on_after(_SHUTDOWN_GRACE_SECONDS):
            await process.wait()
            if output_ended:  # else its stderr is most likely held open too
                await child.stderr.finished.wait()
        code = child.exit_code = process.returncode
        if code is not None and not child.heard:
            # Only ending the stream: the connect that is waiting fails, and becomes a
            # ServerExitedError, without a transport error logged ahead of it.
            return
        how = _ended(code) if code is not None else "closed its stdout"
        if not output_ended:
            how += " (a process it started still holds its stdout open)"
        with contextlib.suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
            await sink.send(ConnectionClosedError(f"the server process {how}"))


async def _stop_reading_once_exited(process: Process, reading: anyio.CancelScope) -> None:
    """Stop reading a moment after the program exits. Its output ends when the last
    process holding it closes it, which a process the program started (and left
    running) may never do: waiting for that, calls would hang after the program died.
    What it wrote before exiting is in the pipe already, and is read meanwhile."""
    await process.wait()
    await anyio.sleep(_SHUTDOWN_GRACE_SECONDS)
    reading.cancel()


async def _read_stream(stdout: ByteReceiveStream, take: Take, backlog: Backlog) -> None:
    """Hand what ``stdout`` gives to ``take`` until it ends or ``take`` returns false,
    reading nothing while ``backlog`` is backed up."""
    with contextlib.suppress(
        anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream
    ):
        while True:
            await until_drained(backlog)
            if not take(await stdout.receive()):
                return


async def _write_lines(
    source: ChannelReceiver[Envelope],
    stdin: ByteSendStream,
    incoming: ChannelSender[Envelope | Exception],
    limit: int,
) -> None:
    async with source:
        try:
            async for envelope in source:
                if line := line_for(envelope, limit, incoming, _RAISED_WITH):
                    await stdin.send(line)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return
        finally:
            with anyio.CancelScope(shield=True):
                await stdin.aclose()


async def _stop(process: Process) -> None:
    """Close stdin, wait a moment, then terminate and finally kill; always reap. Then
    terminate what is left of its process group: helpers it started and left running,
    or the server itself when the program was a wrapper (``sh -c``) that has exited."""
    if process.returncode is None:
        with anyio.move_on_after(_SHUTDOWN_GRACE_SECONDS):
            if process.stdin is not None:
                await process.stdin.aclose()
            await process.wait()
    if process.returncode is None:
        process.terminate()
        with anyio.move_on_after(_SHUTDOWN_GRACE_SECONDS):
            await process.wait()
    if process.returncode is None:
        process.kill()
        await process.wait()
    if _GROUPS:
        await _end_group(process.pid)


async def _end_group(group: int) -> None:
    """Terminate what is left of the process group, and kill what is still running of
    it after the grace: a helper that ignores SIGTERM must not outlive the connection
    either. Its members are not our children, so nothing signals their end: the group
    is looked at again every few milliseconds."""
    if not _signal_group(group, signal.SIGTERM):
        return
    with anyio.move_on_after(_SHUTDOWN_GRACE_SECONDS):
        while _group_running(group):  # noqa: ASYNC110 (other processes: no event to wait on)
            await anyio.sleep(_GROUP_POLL_SECONDS)
        return
    _signal_group(group, signal.SIGKILL)


def _signal_group(group: int, number: int) -> bool:
    """Send ``number`` to the group; whether anyone was in it to signal. A member that
    changed its user cannot be signalled, and is left alone."""
    try:
        os.killpg(group, number)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _group_running(group: int) -> bool:
    """Whether a member of the group still runs. An ended member stays in the group
    until whoever adopted it reaps it, and in a container init may never do so: on
    Linux such zombies are told apart through ``/proc``; elsewhere init reaps them."""
    if not _PROCESSES.is_dir():
        return _signal_group(group, 0)
    with os.scandir(_PROCESSES) as entries:
        for entry in entries:
            if not entry.name.isdigit():
                continue
            try:
                with open(os.path.join(entry.path, "stat"), "rb") as stat:
                    fields = stat.read().rsplit(b")", 1)[1].split()
            except OSError:  # it ended while we looked
                continue
            if fields[0] != b"Z" and int(fields[2]) == group:  # state, ppid, pgrp
                return True
    return False
