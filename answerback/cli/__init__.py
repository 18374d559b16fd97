"""The ``answerback`` command: a client for people, and a runner for servers.

- ``answerback run FILE[:OBJ]`` serves an answerback server file (stdio, or ``--http``);
- ``answerback connect TARGET...`` is an interactive session with one or more servers;
- ``answerback call TARGET TOOL [ARGS]`` makes one call, for shell scripts;
- ``answerback list TARGET`` prints what a server offers;
- ``answerback logout TARGET`` forgets the tokens kept for a protected server.

See docs/cli.md for targets, the config file, the answers file and the exit codes.
"""

from __future__ import annotations

from collections.abc import Sequence

from answerback.cli._interface import ExitCode, complain, parse

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    args = parse(argv)
    if args.command == "run":
        return _serve(args.file, args.http, args.path)
    from answerback.cli._commands import run_command

    return run_command(args)


def _serve(spec: str, http: str | None, path: str) -> int:
    """``answerback run``: only the server is imported, as by the server's own script."""
    from answerback.cli._run import RunError, serve

    try:
        serve(spec, http, path)
    except RunError as exc:
        complain(str(exc))
        return ExitCode.USAGE
    except KeyboardInterrupt:
        return 130
    return ExitCode.OK
