"""Every HTTP exchange of the OAuth client: where it may go, how long and how large.

The addresses come from the server being connected to (its challenge, its resource
metadata, its authorization server's metadata), so none is trusted as it is. An
authorization server receives secrets (a client secret, a code and its PKCE verifier,
refresh tokens), so its addresses must be https, except on this machine (MCP, OAuth 2.1
§1.5). httpx's timeouts bound each read, not the whole answer, and a body is read
whole by default: a server sending a byte a second would hold a login for ever, and one
sending gigabytes would fill memory. So each exchange has one deadline for all of it,
and its body is read in pieces and given up as soon as it passes the size limit.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, fields
from typing import Any, cast

import anyio
import httpx2

from answerback._options import is_loopback
from answerback.types import AuthorizationError

MAX_ANSWER_BYTES = 1024 * 1024
"""No metadata document, registration or token response comes near this."""


class NoUsableAnswer(AuthorizationError):
    """The server could not be reached, or its answer was too large to read. Discovery
    takes it as "not here" and tries the next address; anywhere else it is the error.
    (A deadline that ran out is never taken as "not here": see ``OAuthHTTP``.)"""


class TooLarge(NoUsableAnswer):
    """The answer passed ``MAX_ANSWER_BYTES`` and was given up while it arrived."""


@dataclass(frozen=True)
class Answer:
    """A response read whole, within the limits."""

    status_code: int
    headers: httpx2.Headers
    content: bytes

    def json_object(self) -> dict[str, Any] | None:
        """The body as a JSON object, or ``None`` for anything else."""
        try:
            document: object = json.loads(self.content)
        except (ValueError, RecursionError):  # not JSON (or not text); nested too deep
            return None
        return cast(dict[str, Any], document) if isinstance(document, dict) else None


@dataclass(frozen=True)
class OAuthHTTP:
    """The client that carries the OAuth requests, and the deadline each one has."""

    client: httpx2.AsyncClient
    deadline_seconds: float

    async def exchange(self, method: str, url: str, *, what: str, **options: Any) -> Answer:
        """Send one request (``options`` as for ``httpx2.AsyncClient.stream``) and read
        its answer, all within the deadline and at most ``MAX_ANSWER_BYTES``.

        ``what`` names the other side in errors ("the token endpoint"). A deadline that
        runs out, or a malformed URL, raises ``AuthorizationError``; an unreachable
        server or an oversized answer, ``NoUsableAnswer``.
        """
        try:
            with anyio.fail_after(self.deadline_seconds):
                async with self.client.stream(method, url, **options) as response:
                    body = bytearray()
                    async for chunk in response.aiter_bytes():
                        body += chunk
                        if len(body) > MAX_ANSWER_BYTES:
                            raise TooLarge(
                                f"{what} at {url} sent more than {MAX_ANSWER_BYTES // 1024} "
                                "KiB, far more than any OAuth answer needs, so it was not "
                                "read; tell the server's operator"
                            )
                    return Answer(response.status_code, response.headers, bytes(body))
        except TimeoutError:
            raise AuthorizationError(
                f"{what} at {url} did not answer within {self.deadline_seconds:g} s; check "
                "that the authorization server is up, or raise OAuth(timeout=...)"
            ) from None
        except httpx2.InvalidURL as exc:
            raise AuthorizationError(
                f"{what} has a malformed address, {url!r} ({exc}); the server is "
                "misconfigured: tell its operator"
            ) from None
        except httpx2.HTTPError as exc:
            raise NoUsableAnswer(
                f"could not reach {what} at {url}: {exc!r}; check that it is up and reachable"
            ) from exc


def authorization_server_url(url: str, what: str) -> str:
    """``url`` if an authorization server's address may be used: well-formed, and https
    or on this machine (secrets are sent there); else ``AuthorizationError`` saying why."""
    try:
        parsed = httpx2.URL(url)
    except httpx2.InvalidURL as exc:
        raise AuthorizationError(
            f"{what} is a malformed address, {url!r} ({exc}); the server is misconfigured: "
            "tell its operator"
        ) from None
    if parsed.scheme == "https" and parsed.host:
        return url
    if parsed.scheme == "http" and is_loopback(parsed.host):
        return url
    raise AuthorizationError(
        f"{what} is {url!r}, not an https address; OAuth secrets (client credentials, "
        "codes, tokens) would travel in cleartext, so MCP requires https for an "
        "authorization server (plain http only on this machine): tell the server's operator"
    )


def hiding_secrets(record: Any, secrets: tuple[str, ...]) -> str:
    """The repr of the dataclass ``record`` with the fields named in ``secrets`` shown
    only as set or not: a repr reaches logs and tracebacks (with their locals), where a
    token or a client secret must not."""
    shown = (
        f"{field.name}={'<hidden>' if field.name in secrets and value is not None else repr(value)}"
        for field in fields(record)
        for value in [getattr(record, field.name)]
    )
    return f"{type(record).__name__}({', '.join(shown)})"
