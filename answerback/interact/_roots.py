"""``Roots``: the directories a person lets servers work in, as one live list.

Roots belong to the person, not to one connection: a host with three servers grants the
same directories to all of them, and when the person adds or removes one, every server
must learn it. How depends on the era each connection speaks: a 2025-11-25 server is
sent ``notifications/roots/list_changed`` and asks again; a 2026-07-28 server has no
session to notify, and simply gets the current list the next time it asks (the answer
is built from this list each time). This list is that shared state.
"""

from __future__ import annotations

import logging
import os
import weakref
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import anyio

from answerback.client import Client, ClientRequestContext, ClientSession
from answerback.client._callbacks import async_callable_or_none, is_plain_function
from answerback.types import ConnectionClosedError, ErrorData, ListRootsResult, Root
from answerback.urls import file_uri_to_path, path_to_file_uri

logger = logging.getLogger("answerback.interact")

Announce = Callable[[], Awaitable[None]]
"""Tells someone the roots changed (a user interface refreshing its list, say)."""

Confirm = Callable[[Path], Awaitable[bool]]
"""Asks the person whether a new directory may be exposed to servers."""

LIST_CHANGED = "notifications/roots/list_changed"


class RootRefusedError(Exception):
    """The person said no (the ``confirm`` hook returned false): the root was not added."""


@dataclass
class _Asking:
    """The person being asked about one directory, for every ``add`` of it meanwhile."""

    answered: anyio.Event = field(default_factory=anyio.Event)
    granted: bool | None = None
    """The person's answer; ``None`` if the asking ``add`` ended without one."""


class Roots:
    """A live list of root directories, announced to every connected server on change.

    ``Roots()`` holds the current directory; ``Roots([a, b])`` exactly those (given by
    the host, so not put to ``confirm``). Each entry is a path or a ``file://`` URI; it
    is kept absolute and resolved (``~`` expanded, a relative path taken against the
    current directory at the time it is added, symbolic links followed), so adding the
    same directory twice keeps it once. A root must be an existing directory: a path
    that does not exist yet cannot be resolved, and would mean something else once a
    link is created there.

    ``confirm``, if given, is awaited with each new directory before ``add`` exposes it;
    false raises ``RootRefusedError`` and leaves the list as it was.

    ``TypeError`` for ``paths`` that are one path rather than a list of them, or hold
    something that is not a path, and for a ``confirm`` that cannot be called or is a
    plain ``def``; ``ValueError`` for a path that is not an existing directory. The
    methods check what they are given the same way: ``add`` and ``remove`` take one
    path, ``attach`` a ``Client``, ``watch`` an async function, else ``TypeError``
    saying so.
    """

    def __init__(
        self,
        paths: Iterable[str | os.PathLike[str]] | None = None,
        *,
        confirm: Confirm | None = None,
    ) -> None:
        self._paths: list[Path] = []
        self._watchers: list[Announce] = []
        self._sessions: weakref.WeakSet[ClientSession] = weakref.WeakSet()
        self._asking: dict[Path, _Asking] = {}
        self._confirm = async_callable_or_none(
            "confirm", confirm, "an async function of the new directory returning True to add it"
        )
        if isinstance(paths, str | bytes | os.PathLike):
            raise TypeError(
                f"Roots takes a list of directories, not one path ({paths!r}, which would "
                f"be read a character at a time): write Roots([{str(paths)!r}])."
            )
        if paths is not None and not isinstance(cast(object, paths), Iterable):
            raise TypeError(
                "paths must be a list of directories (str, Path or file:// URI), such as "
                f"['~/projects'], or None (the current directory), got {paths!r}"
            )
        given: list[object] = [Path.cwd()] if paths is None else list(paths)
        for path in given:
            if not _is_path(path):
                raise TypeError(
                    "paths must be a list of directories (str, Path or file:// URI), such as "
                    f"['~/projects'], got {path!r} in it"
                )
            resolved = _directory(cast("str | os.PathLike[str]", path))
            if resolved not in self._paths:
                self._paths.append(resolved)

    def __repr__(self) -> str:
        confirm = getattr(self._confirm, "__qualname__", self._confirm)
        shown = [str(path) for path in self._paths]
        return f"Roots({shown!r}" + (f", confirm={confirm})" if confirm else ")")

    @property
    def paths(self) -> list[Path]:
        """The directories, in the order they were added (a new list)."""
        return list(self._paths)

    def as_roots(self) -> list[Root]:
        """The list as MCP ``Root`` objects (``file://`` URIs named after the directory)."""
        return [
            Root.model_validate({"uri": path_to_file_uri(p), "name": p.name or str(p)})
            for p in self._paths
        ]

    async def list_roots(self, context: ClientRequestContext) -> ListRootsResult | ErrorData:
        """Answers ``roots/list``: usable as a ``list_roots_callback`` or a responder's
        ``list_roots``. The asking connection is attached (see ``attach``): a server
        that has the list hears when it changes, however the host wired this in."""
        self._sessions.add(context.session)
        return ListRootsResult(roots=self.as_roots())

    def attach(self, client: Client) -> Callable[[], None]:
        """Announce every change to ``client``'s server from now on; returns the
        function that stops it.

        A 2025-11-25 server is sent ``notifications/roots/list_changed``; a 2026-07-28
        one is sent nothing (it gets the current list whenever it asks). A client that
        has closed is dropped at the next change. Attach once connected (inside its
        ``async with``); any number of clients may share one ``Roots``.
        """
        # Checked here: a wrong argument would otherwise fail as an AttributeError on
        # ``session``, naming neither the method nor what it takes.
        if not isinstance(cast(object, client), Client):
            raise TypeError(
                "Roots.attach takes the Client to announce changes to (call it inside "
                f"'async with Client(...) as client:'), got {client!r}"
            )
        session = client.session
        self._sessions.add(session)
        return lambda: self._sessions.discard(session)

    def watch(self, announce: Announce) -> Callable[[], None]:
        """Call ``announce`` after every change; returns the function that stops it."""
        # Checked here, not at the first change, where the failure would only be logged.
        if not callable(announce) or is_plain_function(announce):
            raise TypeError(
                "Roots.watch takes an async function of no arguments (`async def`), called "
                f"after every change, got {announce!r}"
            )
        self._watchers.append(announce)

        def unwatch() -> None:
            if announce in self._watchers:
                self._watchers.remove(announce)

        return unwatch

    async def add(self, path: str | os.PathLike[str]) -> Path:
        """Add a directory (a path or a ``file://`` URI; it must exist), asking
        ``confirm`` first, and announce the change; returns it resolved. Adding one
        already there changes, asks and announces nothing; so does adding one the person
        is being asked about, which waits for that answer instead of asking twice.

        ``ValueError`` if it is not an existing directory; ``RootRefusedError`` if the
        person refused it; ``TypeError`` if it is not a path."""
        resolved = _directory(_checked_path("add", path))
        while (asking := self._asking.get(resolved)) is not None:
            await asking.answered.wait()
            if asking.granted is False:
                raise _refused(resolved)
            # Granted: it is in the list now. Unanswered (that add was cancelled or
            # its confirm failed): ask again, here.
        if resolved in self._paths:
            return resolved
        if self._confirm is not None:
            asking = self._asking[resolved] = _Asking()
            try:
                asking.granted = bool(await self._confirm(resolved))
            finally:
                del self._asking[resolved]
                asking.answered.set()
            if not asking.granted:
                raise _refused(resolved)
        self._paths.append(resolved)
        await self._announce()
        return resolved

    async def remove(self, path: str | os.PathLike[str]) -> Path:
        """Remove a directory (path or ``file://`` URI) and announce the change;
        ``ValueError`` if it is not a root. The path is matched as written first: a root
        whose directory was since replaced by a link must still be removable.
        ``TypeError`` if it is not a path."""
        path = _checked_path("remove", path)
        resolved = _absolute(path)
        if resolved not in self._paths:
            resolved = _resolved(path)
        if resolved not in self._paths:
            listed = ", ".join(str(p) for p in self._paths) or "none"
            raise ValueError(f"{path} is not a root (the roots are: {listed}).")
        self._paths.remove(resolved)
        await self._announce()
        return resolved

    async def _announce(self) -> None:
        """Tell every server and watcher; one that cannot hear it does not stop the others."""
        for session in list(self._sessions):
            if session.modern_version is not None:
                continue  # 2026-07-28: no session to notify; the next answer is current
            try:
                await session.send_notification(LIST_CHANGED)
            except ConnectionClosedError:
                self._sessions.discard(session)
            except Exception as exc:
                logger.warning("could not tell a server the roots changed: %s", exc)
        for announce in list(self._watchers):
            try:
                await announce()
            except Exception as exc:
                logger.warning("could not announce the roots change: %s", exc)


def _refused(path: Path) -> RootRefusedError:
    return RootRefusedError(f"{path} was not added as a root: the person refused it.")


def _checked_path(method: str, path: object) -> str | os.PathLike[str]:
    """``path`` if ``Roots.<method>`` can take it: a ``str`` or a path object naming a
    path as text. Anything else would fail deep in ``os.fspath`` or ``pathlib`` with an
    error that says neither which call was wrong nor what it takes."""
    if _is_path(path):
        return cast("str | os.PathLike[str]", path)
    raise TypeError(
        f"Roots.{method} takes one directory: a str or Path, or a file:// URI string, "
        f"such as '~/projects' or 'file:///home/me/projects', got {path!r}"
    )


def _is_path(value: object) -> bool:
    """Whether ``value`` names a path as text (a ``str``, or a ``Path`` or other path
    object whose ``os.fspath`` is a ``str``; bytes paths are not taken)."""
    if isinstance(value, str):
        return True
    if not isinstance(value, os.PathLike):
        return False
    return isinstance(os.fspath(cast("os.PathLike[str] | os.PathLike[bytes]", value)), str)


def _resolved(path: str | os.PathLike[str]) -> Path:
    """A path or ``file://`` URI as an absolute, resolved local path."""
    return _absolute(path).resolve()


def _absolute(path: str | os.PathLike[str]) -> Path:
    """A path or ``file://`` URI as an absolute local path, links not followed."""
    text = os.fspath(path)
    if text[:5].lower() == "file:":
        return Path(os.path.abspath(file_uri_to_path(text)))
    return Path(os.path.abspath(Path(text).expanduser()))


def _directory(path: str | os.PathLike[str]) -> Path:
    resolved = _resolved(path)
    if not resolved.is_dir():
        if resolved.exists():
            why, fix = "it is a file", f"Grant the directory that holds it, {resolved.parent}."
        else:
            why, fix = "it does not exist", "Create it first, or grant the directory that holds it."
        raise ValueError(
            f"{path} is not a directory ({why}): a root must be an existing directory. {fix}"
        )
    return resolved
