"""What a person types to name a server, turned into something ``Client`` connects to.

A target is a URL (streamable HTTP), a command line (``"python server.py"``, a stdio
subprocess), or the name of an entry in a config file in the ``mcpServers`` format that
desktop hosts share. Every server gets a short display name, because the person must
always see which server is asking.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shlex
import shutil
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from answerback.cli._echo import EchoWatch
from answerback.cli._interface import (
    MODES,
    is_interpreter,
    redacted,
    secrets_hidden,
    set_first,
)
from answerback.cli._json_file import UnreadableFile, read_json
from answerback.transports import StdioServer
from answerback.transports.http._client import checked_headers, parsed_endpoint
from answerback.types import SUPPORTED_VERSIONS

if TYPE_CHECKING:
    from answerback.client import OAuth

DEFAULT_CONFIGS = (".mcp.json", ".cursor/mcp.json", ".vscode/mcp.json")
"""Searched in the current directory, in this order, when ``--config`` is not given:
Claude Code's and Copilot's project file, Cursor's, VS Code's (whose key is ``servers``)."""

_GENERIC_ENTRIES = {"index", "main", "__main__", "cli", "server"}
_BUILD_DIRS = {"dist", "build", "lib", "src", "bin", "out"}
_HTTP = ("http://", "https://")
_HTTP_TYPES = ("http", "streamable-http", "streamableHttp")
"""How hosts' config files spell streamable HTTP in an entry's ``"type"``."""


class TargetError(Exception):
    """A target or config file that cannot be used; the message says what to fix."""


@dataclass
class Target:
    """A server to connect to, with the name shown for it."""

    name: str
    url: str | None = None
    command: list[str] = field(default_factory=list[str])
    env: dict[str, str] = field(default_factory=dict[str, str])
    cwd: str | None = None
    headers: dict[str, str] = field(default_factory=dict[str, str])
    auth: OAuth | None = None
    """How an HTTP target logs in (set by ``answerback.cli._auth``)."""
    token_from: str | None = None
    """Where the bearer token sent as is came from (``--token``, a config file's
    headers): what to change when the server refuses it."""
    mode: str = "auto"
    """The protocol era to speak, as ``Client(mode=...)`` takes it (``--mode``, or the
    config entry's ``"mode"``)."""

    @property
    def is_stdio(self) -> bool:
        return self.url is None

    def describe(self) -> str:
        """How the target is reached, for status lines and errors (a URL's password
        hidden)."""
        return redacted(self.url) if self.url is not None else shlex.join(self.command)

    def client_target(self, stderr: Any = None) -> Any:
        """What ``Client`` takes: the URL (or a transport with headers), or a
        ``StdioServer`` (watched for a program that echoes, such as ``cat``: see
        ``_echo``); ``stderr`` is where a child's stderr goes (None: inherited)."""
        if self.url is not None:
            if not self.headers and self.auth is None:
                return self.url
            from answerback.transports.http import StreamableHTTPTransport

            return StreamableHTTPTransport(self.url, headers=self.headers, auth=self.auth)
        extra: dict[str, Any] = {} if stderr is None else {"stderr": stderr}
        return EchoWatch(
            StdioServer(self.command[0], self.command[1:], env=self.env, cwd=self.cwd, **extra)
        )


def load_config(path: Path) -> dict[str, object]:
    """The entries of a config file, by name (``mcpServers``, or VS Code's ``servers``),
    as written: each is checked when used (``config_entry``), so that an entry this
    answerback cannot use (an SSE server, a typo) leaves the others usable."""
    try:
        data = read_json(path, "the config file")
    except UnreadableFile as exc:
        raise TargetError(str(exc)) from exc
    servers: object = None
    if isinstance(data, dict):
        data = cast(dict[str, object], data)
        servers = data.get("mcpServers", data.get("servers"))
    if not isinstance(servers, dict):
        raise TargetError(
            f"The config file {path} has no server table: it must be a JSON object with "
            '"mcpServers": {"name": {"command": ..., "args": [...]} or {"url": ...}}.'
        )
    return dict(cast(dict[str, object], servers))


def config_entry(path: Path, name: str, entry: object) -> Target:
    """The server of one config entry; ``TargetError`` naming the entry and what to fix."""
    where = f"server {name!r} in {path}"
    if not isinstance(entry, dict):
        raise TargetError(f"The {where} must be a JSON object with a command or a url.")
    spec = cast(dict[str, object], entry)
    kind = spec.get("type")
    if kind == "sse":
        raise TargetError(
            f"The {where} uses the old SSE transport, which answerback does not speak: "
            "point it at the server's streamable HTTP endpoint instead."
        )
    url, command = spec.get("url"), spec.get("command")
    _check_type(where, kind, has_url=url is not None, has_command=command is not None)
    mode = _entry_mode(where, spec.get("mode", "auto"))
    if url is not None:
        target = _http_entry(name, where, url, spec.get("headers"))
        target.mode = mode
        return target
    if not isinstance(command, str) or not command:
        raise TargetError(f'The {where} needs "command" (a program to run) or "url".')
    args = spec.get("args", [])
    if not isinstance(args, list) or not all(
        isinstance(arg, str) for arg in cast(list[object], args)
    ):
        raise TargetError(f'The {where} has "args" that are not a list of strings.')
    if any("\0" in word for word in [command, *cast(list[str], args)]):
        raise TargetError(f'The {where} has a NUL character in "command" or "args".')
    cwd = spec.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise TargetError(f'The {where} has a "cwd" that is not a string.')
    env = _strings(spec.get("env"), where, "env")
    for variable, value in env.items():
        if "\0" in variable + value:
            raise TargetError(f'The {where} has "env" entry {variable!r} with a NUL character.')
        if not variable or "=" in variable:
            raise TargetError(
                f'The {where} has "env" entry {variable!r}, which is not a variable name '
                '(one is not empty, and has no "=").'
            )
    return Target(name=name, command=[command, *cast(list[str], args)], env=env, cwd=cwd, mode=mode)


MODES_SPOKEN = (
    '"auto" (the newest era the server speaks), "legacy" (the 2025-11-25 handshake, which '
    "lets tools built on the official SDK ask) or a protocol version "
    f"({', '.join(SUPPORTED_VERSIONS)})"
)


def _entry_mode(where: str, mode: object) -> str:
    """A config entry's ``"mode"``, refused naming the entry unless ``Client`` takes it."""
    if not isinstance(mode, str) or mode not in MODES:
        raise TargetError(f'The {where} has "mode" {json.dumps(mode)}: use {MODES_SPOKEN}.')
    return mode


def _check_type(where: str, kind: object, *, has_url: bool, has_command: bool) -> None:
    """Refuse a ``"type"`` that is unknown or that the entry's keys contradict, and
    ``command`` with ``url``: a server is one or the other, and the key not used would
    be ignored unseen."""
    if kind is None:
        if has_url and has_command:
            raise TargetError(
                f'The {where} has both "command" (a stdio server) and "url" (an HTTP '
                "server): keep the one to use."
            )
        return
    shown = json.dumps(kind)
    if kind == "stdio":
        if has_url and has_command:
            raise TargetError(
                f'The {where} has "type": "stdio", which runs "command", and also "url": '
                'remove "url" (or, to connect to it, make "type" "http" and remove "command").'
            )
        if not has_command:
            fix = ', or, to connect to its "url", make "type" "http"' if has_url else ""
            raise TargetError(
                f'The {where} has "type": "stdio", which runs "command", but it has none: '
                f'give "command"{fix}.'
            )
        return
    if kind not in _HTTP_TYPES:
        raise TargetError(
            f'The {where} has "type" {shown}: use "stdio" (with "command") or "http" (with '
            '"url"; "streamable-http" and "streamableHttp" mean "http"), or leave it out.'
        )
    if has_url and has_command:
        raise TargetError(
            f'The {where} has "type": {shown}, which connects to "url", and also "command": '
            'remove "command" (or, to run it, make "type" "stdio" and remove "url").'
        )
    if not has_url:
        fix = ', or, to run its "command", make "type" "stdio"' if has_command else ""
        raise TargetError(
            f'The {where} has "type": {shown}, which connects to "url", but it has none: '
            f'give "url"{fix}.'
        )


def _http_entry(name: str, where: str, url: object, headers: object) -> Target:
    if not isinstance(url, str) or not url.startswith(_HTTP):
        raise TargetError(
            f'The {where} has "url" {url!r}: answerback speaks streamable HTTP, so it '
            "must be a string starting with http:// or https://."
        )
    _usable(url, f'The {where} has a "url" that cannot be used. ')
    sent = _strings(headers, where, "headers")
    try:
        checked = checked_headers(sent)
    except ValueError as exc:
        unsendable = next((n for n, v in sent.items() if not _sendable(v)), None)
        if unsendable is None:
            raise TargetError(f"The {where} has a header HTTP cannot send. {exc}") from None
        raise TargetError(
            f"The {where} has a header HTTP cannot send. The value of the header "
            f"{unsendable!r} holds a character HTTP headers cannot carry (only printable "
            "ASCII, spaces and tabs): write it in the file percent-encoded, as the server "
            'expects (an "é" as %C3%A9), or leave the header out.'
        ) from None
    given = any(header.lower() == "authorization" for header in checked)
    token_from = f'the "Authorization" header of the {where}' if given else None
    return Target(name=name, url=url, headers=checked, token_from=token_from)


def _sendable(value: str) -> bool:
    """Whether a header value holds only what HTTP carries: printable ASCII, spaces and
    tabs."""
    return all(" " <= char <= "~" or char == "\t" for char in value)


def _usable(url: str, context: str = "") -> str:
    """``url``, if a client can connect to it (a host, a port of 1 to 65535, brackets
    closed): every command resolves its targets here, so all of them refuse the same URLs
    the same way, before connecting."""
    try:
        parsed_endpoint(url)
    except ValueError as exc:
        raise TargetError(f"{context}{exc}") from None
    return url


def _strings(value: object, where: str, key: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise TargetError(f'The {where} has "{key}" that is not an object of strings.')
    for name, item in cast(dict[str, object], value).items():
        if not isinstance(item, str):
            raise TargetError(
                f'The {where} has "{key}" entry {name!r} that is not a string: write its '
                "value in quotes."
            )
    return dict(cast(dict[str, str], value))


def _in_cwd(target: Target, where: str) -> Target:
    """``target``, if its ``cwd`` is a directory: checked for the server used only, as
    another machine's config may name directories this one lacks."""
    if target.cwd is not None and not Path(target.cwd).is_dir():
        what = "is not a directory" if Path(target.cwd).exists() else "does not exist"
        raise TargetError(f'The {where} has "cwd" {target.cwd!r}, which {what}.')
    return target


def find_config(explicit: str | None) -> Path | None:
    """``--config`` if given (it must exist), else the first default file present."""
    if explicit is not None:
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise TargetError(f"The config file {explicit} does not exist.")
        return path
    for candidate in DEFAULT_CONFIGS:
        path = Path(candidate)
        if path.is_file():
            return path
    return None


def resolve(
    texts: list[str],
    config: str | None = None,
    mode: str | None = None,
    options: Sequence[str] = (),
) -> list[Target]:
    """Every target the person typed, with distinct display names; none typed, every
    server of the config file, as desktop hosts connect them. ``mode`` (``--mode``)
    replaces each one's own. ``options`` are the ones the person gave, which a command
    line suggested instead keeps."""
    targets = _resolved(texts, config, options)
    if mode is not None:
        for target in targets:
            target.mode = mode
    return targets


def _resolved(texts: list[str], config: str | None, options: Sequence[str]) -> list[Target]:
    config_path = find_config(config)
    configured: dict[str, object] | None = None
    targets: list[Target] = []
    if not texts:
        return _every_configured(config_path, options)
    for text in texts:
        if not text.strip():
            raise TargetError("An empty target: give a URL, a command line or a config name.")
        if text.startswith(_HTTP):
            targets.append(Target(name=_url_name(_usable(text)), url=text))
            continue
        try:
            words = shlex.split(text)
        except ValueError as exc:  # a quote left open, or a backslash at the very end
            raise TargetError(
                f"{text!r} is not a command line the shell would run ({exc}): check its "
                "quotes and backslashes."
            ) from None
        if len(words) == 1 and config_path is not None:
            if configured is None:
                configured = load_config(config_path)
            if text in configured:
                target = config_entry(config_path, text, configured[text])
                targets.append(_in_cwd(target, f"server {text!r} in {config_path}"))
                continue
            if config is not None:
                known = ", ".join(sorted(configured)) or "none"
                raise TargetError(
                    f"{text!r} is not a server in {config_path} (its servers: {known})."
                )
        if "://" in text.split()[0]:
            raise TargetError(
                f"{text!r} is not a target: URLs must be http:// or https://; anything "
                "else is run as a command line."
            )
        if (meant := _meant_url(text)) is not None:
            raise TargetError(
                f"{text!r} is not a target: did you mean {meant}? (A URL starts with "
                "http:// or https://; anything else is run as a command line.)"
            )
        if len(words) == 1 and is_interpreter(Path(words[0]).name):
            raise TargetError(
                f"{text!r} on its own starts an interpreter, not a server: give the server's "
                f'script with it, in quotes: "{words[0]} server.py".'
            )
        if len(words) == 1 and _no_program(words[0]):
            raise TargetError(_unknown_name(text, config_path, configured))
        targets.append(Target(name=_command_name(words), command=_runnable(words)))
    return _distinct(targets)


def _gives_config(options: Sequence[str]) -> bool:
    """Whether the typed ``options`` give ``--config``, as argparse reads them: whole, or
    cut to a prefix no other option shares (``--conf``; the others beginning ``--c`` are
    ``--client-id`` and ``--client-secret``), with its value after it or after ``=``."""
    return any(
        len(spelled := word.split("=", 1)[0]) >= len("--co") and "--config".startswith(spelled)
        for word in options
    )


def _every_configured(config_path: Path | None, options: Sequence[str]) -> list[Target]:
    """Every server of the config file; one that cannot be used is refused naming it,
    with how to leave it out: ``answerback connect`` with ``options`` and the others,
    and with ``--config`` unless ``options`` give it."""
    if config_path is None:
        *first, last = DEFAULT_CONFIGS
        raise TargetError(
            "No server named, and no config file to take them from (looked for "
            f"{', '.join(first)} and {last} in {Path.cwd()}): give the servers to connect to "
            '(URLs, command lines in quotes such as "python server.py", or config names with '
            "--config FILE)."
        )
    configured = load_config(config_path)
    if not configured:
        raise TargetError(
            f"The config file {config_path} lists no servers: add one to it, or name the "
            "servers to connect to."
        )
    targets: list[Target] = []
    for name, entry in configured.items():
        try:
            target = config_entry(config_path, name, entry)
            targets.append(_in_cwd(target, f"server {name!r} in {config_path}"))
        except TargetError as exc:
            others = [other for other in configured if other != name]
            # The file named even if it was found: the line then works anywhere.
            config = [] if _gives_config(options) else ["--config", str(config_path)]
            instead = ""
            if others:
                shown, hidden = secrets_hidden(options)
                keep = " ".join(
                    [shlex.join(["answerback", "connect", *config]), *shown, shlex.join(others)]
                )
                instead = f" To connect to the others, name them: {keep}{set_first(hidden)}"
            raise TargetError(f"{exc}{instead}") from None
    return _distinct(targets)


def _no_program(word: str) -> bool:
    """Whether ``word`` is neither a program on ``PATH`` nor a file: typed alone, it was
    meant as a config name, and run it would only fail with "No such file"."""
    return shutil.which(word) is None and not Path(word).exists()


def _unknown_name(text: str, config_path: Path | None, configured: dict[str, object] | None) -> str:
    """Why a lone word names no server, and what to type instead: where config files
    were looked for when none was found, or the servers of the one that was."""
    if config_path is None:
        *first, last = DEFAULT_CONFIGS
        why = f"no config file was found (looked for {', '.join(first)} and {last} in {Path.cwd()})"
    else:
        known = ", ".join(sorted(configured or {})) or "none"
        why = f"it is not a server in {config_path} (its servers: {known})"
    return (
        f"{text!r} is not a server answerback can find: {why}, and no program {text!r} is "
        "on PATH to run. To use a server by name, pass the config file that lists it "
        "(--config FILE) or run answerback in the directory that holds it; else give the "
        "server's URL (http://...) or the command that starts it, in quotes (\"python "
        'server.py").'
    )


_URL_TYPO = re.compile(r"(?i)(https?):/*(?!//)(?P<rest>[^/\s].*)")
_HOST_PORT = re.compile(r"(?P<host>localhost|\d{1,3}(\.\d{1,3}){3}|\[[0-9a-fA-F:]+\]):\d+(/\S*)?")


def _meant_url(text: str) -> str | None:
    """The URL a target that cannot be a command line most likely means: one with a
    slash too few (``http:/host``, ``http:host``), or a host and port alone
    (``localhost:8000``); ``None`` for anything else."""
    if (typo := _URL_TYPO.fullmatch(text)) is not None:
        return f"{typo[1].lower()}://{typo['rest']}"
    if _HOST_PORT.fullmatch(text) is not None:
        return f"http://{text}" if "/" in text else f"http://{text}/mcp"
    return None


def _runnable(words: list[str]) -> list[str]:
    """``words``, with a Python file typed on its own (``server.py``) and not executable
    run by this interpreter: started as a program it fails with "Permission denied". One
    that only defines an answerback server (the README's, with no ``mcp.run()``) would
    end at once as a script, so it is served as ``answerback run server.py`` serves it.
    An executable one keeps its ``#!`` line, which may pick its own Python or
    ``uv run --script``."""
    if len(words) == 1 and words[0].endswith(".py"):
        script = Path(words[0])
        if script.is_file() and not os.access(script, os.X_OK):
            if _only_defines_a_server(script):
                return [sys.executable, "-m", "answerback", "run", words[0]]
            return [sys.executable, words[0]]
    return words


def _only_defines_a_server(script: Path) -> bool:
    """Whether ``script`` imports answerback and, in the code that runs when it is
    imported, starts nothing: no ``if __name__ == "__main__":`` block and no call named
    ``run``, ``run_...`` or ``serve...`` (``mcp.run()``, ``anyio.run(main)``). Function
    and class bodies are not looked at: a tool calling ``subprocess.run`` starts nothing
    by being defined. It is read, never run; a file that starts itself, or that cannot be
    read or parsed, is left to run as a script, where Python reports what is wrong."""
    try:
        tree = ast.parse(script.read_bytes(), filename=str(script))
    except (OSError, SyntaxError, ValueError):  # ValueError: a NUL byte, on older Pythons
        return False
    imports_answerback = False
    for node in _run_on_import(tree):
        match node:
            case ast.If(test=ast.Compare(left=ast.Name(id="__name__"))):
                return False
            case ast.Call(func=ast.Attribute(attr=called) | ast.Name(id=called)) if (
                called == "run" or called.startswith(("run_", "serve"))
            ):
                return False
            case ast.Import(names=aliases):
                imports_answerback |= any(_is_answerback(alias.name) for alias in aliases)
            case ast.ImportFrom(module=str(module), level=0):
                imports_answerback |= _is_answerback(module)
            case _:
                pass
    return imports_answerback


def _run_on_import(node: ast.AST) -> Iterator[ast.AST]:
    """``node`` and what under it runs when the module is imported: everything but the
    bodies of functions, lambdas and classes (a class body runs, but only defines)."""
    yield node
    for child in ast.iter_child_nodes(node):
        if not isinstance(
            child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef
        ):
            yield from _run_on_import(child)


def _is_answerback(module: str) -> bool:
    return module == "answerback" or module.startswith("answerback.")


def _url_name(url: str) -> str:
    """Host and port as the URL writes them (``[::1]:8000``), without credentials: cut
    from the text, as ``urlsplit`` raises on some URLs the client connects to."""
    authority = re.split(r"[/?#]", url.partition("://")[2], maxsplit=1)[0]
    return authority.rpartition("@")[2] or url


def _command_name(words: list[str]) -> str:
    """The script or package a command runs (``python examples/library_server.py`` →
    ``library_server``), else the program's own name."""
    program = Path(words[0]).name
    chosen = program
    rest = words[1:]
    if program == "answerback" and rest[:1] == ["run"]:
        rest = [word.partition(":")[0] for word in rest[1:]]
    elif not (is_interpreter(program) or program.startswith("python")):
        rest = []
    for word in rest:
        if not word.startswith("-"):
            chosen = word
            break
    path = Path(chosen.rstrip("/"))
    stem = path.name
    for suffix in (".py", ".js", ".mjs", ".ts"):
        stem = stem.removesuffix(suffix)
    if stem in _GENERIC_ENTRIES:
        # node_modules/@scope/server-everything/dist/index.js is server-everything
        stem = next((p.name for p in path.parents if p.name and p.name not in _BUILD_DIRS), stem)
    return stem or program


def _distinct(targets: list[Target]) -> list[Target]:
    seen: dict[str, int] = {}
    for target in targets:
        count = seen.get(target.name, 0) + 1
        seen[target.name] = count
        if count > 1:
            target.name = f"{target.name}-{count}"
    return targets


def state_dir() -> Path:
    """Where answerback keeps history and logs: ``$ANSWERBACK_STATE_DIR``, else
    ``$XDG_STATE_HOME/answerback``, else ``~/.local/state/answerback``."""
    if explicit := os.environ.get("ANSWERBACK_STATE_DIR"):
        return Path(explicit)
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "answerback"
