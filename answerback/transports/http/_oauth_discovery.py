"""Finding the authorization server of a protected MCP server, and what it offers.

A 401 names (at best) where the server's protected resource metadata lives (RFC 9728);
that names the authorization servers; each serves its own metadata (RFC 8414, or
OpenID discovery) at one of several well-known addresses. Servers in the field use every
variant, so each step tries the addresses the MCP specification lists, in its order,
and the 2025-03-26 servers that have no resource metadata at all still work: their
origin is the authorization server, with default endpoints if it publishes no metadata.

Every document is checked before use, because each one redirects where the person's
credentials go: the resource metadata must describe the server being connected to,
an authorization server's metadata must name the issuer it was fetched for, and every
address of an authorization server must be https (``ServerMetadata`` refuses others).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from typing import Any, cast

import httpx2

from answerback.transports.http._oauth_http import (
    NoUsableAnswer,
    OAuthHTTP,
    TooLarge,
    authorization_server_url,
)
from answerback.types import AuthorizationError

logger = logging.getLogger("answerback.oauth")

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
"""C0 and C1 controls and DEL: none belongs in a challenge (RFC 6750 §3), and some
(U+009B, the 8-bit CSI) drive a terminal that prints an error message holding them."""

_AUTH_PARAM = re.compile(r'([A-Za-z0-9_!#$%&\'*+.^`|~-]+)\s*=\s*("(?:[^"\\]|\\.)*"|[^\s,]+)')


@dataclass(frozen=True)
class Challenge:
    """What a 401 or 403 asks for, from its ``WWW-Authenticate`` header (RFC 6750 §3)."""

    scheme: str | None = None
    resource_metadata: str | None = None
    scopes: tuple[str, ...] | None = None
    error: str | None = None
    error_description: str | None = None

    @classmethod
    def parse(cls, header: str | None) -> Challenge:
        """The challenge's parameters; the first value of each wins when several
        schemes (``Bearer``, ``DPoP``) are offered in one header."""
        if not header:
            return cls()
        scheme = header.strip().split(None, 1)[0].rstrip(",")
        params: dict[str, str] = {}
        for name, raw in _AUTH_PARAM.findall(header):
            value = raw[1:-1].replace('\\"', '"').replace("\\\\", "\\") if raw[0] == '"' else raw
            params.setdefault(name.lower(), _CONTROL.sub(_escaped, value))
        scope = params.get("scope")
        return cls(
            scheme=None if "=" in scheme else scheme,
            resource_metadata=params.get("resource_metadata"),
            scopes=tuple(scope.split()) if scope is not None else None,
            error=params.get("error"),
            error_description=params.get("error_description"),
        )


@dataclass(frozen=True)
class ResourceMetadata:
    """A protected resource's metadata (RFC 9728): who issues its tokens."""

    resource: str
    authorization_servers: tuple[str, ...]
    scopes_supported: tuple[str, ...] | None
    url: str


@dataclass(frozen=True)
class ServerMetadata:
    """An authorization server's metadata: its issuer, endpoints and abilities.

    Made only with addresses that are well-formed and https (or on this machine): this
    is where every address a secret is sent to comes from.
    """

    issuer: str
    token_endpoint: str
    authorization_endpoint: str | None = None
    registration_endpoint: str | None = None
    document: dict[str, Any] = field(default_factory=dict[str, Any])
    """The whole document as published (``None`` values for the fallback endpoints)."""

    def __post_init__(self) -> None:
        authorization_server_url(self.issuer, "the authorization server's issuer")
        for name in ("token_endpoint", "authorization_endpoint", "registration_endpoint"):
            url: str | None = getattr(self, name)
            if url is not None:
                authorization_server_url(url, f"the {name} of {self.issuer}")

    def supports(self, key: str, value: str) -> bool:
        """Whether the list ``key`` names ``value``."""
        listed = self.document.get(key)
        return isinstance(listed, list) and value in listed

    def listed(self, key: str) -> list[str] | None:
        value = self.document.get(key)
        if not isinstance(value, list):
            return None
        return [item for item in cast(list[Any], value) if isinstance(item, str)]


def resource_metadata_urls(server_url: str, from_challenge: str | None) -> list[str]:
    """Where to look for the resource metadata, in the order the specification gives:
    the challenge's ``resource_metadata``, then the well-known address with the
    endpoint's path, then the one at the root."""
    candidates: list[str] = [from_challenge] if from_challenge else []
    at_path = _path_well_known(server_url)
    if at_path is not None:
        candidates.append(at_path)
    candidates.append(str(_root_well_known(httpx2.URL(server_url))))
    return list(dict.fromkeys(candidates))


def _root_well_known(url: httpx2.URL) -> httpx2.URL:
    return url.copy_with(path="/.well-known/oauth-protected-resource", query=None, fragment=None)


def _path_well_known(server_url: str) -> str | None:
    """The well-known address with the endpoint's path inserted (``None`` at the root)."""
    url = httpx2.URL(server_url)
    path = url.path.rstrip("/")
    if not path:
        return None
    root = _root_well_known(url)
    return str(root.copy_with(path=root.path + path))


def authorization_server_metadata_urls(issuer: str) -> list[str]:
    """RFC 8414 and OpenID discovery addresses for ``issuer``, in the MCP order."""
    url = httpx2.URL(issuer)
    path = url.path.rstrip("/")
    at = url.copy_with(query=None, fragment=None)
    if not path:
        return [
            str(at.copy_with(path="/.well-known/oauth-authorization-server")),
            str(at.copy_with(path="/.well-known/openid-configuration")),
        ]
    return [
        str(at.copy_with(path=f"/.well-known/oauth-authorization-server{path}")),
        str(at.copy_with(path=f"/.well-known/openid-configuration{path}")),
        str(at.copy_with(path=f"{path}/.well-known/openid-configuration")),
    ]


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of ``url``: a 2025-03-26 server's authorization server."""
    return str(httpx2.URL(url).copy_with(path="/", query=None, fragment=None)).rstrip("/")


def covers(resource: str, server_url: str) -> bool:
    """Whether metadata for ``resource`` may speak for ``server_url``: the same
    origin, and the server's path at or below the resource's path. RFC 9728 §3.3 asks
    for an exact match; this looser rule is the one the official Python and TypeScript
    SDKs apply (from draft-mcguinness-oauth-rfc9728bis, an expired draft), and RFC 8707
    lets a client ask for the most general URI that still names the server."""
    try:
        wanted, named = httpx2.URL(server_url), httpx2.URL(resource)
    except httpx2.InvalidURL:
        return False
    if _origin(wanted) != _origin(named):
        return False
    prefix = named.path.rstrip("/")
    path = wanted.path.rstrip("/")
    return path == prefix or path.startswith(prefix + "/")


async def fetch_resource_metadata(
    http: OAuthHTTP, server_url: str, from_challenge: str | None
) -> ResourceMetadata | None:
    """The server's resource metadata, or ``None`` if it publishes none (a server
    of the 2025-03-26 specification). Metadata for another resource is refused.

    Found at the well-known address built from the server's own URL, the metadata must
    name exactly that URL (RFC 9728 §3.3); only the challenge's address and the root's
    may name a resource above it (same origin, a parent path), as the official Python
    and TypeScript SDKs accept (RFC 9728 §3.3 asks for an exact match there too; the
    looser rule comes from an expired draft, draft-mcguinness-oauth-rfc9728bis), and the
    root's address stands for the origin. A wider resource would get a token good for
    every endpoint below it."""
    too_large: list[str] = []
    for url in resource_metadata_urls(server_url, from_challenge):
        document = await _get_json(http, url, "the protected resource metadata", too_large)
        if document is None:
            continue
        resource = document.get("resource")
        servers = document.get("authorization_servers")
        if not isinstance(resource, str) or not isinstance(servers, list) or not servers:
            logger.info("ignoring resource metadata at %s: no resource or servers", url)
            continue
        exact = url != from_challenge and url == _path_well_known(server_url)
        if not covers(resource, server_url) or (exact and not covers(server_url, resource)):
            raise AuthorizationError(
                f"the protected resource metadata at {url} is for {resource!r}, not for "
                f"{server_url}"
                + (" (at this address it must name exactly that URL)" if exact else "")
                + "; refusing to send credentials for it. The server is misconfigured (or "
                "something is impersonating it): tell its operator"
            )
        scopes = document.get("scopes_supported")
        return ResourceMetadata(
            resource=resource,
            authorization_servers=tuple(s for s in cast(list[Any], servers) if isinstance(s, str)),
            scopes_supported=_strings(cast(list[Any], scopes))
            if isinstance(scopes, list)
            else None,
            url=url,
        )
    _refuse_too_large(too_large)
    return None


async def fetch_server_metadata(http: OAuthHTTP, issuer: str) -> ServerMetadata | None:
    """The metadata of the authorization server ``issuer``, or ``None`` if none of
    its well-known addresses serves a document for it.

    A document whose ``issuer`` differs from the one its address was built from is
    not used (RFC 8414 §3.3): it could send the login and the code anywhere. An issuer
    that is not https is refused before anything is fetched.
    """
    authorization_server_url(issuer, "the authorization server's issuer")
    refused: list[str] = []
    too_large: list[str] = []
    for url in authorization_server_metadata_urls(issuer):
        document = await _get_json(http, url, "the authorization server metadata", too_large)
        if document is None:
            continue
        published = document.get("issuer")
        if not _same_issuer(published, issuer):
            refused.append(f"{url} names the issuer {published!r}")
            continue
        token_endpoint = document.get("token_endpoint")
        if not isinstance(token_endpoint, str):
            refused.append(f"{url} names no token_endpoint")
            continue
        authorization = document.get("authorization_endpoint")
        registration = document.get("registration_endpoint")
        return ServerMetadata(
            issuer=cast(str, published),
            token_endpoint=token_endpoint,
            authorization_endpoint=authorization if isinstance(authorization, str) else None,
            registration_endpoint=registration if isinstance(registration, str) else None,
            document=document,
        )
    if refused:
        raise AuthorizationError(
            f"the authorization server {issuer} published metadata that cannot be used: "
            + "; ".join(refused)
            + ". Its issuer must be exactly the address it is discovered by; tell the "
            "server's operator"
        )
    _refuse_too_large(too_large)
    return None


def fallback_metadata(origin: str) -> ServerMetadata:
    """The default endpoints of a 2025-03-26 server that publishes no metadata."""
    return ServerMetadata(
        issuer=origin,
        token_endpoint=f"{origin}/token",
        authorization_endpoint=f"{origin}/authorize",
        registration_endpoint=f"{origin}/register",
        document={"code_challenge_methods_supported": ["S256"]},
    )


async def _get_json(
    http: OAuthHTTP, url: str, what: str, too_large: list[str]
) -> dict[str, Any] | None:
    """A JSON object served at ``url``, or ``None`` for anything else (a 404 is the
    usual "not here"; an answer too large to read is noted in ``too_large``, since
    if no other address serves the document, that is the reason to report). A server
    that does not answer in time raises: waiting as long again would not help."""
    try:
        answer = await http.exchange("GET", url, what=what, headers={"accept": "application/json"})
    except TooLarge as exc:
        logger.info("%s", exc)
        too_large.append(str(exc))
        return None
    except NoUsableAnswer as exc:
        logger.info("%s", exc)
        return None
    return answer.json_object() if answer.status_code == 200 else None


def _refuse_too_large(too_large: list[str]) -> None:
    """Where no address served a usable document but one was too large: say so, not
    that there is none (which would send the operator looking in the wrong place)."""
    if too_large:
        raise AuthorizationError("; ".join(too_large))


def _escaped(control: re.Match[str]) -> str:
    """A control character written out (``\\x9b``), so it shows instead of acting."""
    return f"\\x{ord(control.group(0)):02x}"


def _same_issuer(published: object, expected: str) -> bool:
    """Identical, or differing only by the trailing slash of an empty path, which URL
    libraries add on their own to an issuer listed in resource metadata."""
    if not isinstance(published, str):
        return False
    if published == expected:
        return True
    try:
        path = httpx2.URL(published).path
    except httpx2.InvalidURL:
        return False
    return path in ("", "/") and published.rstrip("/") == expected.rstrip("/")


def _strings(values: list[Any]) -> tuple[str, ...]:
    return tuple(value for value in values if isinstance(value, str))


def _origin(url: httpx2.URL) -> tuple[str, str, int | None]:
    default = {"http": 80, "https": 443}.get(url.scheme)
    return url.scheme, url.host, url.port or default
