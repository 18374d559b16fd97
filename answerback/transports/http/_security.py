"""Protection against DNS rebinding: only expected ``Host`` and ``Origin`` values pass.

A web page on an attacker's domain can make a browser send requests to a server on
127.0.0.1 by pointing its own domain at that address. Checking ``Host`` (and ``Origin``,
which browsers always set on such requests) stops that. Patterns may end in ``:*`` to
allow any port.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from answerback._options import strings

LOCAL_HOSTS = ("127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost", "[::1]")
LOCAL_ORIGINS = tuple(f"{scheme}://{host}" for scheme in ("http", "https") for host in LOCAL_HOSTS)


def _matches(value: str, patterns: Sequence[str]) -> bool:
    for pattern in patterns:
        if pattern == "*" or value == pattern:
            return True
        if pattern.endswith(":*") and value.rpartition(":")[0] == pattern[:-2]:
            return True
    return False


@dataclass(frozen=True, slots=True)
class HostPolicy:
    """Which ``Host`` and ``Origin`` headers the server accepts (localhost by default).

    Use ``allowed_hosts=["*"]`` only behind a proxy that already checks them.
    """

    allowed_hosts: Sequence[str] = field(default=LOCAL_HOSTS)
    allowed_origins: Sequence[str] = field(default=LOCAL_ORIGINS)

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
        named = (f"http://{host}:*", f"https://{host}:*", f"http://{host}", f"https://{host}")
        return cls(allowed_hosts=["*"], allowed_origins=[*LOCAL_ORIGINS, *named])

    def host_allowed(self, host: str | None) -> bool:
        """Whether a request with this ``Host`` header is served (a missing one is not)."""
        return host is not None and _matches(host.lower(), self.allowed_hosts)

    def origin_allowed(self, origin: str | None) -> bool:
        """Whether a request with this ``Origin`` header is served (no header: not from a
        browser page, so yes)."""
        return origin is None or _matches(origin.lower(), self.allowed_origins)
