"""Sealing ``requestState``: the server's memory between rounds of a 2026-07-28 request.

The state travels through the client, so it is attacker-controlled input. It is sealed
with AES-GCM (authenticated encryption): the client can neither read nor alter it. The
seal is bound to the request it belongs to (method, tool/prompt/resource name and the
arguments) and carries an expiry, so it cannot be replayed on another
request or after it lapses. Any failure gets the same answer, so a prober learns nothing
from which check failed, except a key this server lacks: that is usually a deployment
mistake (replicas must share their keys), and its message says so.

Several keys may be configured: the first seals, all of them open, so keys can be
rotated and every instance behind a load balancer accepts the others' state.

State sealed single-use carries a random id, claimed by the first request that opens
it (in the HTTP app's ``UsedStates``, shared by every replica), so a replay is refused.

The state grows with every round (it holds all the answers so far), and the client must
send it back whole: ``check_retry_fits`` refuses a round whose retry the transport would
refuse, so the call fails with a reason instead of the retry failing without one.
"""

from __future__ import annotations

import binascii
import hashlib
import logging
import os
import secrets
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from pydantic_core import from_json, to_json

from answerback.server._canonical import canonical_json
from answerback.types import INTERNAL_ERROR, InvalidParamsError, MCPError

if TYPE_CHECKING:
    from answerback.transports.http._used_states import UsedStates

logger = logging.getLogger("answerback.server")

PREFIX = "ab1."
"""Marks state sealed by answerback; other state is the tool author's own."""
INVALID_STATE_MESSAGE = (
    "Invalid requestState: it was altered, has expired, or belongs to another request."
)
UNKNOWN_KEY_MESSAGE = (
    "Invalid requestState: no key this server holds sealed it. Either it was altered, or "
    "another replica sealed it with other keys (every replica must share "
    "MCPServer(state_keys=...)). Start the request again without requestState."
)
REPLAYED_STATE_MESSAGE = (
    "Invalid requestState: it was already used, and this server accepts it once "
    "(single-use state). Start the request again without requestState."
)
SINGLE_USE = "once"
"""The sealed payload's key holding a single-use state's id."""
_KEY_ID_BYTES = 4
_NONCE_BYTES = 12
# URL-safe base64 straight through ``binascii``: ``base64``'s wrappers cost four Python
# calls more per token, on every round of every call that asks.
_TO_URLSAFE = bytes.maketrans(b"+/", b"-_")
_FROM_URLSAFE = bytes.maketrans(b"-_", b"+/")


class StateRefused(InvalidParamsError):
    """A ``requestState`` that failed a check. The client is told as little as ever;
    ``reason`` (which check failed) is for the server's log, so an operator can tell a
    person who took too long from a forgery or a replica without the keys."""

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason = reason


def binding_for(method: str, name: str, arguments: Any, principal: str | None = None) -> bytes:
    """What a state is bound to: the method, the target's name, the arguments and, on an
    authenticated server, the caller (so one user's state is worthless to another). It is
    the seal's associated data, which AES-GCM authenticates whatever its length, so it is
    their canonical JSON itself: a digest of it cost a SHA-256 per round, for nothing."""
    return canonical_json([method, name, arguments, principal]).encode()


class RequestStateSealer:
    """Seals and opens request state with a list of 32-byte keys (the first one seals)."""

    def __init__(self, keys: Sequence[bytes] | None = None, ttl_seconds: float = 600.0) -> None:
        if isinstance(keys, bytes | str):  # a key where a list of keys belongs
            raise TypeError(
                "state_keys must be a list of keys, each 32 random bytes (os.urandom(32)); "
                "for one key pass [key]"
            )
        keys = list(keys) if keys else [os.urandom(32)]
        for key in keys:
            if not isinstance(cast(object, key), bytes):
                raise TypeError(
                    f"state_keys must hold bytes, each 32 random bytes (os.urandom(32)), "
                    f"got a {type(key).__name__} (not shown: keys are secrets)"
                )
            if len(key) != 32:
                raise ValueError(
                    "state_keys must be 32 random bytes each (AES-256: os.urandom(32)), got "
                    f"a key of {len(key)} bytes"
                )
        self._ciphers = {_key_id(key): AESGCM(key) for key in keys}
        self._sealing_id = _key_id(keys[0])
        self.ttl_seconds = ttl_seconds

    def seal(self, payload: dict[str, Any], binding: bytes) -> str:
        body = to_json({**payload, "exp": time.time() + self.ttl_seconds})
        nonce = os.urandom(_NONCE_BYTES)
        sealed = self._ciphers[self._sealing_id].encrypt(nonce, body, binding)
        token = binascii.b2a_base64(self._sealing_id + nonce + sealed, newline=False)
        return PREFIX + token.translate(_TO_URLSAFE).rstrip(b"=").decode()

    def open(self, token: str, binding: bytes) -> dict[str, Any]:
        """The payload of ``token``; ``InvalidParamsError`` if it fails any check."""
        try:
            raw = token.removeprefix(PREFIX).encode("ascii")
            padded = raw.translate(_FROM_URLSAFE) + b"=" * (-len(raw) % 4)
            blob = binascii.a2b_base64(padded)
            key_id = blob[:_KEY_ID_BYTES]
            nonce = blob[_KEY_ID_BYTES : _KEY_ID_BYTES + _NONCE_BYTES]
        except ValueError:
            raise StateRefused(INVALID_STATE_MESSAGE, "it is not base64") from None
        cipher = self._ciphers.get(key_id)
        if cipher is None:
            if len(blob) < _KEY_ID_BYTES + _NONCE_BYTES:
                raise StateRefused(INVALID_STATE_MESSAGE, "it is too short to be sealed")
            raise StateRefused(UNKNOWN_KEY_MESSAGE, "no key of this server sealed it")
        try:
            payload: object = from_json(
                cipher.decrypt(nonce, blob[_KEY_ID_BYTES + _NONCE_BYTES :], binding)
            )
        except (ValueError, InvalidTag):
            reason = "its seal does not match this request (altered, or another request's)"
            raise StateRefused(INVALID_STATE_MESSAGE, reason) from None
        if not isinstance(payload, dict):
            raise StateRefused(INVALID_STATE_MESSAGE, "it holds no object")
        state = cast(dict[str, Any], payload)
        expires = state.get("exp")
        if not isinstance(expires, int | float):
            raise StateRefused(INVALID_STATE_MESSAGE, "it carries no expiry")
        late = time.time() - expires
        if late > 0:
            reason = f"it expired {late:.1f} s ago (ttl_seconds={self.ttl_seconds:g})"
            raise StateRefused(INVALID_STATE_MESSAGE, reason)
        return state


class StateSeal:
    """The sealer bound to one request. The binding (the arguments' canonical JSON) is
    worked out only if state is actually sealed or opened."""

    def __init__(
        self,
        sealer: RequestStateSealer,
        method: str,
        name: str,
        arguments: Any,
        principal: str | None = None,
    ) -> None:
        self._sealer = sealer
        self._target = (method, name, arguments, principal)
        self._bound_to: bytes | None = None

    def _binding(self) -> bytes:
        # Worked out once, on first use; not a functools.cached_property, whose lock
        # cost a 2026-07-28 round trip more than the attribute it saves.
        if self._bound_to is None:
            self._bound_to = binding_for(*self._target)
        return self._bound_to

    def seal(self, payload: dict[str, Any], *, single_use: bool = False) -> str:
        if single_use:
            payload = {**payload, SINGLE_USE: secrets.token_urlsafe(16)}
        return self._sealer.seal(payload, self._binding())

    def open(self, token: str) -> dict[str, Any]:
        try:
            return self._sealer.open(token, self._binding())
        except StateRefused as refused:
            self._log_refusal(refused.reason)
            raise

    async def claim(self, state: dict[str, Any], used_states: UsedStates) -> None:
        """Let an opened state through once if it was sealed single-use; refuse a replay."""
        state_id = state.get(SINGLE_USE)
        if state_id is None:
            return
        if not isinstance(state_id, str) or not await used_states.claim(state_id, state["exp"]):
            self._log_refusal("it was already used (single-use state)")
            raise StateRefused(REPLAYED_STATE_MESSAGE, "already used")

    def _log_refusal(self, reason: str) -> None:
        """Which check a state failed, with the request it came with: never the state
        itself (nor the arguments, which may hold secrets)."""
        method, name = self._target[0], self._target[1]
        logger.warning("refused the requestState of %s %r: %s", method, name, reason)


def check_retry_fits(
    what: str, sealed: str, request_bytes: int, earlier: str | None, limit: int | None
) -> None:
    """Refuse to hand out ``sealed`` if the client's retry could not reach the server.

    The retry is this request (``request_bytes`` on the wire, 0 if not known) with
    ``sealed`` in place of its ``earlier`` state: its other parts (name, arguments,
    ``_meta``) come back unchanged, and the answers it brought stand for the ones the
    retry will bring, which are not known yet (in a loop they are alike). ``limit`` is
    the largest request the transport accepts (``None``: no limit). Lengths only,
    nothing serialised again (sealed state is ASCII: its length is its size).
    """
    if limit is None:
        return
    retry = max(request_bytes - len(earlier or ""), 0) + len(sealed)
    if retry <= limit:
        return
    raise MCPError(
        INTERNAL_ERROR,
        f"{what} cannot ask another round: the client's retry would carry about {retry} "
        f"bytes, of which the requestState (everything earlier rounds of this call were "
        f"answered or computed, sent back whole each round) is {len(sealed)}, and this "
        f"server accepts at most {limit} bytes in one request. Keep less across rounds: "
        "ask fewer rounds in one call (split the work over several calls), ask for smaller "
        "answers (a lower max_tokens for ctx.sample), or seal less with ctx.seal_state; "
        "or, over streamable HTTP, raise max_body_bytes (MCPServer.http_app or "
        "StreamableHTTPApp), and over stdio, mcp.run(max_message_bytes=...).",
    )


def _key_id(key: bytes) -> bytes:
    return hashlib.sha256(key).digest()[:_KEY_ID_BYTES]
