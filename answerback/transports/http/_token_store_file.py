"""Tokens kept in a JSON file that only its owner can read.

A refresh token is a password that works without the person: whoever reads the file can
act as them until it is revoked. So the file is created ``0600`` in a ``0700``
directory, replaced atomically (a crash never leaves half a file), and a file or
directory that others can read or write is refused, not silently used. A file that is
not the store's JSON is never overwritten: the person may want what is in it, so the
error says where it is and what to do. Writers are serialised with an advisory lock
(``flock``) beside the file, so two tasks, two stores or two ``answerback`` commands
never lose each other's records. ``lock(key)`` holds one record across programs (a
lock file of its own per key) while the OAuth client refreshes its token.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import stat
import tempfile
import threading
from collections.abc import AsyncGenerator, Callable, Generator
from pathlib import Path
from typing import Any, cast

import anyio
import anyio.to_thread

from answerback._options import positive_seconds
from answerback.transports.http._token_store import KeyLocks

try:
    import fcntl
except ImportError:  # Windows: no flock; the per-store lock still serialises one store
    fcntl = None


logger = logging.getLogger("answerback.oauth")

_LONGEST_PAUSE = 0.25
"""The longest wait between two tries of a key lock another program holds: a refresh
takes a round trip or two, so a quarter of a second adds little and costs nothing."""


class TokenStoreError(Exception):
    """A token store that cannot be used as it is; the message says what to do."""


_Records = dict[str, dict[str, Any]]


class FileTokenStore:
    """A ``TokenStore`` in one JSON file, readable by its owner only.

    ``path`` is created on the first write, with any missing directories (``0700``).
    An existing file that group or others may read, or a directory they may write to,
    raises ``TokenStoreError`` naming the ``chmod`` that fixes it; so does a file that
    is not valid store JSON (it is left as it is). Permissions are only checked where
    POSIX modes mean something (not on Windows).

    ``lock_record(key)`` waits at most ``lock_timeout`` seconds for another task's or
    program's lock on the same key, then goes on without it and logs a warning (see
    ``lock_record``).
    """

    def __init__(self, path: str | os.PathLike[str], *, lock_timeout: float = 60.0) -> None:
        if not isinstance(cast(object, path), str | os.PathLike):
            raise TypeError(
                "path must be the store file's path (a str or Path), such as "
                f"'~/.config/app/tokens.json', got {path!r}"
            )
        if not os.fspath(path):
            raise ValueError(
                "path must name the store file, such as '~/.config/app/tokens.json', got ''"
            )
        self.path = Path(path).expanduser().absolute()
        self._lock_path = self.path.with_name(f".{self.path.name}.lock")
        self._thread_lock = threading.Lock()
        self.lock_timeout = positive_seconds("lock_timeout", lock_timeout)
        self._key_locks = KeyLocks()  # where there is no flock (Windows)

    def __repr__(self) -> str:
        return f"FileTokenStore({str(self.path)!r})"

    async def get(self, key: str) -> dict[str, Any] | None:
        """The record under ``key`` (``None`` if there is none, or no file yet); raises
        ``TokenStoreError`` for a file others can read or that is not the store's JSON."""
        records = await anyio.to_thread.run_sync(self._read)
        return records.get(key)

    async def set(self, key: str, value: dict[str, Any]) -> None:
        """Store ``value`` (JSON-able) under ``key``: the file is rewritten atomically,
        created ``0600`` in a ``0700`` directory the first time."""
        # Serialise first, so a value that is not JSON fails here, before the file changes.
        record = cast(dict[str, Any], json.loads(json.dumps(value)))

        def put(records: _Records) -> None:
            records[key] = record

        await anyio.to_thread.run_sync(self._update, put)

    async def delete(self, key: str) -> None:
        """Forget ``key`` (not an error if it is not there)."""

        def drop(records: _Records) -> None:
            records.pop(key, None)

        await anyio.to_thread.run_sync(self._update, drop)

    async def clear(self) -> None:
        """Forget every record (the file stays, empty)."""
        await anyio.to_thread.run_sync(self._update, _Records.clear)

    async def keys(self) -> list[str]:
        """The keys stored, sorted (to list or forget what one server left behind)."""
        return sorted(await anyio.to_thread.run_sync(self._read))

    @contextlib.asynccontextmanager
    async def lock_record(self, key: str) -> AsyncGenerator[None]:
        """Hold ``key`` until the block ends, against every task, store object and
        program using this file: an ``flock`` on a lock file of the key's own beside the
        store file, which the kernel releases when its holder ends, crashed or not.

        A lock held longer than ``lock_timeout`` belongs to a live program that is stuck
        (suspended with Ctrl-Z, stopped in a debugger); refusing to go on would fail every
        other program until that one is killed, so the wait ends with a warning and the
        block runs unlocked: the OAuth client still reads the record again before a
        refresh and compares before forgetting, as it does with a store without a lock.
        Where there is no ``flock`` (Windows) the lock holds among this object's tasks.
        """
        if fcntl is None:
            async with self._key_locks.hold(key):
                yield
            return
        digest = hashlib.sha256(key.encode()).hexdigest()[:16]
        lock_path = self.path.with_name(f".{self.path.name}.{digest}.lock")
        fd = await anyio.to_thread.run_sync(self._open_lock_file, lock_path)
        try:
            await self._wait_for_flock(fd, lock_path)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    async def _wait_for_flock(self, fd: int, lock_path: Path) -> None:
        """Take the ``flock`` on ``fd`` without blocking the event loop: try, then try
        again after a growing pause, up to ``lock_timeout`` (then warn and give up)."""
        if _try_flock(fd):
            return
        logger.debug("waiting for another task's or program's lock %s", lock_path)
        deadline = anyio.current_time() + self.lock_timeout
        pause = 0.01
        while not _try_flock(fd):
            remaining = deadline - anyio.current_time()
            if remaining <= 0:
                logger.warning(
                    "another task or program has held the token lock %s for over %s seconds; going "
                    "on without it (if it is stuck, end it; if its refreshes are that slow, "
                    "give FileTokenStore a longer lock_timeout)",
                    lock_path,
                    self.lock_timeout,
                )
                return
            await anyio.sleep(min(pause, remaining))
            pause = min(pause * 2, _LONGEST_PAUSE)

    # -- in a worker thread ----------------------------------------------------------

    def _read(self) -> _Records:
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        except FileNotFoundError:
            return {}
        except OSError as exc:
            raise TokenStoreError(
                f"Cannot read the token file {self.path}: {exc.strerror}. It must be a "
                "regular file (not a link) that you own."
            ) from exc
        try:
            self._check_file(os.fstat(fd))  # before open(), which refuses a directory
        except BaseException:
            os.close(fd)
            raise
        with open(fd, encoding="utf-8") as file:
            try:
                text = file.read()
            except UnicodeDecodeError as exc:
                raise TokenStoreError(
                    f"The token file {self.path} is not UTF-8 text (byte {exc.start} cannot "
                    "be read); it was left as it is. Move it aside to start an empty store "
                    "(you will log in again)."
                ) from exc
        return self._parse(text)

    def _update(self, change: Callable[[_Records], object]) -> None:
        with self._thread_lock, self._file_lock():
            records = self._read()
            change(records)
            self._write(records)

    @contextlib.contextmanager
    def _file_lock(self) -> Generator[None]:
        self._ensure_directory()
        if fcntl is None:
            yield
            return
        fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    def _open_lock_file(self, lock_path: Path) -> int:
        self._ensure_directory()
        try:
            return os.open(lock_path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
        except OSError as exc:
            raise TokenStoreError(
                f"Cannot open the lock file {lock_path} of the token file: {exc.strerror}. "
                "It must be a regular file (not a link) you can write, in the token file's "
                "directory."
            ) from exc

    def _ensure_directory(self) -> None:
        directory = self.path.parent
        try:
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise TokenStoreError(
                f"Cannot create the directory {directory} for the token file: {exc.strerror}."
            ) from exc
        if os.name == "posix":
            mode = directory.stat().st_mode
            if mode & 0o022 and not mode & stat.S_ISVTX:
                raise TokenStoreError(
                    f"The directory {directory} of the token file can be written by other "
                    f"users, who could replace the file. Run: chmod 700 {directory} (or "
                    "keep the token file in a private directory)."
                )

    def _write(self, records: _Records) -> None:
        text = json.dumps(records, indent=2, sort_keys=True) + "\n"
        fd, temporary = tempfile.mkstemp(
            dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp"
        )  # mkstemp creates the file 0600
        try:
            with open(fd, "w", encoding="utf-8") as file:
                file.write(text)
                file.flush()
                os.fsync(file.fileno())
            os.replace(temporary, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
            raise

    def _check_file(self, info: os.stat_result) -> None:
        if not stat.S_ISREG(info.st_mode):
            raise TokenStoreError(f"The token file {self.path} is not a regular file.")
        if os.name != "posix":
            return
        if info.st_uid != os.geteuid():
            raise TokenStoreError(
                f"The token file {self.path} belongs to another user; answerback only uses "
                "a token file you own. Move it aside (or delete it) and log in again."
            )
        if info.st_mode & 0o077:
            raise TokenStoreError(
                f"The token file {self.path} can be read by other users "
                f"(mode {stat.filemode(info.st_mode)}), and it holds credentials. "
                f"Run: chmod 600 {self.path} (and log out and in again if others may "
                "have read it)."
            )

    def _parse(self, text: str) -> _Records:
        try:
            data: object = json.loads(text) if text.strip() else {}
        except RecursionError:
            raise TokenStoreError(
                f"The token file {self.path} nests its values too deeply to be a token "
                "store; it was left as it is. Move it aside to start an empty store (you "
                "will log in again)."
            ) from None
        except json.JSONDecodeError as exc:
            raise TokenStoreError(
                f"The token file {self.path} is not valid JSON (line {exc.lineno}, column "
                f"{exc.colno}: {exc.msg}); it was left as it is. Fix it, or move it aside "
                "to start an empty store (you will log in again)."
            ) from exc
        if not isinstance(data, dict) or not all(
            isinstance(value, dict) for value in cast(dict[str, object], data).values()
        ):
            raise TokenStoreError(
                f"The token file {self.path} is JSON but not a token store (an object of "
                "records by key); it was left as it is. Move it aside to start an empty "
                "store (you will log in again)."
            )
        return cast(_Records, data)


def _try_flock(fd: int) -> bool:
    """Whether the exclusive ``flock`` on ``fd`` was taken (never waits: ``LOCK_NB``)."""
    assert fcntl is not None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True
