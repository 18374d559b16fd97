"""Error codes, the ``ErrorData`` wire shape and the one exception type, ``MCPError``.

They live in the lowest layer because every layer raises or converts them: the JSON-RPC
engine turns an ``MCPError`` into an error response and an error response back into an
``MCPError``, whichever side of the connection it is on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, cast

import pydantic
from pydantic_core import ErrorDetails

from answerback.types._base import MCPModel
from answerback.types._models import ElicitRequestURLParams, URLElicitationRequiredErrorData

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
RESOURCE_NOT_FOUND = -32002
"""A resource URI names nothing (until 2025-11-25; 2026-07-28 answers ``INVALID_PARAMS``)."""
REQUEST_TIMEOUT = -32001
CONNECTION_CLOSED = -32000
URL_ELICITATION_REQUIRED = -32042
HEADER_MISMATCH = -32020
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
UNSUPPORTED_PROTOCOL_VERSION = -32022
USER_REJECTED = -1
BUSY = -32010
"""The peer answers as many of our requests at once as it takes (by count, or by their
bytes): wait for answers, then send again. answerback's own code, from JSON-RPC's range
for implementations (MCP defines none); a client does not mistake it for an older server."""
AUTHORIZATION_FAILED = "authorization_failed"
"""The ``reason`` in a -32000 error's data when the request could not be authorized."""
ALREADY_ANSWERED = "already_answered"
"""The ``reason`` in the data of a 409 refusing an answer the server had already taken:
an earlier try of the same answer reached it (its response was lost), so the client
counts it as delivered. Any other refusal of an answer ends the call it belonged to."""
SERVER_FAILED = "server_failed"
"""The ``reason`` in a -32000 error's data when an HTTP server answered a request with a
5xx status (the ``httpStatus`` beside it): the server, or a proxy in front of it, failed or
is not taking requests, which says nothing of the protocol versions it speaks."""
SERVER_CLOSED = "server_closed"
"""The ``reason`` in a -32000 error's data when the server answers a request it will not
finish because it is closing the session or stopping: the peer saying the connection is
ending, so the client raises ``ConnectionClosedError`` as for one it saw end."""


PROBLEMS_SHOWN = 3
"""How many of a malformed message's problems an error message names."""


def validation_problems(exc: pydantic.ValidationError) -> list[str]:
    """Each problem pydantic found in a peer's message, as ``where: what (got value)``
    with the value cut short: what an error about the message quotes of it."""
    problems: list[str] = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"]) or "result"
        got = repr(error.get("input"))
        if len(got) > 40:
            got = got[:37] + "..."
        problems.append(f"{where}: {error['msg']} (got {got})")
    return problems


def shown_problems(problems: Sequence[str]) -> str:
    """The first ``PROBLEMS_SHOWN`` problems, saying how many more there were."""
    shown = "; ".join(problems[:PROBLEMS_SHOWN])
    if len(problems) > PROBLEMS_SHOWN:
        shown += f"; and {len(problems) - PROBLEMS_SHOWN} more"
    return shown


class ErrorData(MCPModel):
    """The ``error`` member of a JSON-RPC error response."""

    code: int
    message: str
    data: Any = None


class MCPError(Exception):
    """A JSON-RPC error, raised by either side and carried over the wire unchanged.

    Raise it from a handler to answer with exactly this code, message and data; catch it
    around a call to see what the peer answered.
    """

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    @property
    def error(self) -> ErrorData:
        """This error as the ``error`` member of a JSON-RPC response."""
        return ErrorData(code=self.code, message=self.message, data=self.data)

    @classmethod
    def from_error_data(cls, error: ErrorData) -> MCPError:
        """The most specific ``MCPError`` subclass for an error the peer sent.

        A peer's -32000 or -32001 is a plain ``MCPError``: JSON-RPC leaves -32000 to
        -32099 to servers for their own errors ("database unavailable"), so an answer
        with one came from a peer that is up. ``ConnectionClosedError`` and
        ``RequestTimeoutError`` say what this side saw (see ``local_failure``), or, for
        a -32000 whose data gives the reason ``SERVER_CLOSED``, that the peer is ending
        the connection.
        """
        subclass = _BY_CODE.get(error.code, MCPError)
        if error.code == CONNECTION_CLOSED and _member(error.data, "reason") == SERVER_CLOSED:
            subclass = ConnectionClosedError
        return subclass.__new__(subclass)._init(error.code, error.message, error.data)

    def _init(self, code: int, message: str, data: Any) -> MCPError:
        MCPError.__init__(self, code, message, data)
        return self

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code}, message={self.message!r})"


class RequestTimeoutError(MCPError):
    """No answer arrived within the request's timeout; the request was cancelled.
    Raised only for this side's own timeout: a peer's -32001 is a plain ``MCPError``."""

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(REQUEST_TIMEOUT, message, data)


class ConnectionClosedError(MCPError):
    """The connection ended, or the transport could not deliver the request or its
    answer, before the answer arrived (-32000). Raised for what this side saw, never for
    an error the peer sent: a peer's -32000 is a plain ``MCPError``."""

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(CONNECTION_CLOSED, message, data)


class AuthorizationError(ConnectionClosedError):
    """Authorization with a protected server failed: finding its authorization server,
    registering, the person's login or the token endpoint. The message says which step,
    what the other side said and what to do; ``oauth_error`` is the OAuth error code
    the authorization server sent (``access_denied``, ``invalid_grant``...), if any.

    The OAuth client raises it; a request that could not be authorized fails with it,
    so ``async with Client(url, auth=...)`` raises it when the login fails.
    """

    def __init__(self, message: str, *, error: str | None = None) -> None:
        super().__init__(message, {"reason": AUTHORIZATION_FAILED, "oauthError": error})

    @property
    def oauth_error(self) -> str | None:
        """The OAuth error code the authorization server sent, or ``None``."""
        value = _member(self.data, "oauthError")
        return value if isinstance(value, str) else None


def local_failure(error: ErrorData) -> ConnectionClosedError:
    """The exception for an error answer this side made up for its own request (the
    connection ended, or the transport could not deliver it): ``AuthorizationError`` if
    its data says authorization failed, else ``ConnectionClosedError``."""
    subclass = (
        AuthorizationError
        if _member(error.data, "reason") == AUTHORIZATION_FAILED
        else ConnectionClosedError
    )
    failure = subclass.__new__(subclass)
    MCPError.__init__(failure, error.code, error.message, error.data)
    return failure


def _member(data: Any, name: str) -> object:
    return cast(dict[str, object], data).get(name) if isinstance(data, dict) else None


class MethodNotFoundError(MCPError):
    """The peer does not implement (or refuses) the method."""

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(METHOD_NOT_FOUND, message, data)


class InvalidParamsError(MCPError):
    """The request's parameters were wrong; the message says which."""

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(INVALID_PARAMS, message, data)


def listed_problems(exc: pydantic.ValidationError, whole: str) -> str:
    """Every problem pydantic found, as ``where: what`` joined by ``; `` (``whole`` names
    the value itself when the problem is with all of it): the errors about a request's
    params, a tool's arguments and its returned value all read alike."""
    return "; ".join(
        f"{'.'.join(str(part) for part in err['loc']) or whole}: {err['msg']}"
        for err in exc.errors(include_url=False)
    )


def argument_error(
    call: str, exc: pydantic.ValidationError, advice: Mapping[str, str]
) -> TypeError | ValueError:
    """A caller's error for the arguments of ``call`` (``"get_prompt()"``,
    ``"ctx.sample()"``) that a params model refused, every problem named: a
    ``TypeError`` if a value is of the wrong type, else a ``ValueError``. ``advice``
    maps an argument to what to pass instead (said once however many problems it has)."""
    errors = exc.errors(include_url=False)
    hints = [advice.get(str(err["loc"][0])) for err in errors if err["loc"]]
    message = " ".join(
        [
            f"Invalid argument for {call}: {listed_problems(exc, 'value')}.",
            *dict.fromkeys(hint for hint in hints if hint is not None),
        ]
    )
    if any(_is_type_problem(err) for err in errors):
        return TypeError(message)
    return ValueError(message)


def _is_type_problem(error: ErrorDetails) -> bool:
    """Whether pydantic refused a value for its type, not for what it holds. A literal
    is a type problem when the value is not a string: every literal in MCP is one."""
    kind = error["type"]
    if kind == "literal_error":
        return not isinstance(error["input"], str)
    return kind.endswith(("_type", "_parsing")) or kind in _TYPE_PROBLEMS


_TYPE_PROBLEMS = frozenset(
    {"is_instance_of", "is_subclass_of", "union_tag_not_found", "content_type_missing"}
)


def invalid_params(exc: pydantic.ValidationError) -> InvalidParamsError:
    """The -32602 error for request params that pydantic refused, every problem named.
    Raised where a request's params are parsed: a validation error from anywhere else is
    the answering side's own fault, an internal error."""
    return InvalidParamsError(f"Invalid params: {listed_problems(exc, 'params')}")


class URLElicitationRequiredError(MCPError):
    """The server needs the user to complete URL-mode elicitations first (-32042, 2025-11-25).

    A server raises it with the elicitations the call waits for; each needs an
    ``elicitation_id``, and a link the server's own URL verdict blocks is refused here
    (``ValueError``) before anything is sent. A client reads them back from
    ``elicitations``.
    """

    def __init__(
        self, elicitations: Sequence[ElicitRequestURLParams], message: str | None = None
    ) -> None:
        from answerback.urls import judge_url

        for params in elicitations:
            if params.elicitation_id is None:
                raise ValueError(
                    f"The URL elicitation for {params.url!r} has no elicitation_id; -32042 "
                    "requires one per elicitation, so that the client can tell them apart."
                )
            verdict = judge_url(params.url)
            if verdict.blocked:
                raise ValueError(
                    f"Refusing to require a URL elicitation whose link clients block: "
                    f"{verdict.explain()}\nUse an https link (plain http only for localhost)."
                )
        if message is None:
            message = (
                "URL elicitation required"
                if len(elicitations) == 1
                else (f"{len(elicitations)} URL elicitations required")
            )
        data = URLElicitationRequiredErrorData(elicitations=list(elicitations))
        super().__init__(URL_ELICITATION_REQUIRED, message, data.to_wire())

    @property
    def elicitations(self) -> list[ElicitRequestURLParams]:
        """The elicitations the call waits for; ``ValueError`` if the error's data is
        not shaped as the specification says (a received error may be anything)."""
        return URLElicitationRequiredErrorData.model_validate(self.data).elicitations


class ResourceNotFoundError(MCPError):
    """No resource has ``uri`` (-32002, with the URI in ``data``).

    Raise it from a resource function for a record that does not exist (or from a tool
    or prompt that reads one): the client learns the URI names nothing, rather than
    getting an internal error. The server
    sends it as each generation says, -32002 until 2025-11-25 and -32602 (invalid
    params, same message and data) on 2026-07-28, so a client of that generation
    catches ``InvalidParamsError`` instead.
    """

    def __init__(self, uri: str, message: str | None = None) -> None:
        super().__init__(
            RESOURCE_NOT_FOUND,
            f"Resource not found: {uri}" if message is None else message,
            {"uri": uri},
        )

    @property
    def uri(self) -> str | None:
        """The URI that names nothing, as the error's data gives it (``None`` if a peer
        sent none)."""
        value = _member(self.data, "uri")
        return value if isinstance(value, str) else None


class ParseError(MCPError):
    """The message was not valid JSON (-32700)."""

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(PARSE_ERROR, message, data)


class InvalidRequestError(MCPError):
    """The message was JSON but not a valid JSON-RPC request (-32600)."""

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(INVALID_REQUEST, message, data)


class InternalError(MCPError):
    """The peer failed while handling the request (-32603)."""

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(INTERNAL_ERROR, message, data)


class HeaderMismatchError(MCPError):
    """An HTTP header disagreed with the request body (-32020, 2026-07-28)."""

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(HEADER_MISMATCH, message, data)


class MissingRequiredClientCapabilityError(MCPError):
    """The request needs a client capability the client did not declare (-32021, 2026-07-28).

    ``data`` is ``{"requiredCapabilities": ClientCapabilities}``; see
    ``MissingRequiredClientCapabilityErrorData``.
    """

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(MISSING_REQUIRED_CLIENT_CAPABILITY, message, data)


class UnsupportedProtocolVersionError(MCPError):
    """The server does not speak the requested protocol version (-32022, 2026-07-28).

    ``data`` is ``{"supported": [...], "requested": "..."}``; see
    ``UnsupportedProtocolVersionErrorData``.
    """

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(UNSUPPORTED_PROTOCOL_VERSION, message, data)


_BY_CODE: dict[int, type[MCPError]] = {
    METHOD_NOT_FOUND: MethodNotFoundError,
    INVALID_PARAMS: InvalidParamsError,
    RESOURCE_NOT_FOUND: ResourceNotFoundError,
    URL_ELICITATION_REQUIRED: URLElicitationRequiredError,
    PARSE_ERROR: ParseError,
    INVALID_REQUEST: InvalidRequestError,
    INTERNAL_ERROR: InternalError,
    HEADER_MISMATCH: HeaderMismatchError,
    MISSING_REQUIRED_CLIENT_CAPABILITY: MissingRequiredClientCapabilityError,
    UNSUPPORTED_PROTOCOL_VERSION: UnsupportedProtocolVersionError,
}
