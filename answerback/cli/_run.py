"""``answerback run FILE[:OBJ]``: serve the ``MCPServer`` a Python file defines.

The file is imported under its own name, not as ``__main__``, so its
``if __name__ == "__main__": mcp.run()`` block does not run and the command decides the
transport. The server object is found the way a person would look for it: the one named,
else a module-level ``mcp``, ``server`` or ``app``, else the only one there is.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

from answerback.server import MCPServer

_USUAL_NAMES = ("mcp", "server", "app")
_CREATE_ONE = 'create one, for example `mcp = MCPServer("name")`'


class RunError(Exception):
    """The file or object cannot be served; the message says what to change."""


def split_spec(spec: str) -> tuple[Path, str | None]:
    """``path/to/file.py:obj`` → the path and the object name (a Windows drive's colon
    is part of the path)."""
    path_text, _, name = spec.rpartition(":")
    if not path_text or "/" in name or "\\" in name or name.endswith(".py"):
        return Path(spec), None
    return Path(path_text), name or None


def load_module(path: Path) -> ModuleType:
    if not path.is_file():
        raise RunError(f"{path} is not a file: give the Python file that defines the server.")
    directory = str(path.resolve().parent)
    if directory not in sys.path:
        sys.path.insert(0, directory)
    name = path.stem if path.stem.isidentifier() else "answerback_served"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise RunError(f"{path} cannot be imported as Python: is it a .py file?")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except SyntaxError as exc:  # the file's mistake, not the command's: no traceback
        where = f"{exc.filename or path}:{exc.lineno}" if exc.lineno else str(path)
        raise RunError(f"{where}: {exc.msg}: fix the file's syntax, then run it again.") from None
    return module


def find_server(module: ModuleType, path: Path, name: str | None) -> MCPServer:
    """The server object: ``name`` if given, else a usual name, else the only one."""
    if name is not None:
        found = getattr(module, name, None)
        if isinstance(found, MCPServer):
            return found
        what = "not defined" if found is None else f"a {type(found).__name__}"
        defined = ", ".join(sorted(_servers_in(module)))
        instead = (
            f"pick one of the MCPServers it defines ({defined}) with {path}:NAME"
            if defined
            else f"{path} defines none at module level: {_CREATE_ONE}"
        )
        raise RunError(f"{path}:{name} is {what}, not an MCPServer: {instead}.")
    for usual in _USUAL_NAMES:
        found = getattr(module, usual, None)
        if isinstance(found, MCPServer):
            return found
    servers = _servers_in(module)
    if len(servers) == 1:
        return next(iter(servers.values()))
    if not servers:
        raise RunError(
            f"{path} defines no MCPServer at module level: {_CREATE_ONE}, or name it with FILE:OBJ."
        )
    names = ", ".join(sorted(servers))
    raise RunError(f"{path} defines several MCPServers ({names}): pick one with {path}:NAME.")


def _servers_in(module: ModuleType) -> dict[str, MCPServer]:
    """The servers ``module`` defines at its top level, by the names they have there."""
    return {key: value for key, value in vars(module).items() if isinstance(value, MCPServer)}


def parse_http(value: str) -> tuple[str, int]:
    """``[HOST:]PORT`` → host (127.0.0.1 unless given) and port."""
    host, _, port_text = value.rpartition(":")
    host = host.strip("[]") or "127.0.0.1"
    try:
        port = int(port_text)
    except ValueError:
        raise RunError(f"--http {value}: give a port (8000) or HOST:PORT (0.0.0.0:8000).") from None
    if not 0 <= port <= 65535:
        raise RunError(f"--http {value}: a port is a number from 0 to 65535.")
    return host, port


def serve(spec: str, http: str | None, path: str) -> None:
    """Import the file and run its server (blocking) over stdio or HTTP."""
    if not path.startswith("/"):
        raise RunError(f"--path {path!r}: the endpoint's path starts with /, as in /mcp.")
    file, name = split_spec(spec)
    server = find_server(load_module(file), file, name)
    if http is None:
        server.run()
    else:
        host, port = parse_http(http)
        server.run(transport="streamable-http", host=host, port=port, path=path)
