"""DPoP (RFC 9449): tokens bound to a key this client holds, proven on every request.

A bearer token works for whoever has it; a DPoP-bound token only with a fresh proof
signed by the key it was issued to, so a leaked token (a log, a proxy) is useless.
Each proof is a small JWT naming the method and URL it is for, when it was made, a
unique id, the hash of the access token it accompanies, and the server's nonce when
the server asks for one. joserfc signs it; the key is an ES256 key made for this
client and kept with the tokens it is bound to.
"""

from __future__ import annotations

import base64
import hashlib
import time
from typing import Any

import httpx2
from authlib.common.security import generate_token
from joserfc import jwt
from joserfc.jwk import ECKey

DPOP_ALGORITHM = "ES256"


class DPoPKey:
    """A proof-of-possession key and the proofs it signs."""

    def __init__(self, key: ECKey | None = None) -> None:
        self.key = key if key is not None else ECKey.generate_key("P-256")

    @classmethod
    def from_jwk(cls, jwk: dict[str, Any]) -> DPoPKey:
        return cls(ECKey.import_key(jwk))

    def as_jwk(self) -> dict[str, Any]:
        """The private key, to be stored with the tokens bound to it."""
        return dict(self.key.as_dict(private=True))

    def proof(
        self, method: str, url: str, *, nonce: str | None = None, access_token: str | None = None
    ) -> str:
        """A fresh proof for one HTTP request (RFC 9449 §4.2): ``htu`` is the URL
        without its query and fragment; ``ath`` binds it to the access token."""
        target = httpx2.URL(url).copy_with(query=None, fragment=None)
        claims: dict[str, Any] = {
            "jti": generate_token(32),
            "htm": method.upper(),
            "htu": str(target),
            "iat": int(time.time()),
        }
        if nonce is not None:
            claims["nonce"] = nonce
        if access_token is not None:
            digest = hashlib.sha256(access_token.encode("ascii")).digest()
            claims["ath"] = base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")
        header = {
            "typ": "dpop+jwt",
            "alg": DPOP_ALGORITHM,
            "jwk": dict(self.key.as_dict(private=False)),
        }
        return jwt.encode(header, claims, self.key, algorithms=[DPOP_ALGORITHM])
