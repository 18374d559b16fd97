"""Authenticated ids for the requests a server sends its client, when replicas share sessions.

The client answers a server's question (elicitation, sampling, roots) by POSTing a
response that echoes the question's id, and that POST may reach any replica. So the id
on the wire names the replica that asked (whose handler waits) and its local id there,
and carries a MAC over the session id: a forged id, or one taken from another session,
is refused without asking anyone. The MAC key is shared by every replica of a deployment.
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


class QuestionIds:
    """Mint and check the wire ids of one replica's questions."""

    def __init__(self, replica_id: str, key: bytes) -> None:
        if not REPLICA_ID.fullmatch(replica_id):
            raise ValueError(
                f"replica_id {replica_id!r} must be 1 to 64 letters, digits, '_' or '-'."
            )
        self.replica_id = replica_id
        self._key = key

    def mint(self, session_id: str, local_id: int) -> str:
        """The wire id of this replica's request ``local_id`` in ``session_id``."""
        mac = self._mac(session_id, self.replica_id, local_id)
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
        if not hmac.compare_digest(mac, self._mac(session_id, replica_id, local_id)):
            return None
        return replica_id, local_id

    def _mac(self, session_id: str, replica_id: str, local_id: int) -> str:
        text = f"{session_id}\x00{replica_id}\x00{local_id}".encode()
        digest = hmac.new(self._key, text, hashlib.sha256).digest()[:16]
        return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
