"""The roots path guard: a path a tool is handed must lie inside a root the client granted.

A tool that takes a file name from a model must not read ``../../.ssh/id_rsa`` because
the model wrote it, nor follow a link planted inside a project to ``/etc``. The client
says which directories it grants (its roots); ``ctx.resolve_path`` resolves a path or
``file://`` URI for real (``..`` collapsed, every existing symbolic link followed) and
accepts it only if the result is inside one of them. It is the server's own safety
rule, enforced on its own machine: in 2026-07-28 roots are only informational, and
nothing obliges a server to honour them; a server that does, does so here.

What is cached where: on a 2025-11-25 connection the list is asked once and kept for
the connection (its session) until the client sends
``notifications/roots/list_changed`` (unless replicas share the session: the
notification may reach another one, so each request asks). A 2026-07-28 request has
no session to keep it in: it is asked once per request (one extra round, through
``InputRequiredResult``) and kept for the rest of that request only. The roots are
resolved to local paths once per listing, not per path checked.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar, TypeVarTuple

import anyio.to_thread

from answerback.server._session import ServerSession
from answerback.types import Root


class PathOutsideRootsError(Exception):
    """A path lies outside every root the client granted (through ``..``, a symbolic
    link, or plainly). Let it propagate from a tool: the client gets a tool error that
    says which path was refused and which roots there are."""

    def __init__(self, message: str, *, path: str, roots: Sequence[str]) -> None:
        super().__init__(message)
        self.path = path
        """The path as the tool was given it."""
        self.roots = list(roots)
        """The roots it was checked against (local paths)."""


@dataclass(slots=True)
class RootsCache:
    """The client's roots as last listed, and a count of the changes announced since
    the cache began (a listing that straddles a change is used but not kept)."""

    roots: list[Root] | None = None
    changes: int = field(default=0)
    granted: Granted | None = None
    """``roots`` as local paths, resolved once per listing (``granted``)."""

    def forget(self) -> None:
        """The client said its roots changed: ask again next time."""
        self.roots = None
        self.granted = None
        self.changes += 1

    async def granted_paths(self, session: ServerSession) -> Granted:
        """The roots as ``granted`` resolved them when they were listed: every call
        need not resolve thousands of roots again, and a root's directory swapped for a
        link afterwards is not followed."""
        roots = await self.get(session)
        if self.roots is not None and self.granted is not None:
            return self.granted
        changes = self.changes
        resolved = await in_worker_thread(granted, roots)
        if self.changes == changes and self.roots is not None:  # else a change came meanwhile
            self.granted = resolved
        return resolved

    async def get(self, session: ServerSession) -> list[Root]:
        """The cached list, or the client's answer to ``roots/list`` (then cached)."""
        if self.roots is not None:
            return list(self.roots)
        changes = self.changes
        roots = (await session.list_roots()).roots
        if self.changes == changes:
            self.roots = roots
        return list(roots)


_Args = TypeVarTuple("_Args")
_T = TypeVar("_T")


async def in_worker_thread(function: Callable[[*_Args], _T], *args: *_Args) -> _T:
    """``function(*args)`` in a worker thread: resolving a path touches the file system,
    where a hung network share or automount blocks for minutes, and on the event loop
    that would stall every connection the server has. A cancelled call returns at once
    (the thread is left to finish on its own)."""
    return await anyio.to_thread.run_sync(function, *args, abandon_on_cancel=True)


@dataclass(frozen=True, slots=True)
class Granted:
    """The roots as local paths (resolved, in the client's order), and which of them
    are directories (a root that is a file grants that file only)."""

    paths: tuple[Path, ...]
    directories: frozenset[Path]
    as_given: tuple[Path, ...]
    """The same roots as the client wrote them (links not followed)."""
    listed: int
    """How many roots the client listed, local or not."""


def granted(roots: Sequence[Root]) -> Granted:
    """The roots that name a path on this machine, resolved (links followed). Others
    (another scheme, another host, a URI this machine cannot read, a link loop) guard
    nothing here and are left out."""
    paths: list[Path] = []
    as_given: list[Path] = []
    for root in roots:
        try:
            local = _local_path(str(root.uri))
            paths.append(local.resolve())
        except (ValueError, OSError, RuntimeError):  # RuntimeError: a loop, before 3.13
            continue
        as_given.append(Path(os.path.normpath(local)))
    directories = frozenset(path for path in paths if path.is_dir())
    return Granted(tuple(paths), directories, tuple(as_given), len(roots))


def resolve_within(path: str | os.PathLike[str], roots: Granted) -> Path:
    """``path`` resolved (``..`` collapsed, symbolic links followed), if the result lies
    inside one of ``roots``; ``PathOutsideRootsError`` otherwise.

    ``path`` is an absolute path, a ``file://`` URI, or a path relative to the first
    root that is a directory. A root may be a single file: then only that file is
    inside it. The check is made when called: a link created afterwards is not seen,
    so open what this returns promptly.
    """
    given = os.fspath(path)
    listed = [str(root) for root in roots.paths]
    shown = ", ".join(_printable(root) for root in listed) or "none"

    def refuse(why: str) -> PathOutsideRootsError:
        return PathOutsideRootsError(f"Refusing {given!r}: {why}", path=given, roots=listed)

    if not roots.paths and roots.listed:
        raise refuse(
            f"none of the client's {roots.listed} roots names a path on this machine, so "
            "no path is allowed. Grant a local directory in the client."
        )
    if not roots.paths:
        raise refuse(
            "the client granted no roots, so no path is allowed. Add a root in the client first."
        )
    if given[:5].lower() == "file:":
        try:
            candidate = _local_path(given)
        except ValueError as exc:
            raise refuse(str(exc)) from None
    else:
        candidate = Path(given)
    if "\x00" in str(candidate):
        raise refuse("a path cannot contain a NUL byte.")
    if not candidate.is_absolute():
        base = next((root for root in roots.paths if root in roots.directories), None)
        if base is None:
            raise PathOutsideRootsError(
                f"Refusing the relative path {given!r}: no root is a directory to resolve "
                f"it against (the roots are: {shown}). Give an absolute path.",
                path=given,
                roots=listed,
            )
        candidate = base / candidate
    lexical = Path(os.path.normpath(candidate))
    everywhere = (*roots.paths, *roots.as_given)
    # A path outside every root as written is refused without resolving, which would
    # touch the file system out there: an automount, a hung network share, a Windows
    # UNC path (a connection to whatever host a model named).
    if _under_any(lexical, everywhere):
        try:
            resolved = candidate.resolve()
        except (OSError, RuntimeError):  # RuntimeError: a loop, before Python 3.13
            raise refuse(
                f"it goes through a loop of symbolic links (the roots are: {shown})."
            ) from None
        if _inside(resolved, roots):
            return resolved
    why = _why_outside(candidate, lexical, roots, everywhere)
    raise refuse(
        f"it {why} (the roots are: {shown}). Use a path inside one of the roots, or ask "
        "the person to add a root for it."
    )


def _why_outside(candidate: Path, lexical: Path, roots: Granted, everywhere: Sequence[Path]) -> str:
    """Why a path is refused, in the words a model can act on."""
    if _inside(lexical, roots):
        return "goes through a symbolic link that leads outside every root"
    if ".." in candidate.parts and _under_any(candidate, everywhere):
        return "climbs out of its root through '..'"
    return "is outside every root"


def _local_path(uri: str) -> Path:
    """The path a ``file://`` URI names; ``ValueError`` for one this machine cannot read."""
    # Imported on first use: ``answerback.urls`` is mostly the client's URL verdicts,
    # which a server that checks no roots must not load at start-up.
    from answerback.urls import file_uri_to_path

    return Path(file_uri_to_path(uri))


def _inside(path: Path, roots: Granted) -> bool:
    """``path`` is a root, or lies under one that is a directory (a file root grants
    itself only)."""
    return any(
        path == root or (root in roots.directories and path.is_relative_to(root))
        for root in roots.paths
    )


def _under_any(path: Path, roots: Sequence[Path]) -> bool:
    return any(path == root or path.is_relative_to(root) for root in roots)


def _printable(root: str) -> str:
    """A root as an error message shows it: as it is, or quoted with its control
    characters escaped (a client's root reaches whoever reads the tool's error)."""
    return root if root.isprintable() else repr(root)
