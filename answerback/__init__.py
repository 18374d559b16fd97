"""answerback: the Model Context Protocol, built around the server asking and the client
answering back (elicitation, sampling, roots, logging), in both protocol generations."""

from answerback.client import Client, ClientRequestContext
from answerback.transports import StdioServer
from answerback.types import MCPError

__all__ = ["Client", "ClientRequestContext", "MCPError", "StdioServer"]
