"""The command line as it looks from outside: its commands, options, exit codes and the
line that says why it failed.

Kept apart from the code behind the commands so that parsing loads none of it: ``answerback
run`` serves a server, and a host that starts servers with it waits for every import.
"""

from __future__ import annotations

import argparse
import functools
import math
import os
import re
import shlex
import sys
from collections.abc import Sequence
from enum import IntEnum
from typing import TYPE_CHECKING, Literal, cast, get_args

from answerback import __version__
from answerback.types import SUPPORTED_VERSIONS, LoggingLevel

if TYPE_CHECKING:
    from rich.console import Console

LoginMode = Literal["auto", "browser", "never"]

MODES = ("auto", "legacy", *SUPPORTED_VERSIONS)
"""What ``--mode`` and a config entry's ``"mode"`` take: what ``Client(mode=...)`` takes."""

TOKEN_ENV = "ANSWERBACK_TOKEN"
"""A bearer token for every HTTP target, when ``--token`` is not given."""
CLIENT_SECRET_ENV = "ANSWERBACK_CLIENT_SECRET"
"""The client secret, so it need not be on the command line (where ``ps`` shows it)."""


class ExitCode(IntEnum):
    OK = 0
    TOOL_ERROR = 1
    """The tool ran and reported failure (``isError``), as servers report arguments the
    tool cannot take."""
    USAGE = 2
    """Bad arguments, target, config or answers file (or an answer that does not fit)."""
    CONNECTION = 3
    """The server could not be started or reached, or went away."""
    REFUSED = 4
    """The server answered the request with a protocol error (unknown tool, bad params),
    or with a malformed reply, or is no MCP server (it echoed the command's messages)."""
    AUTHORIZATION = 5
    """The server requires authorization and none worked (login refused or impossible
    here, token rejected, token file unusable)."""
    OUTPUT = 6
    """Standard output could not be written (a full disk): what was to be printed is lost."""
    INTERRUPTED = 130
    """The person stopped the command (Ctrl-C), as a shell reports a program SIGINT ended."""


COMMANDS = {
    "run": "serve an answerback server file (stdio or HTTP)",
    "connect": "an interactive session with servers (needs a terminal)",
    "call": "call one tool and print its result",
    "list": "print a server's tools, resources and prompts",
    "logout": "forget the tokens kept for a server (log in again next time)",
}
"""Each command and what it does, for ``--help`` and for a command line that names none."""

_TARGET_HELP = (
    'an http(s) URL, a command line in quotes ("python server.py"), a Python file '
    "(server.py), or a server name from the config file"
)


def build_parser() -> argparse.ArgumentParser:
    """Every command and its options (docs/cli.md describes them)."""
    parser = argparse.ArgumentParser(
        prog="answerback",
        description="Talk to MCP servers as a person (connect, call, list), or run one (run).",
        epilog=f"Targets: {_TARGET_HELP}. Exit codes: 0 ok, 1 the tool reported an "
        "error, 2 usage, 3 connection failed, 4 the server refused the request (or replied "
        "malformed, or is no MCP server), 5 authorization failed, 6 the output could not be "
        "written. answerback help COMMAND shows a command's options.",
    )
    parser.add_argument("--version", action="version", version=f"answerback {__version__}")
    # Not required to argparse, whose complaint would name no command: parse lists them.
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    run = commands.add_parser("run", help=COMMANDS["run"])
    run.add_argument(
        "file", metavar="FILE[:OBJ]", help="the Python file, and the server's name in it"
    )
    run.add_argument(
        "--http", metavar="[HOST:]PORT", help="serve streamable HTTP (host 127.0.0.1 unless given)"
    )
    run.add_argument("--path", default="/mcp", help="the HTTP endpoint's path (default /mcp)")

    def targets_options(sub: argparse.ArgumentParser) -> None:
        sub.add_argument("--config", metavar="FILE", help="a config file with mcpServers")
        sub.add_argument(
            "--mode",
            choices=MODES,
            metavar="MODE",
            help="the protocol era for every server named: auto (the newest the server "
            'speaks; the default, unless a config entry says its own "mode"), legacy (the '
            "2025-11-25 handshake, which lets tools built on the official SDK ask), or a "
            f"protocol version ({', '.join(SUPPORTED_VERSIONS)})",
        )
        sub.add_argument(
            "--log-level",
            default="info",
            choices=get_args(LoggingLevel),
            help="the least severe server log message shown (default info)",
        )
        sub.add_argument(
            "--root",
            action="append",
            default=[],
            metavar="PATH",
            help="a directory servers may work in (repeatable; the current one is always there)",
        )
        _add_auth_options(sub)

    connect = commands.add_parser("connect", help=COMMANDS["connect"])
    connect.add_argument(
        "targets",
        nargs="*",
        metavar="TARGET",
        help=f"{_TARGET_HELP} (none: every server of the config file)",
    )
    targets_options(connect)
    connect.add_argument("--history", metavar="FILE", help="where the command history is kept")
    _add_plain_option(connect)
    _add_model_options(connect)
    connect.add_argument(
        "--timeout",
        type=_seconds,
        metavar="SECONDS",
        help="how long a request may go unanswered (a person answering does not count)",
    )

    one = commands.add_parser("call", help=COMMANDS["call"], formatter_class=_ToolRequired)
    one.add_argument("target", metavar="TARGET", help=_TARGET_HELP)
    # Optional to argparse, so that parse's own message says where the tools are listed
    # (argparse's says only "required: TOOL"); _ToolRequired shows it required in usage.
    one.add_argument(
        "tool",
        metavar="TOOL",
        nargs="?",
        help="the tool to call (answerback list TARGET lists them)",
    )
    one.add_argument(
        "arguments",
        nargs="*",
        default=[],  # else argparse names ARG as required when TARGET is missing
        metavar="ARG",
        help="key=value ... or one JSON object (none given: a tool's required ones are "
        "asked at a terminal)",
    )
    targets_options(one)
    one.add_argument("--json", action="store_true", help="print the raw result as JSON")
    one.add_argument("--answers", metavar="FILE", help="answer the server's questions from FILE")
    _add_plain_option(one)
    _add_model_options(one)
    one.add_argument(
        "--timeout",
        type=_seconds,
        metavar="SECONDS",
        help="how long the call may go unanswered (a person answering does not count)",
    )

    listing = commands.add_parser("list", help=COMMANDS["list"])
    listing.add_argument("target", metavar="TARGET", help=_TARGET_HELP)
    targets_options(listing)
    listing.add_argument("--json", action="store_true", help="print JSON")
    listing.add_argument(
        "--timeout",
        type=_seconds,
        metavar="SECONDS",
        help=f"how long the server may take to connect and to list (default {_DEFAULT_WAIT:g})",
    )

    logout = commands.add_parser("logout", help=COMMANDS["logout"])
    logout.add_argument("target", metavar="TARGET", help="the server's URL or config name")
    logout.add_argument("--config", metavar="FILE", help="a config file with mcpServers")
    return parser


class _ToolRequired(argparse.HelpFormatter):
    """``call``'s usage line with TOOL as the required word it is (``TARGET TOOL [ARG
    ...]``): argparse, which takes it as optional, wrote ``[TOOL]``."""

    def _format_args(self, action: argparse.Action, default_metavar: str) -> str:
        formatted = super()._format_args(action, default_metavar)
        if action.dest != "tool":
            return formatted
        return formatted.removeprefix("[").removesuffix("]")


_DEFAULT_WAIT = 30.0
"""The client's connect timeout, which ``--timeout`` replaces (kept in step with
``answerback.client``'s, which parsing does not import)."""


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line parsed. A tool's arguments may also come after ``call``'s
    options (``call TARGET TOOL --timeout 5 name=Ada``), which argparse alone refuses:
    what it leaves over is taken as more of them. ``help [COMMAND]`` is ``[COMMAND]
    --help``; a server's command line typed without quotes is refused saying so, and
    no command at all lists them. ``typed`` keeps the words after the command, for a
    command line suggested to the person to keep every option they gave."""
    words = list(sys.argv[1:] if argv is None else argv)
    if words[:1] == ["help"]:
        words = [*words[1:2], "--help"]
    parser = build_parser()
    if (unquoted := _unquoted_command_line(words)) is not None:
        parser.error(unquoted)
    args, extra = parser.parse_known_args(words)
    if args.command is None:
        width = max(map(len, COMMANDS))
        listed = "".join(f"\n  {name:{width}}  {does}" for name, does in COMMANDS.items())
        parser.error(
            f"give a COMMAND, one of:{listed}\nanswerback help COMMAND shows a command's options."
        )
    unknown = [word for word in extra if word.startswith("-")]
    if unknown or (extra and args.command != "call"):
        parser.error(f"unrecognized arguments: {' '.join(unknown or extra)}")
    if extra:
        args.arguments = [*args.arguments, *extra]
    if args.command == "call" and args.tool is None:
        # Without the usage line, which is the whole program's and says no TOOL.
        parser.exit(
            ExitCode.USAGE,
            f"{parser.prog}: error: call needs a TOOL after the TARGET: answerback call "
            "TARGET TOOL [ARG ...] (answerback list TARGET lists the tools)\n",
        )
    args.typed = words[1:]
    return args


INTERPRETERS = frozenset(
    {"python", "python3", "node", "npx", "uv", "uvx", "deno", "bun", "pipx", "bash", "sh"}
)
"""Programs that run the script or package named after them: on its own, one is not a
server."""

_SCRIPT = re.compile(r".*(\.(py|js|mjs|cjs|ts)|/.*)")


def is_interpreter(word: str) -> bool:
    """Whether ``word`` names an interpreter by itself (``python3.12``, ``node.exe``)."""
    name = word.removesuffix(".exe")
    return name in INTERPRETERS or re.fullmatch(r"python3?(\.\d+)?", name) is not None


def _unquoted_command_line(words: list[str]) -> str | None:
    """Why ``words`` look like a server's command line typed without quotes (``call
    python server.py greet``), with the line to type instead; ``None`` if they do not.
    Unquoted, the shell splits it and the script became the tool, or an option."""
    if len(words) < 3 or words[0] not in ("connect", "call", "list"):
        return None
    program, after = words[1], words[2]
    if not is_interpreter(program):
        return None
    if not (after.startswith("-") or after in ("run", "x") or _SCRIPT.fullmatch(after)):
        return None
    end = 2  # the command line goes on to its script or package, after any options
    while end < len(words):
        word = words[end]
        end += 1
        if word in ("-m", "-c"):  # the module or the code ends it
            end += 1
            break
        if not (word.startswith("-") or (word in ("run", "x") and end == 3)):  # uv run, bun x
            break
    end = min(end, len(words))
    rest, hidden = secrets_hidden(words[end:] if words[0] != "connect" else [])
    line = " ".join(["answerback", words[0], shlex.quote(shlex.join(words[1:end])), *rest])
    return (
        f"the server's command line must be one TARGET, in quotes: {line}"
        + ("" if words[0] != "connect" else " (each server's in its own quotes)")
        + set_first(hidden)
    )


_SECRET_OPTIONS = {"--token": TOKEN_ENV, "--client-secret": CLIENT_SECRET_ENV}
"""The options whose value is a credential, and the environment variable each also
reads: a command line suggested to the person names the variable, never the value,
which would reach the terminal's scrollback and CI logs."""


def secrets_hidden(options: Sequence[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """``options`` as shell words, each credential's value replaced by a reference to its
    environment variable; and the (variable, option) pairs so replaced. An option may be
    abbreviated (``--tok``) as argparse allows: to a prefix no other option shares. One
    that may be a credential's but is ambiguous (``--t``: ``--token`` or ``--timeout``)
    is left as typed, its value not repeated."""
    shown: list[str] = []
    hidden: list[tuple[str, str]] = []
    words = iter(options)
    for word in words:
        name, equals, _ = word.partition("=")
        exact = name in _long_options()
        meant = [name] if exact else [o for o in _long_options() if o.startswith(name)]
        if not any(option in _SECRET_OPTIONS for option in meant):
            shown.append(shlex.quote(word))
            continue
        if not equals:
            next(words, None)  # its value, the next word
        if len(meant) > 1:  # argparse refuses it as ambiguous; its value may be a secret
            shown.append(f"{shlex.quote(name)} {_NOT_REPEATED}")
            continue
        option = meant[0]
        variable = _SECRET_OPTIONS[option]
        shown.append(f'{option} "${variable}"')
        if (variable, option) not in hidden:
            hidden.append((variable, option))
    return shown, hidden


_NOT_REPEATED = "'<not repeated>'"
"""What an ambiguous option that may be a credential's is shown with in place of its value."""


@functools.cache
def _long_options() -> frozenset[str]:
    """Every long option of every command: what argparse matches an abbreviation
    against (a name typed whole is that option, even if another begins with it)."""
    found: set[str] = set()
    for action in build_parser()._actions:  # pyright: ignore[reportPrivateUsage]
        if isinstance(action, argparse._SubParsersAction):  # pyright: ignore[reportPrivateUsage]
            commands = cast(
                "argparse._SubParsersAction[argparse.ArgumentParser]",  # pyright: ignore[reportPrivateUsage]
                action,
            )
            for command in commands.choices.values():
                for option in command._actions:  # pyright: ignore[reportPrivateUsage]
                    found.update(o for o in option.option_strings if o.startswith("--"))
    return frozenset(found)


def set_first(hidden: list[tuple[str, str]]) -> str:
    """What to do before running a line whose credentials are environment variables
    (``hidden``, from ``secrets_hidden``); ``""`` if it has none."""
    if not hidden:
        return ""
    variables = " and ".join(variable for variable, _ in hidden)
    options = " and ".join(option for _, option in hidden)
    if len(hidden) == 1:
        return f" (first set {variables} to the value you gave {options}: it is not repeated here)"
    return f" (first set {variables} to the values you gave {options}: they are not repeated here)"


def _bearer_token(text: str) -> str:
    """A token that can travel in an ``Authorization`` header (``--token``, or
    ``$ANSWERBACK_TOKEN``, which argparse checks the same way)."""
    if not text.isascii() or not text.isprintable() or " " in text:
        raise argparse.ArgumentTypeError(
            f"the token (from --token or ${TOKEN_ENV}) holds a character a bearer token "
            "cannot: only printable ASCII, without spaces"
        )
    return text


def _seconds(text: str) -> float:
    """A positive, finite number of seconds (``--timeout``)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"{text} is not a positive number of seconds")
    return value


def _add_auth_options(sub: argparse.ArgumentParser) -> None:
    group = sub.add_argument_group("authorization (HTTP servers that require a login)")
    group.add_argument(
        "--token",
        type=_bearer_token,
        metavar="TOKEN",
        default=os.environ.get(TOKEN_ENV) or None,
        help=f"send this bearer token instead of logging in (default ${TOKEN_ENV})",
    )
    group.add_argument(
        "--client-id", metavar="ID", help="a client registered with the authorization server"
    )
    group.add_argument(
        "--client-secret",
        metavar="SECRET",
        default=os.environ.get(CLIENT_SECRET_ENV) or None,
        help=f"its secret: log in as the client itself, no person (default ${CLIENT_SECRET_ENV})",
    )
    group.add_argument(
        "--scope",
        action="append",
        default=[],
        metavar="SCOPE",
        help="a scope to ask for (repeatable; default: what the server asks for)",
    )
    group.add_argument(
        "--login",
        choices=get_args(LoginMode),
        default="auto",
        help="log in through the browser when a server asks: auto (only at a terminal, "
        "the default), browser (always), never (fail instead)",
    )


def _add_plain_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--plain",
        action="store_true",
        help="ask questions as plain lines instead of full screens (for screen readers "
        "and editor shells; the default where TERM is dumb)",
    )


def _add_model_options(parser: argparse.ArgumentParser) -> None:
    """The options that configure the drafting model (environment variables as defaults,
    so a shell that already has them set needs no flags)."""
    parser.add_argument(
        "--model-url",
        metavar="URL",
        default=os.environ.get("OPENAI_BASE_URL"),
        help="an OpenAI-compatible API (e.g. http://localhost:11434/v1) that drafts sampling "
        "replies for you to approve (default $OPENAI_BASE_URL; the key is $OPENAI_API_KEY)",
    )
    parser.add_argument(
        "--model",
        metavar="NAME",
        default=os.environ.get("OPENAI_MODEL"),
        help="the model to ask at --model-url (default $OPENAI_MODEL)",
    )
    parser.add_argument(
        "--sampling-audit",
        metavar="FILE",
        help="append one JSON line per sampling request and outcome to FILE",
    )


_CREDENTIALS = re.compile(r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/?#\s]*)@")


def redacted(text: str) -> str:
    """``text`` with the password of every URL in it (``http://user:secret@host``), or
    its user alone (often a token), written as ``****``: error lines quote URLs."""

    def hide(found: re.Match[str]) -> str:
        user, colon, _ = found["userinfo"].partition(":")
        return f"{found['scheme']}{user if colon else ''}{colon}****@"

    return _CREDENTIALS.sub(hide, text)


def complain(text: str, err: Console | None = None) -> None:
    """Say on stderr why the command failed, with what a terminal would act on removed
    and credentials hidden. Its imports wait for a failure: ``answerback run`` needs
    them only then."""
    from answerback.cli._output import PlainConsole
    from answerback.interact import clean

    err = err or PlainConsole(stderr=True)
    line = f"answerback: {clean(redacted(text))}"
    err.print(line, markup=False, highlight=False, soft_wrap=True)
