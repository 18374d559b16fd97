"""Authenticated ids for the requests a server sends its client, when replicas share sessions.

The client answers a server's question (elicitation, sampling, roots) by POSTing a
response that echoes the question's id, and that POST may reach any replica. So the id
on the wire names the replica that asked (whose handler waits) and its local id there,
and carries a MAC over the session id: a forged id, or one taken from another session,
is refused without asking anyone. The MAC key is shared by every replica of a deployment.

That key can change under running replicas: Redis kept without persistence loses it on
a restart, and the next replica to start publishes another. So a replica mints with one
key (the deployment's, as last agreed) and accepts a few: those the deployment used
recently and those it minted with itself, so a question asked before a switch is still
answered after it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re

_PREFIX = "ab1"
_WIRE = re.compile(r"ab1\.([A-Za-z0-9_-]{1,64})\.([0-9]{1,19})\.([A-Za-z0-9_-]{22})")
REPLICA_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""What a replica id may hold: it is part of every question id."""


OWN_KEYS_KEPT = 4
"""How many keys a replica has minted with (the current one included) it still accepts."""


class QuestionIds:
    """Mint and check the wire ids of one replica's questions."""

    def __init__(self, replica_id: str, key: bytes) -> None:
        if not REPLICA_ID.fullmatch(replica_id):
            raise ValueError(
                f"replica_id {replica_id!r} must be 1 to 64 letters, digits, '_' or '-'."
            )
        self.replica_id = replica_id
        self._key = key
        self._own: list[bytes] = [key]
        """The keys this replica minted with, newest last."""
        self._accepted: tuple[bytes, ...] = (key,)
        """The keys an id may be minted with, the current one first."""

    @property
    def key(self) -> bytes:
        """The key new ids are minted with."""
        return self._key

    def use(self, key: bytes, accepted: frozenset[bytes]) -> None:
        """Mint with ``key`` from now on, and accept ids minted with any of
        ``accepted`` (the deployment's recent keys) or with this replica's own last
        ``OWN_KEYS_KEPT`` keys."""
        if key != self._key:
            self._key = key
            self._own = [*self._own, key][-OWN_KEYS_KEPT:]
        self._accepted = tuple(dict.fromkeys([key, *reversed(self._own), *accepted]))

    def mint(self, session_id: str, local_id: int) -> str:
        """The wire id of this replica's request ``local_id`` in ``session_id``."""
        mac = _mac(self._key, session_id, self.replica_id, local_id)
        return f"{_PREFIX}.{self.replica_id}.{local_id}.{mac}"

    def read(self, session_id: str, wire_id: object) -> tuple[str, int] | None:
        """``(replica_id, local_id)`` of a genuine id of ``session_id``, else ``None``."""
        if not isinstance(wire_id, str):
            return None
        match = _WIRE.fullmatch(wire_id)
        if match is None:
            return None
        replica_id, local_text, mac = match.groups()
        local_id = int(local_text)
        for key in self._accepted:
            if hmac.compare_digest(mac, _mac(key, session_id, replica_id, local_id)):
                return replica_id, local_id
        return None


def _mac(key: bytes, session_id: str, replica_id: str, local_id: int) -> str:
    text = f"{session_id}\x00{replica_id}\x00{local_id}".encode()
    digest = hmac.new(key, text, hashlib.sha256).digest()[:16]
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
