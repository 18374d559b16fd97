"""The commands that talk to servers as a person: ``connect``, ``call``, ``list`` and
``logout``. Imported only when one of them runs (``answerback run`` needs none of this)."""

from __future__ import annotations

import argparse
import contextlib
import io
import signal
import sys
from collections.abc import Generator
from pathlib import Path
from typing import TextIO

from rich.console import Console

from answerback.cli._answers import AnswersError, AnswersResponder
from answerback.cli._auth import AuthOptions, AuthSetupError, authorized, logout
from answerback.cli._interface import ExitCode, complain
from answerback.cli._logs import show_library_warnings
from answerback.cli._loop import StoppedBySignal, run_async
from answerback.cli._model import ModelOptionError
from answerback.cli._oneshot import (
    CommandFailed,
    OutputClosed,
    call,
    discard_output,
    list_command,
    one_shot_responder,
)
from answerback.cli._output import PlainConsole
from answerback.cli._targets import Target, TargetError, resolve
from answerback.interact import Roots, clean


class _Output(PlainConsole):
    """Standard output of ``call`` and ``list``. rich ends a program whose output's
    reader has gone with exit code 1, which here says the tool failed; this stops the
    command instead, with its servers closed, and it exits as a shell reports a program
    SIGPIPE ended (141)."""

    def on_broken_pipe(self) -> None:
        discard_output()
        raise OutputClosed


def run_command(args: argparse.Namespace) -> int:
    """Run a parsed command other than ``run``; returns the exit code."""
    stdout: TextIO | None = sys.stdout
    if isinstance(stdout, io.TextIOWrapper):
        # What the terminal's encoding cannot hold is written as a \u escape, as Python
        # writes it on stderr: strict, one "…" ended a session in a Latin-1 locale.
        stdout.reconfigure(errors="backslashreplace")
    err = PlainConsole(stderr=True)
    if sys.stdout is None and args.command in ("call", "list"):
        complain(
            "standard output is closed, so the result would be lost: give the command "
            "somewhere to print (a file, a pipe, /dev/null).",
            err,
        )
        return ExitCode.USAGE
    try:
        return _dispatch(args, err)
    except (TargetError, AnswersError, ModelOptionError, AuthSetupError) as exc:
        complain(str(exc), err)
        return ExitCode.USAGE
    except CommandFailed as exc:  # its message may quote the server's
        complain(str(exc), err)
        return exc.code
    except StoppedBySignal as stopped:
        return 128 + stopped.number
    except OutputClosed:
        return 141  # as a shell reports a program SIGPIPE (13) ended
    except KeyboardInterrupt:
        return 128 + signal.SIGINT


def _dispatch(args: argparse.Namespace, err: Console) -> int:
    show_library_warnings()
    if args.command == "logout":
        return run_async(lambda: logout(resolve([args.target], args.config)[0], err))
    options = AuthOptions.of(args)

    def tell(text: str) -> None:
        err.print(clean(text), markup=False, highlight=False, soft_wrap=True)

    if args.command == "connect":
        from answerback.cli._connect import connect

        targets = resolve(args.targets, args.config, args.mode, args.typed)
        with authorized(targets, options, tell):
            return connect(targets, roots_of(args), args, err)
    target = resolve([args.target], args.config, args.mode)[0]
    with authorized([target], options, tell):
        return _one_shot(args, target, err)


def roots_of(args: argparse.Namespace) -> Roots:
    try:
        return Roots([Path.cwd(), *args.root])
    except ValueError as exc:
        raise TargetError(f"--root: {exc}") from None


def _one_shot(args: argparse.Namespace, target: Target, err: Console) -> int:
    roots = roots_of(args)
    out = _Output()
    if args.command == "list":
        responder = one_shot_responder(target, roots, None, err, None)
        return run_async(
            lambda: list_command(
                target, responder=responder, as_json=args.json, out=out, timeout=args.timeout
            )
        )
    answers = Path(args.answers) if args.answers else None
    if answers is None and sys.stdin.isatty():
        with terminal_to_draw_on() as screen:
            if screen is not None:
                from answerback.cli._connect import call_at_terminal

                return run_async(lambda: call_at_terminal(target, roots, args, out, err, screen))
    responder = one_shot_responder(target, roots, answers, err, None)
    code = run_async(lambda: call(target, args, responder=responder, out=out, err=err))
    if isinstance(responder.inner, AnswersResponder) and responder.inner.unfit is not None:
        raise AnswersError(responder.inner.unfit)  # the file's mistake, whatever the tool did
    return code


@contextlib.contextmanager
def terminal_to_draw_on() -> Generator[TextIO | None]:
    """Where ``call`` draws its questions for the person at the keyboard: standard
    output, else standard error, else the process's terminal (``/dev/tty``), so that
    ``call ... > result.json`` still asks; ``None`` when there is no terminal at all."""
    for stream in (sys.stdout, sys.stderr):
        if stream is not None and stream.isatty():
            yield stream
            return
    try:
        tty = open("/dev/tty", "w", errors="backslashreplace")  # noqa: SIM115 (closed below)
    except OSError:  # no controlling terminal (a cron job, a service)
        yield None
        return
    with tty:
        yield tty
