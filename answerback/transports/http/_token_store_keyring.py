"""Tokens kept in the system keyring (macOS Keychain, Windows Credential Manager,
Secret Service on Linux), through the ``keyring`` package.

The keyring encrypts at rest and unlocks with the person's login, which a file cannot
do. ``keyring`` is an optional extra (``answerback[keyring]``), imported only when a
store is made, so a program that never asks for one never needs it. Each record is one
keyring entry: the service name, the record's key as the "user name", the JSON as the
"password".
"""

from __future__ import annotations

import contextlib
import json
from typing import TYPE_CHECKING, Any, cast

import anyio.to_thread

from answerback._options import non_empty_text
from answerback.transports.http._token_store_file import TokenStoreError

if TYPE_CHECKING:
    from keyring.backend import KeyringBackend


class KeyringTokenStore:
    """A ``TokenStore`` in the system keyring, one entry per record under ``service``.

    ``backend`` is a ``keyring`` backend to use instead of the system's default one
    (``keyring.get_keyring()``). A machine with no usable keyring (a server without a
    desktop session) raises ``TokenStoreError`` on first use, saying what to do instead.
    """

    def __init__(self, service: str = "answerback", *, backend: KeyringBackend | None = None):
        non_empty_text("service", service, "the keyring service the records are kept under")
        try:
            import keyring
        except ImportError as exc:
            raise ImportError(
                "KeyringTokenStore needs the keyring package: install answerback[keyring] "
                "(pip install 'answerback[keyring]'), or use FileTokenStore."
            ) from exc
        self.service = service
        self._backend = backend if backend is not None else keyring.get_keyring()

    def __repr__(self) -> str:
        return f"KeyringTokenStore({self.service!r})"

    async def get(self, key: str) -> dict[str, Any] | None:
        """The record under ``key``, or ``None``; ``TokenStoreError`` for an entry that
        is not a record or a keyring that cannot be used."""
        text = await self._call(self._backend.get_password, self.service, key)
        if text is None:
            return None
        try:
            record: object = json.loads(text)
        except json.JSONDecodeError:
            record = None
        if not isinstance(record, dict):
            raise TokenStoreError(
                f"The keyring entry {key!r} of service {self.service!r} is not a token "
                "record; delete it (for example with the keyring command: keyring del "
                f"{self.service} '{key}') and log in again."
            )
        return cast(dict[str, Any], record)

    async def set(self, key: str, value: dict[str, Any]) -> None:
        """Store ``value`` as the JSON of the entry (``service``, ``key``)."""
        backend: Any = self._backend  # keyring's own annotations are partly untyped
        await self._call(backend.set_password, self.service, key, json.dumps(value))

    async def delete(self, key: str) -> None:
        """Remove the entry (not an error if there is none)."""
        from keyring.errors import PasswordDeleteError

        with contextlib.suppress(PasswordDeleteError):  # nothing was stored under this key
            await self._call(self._backend.delete_password, self.service, key)

    async def _call(self, function: Any, *args: str) -> Any:
        from keyring.errors import KeyringError, PasswordDeleteError

        try:
            return await anyio.to_thread.run_sync(function, *args)
        except PasswordDeleteError:
            raise
        except KeyringError as exc:
            raise TokenStoreError(
                f"The system keyring cannot be used ({type(exc).__name__}: {exc}). Unlock "
                "it or install a keyring backend, or keep tokens in a FileTokenStore."
            ) from exc
