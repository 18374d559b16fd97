"""Which protocol generation a connection speaks, and what the server said about itself.

The session owns one ``Negotiation``. It runs once when the client connects (the legacy
``initialize`` handshake, a pinned 2026-07-28 ``server/discover``, or, in ``auto`` mode,
a probe that falls back to the handshake) and again, as the session's
``on_session_expired``, when an HTTP server forgot the session; the session makes that
second run single-flight. ``Client`` only reads the facts it learned.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeAlias, cast

from answerback.jsonrpc._endpoint import as_object
from answerback.types import (
    ConnectionClosedError,
    DiscoverResult,
    EmptyResult,
    Implementation,
    InitializeRequestParams,
    InitializeResult,
    MCPError,
    RequestTimeoutError,
    ServerCapabilities,
    SetLevelRequestParams,
    UnsupportedProtocolVersionError,
)
from answerback.types._errors import (
    BUSY,
    HEADER_MISMATCH,
    INVALID_REQUEST,
    MISSING_REQUIRED_CLIENT_CAPABILITY,
    SERVER_FAILED,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from answerback.types._versions import (
    LATEST_LEGACY_VERSION,
    LATEST_VERSION,
    LEGACY_VERSIONS,
    MODERN_VERSIONS,
    SUPPORTED_VERSIONS,
    is_modern,
)

if TYPE_CHECKING:
    from answerback.client._session import ClientSession

logger = logging.getLogger("answerback.client")

Mode: TypeAlias = Literal["auto", "legacy"] | str
"""What ``Client(mode=...)`` takes: ``"auto"``, ``"legacy"``, or a protocol version
(``"2026-07-28"``, one of ``SUPPORTED_VERSIONS``). The versions are plain ``str`` (the
``LATEST_VERSION`` constants, a version read from configuration), so the alias takes any
string; ``Client`` refuses an unknown one at once, listing the choices."""

PROBE_SECONDS = 10.0
"""How long ``mode="auto"`` waits for ``server/discover`` before assuming a legacy server."""
_MODERN_ERRORS = (HEADER_MISMATCH, MISSING_REQUIRED_CLIENT_CAPABILITY, UNSUPPORTED_PROTOCOL_VERSION)


@dataclass(frozen=True, slots=True)
class ServerFacts:
    """What the server told us about itself, from ``initialize`` or ``server/discover``."""

    protocol_version: str
    server_info: Implementation
    capabilities: ServerCapabilities
    instructions: str | None


def check_mode(mode: Mode) -> None:
    """Refuse a mode that names no generation answerback speaks, listing the choices."""
    if not isinstance(cast(object, mode), str):
        raise TypeError(
            f"mode must be a string: 'auto', 'legacy' or a protocol version "
            f"({', '.join(SUPPORTED_VERSIONS)}), got {mode!r}"
        )
    if mode not in ("auto", "legacy") and mode not in SUPPORTED_VERSIONS:
        raise ValueError(
            f"Unknown mode {mode!r}: use 'auto', 'legacy' or a protocol version "
            f"({', '.join(SUPPORTED_VERSIONS)})."
        )


class Negotiation:
    """Chooses the era and version, and holds what the server said (``facts``)."""

    def __init__(
        self, session: ClientSession, *, mode: Mode, connect_timeout_seconds: float | None
    ) -> None:
        check_mode(mode)
        self._session = session
        self.mode = mode
        self.connect_timeout_seconds = connect_timeout_seconds
        """Bounds each setup request, so a silent server fails the connection."""
        self.facts: ServerFacts | None = None

    async def start(self) -> None:
        """Legacy handshake, a pinned modern version, or (``auto``) probe and decide."""
        if self.mode == "legacy" or self.mode in LEGACY_VERSIONS:
            await self.initialize()
        elif self.mode in MODERN_VERSIONS:
            await self._discover(self.mode, probing=False)
        else:
            try:
                modern = await self._discover(LATEST_VERSION, probing=True)
            except MCPError as exc:
                if not _server_failed(exc):
                    raise
                await self._initialize_after_failed_discover(exc)
                return
            if not modern:
                await self.initialize()

    async def _initialize_after_failed_discover(self, failed: MCPError) -> None:
        """``auto``, after a 5xx to ``server/discover``: a 5xx says nothing of eras, but
        some servers of the handshake era answer a method they do not know with a 500,
        so the handshake is tried once. Both failing, the error quotes both answers."""
        try:
            await self.initialize()
        except MCPError as exc:
            both = type(failed).__new__(type(failed))
            MCPError.__init__(
                both,
                failed.code,
                f"The server failed on 'server/discover' ({LATEST_VERSION}): "
                f"{failed.message.rstrip('.')}. The handshake tried next ('initialize') "
                f"failed too: {exc.message}",
                failed.data,
            )
            raise both from exc
        logger.debug(
            "server/discover failed (%s) but initialize succeeded: the server speaks the "
            "handshake era and answers a method it does not know with a 5xx",
            failed.message,
        )

    async def _discover(self, version: str, *, probing: bool, retried: bool = False) -> bool:
        """Speak ``version`` (2026-07-28 era) and learn about the server.

        Returns ``False`` when probing finds a server that is not modern: any error that
        is not a recognised modern one nor an HTTP server's failure (a 5xx), or no answer
        within the probe timeout.
        """
        session = self._session
        session.modern_version = version
        timeout = self.connect_timeout_seconds
        if probing:
            timeout = PROBE_SECONDS if timeout is None else min(timeout, PROBE_SECONDS)
        try:
            raw = await session.request_raw("server/discover", None, timeout=timeout, setup=True)
        except RequestTimeoutError as exc:
            session.modern_version = None
            if probing:
                return False
            raise self._timed_out("server/discover", exc) from None
        except MCPError as exc:
            session.modern_version = None
            supported = _supported_versions(exc)
            if supported is not None:
                shared = [v for v in MODERN_VERSIONS if v in supported]
                if shared and not retried:
                    return await self._discover(shared[0], probing=False, retried=True)
                if probing and any(v in LEGACY_VERSIONS for v in supported):
                    return False
                raise MCPError(exc.code, self._none_shared(supported), exc.data) from exc
            if exc.code in _MODERN_ERRORS or exc.code == BUSY or _server_failed(exc):
                # A server that says it is busy has understood the request; one that
                # failed (a 5xx) has said nothing of the versions it speaks.
                raise
            if probing:
                return False
            if isinstance(exc, ConnectionClosedError):
                raise
            raise _handshake_only(version, exc) from exc
        result = session.parse_result("server/discover", raw, DiscoverResult)
        supported = result.supported_versions
        if supported and version not in supported:
            # It answered, yet lists only other versions (a newer server's, say): speak
            # one it lists, fall back to the handshake, or say now that none is shared,
            # rather than connect and have every request refused.
            session.modern_version = None
            shared = [v for v in MODERN_VERSIONS if v in supported]
            if shared and not retried:
                return await self._discover(shared[0], probing=False, retried=True)
            if probing and any(v in LEGACY_VERSIONS for v in supported):
                return False
            raise UnsupportedProtocolVersionError(
                self._none_shared(supported), {"supported": supported, "requested": version}
            )
        try:
            server_info = result.server_info
        except ValueError:
            server_info = None  # a malformed name card is not worth failing over
        self.facts = ServerFacts(
            version,
            server_info or Implementation(name="unknown", version="unknown"),
            result.capabilities,
            result.instructions,
        )
        session.server_info = server_info
        return True

    async def initialize(self) -> None:
        """The legacy handshake: at connection, and again when the server forgot us."""
        session = self._session
        version = self.mode if self.mode in LEGACY_VERSIONS else LATEST_LEGACY_VERSION
        params = InitializeRequestParams(
            protocol_version=version,
            capabilities=session.capabilities,
            client_info=session.client_info,
        )
        try:
            result = await session.send_request(
                "initialize",
                params,
                InitializeResult,
                cancellable=False,
                timeout=self.connect_timeout_seconds,
                setup=True,
            )
        except RequestTimeoutError as exc:
            raise self._timed_out("initialize", exc) from None
        if result.protocol_version not in LEGACY_VERSIONS:
            raise MCPError(
                INVALID_REQUEST,
                f"The server chose protocol version {result.protocol_version!r}, which "
                f"answerback does not speak ({', '.join(LEGACY_VERSIONS)})."
                + _newer_advice([result.protocol_version]),
            )
        self.facts = ServerFacts(
            result.protocol_version, result.server_info, result.capabilities, result.instructions
        )
        session.server_info = result.server_info
        await session.send_notification("notifications/initialized")
        if session.log_level is not None and result.capabilities.logging is not None:
            try:
                await session.send_request(
                    "logging/setLevel",
                    SetLevelRequestParams(level=session.log_level),
                    EmptyResult,
                    timeout=self.connect_timeout_seconds,  # part of connecting, bounded alike
                    setup=True,
                )
            except RequestTimeoutError as exc:
                raise self._timed_out("logging/setLevel", exc) from None

    def _none_shared(self, supported: list[str]) -> str:
        """Why no version fits: the server's list, ours, the mode, and what to do."""
        return (
            f"The server supports protocol versions {supported}; answerback speaks "
            f"{list(SUPPORTED_VERSIONS)} and none is shared in the requested mode "
            f"{self.mode!r}." + _newer_advice(supported)
        )

    def _timed_out(self, method: str, exc: RequestTimeoutError) -> RequestTimeoutError:
        """The timeout of a setup request, saying what to check (``exc`` itself if it was
        the read timeout that ran out, there being no connect timeout)."""
        if self.connect_timeout_seconds is None:
            return exc
        return RequestTimeoutError(
            f"The server did not answer {method!r} within {self.connect_timeout_seconds:g} s, "
            "so the connection was not set up. Check that the target is an MCP server and "
            "that it is running (a stdio program must read requests on stdin and answer on "
            "stdout); if it is only slow to start, raise Client(connect_timeout_seconds=...).",
            exc.data,
        )


def _handshake_only(version: str, exc: MCPError) -> MCPError:
    """The error for a pinned modern version that the server refused ``server/discover``
    for with an error no 2026-07-28 server sends (a "Method not found", an HTTP "Bad
    Request"): it speaks only the handshake era. Same class, code and data as the
    server's."""
    explained = type(exc).__new__(type(exc))
    MCPError.__init__(
        explained,
        exc.code,
        f"The server does not speak protocol version {version}: it answered "
        f"'server/discover' with error {exc.code} {exc.message!r}, so it most likely "
        f"speaks only the handshake era ({LATEST_LEGACY_VERSION} and earlier). Connect "
        "with mode='auto' to use whichever era the server speaks (or mode='legacy').",
        exc.data,
    )
    return explained


def _newer_advice(versions: list[str]) -> str:
    """Advice for versions that are all later than any answerback speaks: the server
    is newer than this answerback."""
    newest = SUPPORTED_VERSIONS[0]
    if not versions or not all(is_modern(v) and v > newest for v in versions):
        return ""
    return (
        " The server is newer than this answerback (its versions are all later than "
        f"{newest}): upgrade answerback to talk to it."
    )


def _supported_versions(exc: MCPError) -> list[str] | None:
    """The versions an ``UnsupportedProtocolVersionError`` says the server speaks."""
    data = as_object(exc.data)
    if exc.code != UNSUPPORTED_PROTOCOL_VERSION or data is None:
        return None
    supported: object = data.get("supported")
    if not isinstance(supported, list):
        return None
    return [str(v) for v in cast(list[Any], supported)]


def _server_failed(exc: MCPError) -> bool:
    """Whether ``exc`` came with an HTTP 5xx: the transport's own error for one (see
    ``SERVER_FAILED``), or the server's JSON-RPC error sent with that status, which the
    transport marks with ``httpStatus`` whatever its code."""
    data = as_object(exc.data)
    if data is None:
        return False
    if isinstance(exc, ConnectionClosedError) and data.get("reason") == SERVER_FAILED:
        return True
    status = data.get("httpStatus")
    return isinstance(status, int) and not isinstance(status, bool) and status >= 500
