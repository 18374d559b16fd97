"""Serve a server the way a user would, ``mcp.run(transport="streamable-http")``, on a
port of the test's choosing.

Usage: python tests/http_support/serve_script.py (SCRIPT | tagged) PORT

SCRIPT is a server script defining ``mcp`` (e.g. examples/library_server.py); ``tagged``
is ``http_support.apps.tagged_server()``.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from answerback.server import MCPServer
from http_support.apps import tagged_server


def main() -> None:
    which, port = sys.argv[1], int(sys.argv[2])
    if which == "tagged":
        server = tagged_server()
    else:
        server = runpy.run_path(which, run_name="served_by_test")["mcp"]
    assert isinstance(server, MCPServer)
    server.run(transport="streamable-http", host="127.0.0.1", port=port, path="/mcp")


if __name__ == "__main__":
    main()
