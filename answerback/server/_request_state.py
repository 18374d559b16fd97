"""Sealing ``requestState``: the server's memory between rounds of a 2026-07-28 request.

The state travels through the client, so it is attacker-controlled input. It is sealed
with AES-GCM (authenticated encryption): the client can neither read nor alter it. The
seal is bound to the request it belongs to (method, tool/prompt/resource name and a
digest of the arguments) and carries an expiry, so it cannot be replayed on another
request or after it lapses. Any failure gets the same answer, so a prober learns nothing
from which check failed.

Several keys may be configured: the first seals, all of them open, so keys can be
rotated and every instance behind a load balancer accepts the others' state.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import os
import time
from collections.abc import Sequence
from typing import Any, cast

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from answerback.types import InvalidParamsError

PREFIX = "ab1."
"""Marks state sealed by answerback; other state is the tool author's own."""
INVALID_STATE_MESSAGE = (
    "Invalid requestState: it was altered, has expired, or belongs to another request."
)
_KEY_ID_BYTES = 4
_NONCE_BYTES = 12


def binding_for(method: str, name: str, arguments: Any) -> bytes:
    """What a state is bound to: the method, the target's name and the arguments."""
    canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"), default=str)
    digest = hashlib.sha256(canonical.encode()).hexdigest()
    return f"{method}\n{name}\n{digest}".encode()


class RequestStateSealer:
    """Seals and opens request state with a list of 32-byte keys (the first one seals)."""

    def __init__(self, keys: Sequence[bytes] | None = None, ttl_seconds: float = 600.0) -> None:
        keys = list(keys) if keys else [os.urandom(32)]
        for key in keys:
            if len(key) != 32:
                raise ValueError("request state keys must be 32 random bytes (AES-256)")
        self._ciphers = {_key_id(key): AESGCM(key) for key in keys}
        self._sealing_id = _key_id(keys[0])
        self.ttl_seconds = ttl_seconds

    def seal(self, payload: dict[str, Any], binding: bytes) -> str:
        body = json.dumps({**payload, "exp": time.time() + self.ttl_seconds}).encode()
        nonce = os.urandom(_NONCE_BYTES)
        sealed = self._ciphers[self._sealing_id].encrypt(nonce, body, binding)
        token = base64.urlsafe_b64encode(self._sealing_id + nonce + sealed).decode()
        return PREFIX + token.rstrip("=")

    def open(self, token: str, binding: bytes) -> dict[str, Any]:
        """The payload of ``token``; ``InvalidParamsError`` if it fails any check."""
        try:
            raw = token.removeprefix(PREFIX)
            blob = base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4))
            key_id = blob[:_KEY_ID_BYTES]
            nonce = blob[_KEY_ID_BYTES : _KEY_ID_BYTES + _NONCE_BYTES]
            cipher = self._ciphers[key_id]
            payload: object = json.loads(
                cipher.decrypt(nonce, blob[_KEY_ID_BYTES + _NONCE_BYTES :], binding)
            )
        except (ValueError, KeyError, InvalidTag):
            raise InvalidParamsError(INVALID_STATE_MESSAGE) from None
        if not isinstance(payload, dict):
            raise InvalidParamsError(INVALID_STATE_MESSAGE)
        state = cast(dict[str, Any], payload)
        expires = state.get("exp")
        if not isinstance(expires, int | float) or expires < time.time():
            raise InvalidParamsError(INVALID_STATE_MESSAGE)
        return state


class StateSeal:
    """The sealer bound to one request. The binding (a digest of the arguments) is
    computed only if state is actually sealed or opened."""

    def __init__(self, sealer: RequestStateSealer, method: str, name: str, arguments: Any) -> None:
        self._sealer = sealer
        self._target = (method, name, arguments)

    @functools.cached_property
    def _binding(self) -> bytes:
        return binding_for(*self._target)

    def seal(self, payload: dict[str, Any]) -> str:
        return self._sealer.seal(payload, self._binding)

    def open(self, token: str) -> dict[str, Any]:
        return self._sealer.open(token, self._binding)


def _key_id(key: bytes) -> bytes:
    return hashlib.sha256(key).digest()[:_KEY_ID_BYTES]
