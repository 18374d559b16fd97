"""``ResourceServer``: makes an HTTP MCP server an OAuth 2.1 resource server.

It is the transport's ``RequestAuthenticator``: the streamable HTTP app asks it about
every request to the MCP endpoint and serves the routes it brings. What a client meets:

- the protected resource metadata (RFC 9728) at ``/.well-known/oauth-protected-resource``
  plus the resource's path, naming the authorization servers, which is how a client that
  knows only the server's URL finds where to log in;
- a request without a usable token gets 401 with ``WWW-Authenticate: Bearer
  resource_metadata="...", scope="..."`` (and ``error="invalid_token"`` when a token was
  sent but refused: expired, revoked, for another audience, from another issuer);
- a token without the scopes the server requires, or a ``tools/call`` of a tool that
  declares scopes (``@mcp.tool(scopes=[...])``) the token lacks, gets 403
  ``error="insufficient_scope"`` whose ``scope`` lists what to ask for (the scopes already
  granted plus the missing ones, so stepping up loses nothing), which clients answer by
  stepping up.

Who the token says the caller is (``AuthInfo``) is kept in the request, where a session
binds to it and a tool reads it as ``ctx.auth``.

RFC 9728 puts the metadata at the root of the origin, whatever the resource's path, so
an app mounted under a prefix serves its copy where no client looks: the parent app must
serve ``routes`` itself. The first request tells whether the app is mounted (its ASGI
``root_path``), and when the parent is a Starlette app (its router is in the scope) that
routes nothing to the metadata's path, a warning says what to add.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol, cast
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Match, Route

from answerback._options import having_methods, http_url, strings, text, text_or_none
from answerback.server._auth_verifier import (
    InvalidTokenError,
    TokenVerifier,
    VerifierUnavailableError,
)
from answerback.transports.http._request_auth import AuthInfo

logger = logging.getLogger("answerback.server.auth")

WELL_KNOWN = "/.well-known/oauth-protected-resource"


class ScopedTools(Protocol):
    """What a resource server needs of the MCP server it protects: the scopes each tool
    declares (``MCPServer`` is one)."""

    def tool_scopes(self) -> Mapping[str, frozenset[str]]:
        """Tool name → the scopes calling it takes (tools without any may be left out)."""
        ...


class ResourceServer:
    """Requires an access token for ``resource`` (the MCP endpoint's URL, exactly as
    clients reach it), issued by one of ``authorization_servers`` (https issuers; plain
    http only on this machine, as clients refuse others, with no opt-out: clients are
    sent there) and checked by ``verifier`` (``JWTVerifier`` or ``IntrospectionVerifier``,
    whose ``allow_insecure_http`` covers only their own fetches, over a private network).

    ``scopes`` are required for every request; a tool may require more
    (``@mcp.tool(scopes=...)``). ``scopes_supported`` (advertised in the metadata)
    defaults to ``scopes``: the MCP specification wants the minimal set there, since a
    client without a challenge asks for all of it, and a tool's scopes are asked for by
    stepping up when it is called. Serve it with ``mcp.http_app(auth=...)`` or
    ``mcp.run(..., auth=...)``; an app mounted under a prefix needs its parent to serve
    ``routes`` at the root of the origin, where clients look for the metadata.
    """

    def __init__(
        self,
        resource: str,
        authorization_servers: Sequence[str],
        verifier: TokenVerifier,
        *,
        scopes: Sequence[str] = (),
        scopes_supported: Sequence[str] | None = None,
        resource_name: str | None = None,
        resource_documentation: str | None = None,
    ) -> None:
        text("resource", resource, "the MCP endpoint's URL, such as 'https://mcp.example.com/mcp'")
        parts = urlsplit(resource)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.fragment:
            raise ValueError(
                f"resource must be the MCP endpoint's absolute http(s) URL without a fragment, "
                f"e.g. 'https://mcp.example.com/mcp'; got {resource!r}"
            )
        if isinstance(authorization_servers, str):  # one URL, not a list of its letters
            raise ValueError(
                "authorization_servers must list at least one issuer URL, "
                f"e.g. ['https://auth.example.com'], got the string {authorization_servers!r}"
            )
        issuers = strings(
            "authorization_servers",
            authorization_servers,
            "the issuer URLs of the authorization servers",
            example="['https://auth.example.com']",
        )
        if not issuers:
            raise ValueError(
                "authorization_servers must list at least one issuer URL, "
                "e.g. ['https://auth.example.com']"
            )
        for issuer in issuers:
            http_url(
                "authorization_servers",
                issuer,
                "an authorization server (its issuer, where clients are sent to log in)",
                secure=True,
            )
        having_methods(
            "verifier",
            verifier,
            ("verify",),
            "a TokenVerifier, such as JWTVerifier(issuer=...) or IntrospectionVerifier(...): "
            "an object with async verify(token, *, resource)",
        )
        what = "the scope names"
        scopes = strings("scopes", scopes, what, example="['mcp']")
        if scopes_supported is not None:
            scopes_supported = strings(
                "scopes_supported", scopes_supported, what, example="['mcp']"
            )
        text_or_none("resource_name", resource_name, "a name people read")
        text_or_none("resource_documentation", resource_documentation, "a URL")
        self.resource = resource
        self.authorization_servers = list(authorization_servers)
        self.verifier = verifier
        self.scopes = frozenset(scopes)
        self.scopes_supported = list(scopes_supported) if scopes_supported is not None else None
        self.resource_name = resource_name
        self.resource_documentation = resource_documentation
        path = parts.path.rstrip("/")
        self.metadata_path = WELL_KNOWN + path
        self.metadata_url = f"{parts.scheme}://{parts.netloc}{self.metadata_path}"
        self._tools: ScopedTools | None = None
        self._placement_checked = False
        """Whether a request has shown where the app is mounted (checked once)."""

    def attach(self, server: ScopedTools) -> None:
        """Protect ``server``'s tools by their declared scopes (``mcp.http_app`` does this)."""
        if self._tools is not None and self._tools is not server:
            raise ValueError(
                "This ResourceServer already protects another server; make one per server."
            )
        self._tools = server

    # -- RequestAuthenticator ---------------------------------------------------------

    @property
    def routes(self) -> Sequence[BaseRoute]:
        """The protected resource metadata document (RFC 9728), served unauthenticated."""
        paths = [self.metadata_path]
        if self.metadata_path != WELL_KNOWN:
            paths.append(WELL_KNOWN)  # for clients that only try the root (2025-03-26 era)
        return [Route(path, self._metadata_endpoint, methods=["GET", "OPTIONS"]) for path in paths]

    async def authenticate(self, request: Request) -> AuthInfo | Response:
        """The verified caller, or 401 with a ``Bearer`` challenge naming the metadata
        (403 when a required scope is missing, 503 when the token cannot be checked)."""
        if not self._placement_checked:
            self._placement_checked = True
            self._check_metadata_reachable(request.scope)
        token = _bearer_token(request.headers.get("authorization"))
        if token is None:
            return self._unauthorized(None)
        try:
            info = await self.verifier.verify(token, resource=self.resource)
        except InvalidTokenError as exc:
            logger.info("refused a token: %s", exc)
            return self._unauthorized(str(exc))
        except VerifierUnavailableError as exc:
            logger.warning("could not verify a token: %s", exc)
            return JSONResponse(
                {
                    "error": "temporarily_unavailable",
                    "error_description": "The server cannot check access tokens right now "
                    "(its authorization server is unreachable). Try again later.",
                },
                status_code=503,
            )
        missing = self.scopes - info.scopes
        if missing:
            return self._insufficient(info, self.scopes, missing, "this server")
        return info

    async def authorize(self, info: AuthInfo, message: Mapping[str, Any]) -> Response | None:
        """``None``, or 403 ``insufficient_scope`` for a ``tools/call`` whose tool needs a
        scope the token lacks (the challenge names it, so the client can step up)."""
        if message.get("method") != "tools/call" or self._tools is None:
            return None
        params: object = message.get("params")
        name = cast(dict[str, Any], params).get("name") if isinstance(params, dict) else None
        if not isinstance(name, str):
            return None
        needed = self._tools.tool_scopes().get(name, frozenset())
        missing = needed - info.scopes
        if missing:
            return self._insufficient(info, needed, missing, f"the tool {name!r}")
        return None

    def _check_metadata_reachable(self, scope: Mapping[str, Any]) -> None:
        """Warn when the app is mounted under a prefix and the outermost Starlette app
        (``scope["router"]``, the only parent that can be asked) routes nothing to the
        metadata's path: unless something in front of that app serves it, every client
        is sent to a 404. A parent that is no Starlette app cannot be asked, so it is
        trusted."""
        root_path: str = scope.get("root_path", "")
        origin_root: str = scope.get("app_root_path", root_path)  # the ASGI server's own
        prefix = root_path.removeprefix(origin_root)
        parent = scope.get("router")
        app = scope.get("app")
        if not prefix or parent is None or parent is getattr(app, "router", None):
            return  # at the root, or no parent router to ask
        probe: dict[str, Any] = {
            "type": "http",
            "method": "GET",
            "path": origin_root + self.metadata_path,
            "root_path": origin_root,
            "headers": [],
        }
        routes: Sequence[BaseRoute] = getattr(parent, "routes", ())
        if any(route.matches(probe)[0] is Match.FULL for route in routes):
            return
        logger.warning(
            "This protected MCP app is mounted under %r, but clients look for its protected "
            "resource metadata at %s (RFC 9728: the root of the origin plus the resource's "
            "path), where the parent Starlette app serves nothing: if nothing in front of it "
            "serves that path either, no client can find where to log in. Serve the "
            "ResourceServer's routes from the parent app, e.g. "
            "Starlette(routes=[*resource_server.routes, Mount(%r, app=mcp_app)], ...).",
            prefix,
            self.metadata_url,
            prefix,
        )

    # -- answers ----------------------------------------------------------------------

    def metadata(self) -> dict[str, Any]:
        """The protected resource metadata document (RFC 9728)."""
        document: dict[str, Any] = {
            "resource": self.resource,
            "authorization_servers": self.authorization_servers,
        }
        supported = (
            self.scopes_supported if self.scopes_supported is not None else sorted(self.scopes)
        )
        if supported:  # none: clients leave scope out of their request
            document["scopes_supported"] = supported
        document["bearer_methods_supported"] = ["header"]
        if self.resource_name is not None:
            document["resource_name"] = self.resource_name
        if self.resource_documentation is not None:
            document["resource_documentation"] = self.resource_documentation
        return document

    async def _metadata_endpoint(self, request: Request) -> Response:
        """The document, readable from any origin: browser-based clients discover it too
        (a preflight, for the MCP headers they send, is answered here)."""
        cors = {"access-control-allow-origin": "*"}
        if request.method == "OPTIONS":
            cors |= {"access-control-allow-methods": "GET", "access-control-allow-headers": "*"}
            return Response(status_code=204, headers=cors)
        return JSONResponse(self.metadata(), headers=cors)

    def _unauthorized(self, problem: str | None) -> Response:
        """401: no token (no error code, RFC 6750 §3.1) or a refused one."""
        challenge = self._challenge(self.scopes, "invalid_token" if problem else None, problem)
        body = {
            "error": "invalid_token" if problem else "unauthorized",
            "error_description": (
                f"The access token was refused: {problem}. Get a new one."
                if problem
                else "This server requires an OAuth access token (Authorization: Bearer ...); "
                "its protected resource metadata says where to get one."
            ),
        }
        return JSONResponse(body, status_code=401, headers={"www-authenticate": challenge})

    def _insufficient(
        self, info: AuthInfo, needed: Iterable[str], missing: Iterable[str], what: str
    ) -> Response:
        """403 ``insufficient_scope``: ask for what was granted plus what is missing."""
        wanted = sorted(missing)
        plural = "s" if len(wanted) > 1 else ""
        description = f"{what} requires the scope{plural} {' '.join(wanted)}"
        scope = set(info.scopes) | set(needed) | self.scopes
        challenge = self._challenge(scope, "insufficient_scope", description)
        sentence = description[0].upper() + description[1:]
        body = {"error": "insufficient_scope", "error_description": sentence}
        return JSONResponse(body, status_code=403, headers={"www-authenticate": challenge})

    def _challenge(self, scope: Iterable[str], error: str | None, description: str | None) -> str:
        parts: list[str] = []
        if error is not None:
            parts.append(f'error="{error}"')
            if description:
                parts.append(f'error_description="{_quotable(description)}"')
        parts.append(f'resource_metadata="{self.metadata_url}"')
        scopes = " ".join(sorted(scope))
        if scopes:
            parts.append(f'scope="{_quotable(scopes)}"')
        return "Bearer " + ", ".join(parts)


def _bearer_token(header: str | None) -> str | None:
    if header is None:
        return None
    scheme, _, token = header.strip().partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        return None
    return token


def _quotable(text: str) -> str:
    """``text`` as RFC 6750 allows inside a quoted challenge parameter (printable ASCII
    without ``"`` and ``\\``)."""
    return "".join(
        "'" if char == '"' else char for char in text if " " <= char <= "~" and char != "\\"
    )
