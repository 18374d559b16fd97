"""Protection against DNS rebinding: only expected ``Host`` and ``Origin`` values pass;
and the endpoint's reading of a request's header fields, which notes the ones sent
more than once.

A web page on an attacker's domain can make a browser send requests to a server on
127.0.0.1 by pointing its own domain at that address. Checking ``Host`` (and ``Origin``,
which browsers always set on such requests) stops that. A pattern may end in ``:*`` to
allow the name on any port, the default one (no port in the header) included: a proxy
on port 443 sends ``mcp.example.com``, not ``mcp.example.com:443``. A refusal names the
value received and the pattern that would let it in, since the person reading it is
usually the server's own developer (a test client's ``testserver``, a proxy's name). The
patterns already allowed go to the server's log, not into the refusal: the client may be
anyone, and they name internal hosts and trusted sites.

A field that must come once (``Host``, ``Mcp-Session-Id``, the mirrored ``Mcp-*``
headers) and comes twice is refused: a proxy in front may act on one copy, or on both
joined, while the server acts on another.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.types import Scope

from answerback._options import strings

LOCAL_HOSTS = ("127.0.0.1:*", "localhost:*", "[::1]:*")
LOCAL_ORIGINS = tuple(f"{scheme}://{host}" for scheme in ("http", "https") for host in LOCAL_HOSTS)
_PATTERNS_SHOWN = 6
"""The allowed patterns a refusal's log line lists before it says how many more there are."""
_REFUSALS_LOGGED = 32
"""How many refused values a policy logs: a client sending endless made-up ``Host``
values must neither grow the server's memory nor flood its log."""

logger = logging.getLogger("answerback.http")


def _matches(value: str, patterns: Sequence[str]) -> bool:
    for pattern in patterns:
        if pattern == "*" or value == pattern:
            return True
        if pattern.endswith(":*"):
            name = pattern[:-2]
            if value == name:  # no port: the scheme's default one
                return True
            host, colon, port = value.rpartition(":")
            if colon and host == name and port.isascii() and port.isdigit():
                return True
    return False


def _shown(value: str) -> str:
    """A received header value quoted for an error message, cut if long (a Host may be
    anything up to the head's 64 KiB)."""
    return repr(value if len(value) <= 100 else value[:97] + "...")


def _listed(patterns: Sequence[str]) -> str:
    shown = ", ".join(repr(pattern) for pattern in patterns[:_PATTERNS_SHOWN])
    more = len(patterns) - _PATTERNS_SHOWN
    return shown + (f" and {more} more" if more > 0 else "") if patterns else "none"


@dataclass(frozen=True, slots=True)
class HostPolicy:
    """Which ``Host`` and ``Origin`` headers the server accepts (localhost by default).

    Use ``allowed_hosts=["*"]`` only behind a proxy that already checks them.
    """

    allowed_hosts: Sequence[str] = field(default=LOCAL_HOSTS)
    allowed_origins: Sequence[str] = field(default=LOCAL_ORIGINS)
    _logged: set[tuple[str, str]] = field(
        default_factory=set[tuple[str, str]], init=False, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        # A bare string would be taken for a list of its letters, and match "l" or "o".
        strings("allowed_hosts", self.allowed_hosts, "Host patterns", example="['mcp.example.com']")
        strings(
            "allowed_origins",
            self.allowed_origins,
            "Origin patterns",
            example="['https://app.example.com']",
        )

    @classmethod
    def for_bind(cls, host: str) -> HostPolicy:
        """The default for a server bound to ``host``: localhost only on loopback.

        Bound elsewhere, the public name clients use is unknown here, so any ``Host``
        passes, but browsers' cross-site requests (which carry an ``Origin``) still
        need the bound host or localhost as their origin. Pass an explicit policy
        with your public names to be stricter.
        """
        if host in ("127.0.0.1", "localhost", "::1"):
            return cls()
        named = (f"http://{host}:*", f"https://{host}:*")
        return cls(allowed_hosts=["*"], allowed_origins=[*LOCAL_ORIGINS, *named])

    def host_allowed(self, host: str | None) -> bool:
        """Whether a request with this ``Host`` header is served (a missing one is not)."""
        return host is not None and _matches(host.lower(), self.allowed_hosts)

    def origin_allowed(self, origin: str | None) -> bool:
        """Whether a request with this ``Origin`` header is served (no header: not from a
        browser page, so yes)."""
        return origin is None or _matches(origin.lower(), self.allowed_origins)

    def host_refusal(self, host: str | None) -> str | None:
        """Why a request with this ``Host`` header gets 421, saying what to allow; ``None``
        when it is served. The patterns allowed go to the log, for the operator only."""
        if self.host_allowed(host):
            return None
        if host is None:
            return "Misdirected request: the request has no Host header; send one."
        name = host.lower()
        self._tell_operator("Host", name, "allowed_hosts", self.allowed_hosts)
        return (
            f"Misdirected request: this server does not answer to the Host {_shown(host)}. "
            "If clients reach it by that name, "
            f"allow it: host_policy=HostPolicy(allowed_hosts=[..., {_shown(name)}]) "
            "(answerback.transports.http.HostPolicy; a pattern ending in ':*' allows "
            "any port; '*' allows any host, only behind a proxy that checks it)."
        )

    def origin_refusal(self, origin: str | None) -> str | None:
        """Why a request with this ``Origin`` header gets 403, saying what to allow;
        ``None`` when it is served. The patterns allowed go to the log, for the operator
        only."""
        if origin is None or self.origin_allowed(origin):
            return None
        self._tell_operator("Origin", origin.lower(), "allowed_origins", self.allowed_origins)
        return (
            f"Forbidden: this server does not take requests from web pages at the Origin "
            f"{_shown(origin)}. If pages there may use it, allow it: "
            f"host_policy=HostPolicy(allowed_origins=[..., {_shown(origin.lower())}]) "
            "(answerback.transports.http.HostPolicy; a pattern ending in ':*' allows any port)."
        )

    def _tell_operator(self, header: str, value: str, setting: str, allowed: Sequence[str]) -> None:
        """Log what the refusal leaves out (the patterns allowed), once per refused value
        and for at most ``_REFUSALS_LOGGED`` values."""
        seen = (header, _shown(value))  # cut: a long value costs no more than a short one
        if seen in self._logged or len(self._logged) >= _REFUSALS_LOGGED:
            return
        self._logged.add(seen)
        last = (
            f"; {_REFUSALS_LOGGED} refused values are logged now, later ones will not be"
            if len(self._logged) == _REFUSALS_LOGGED
            else ""
        )
        logger.warning(
            "refused a request with %s %s (HostPolicy %s: %s); add the value there if the "
            "server should take it%s",
            header,
            seen[1],
            setting,
            _listed(allowed),
            last,
        )


class EndpointHeaders(Headers):
    """A request's headers, looked up in a dict built once: Starlette scans and decodes
    the whole list on every lookup, and answering one MCP request takes a dozen (host,
    origin, accept, content type and length, session, version, Mcp-*).

    As in Starlette, the first of a repeated field is what a lookup reads; its name is
    in ``repeated``, for the fields that must come once to be refused, and ``joined``
    reads a list field (``Accept``) whole.
    """

    def __init__(self, scope: Scope) -> None:
        super().__init__(scope=scope)
        index: dict[str, str] = {}
        repeated: set[str] = set()
        for raw_key, raw_value in self.raw:
            key = raw_key.decode("latin-1")
            if key in index:
                repeated.add(key)
            else:
                index[key] = raw_value.decode("latin-1")
        self._index = index
        self.repeated = frozenset(repeated)
        """The names (lower case) of the fields sent more than once."""

    def __getitem__(self, key: str) -> str:
        return self._index[key.lower()]

    def __contains__(self, key: object) -> bool:
        return isinstance(key, str) and key.lower() in self._index

    def get(self, key: str, default: Any = None) -> Any:
        return self._index.get(key.lower(), default)

    def joined(self, key: str) -> str | None:
        """A list field's values, every line of it joined by ``", "`` in order (RFC
        9110 5.3); ``None`` if it was not sent."""
        key = key.lower()
        if key in self.repeated:
            return ", ".join(self.getlist(key))
        return self._index.get(key)


class EndpointRequest(Request):
    """A request whose headers are ``EndpointHeaders``."""

    @property
    def headers(self) -> EndpointHeaders:
        if not hasattr(self, "_headers"):
            self._headers = EndpointHeaders(self.scope)
        return self._headers  # pyright: ignore[reportReturnType]


def fields_of(request: Request) -> EndpointHeaders:
    """``request``'s headers as the endpoint reads them."""
    headers = request.headers
    return headers if isinstance(headers, EndpointHeaders) else EndpointHeaders(request.scope)
