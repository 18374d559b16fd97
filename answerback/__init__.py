"""answerback: the Model Context Protocol, built around the server asking and the client
answering back (elicitation, sampling, roots, logging), in both protocol generations.

The names here load on first use (PEP 562): ``import answerback.server`` runs this file
first, and a server must not pay for importing the client (its HTTP stack and URL
verdicts) that it never uses. ``from answerback import Client`` works as ever.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from answerback._public import lazy_exports

if TYPE_CHECKING:
    from answerback.client import Client, ClientRequestContext
    from answerback.transports import StdioServer
    from answerback.types import MCPError

# The one place the version is written: the build reads it from here (pyproject.toml's
# [tool.hatch.version]), so the installed metadata and this attribute always agree.
__version__ = "0.1.0"

_LAZY = {
    "Client": "client",
    "ClientRequestContext": "client",
    "MCPError": "types",
    "StdioServer": "transports",
}

__getattr__, __dir__ = lazy_exports(globals(), _LAZY)

__all__ = ["Client", "ClientRequestContext", "MCPError", "StdioServer"]
