"""Streamable HTTP: the client transport and the ASGI server application."""

from answerback.transports.http._client import StreamableHTTPTransport
from answerback.transports.http._event_store import EventStore, InMemoryEventStore
from answerback.transports.http._security import HostPolicy
from answerback.transports.http._server import StreamableHTTPApp
from answerback.transports.http._uvicorn import run_uvicorn, serve_uvicorn, uvicorn_server

__all__ = [
    "EventStore",
    "HostPolicy",
    "InMemoryEventStore",
    "StreamableHTTPApp",
    "StreamableHTTPTransport",
    "run_uvicorn",
    "serve_uvicorn",
    "uvicorn_server",
]
