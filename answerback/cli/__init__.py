"""The ``answerback`` command: a client for people, and a runner for servers.

- ``answerback run FILE[:OBJ]`` serves an answerback server file (stdio, or ``--http``);
- ``answerback connect TARGET...`` is an interactive session with one or more servers;
- ``answerback call TARGET TOOL [ARGS]`` makes one call, for shell scripts;
- ``answerback list TARGET`` prints what a server offers;
- ``answerback logout TARGET`` forgets the tokens kept for a protected server.

See docs/cli.md for targets, the config file, the answers file and the exit codes.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import get_args

from rich.console import Console

from answerback.cli._answers import AnswersError
from answerback.cli._auth import AuthOptions, AuthSetupError, add_auth_options, authorized, logout
from answerback.cli._logs import show_library_warnings
from answerback.cli._model import ModelOptionError, add_model_options
from answerback.cli._oneshot import (
    CommandFailed,
    ExitCode,
    call,
    list_command,
    one_shot_responder,
    run_async,
)
from answerback.cli._run import RunError, serve
from answerback.cli._targets import Target, TargetError, resolve
from answerback.interact import Roots
from answerback.interact._printable import clean
from answerback.types import LoggingLevel

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="answerback",
        description="Talk to MCP servers as a person (connect, call, list), or run one (run).",
        epilog='Targets: an http(s) URL, a command line in quotes ("python server.py"), or '
        "a server name from the config file. Exit codes: 0 ok, 1 the tool reported an "
        "error, 2 usage, 3 connection failed, 4 the server refused the request, 5 "
        "authorization failed.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    run = commands.add_parser("run", help="serve an answerback server file (stdio or HTTP)")
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
        add_auth_options(sub)

    connect = commands.add_parser("connect", help="an interactive session with servers")
    connect.add_argument("targets", nargs="+", metavar="TARGET")
    targets_options(connect)
    connect.add_argument("--history", metavar="FILE", help="where the command history is kept")
    add_model_options(connect)
    connect.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        help="how long a request may go unanswered (a person answering does not count)",
    )

    one = commands.add_parser("call", help="call one tool and print its result")
    one.add_argument("target", metavar="TARGET")
    one.add_argument("tool", metavar="TOOL")
    one.add_argument("arguments", nargs="*", metavar="ARG", help="key=value ... or one JSON object")
    targets_options(one)
    one.add_argument("--json", action="store_true", help="print the raw result as JSON")
    one.add_argument("--answers", metavar="FILE", help="answer the server's questions from FILE")
    add_model_options(one)
    one.add_argument(
        "--timeout",
        type=float,
        metavar="SECONDS",
        help="how long the call may go unanswered (a person answering does not count)",
    )

    listing = commands.add_parser("list", help="print a server's tools, resources and prompts")
    listing.add_argument("target", metavar="TARGET")
    targets_options(listing)
    listing.add_argument("--json", action="store_true", help="print JSON")

    logout = commands.add_parser(
        "logout", help="forget the tokens kept for a server (log in again next time)"
    )
    logout.add_argument("target", metavar="TARGET", help="the server's URL or config name")
    logout.add_argument("--config", metavar="FILE", help="a config file with mcpServers")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    args = _parser().parse_args(argv)
    err = Console(stderr=True)
    try:
        return _dispatch(args, err)
    except (TargetError, AnswersError, RunError, ModelOptionError, AuthSetupError) as exc:
        err.print(f"answerback: {clean(str(exc))}", markup=False, highlight=False, soft_wrap=True)
        return ExitCode.USAGE
    except CommandFailed as exc:  # its message may quote the server's
        err.print(f"answerback: {clean(str(exc))}", markup=False, highlight=False, soft_wrap=True)
        return exc.code
    except KeyboardInterrupt:
        return 130


def _dispatch(args: argparse.Namespace, err: Console) -> int:
    if args.command == "run":
        serve(args.file, args.http, args.path)
        return ExitCode.OK
    show_library_warnings()
    if args.command == "logout":
        return run_async(lambda: logout(resolve([args.target], args.config)[0], err))
    options = AuthOptions.of(args)

    def tell(text: str) -> None:
        err.print(clean(text), markup=False, highlight=False, soft_wrap=True)

    if args.command == "connect":
        from answerback.cli._connect import connect

        targets = resolve(args.targets, args.config)
        with authorized(targets, options, tell):
            return connect(targets, roots_of(args), args, err)
    target = resolve([args.target], args.config)[0]
    with authorized([target], options, tell):
        return _one_shot(args, target, err)


def roots_of(args: argparse.Namespace) -> Roots:
    try:
        return Roots([Path.cwd(), *args.root])
    except ValueError as exc:
        raise TargetError(f"--root: {exc}") from None


def _one_shot(args: argparse.Namespace, target: Target, err: Console) -> int:
    roots = roots_of(args)
    out = Console()
    if args.command == "list":
        responder = one_shot_responder(target, roots, None, err, None)
        return run_async(
            lambda: list_command(target, responder=responder, as_json=args.json, out=out)
        )
    answers = Path(args.answers) if args.answers else None
    if answers is None and sys.stdin.isatty() and sys.stdout.isatty():
        from answerback.cli._connect import call_at_terminal

        return run_async(lambda: call_at_terminal(target, roots, args, out, err))
    responder = one_shot_responder(target, roots, answers, err, None)
    return run_async(
        lambda: call(
            target,
            args.tool,
            args.arguments,
            responder=responder,
            as_json=args.json,
            timeout=args.timeout,
            log_level=args.log_level,
            out=out,
            err=err,
        )
    )
