"""Whether a client sees the text of the exceptions a server raises.

An exception's message may hold what the client must not see (a connection string, a
path, a token), yet it is what a developer needs while building the server. The rule
is ``MCPServer(error_details=...)``:

- ``"local"`` (the default): the full text for clients on this machine (stdio,
  in-process, HTTP from a loopback address), a reference to the server's log for
  every other client;
- ``"full"``: the full text for everyone;
- ``"redacted"``: a reference for everyone.

Behind a reverse proxy on the same machine every HTTP request comes from loopback, so
such a deployment should say ``"redacted"``. Deliberate errors (``MCPError``, invalid
arguments) are never redacted: their text is meant for the client.
"""

from __future__ import annotations

import ipaddress
from typing import Literal, TypeAlias, cast

from answerback.jsonrpc import IncomingRequest

ErrorDetails: TypeAlias = Literal["local", "full", "redacted"]
ERROR_DETAILS: tuple[ErrorDetails, ...] = ("local", "full", "redacted")


def check_error_details(setting: str) -> None:
    """Refuse a setting that is not one of the three, listing them."""
    if not isinstance(cast(object, setting), str):
        raise TypeError(
            f"error_details must be 'local' (full text for clients on this machine), 'full' "
            f"or 'redacted' (a string), got {setting!r}"
        )
    if setting not in ERROR_DETAILS:
        raise ValueError(
            f"Unknown error_details {setting!r}: use 'local' (full text for clients on this "
            "machine), 'full' or 'redacted'."
        )


def redacts(setting: ErrorDetails, request: IncomingRequest) -> bool:
    """Whether an unexpected exception while answering ``request`` keeps its text
    on the server (see the module docstring for the rule)."""
    if setting == "local":
        return not _from_this_machine(request)
    return setting == "redacted"


def _from_this_machine(request: IncomingRequest) -> bool:
    """An HTTP request carries its ASGI request, whose ``client`` is the peer's address
    (unknown: not local); stdio and in-process requests carry no such thing."""
    context: object = request.envelope.transport_context
    if not hasattr(context, "client"):
        return True
    client: object = getattr(context, "client", None)
    host: object = getattr(client, "host", None)
    if not isinstance(host, str):
        return False
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"
