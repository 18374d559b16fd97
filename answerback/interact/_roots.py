"""``Roots``: the directories a person lets servers work in, as one live list.

Roots belong to the person, not to one connection: a terminal session with three servers
grants the same directories to all of them, and when the person adds or removes one,
every server must hear it (``notifications/roots/list_changed``) so it asks again. This
list is that shared state; each connection registers how it announces a change.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path

from answerback.client import ClientRequestContext
from answerback.types import ErrorData, ListRootsResult, Root

logger = logging.getLogger("answerback.interact")

Announce = Callable[[], Awaitable[None]]
"""Tells one server the roots changed (for a ``Client``: its ``send_roots_list_changed``)."""


class Roots:
    """A live list of root directories, announced to every watcher when it changes.

    ``Roots()`` holds the current directory; ``Roots([a, b])`` exactly those. Paths are
    kept absolute and resolved, so adding the same directory twice keeps it once.
    """

    def __init__(self, paths: Iterable[str | os.PathLike[str]] | None = None) -> None:
        self._paths: list[Path] = []
        self._watchers: list[Announce] = []
        for path in [Path.cwd()] if paths is None else paths:
            self._add(path)

    @property
    def paths(self) -> list[Path]:
        """The directories, in the order they were added (a new list)."""
        return list(self._paths)

    def as_roots(self) -> list[Root]:
        """The list as MCP ``Root`` objects (``file://`` URIs named after the directory)."""
        return [
            Root.model_validate({"uri": p.as_uri(), "name": p.name or str(p)}) for p in self._paths
        ]

    async def list_roots(self, context: ClientRequestContext) -> ListRootsResult | ErrorData:
        """Answers ``roots/list``: usable as a ``list_roots_callback`` or a responder's
        ``list_roots``."""
        return ListRootsResult(roots=self.as_roots())

    def watch(self, announce: Announce) -> Callable[[], None]:
        """Call ``announce`` after every change; returns the function that stops it."""
        self._watchers.append(announce)

        def unwatch() -> None:
            if announce in self._watchers:
                self._watchers.remove(announce)

        return unwatch

    async def add(self, path: str | os.PathLike[str]) -> Path:
        """Add a directory (it must exist) and announce the change; returns it resolved.
        Adding one already there changes nothing and announces nothing."""
        resolved, added = self._add(path)
        if added:
            await self._announce()
        return resolved

    async def remove(self, path: str | os.PathLike[str]) -> Path:
        """Remove a directory and announce the change; ``ValueError`` if it is not a root."""
        resolved = _resolved(path)
        if resolved not in self._paths:
            listed = ", ".join(str(p) for p in self._paths) or "none"
            raise ValueError(f"{path} is not a root (the roots are: {listed}).")
        self._paths.remove(resolved)
        await self._announce()
        return resolved

    def _add(self, path: str | os.PathLike[str]) -> tuple[Path, bool]:
        """The path resolved, and whether it was new (a path on a local disk: quick)."""
        resolved = _resolved(path)
        if not resolved.is_dir():
            raise ValueError(f"{path} is not a directory: a root must be an existing directory.")
        if resolved in self._paths:
            return resolved, False
        self._paths.append(resolved)
        return resolved, True

    async def _announce(self) -> None:
        """Tell every watcher; one server that cannot hear it does not stop the others."""
        for announce in list(self._watchers):
            try:
                await announce()
            except Exception as exc:
                logger.warning("could not announce the roots change: %s", exc)


def _resolved(path: str | os.PathLike[str]) -> Path:
    return Path(path).expanduser().resolve()
