"""``answerback call`` and ``answerback list``: one connection, one job, an exit code.

Made for shell scripts: the result goes to stdout (text, or ``--json``), everything
else (log lines, progress, what was answered on the person's behalf) to stderr, and the
exit code says what happened (see ``ExitCode``). Without a terminal on stdin nothing
waits for a person: questions are answered from ``--answers`` or declined, and stderr
says which.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import sys
import time
from collections.abc import AsyncGenerator, Awaitable, Callable, Generator
from pathlib import Path
from typing import Any, TypeVar, cast

import anyio
from rich.console import Console
from rich.progress import BarColumn, Progress, TaskID, TextColumn

from answerback.cli._answers import AnswersResponder, load_answers
from answerback.cli._arguments import (
    ArgumentsCancelled,
    ArgumentsError,
    parse_arguments,
    required_arguments,
)
from answerback.cli._echo import EchoedMessages
from answerback.cli._interface import TOKEN_ENV, ExitCode, redacted
from answerback.cli._render import json_output, log_line, print_listing, result_text, shown
from answerback.cli._reporting import CommandResponder, ReportedHeadless
from answerback.cli._targets import Target
from answerback.client import (
    AuthorizationError,
    Client,
    InvalidServerResultError,
    Responder,
    TokenStoreError,
)
from answerback.client._callbacks import refused_capability
from answerback.client._client import DEFAULT_CONNECT_TIMEOUT_SECONDS
from answerback.client._negotiation import PROBE_SECONDS
from answerback.client._session import (
    _no_back_channel,  # pyright: ignore[reportPrivateUsage]
    told_by_server,
)
from answerback.interact import Roots, clean
from answerback.jsonrpc import ProgressCallback
from answerback.jsonrpc._endpoint import WHY
from answerback.types import (
    ClientCapabilities,
    ConnectionClosedError,
    LoggingLevel,
    LoggingMessageNotificationParams,
    MCPError,
    Prompt,
    RequestTimeoutError,
    Resource,
    ResourceTemplate,
    Tool,
)

_T = TypeVar("_T")


class CommandFailed(Exception):
    """Ends a command with a message on stderr and an exit code (the message's URLs
    without their credentials: it quotes connection errors)."""

    def __init__(self, message: str, code: ExitCode) -> None:
        super().__init__(redacted(message))
        self.code = code


class OutputClosed(Exception):
    """Standard output's reader has gone (``answerback list ... | head -1``)."""


def discard_output() -> None:
    """Point standard output at the null device: nothing more can be written to it,
    nor flushed when the interpreter exits."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())


@contextlib.contextmanager
def printing(out: Console, what: str) -> Generator[None]:
    """The block's writes to standard output, flushed. A reader gone is ``OutputClosed``;
    any other failure (a full disk) a ``CommandFailed`` saying ``what`` is lost: both
    were tracebacks."""
    try:
        yield
        out.file.flush()
    except BrokenPipeError:  # rich's own writes say so through ``on_broken_pipe``
        discard_output()
        raise OutputClosed from None
    except OSError as exc:
        discard_output()
        raise CommandFailed(
            f"{what} could not be written to standard output: {exc.strerror or exc}.",
            ExitCode.OUTPUT,
        ) from None


class CleanedStderr:
    """Where a stdio server's stderr goes: ours, with its control characters written out
    (``clean``). Passed on raw, a server's escape sequences retitled the terminal,
    switched it to the alternate screen or hid its cursor, and outlived the command."""

    mode = "w"

    def write(self, text: str) -> int:
        if sys.stderr is not None:
            sys.stderr.write(clean(text.replace("\r\n", "\n")))
        return len(text)

    def flush(self) -> None:
        if sys.stderr is not None:
            sys.stderr.flush()


def make_client(
    target: Target,
    responder: Responder,
    timeout: float | None = None,
    log_level: LoggingLevel | None = "info",
) -> Client:
    return Client(
        target.client_target(CleanedStderr()),
        responder=responder,
        read_timeout_seconds=timeout,
        connect_timeout_seconds=connect_timeout(timeout),
        log_level=log_level,
        refusal_reasons={"sampling": _SAMPLING_REFUSED},
        mode=target.mode,
    )


_SAMPLING_REFUSED = (
    "the answerback command line answers sampling only with a person at a terminal to "
    "approve each reply: in answerback connect, or answerback call run at a terminal "
    "without --answers"
)
"""Why a command without sampling refused a server asking anyway, for the server to pass
on: the library's default, "pass sampling_callback= to Client", is advice its users
cannot take."""


def connect_timeout(timeout: float | None) -> float:
    """``--timeout`` bounds connecting too (its requests go unanswered like any other),
    else the client's default."""
    return DEFAULT_CONNECT_TIMEOUT_SECONDS if timeout is None else timeout


WAIT_LONGER = "pass --timeout SECONDS to wait longer"
"""What a person can do about a server slow to answer."""


class NoAnswer(Exception):
    """A server did not answer what a command asked it first (its listing) in time: a
    server that answers ``initialize`` and nothing more held the command for ever."""

    def __init__(self, server: str, what: str, seconds: float) -> None:
        super().__init__(
            f"{server} did not answer {what} within {seconds:g} s (it was connected, so it "
            f"may be stuck or busy); {WAIT_LONGER}."
        )


async def answered_within(
    seconds: float | None, server: str, what: str, work: Callable[[], Awaitable[_T]]
) -> _T:
    """``await work()``, given up after ``seconds`` (``--timeout``, else the connect
    timeout's default) with ``NoAnswer`` naming ``what`` (``"tools/list"``)."""
    limit = connect_timeout(seconds)
    try:
        with anyio.fail_after(limit):
            return await work()
    except TimeoutError:
        raise NoAnswer(server, what, limit) from None


class NotConnected(Exception):
    """A server that did not answer the requests that set up a connection in time.

    Its message says how long the command waited in all, not the last request's limit
    only: before the handshake's ``initialize`` comes the probe for the newer protocol
    (``server/discover``), and the whole took 42 s where the library's message said
    30 s. Written here from what the command knows, not rewritten from the library's
    words, whose advice names a ``Client`` argument."""

    def __init__(self, target: Target, waited: float, limit: float) -> None:
        probe = min(limit, PROBE_SECONDS)
        super().__init__(
            f"{target.name} did not answer while connecting ({target.describe()}): "
            f"{_seconds(waited)} s were spent on it in all: up to {probe:g} s waiting for an "
            "answer to server/discover (the newer protocol's greeting), then up to "
            f"{limit:g} s for each request of the older handshake (initialize), then closing "
            "the connection. Check that the target is an MCP server and that it is running "
            "(a stdio program must read requests on stdin and answer on stdout); if it is "
            f"only slow to start, {WAIT_LONGER} (each request waits that long)."
        )


def _seconds(seconds: float) -> str:
    """A measured time as a person reads it: tenths under ten seconds, whole above."""
    return f"{seconds:.1f}" if seconds < 10 else f"{seconds:.0f}"


@contextlib.asynccontextmanager
async def connected(
    client: Client,
    target: Target,
    timeout: float | None,
    clock: Callable[[], float] = time.monotonic,
) -> AsyncGenerator[Client]:
    """``async with client``, a connection that timed out raised as ``NotConnected``
    with the time the command waited (``clock``): told apart from a request's timeout by
    where it was raised (connecting), not by the library's wording."""
    started = clock()
    connecting = True
    try:
        async with client:
            connecting = False
            yield client
    except RequestTimeoutError as exc:
        if not connecting:
            raise
        raise NotConnected(target, clock() - started, connect_timeout(timeout)) from exc


def failure(
    target: Target,
    exc: BaseException,
    declared: ClientCapabilities | None = None,
    timeout: float | None = None,
) -> CommandFailed:
    """A connection or request error, as the message and exit code a script sees
    (``declared``: what the client declared, to explain a refusal for what it did not;
    ``timeout``: ``--timeout``, to say how long a request that timed out was waited for).
    Each kind of error is told by its class, never by the library's wording."""
    if (refusal := _authorization_failure(exc)) is not None:
        reason = _refused_credentials(target, refusal) or _reason_alone(refusal)
        return CommandFailed(
            f"cannot log in to {target.name} ({target.describe()}): {reason}",
            ExitCode.AUTHORIZATION,
        )
    if isinstance(exc, NoAnswer | NotConnected):
        return CommandFailed(str(exc), ExitCode.CONNECTION)
    if isinstance(exc, ConnectionClosedError | OSError):
        # Without what the library tells a program that goes on (to open a new
        # connection, that its connection stays open): a command is leaving
        # (``connect`` says what to do when it sees the server go).
        return CommandFailed(
            f"cannot talk to {target.name} ({target.describe()}): {_reason_alone(exc)}",
            ExitCode.CONNECTION,
        )
    if isinstance(exc, RequestTimeoutError):  # not a refusal: no answer came
        return CommandFailed(
            f"{target.name} did not answer in time ({target.describe()}): it sent neither "
            f"an answer nor progress for {connect_timeout(timeout):g} s, so the request was "
            f"cancelled; if it is expected to take longer, {WAIT_LONGER}.",
            ExitCode.CONNECTION,
        )
    if isinstance(exc, EchoedMessages):  # not a server's refusal: its echo of ours
        how = target.describe()
        return CommandFailed(
            f"{target.name}{'' if how == target.name else f' ({how})'} is not an MCP "
            f"server: it sent the command's own messages back (its {exc.method!r} request) "
            "instead of answering them, as a program that echoes its input does. Check "
            "that the command starts an MCP server that speaks over stdio.",
            ExitCode.REFUSED,
        )
    if isinstance(exc, InvalidServerResultError):  # an answer, but not MCP: nothing refused
        return CommandFailed(f"malformed reply from {target.name}: {exc}", ExitCode.REFUSED)
    if isinstance(exc, MCPError) and declared is not None:
        wanting = refused_capability(exc, declared)
        if wanting in _UNDECLARED_SAMPLING:
            # The library's words (the server's, or the client's own refusal) tell a
            # program's author which callback to pass; these say what a user can do.
            return CommandFailed(f"{target.name} {_UNDECLARED_SAMPLING[wanting]}", ExitCode.REFUSED)
    if isinstance(exc, MCPError) and (asked := _asked_without_back_channel(exc)) is not None:
        return CommandFailed(
            f"{target.name} refused (error {exc.code}): {asked} Its tool "
            f"asks the way only the 2025-11-25 handshake carries: connect with --mode legacy "
            f'(or give its config entry "mode": "legacy") so its tools can ask.',
            ExitCode.REFUSED,
        )
    if isinstance(exc, MCPError):
        # Servers built on the TypeScript SDK put the code in the message already.
        message = str(exc).removeprefix(f"MCP error {exc.code}: ")
        return CommandFailed(
            f"{target.name} refused: {message} (error {exc.code})", ExitCode.REFUSED
        )
    return CommandFailed(
        f"cannot talk to {target.name} ({target.describe()}): {type(exc).__name__}: {exc}",
        ExitCode.CONNECTION,
    )


_UNDECLARED_SAMPLING = {
    "sampling": (
        "asks for a model's reply (sampling), which this command gives only at a terminal: "
        "run it at a terminal (without --answers), where you approve each reply, typed or "
        "drafted by --model-url's model."
    ),
    "sampling.tools": (
        "asks for a model's reply that may call tools (sampling with tools), which this "
        "command does not offer."
    ),
    "sampling.context": (
        "asks for a model's reply with the session's context (sampling with "
        "includeContext), which this command does not offer."
    ),
}
"""What a user can do about a refusal for want of a sampling capability the command did
not declare: it declares sampling only at a terminal (and never tools or context);
elicitation and roots it always declares."""


def _asked_without_back_channel(exc: MCPError) -> str | None:
    """The server's own words, if ``exc`` refuses a tool that asked on a 2026-07-28
    connection (``_no_back_channel`` tells it): the library adds advice for a program
    (``Client(mode=...)``), which the command replaces with its own option. The
    library's advice is learnt from the library itself, so its wording has one home."""
    if _no_back_channel(exc) is None:
        return None
    probe = MCPError(exc.code, _SERVER_REQUEST)
    advised = _no_back_channel(probe)
    advice = "" if advised is None else advised.message.removeprefix(_SERVER_REQUEST).strip()
    return exc.message.replace(advice, "").rstrip()


_SERVER_REQUEST = "elicitation/create"
"""A request a 2026-07-28 connection cannot carry, named in a probe refusal."""


def _reason_alone(exc: BaseException) -> str:
    """Why a request failed, without the library's word to a program that goes on, nor
    what failed (the connection, authorization), which the command's line says: the
    library keeps the reason apart in the error's data (``WHY``)."""
    data: object = exc.data if isinstance(exc, MCPError) else None
    if isinstance(data, dict):
        why = cast(dict[str, object], data).get(WHY)
        if isinstance(why, str):
            return why
    return str(exc)


def _refused_credentials(target: Target, refusal: BaseException) -> str | None:
    """The server's 401/403 to what the command sent, with what a user of the command can
    change: the library's own reason advises a program (``auth=``). ``None`` for any other
    authorization failure (a login, a token store), whose reason says what to do."""
    data: object = refusal.data if isinstance(refusal, MCPError) else None
    if not isinstance(data, dict):
        return None
    status = cast(dict[str, object], data).get("httpStatus")
    challenge = cast(dict[str, object], data).get("challenge")
    if not isinstance(status, int) or not isinstance(challenge, str):
        return None
    answered = f"HTTP {status} (WWW-Authenticate: {challenge})"
    if target.token_from is not None:
        return (
            f"it refused the token given by {target.token_from} with {answered}: give a "
            "token it accepts, or none, for the command to log in through the browser."
        )
    return (
        f"it refused the command's authorization with {answered}: log in as someone it "
        "lets in (answerback logout "
        f"{target.describe()}, then run the command at a terminal), or give a token it "
        f"accepts (--token or ${TOKEN_ENV})."
    )


def _authorization_failure(exc: BaseException) -> BaseException | None:
    """The authorization error behind ``exc`` (its cause, or inside a group), if any: the
    OAuth flow's (or the server's 401/403 to a token given as is), or the token store's."""
    todo: list[BaseException] = [exc]
    for _ in range(50):  # causes and groups nest; never loop on a cycle
        if not todo:
            return None
        current = todo.pop()
        if isinstance(current, AuthorizationError | TokenStoreError):
            return current
        if isinstance(current, BaseExceptionGroup):
            todo.extend(cast(BaseExceptionGroup[BaseException], current).exceptions)
        todo.extend(e for e in (current.__cause__, current.__context__) if e is not None)
    return None


def one_shot_responder(
    target: Target,
    roots: Roots,
    answers: Path | None,
    err: Console,
    interactive: Callable[[str], Responder] | None,
) -> CommandResponder:
    """Who answers: the answers file, else a person (``interactive``, when given), else
    the headless policy; all with the roots and log lines."""

    def report(line: str) -> None:  # it may quote the server (a question's message)
        err.print(clean(line), markup=False, highlight=False, soft_wrap=True)

    def show_log(server: str, params: LoggingMessageNotificationParams) -> None:
        width = err.width if err.is_terminal else None
        err.print(log_line(server, params, width), highlight=False, soft_wrap=True)

    inner: Responder
    if answers is not None:
        inner = AnswersResponder(load_answers(answers), target.name, answers, report)
    elif interactive is not None:
        inner = interactive(target.name)
    else:
        inner = ReportedHeadless(target.name, report, "no terminal")
    return CommandResponder(inner, target.name, roots, show_log)


ArgumentsAsker = Callable[[Tool], Awaitable[dict[str, Any] | None]]
"""Asks a person a tool's arguments (``None``: they declined; ``ArgumentsCancelled``:
they cancelled)."""


async def call(
    target: Target,
    args: argparse.Namespace,
    *,
    responder: Responder,
    out: Console,
    err: Console,
    ask: ArgumentsAsker | None = None,
) -> ExitCode:
    """Connect, call ``args.tool`` once with the command's arguments and options, print
    the result; the exit code says how it went. Given no arguments, a tool that requires
    some has them asked (``ask``, with a person at the terminal) or is not called."""
    tool: str = args.tool
    try:
        client = make_client(target, responder, args.timeout, args.log_level)
        async with connected(client, target, args.timeout):
            listed = await answered_within(
                args.timeout, target.name, "tools/list", lambda: _listed_tool(client, tool)
            )
            if args.arguments or listed is None:
                schema = listed.input_schema if listed is not None else None
                arguments = parse_arguments(args.arguments, schema)
            else:
                arguments = await _unsupplied(listed, ask)
            with ProgressBar(err) as on_progress:
                result = await client.call_tool(tool, arguments, progress_callback=on_progress)
    except CommandFailed:
        raise
    except ArgumentsError as exc:
        raise CommandFailed(str(exc), ExitCode.USAGE) from exc
    except ArgumentsCancelled:
        raise CommandFailed(f"{tool} was not called: cancelled.", ExitCode.INTERRUPTED) from None
    except Exception as exc:
        raise failure(target, exc, responder.capabilities(), args.timeout) from exc
    with printing(out, "The tool was called, but its result"):
        if args.json:
            data = result.model_dump(mode="json", by_alias=True, exclude_none=True)
            out.file.write(json_output(data, getattr(out.file, "encoding", None)) + "\n")
        else:
            text = result_text(result)
            (err if result.is_error else out).print(
                text, markup=False, highlight=False, soft_wrap=True
            )
    return ExitCode.TOOL_ERROR if result.is_error else ExitCode.OK


async def _listed_tool(client: Client, tool: str) -> Tool | None:
    """The tool as the server lists it (its ``inputSchema`` says how to read
    ``key=value``, and which arguments it requires); ``None`` if the server lists no
    tools (the call then says so itself)."""
    if client.server_capabilities.tools is None:
        return None
    tools = await client.list_all_tools()
    for listed in tools:
        if listed.name == tool:
            return listed
    # The server's words, each kept to its line: this message is one line.
    names = ", ".join(sorted(clean(t.name, newlines=False) for t in tools)) or "none"
    server = told_by_server(client.server_info.name)
    raise CommandFailed(f"{server} has no tool {tool!r} (its tools: {names}).", ExitCode.REFUSED)


MISSING_NAMED = 10
"""How many missing arguments the line that names them names, at most."""


async def _unsupplied(tool: Tool, ask: ArgumentsAsker | None) -> dict[str, Any]:
    """The arguments of a tool called with none: ``{}`` when it requires none, else
    what the person gives (``ask``). Without a person to ask, or when they decline,
    nothing is sent (the server's refusal would say the tool failed, exit 1): a
    ``CommandFailed`` (usage) says so, or names the missing arguments and how to give
    them."""
    missing = required_arguments(tool.input_schema)
    if not missing:
        return {}
    if ask is not None:
        asked = await ask(tool)
        if asked is None:
            raise CommandFailed(f"{tool.name} was not called: no arguments given.", ExitCode.USAGE)
        return asked
    named = list(missing[:MISSING_NAMED])
    if len(missing) > len(named):
        named.append(f"{len(missing) - len(named)} more")
    noun, them = ("argument", "it") if len(missing) == 1 else ("arguments", "them")
    forms = " ".join(shlex.quote(f"{name}=VALUE") for name in missing[:MISSING_NAMED])
    raise CommandFailed(
        f"{tool.name} needs the {noun} {_together(named)}: give {them} as {forms}"
        f"{' ...' if len(missing) > MISSING_NAMED else ''} (or one JSON object).",
        ExitCode.USAGE,
    )


def _together(names: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


class ProgressBar:
    """A rich progress bar on stderr while a call reports progress; outside a terminal,
    each new progress message as a plain line. Progress is asked for either way: it is
    what keeps ``--timeout`` from cutting off a long call that reports it."""

    def __init__(self, err: Console) -> None:
        self.err = err
        self.bar: Progress | None = None
        self.task: TaskID | None = None
        self.last_message: str | None = None

    def __enter__(self) -> ProgressCallback:
        return self.update if self.err.is_terminal else self.note

    async def note(self, progress: float, total: float | None, message: str | None) -> None:
        """A progress message as a line of its own, when it changes (a report a second
        with the same words would fill a script's log)."""
        if not message or message == self.last_message:
            return
        self.last_message = message
        line = clean(message, newlines=False)
        self.err.print(line, markup=False, highlight=False, soft_wrap=True)

    async def update(self, progress: float, total: float | None, message: str | None) -> None:
        # The bar's text is rich markup: the server's message is shown, not obeyed.
        description = shown(message, newlines=False) if message else "working"
        if self.bar is None:
            self.bar = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                TextColumn("{task.completed:g}/{task.total:g}"),
                console=self.err,
                transient=True,
            )
            self.bar.start()
            self.task = self.bar.add_task(description, total=total)
        assert self.task is not None
        self.bar.update(self.task, completed=progress, total=total, description=description)

    def __exit__(self, *exc: object) -> None:
        if self.bar is not None:
            self.bar.stop()


Listing = tuple[list[Tool], list[Resource], list[ResourceTemplate], list[Prompt]]


async def listing(client: Client, server: str, seconds: float | None) -> Listing:
    """Everything a server offers (each kind only if the server declares it); given up
    after ``seconds`` (see ``answered_within``)."""
    return await answered_within(
        seconds, server, "its listing (tools, resources, prompts)", lambda: _listing(client)
    )


async def _listing(client: Client) -> Listing:
    caps = client.server_capabilities
    tools = await client.list_all_tools() if caps.tools is not None else []
    resources: list[Resource] = []
    templates: list[ResourceTemplate] = []
    if caps.resources is not None:
        resources = await client.list_all_resources()
        templates = await client.list_all_resource_templates()
    prompts = await client.list_all_prompts() if caps.prompts is not None else []
    return tools, resources, templates, prompts


async def list_command(
    target: Target,
    *,
    responder: Responder,
    as_json: bool,
    out: Console,
    timeout: float | None = None,
) -> ExitCode:
    try:
        client = make_client(target, responder, timeout)
        async with connected(client, target, timeout):
            tools, resources, templates, prompts = await listing(client, target.name, timeout)
    except Exception as exc:
        raise failure(target, exc, timeout=timeout) from exc
    with printing(out, "The listing"):
        if as_json:
            data = {
                "server": target.name,
                "tools": [
                    t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools
                ],
                "resources": [
                    r.model_dump(mode="json", by_alias=True, exclude_none=True) for r in resources
                ],
                "resourceTemplates": [
                    t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in templates
                ],
                "prompts": [
                    p.model_dump(mode="json", by_alias=True, exclude_none=True) for p in prompts
                ],
            }
            out.file.write(json_output(data, getattr(out.file, "encoding", None)) + "\n")
        else:
            print_listing(out, target.name, tools, resources, templates, prompts)
    return ExitCode.OK


def stdin_is_terminal() -> bool:
    return sys.stdin.isatty()
