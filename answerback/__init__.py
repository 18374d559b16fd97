"""answerback: the Model Context Protocol, built around the server asking and the client
answering back (elicitation, sampling, roots, logging), in both protocol generations."""

from answerback._public import publish
from answerback.client import Client, ClientRequestContext
from answerback.transports import StdioServer
from answerback.types import MCPError

# The one place the version is written: the build reads it from here (pyproject.toml's
# [tool.hatch.version]), so the installed metadata and this attribute always agree.
__version__ = "0.1.0"

__all__ = ["Client", "ClientRequestContext", "MCPError", "StdioServer"]

publish(globals())
