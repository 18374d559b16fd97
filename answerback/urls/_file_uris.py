"""``file://`` URIs and paths, both ways, for POSIX and Windows alike.

Roots travel as ``file://`` URIs, but people type paths and programs open paths. The
client turns a path into a URI and the server turns it back, possibly on another kind
of machine, so both directions are pure functions of the text (``PureWindowsPath``
works on Linux too): a drive letter becomes ``file:///C:/x``, a UNC share
``file://server/share/x``, and every byte outside the unreserved set is
percent-encoded (UTF-8), ``%`` itself included, so a name with spaces or accents
survives the round trip exactly.
"""

from __future__ import annotations

import os
import re
from pathlib import PurePath, PurePosixPath, PureWindowsPath
from urllib.parse import quote, unquote, urlsplit

_DRIVE_IN_URI = re.compile(r"^/?(?P<letter>[A-Za-z])[:|](?P<rest>/.*)?$")
_EXTENDED_PREFIX = "\\\\?\\"


def path_to_file_uri(path: str | os.PathLike[str]) -> str:
    """The ``file://`` URI of an absolute path.

    A ``PureWindowsPath`` (or any path on Windows) gives ``file:///C:/dir`` for a drive
    letter and ``file://server/share/dir`` for a UNC share; a POSIX path gives
    ``file:///dir``, exactly as ``Path.as_uri`` does. ``ValueError`` for a relative
    path: resolve it first (against which directory is the caller's choice).
    """
    pure = path if isinstance(path, PurePath) else PurePath(os.fspath(path))
    if not pure.is_absolute():
        raise ValueError(
            f"Cannot make a file URI of the relative path {str(pure)!r}: make it absolute "
            "first (for example Path(path).resolve())."
        )
    if isinstance(pure, PureWindowsPath):
        return _windows_uri(pure)
    return "file://" + quote(pure.as_posix(), safe="/", errors="surrogateescape")


def _windows_uri(path: PureWindowsPath) -> str:
    text = str(path)
    if text.startswith(_EXTENDED_PREFIX):  # \\?\C:\x and \\?\UNC\server\share\x
        rest = text[len(_EXTENDED_PREFIX) :]
        path = PureWindowsPath("\\\\" + rest[4:] if rest.upper().startswith("UNC\\") else rest)
    posix = path.as_posix()
    if posix.startswith("//"):  # \\server\share\x
        return "file:" + quote(posix, safe="/")
    drive, rest = posix[:2], posix[2:]
    return f"file:///{drive.upper()}{quote(rest, safe='/')}"


def file_uri_to_path(uri: str, *, windows: bool | None = None) -> PurePath:
    """The path a ``file://`` URI names, percent-encoding undone.

    ``windows`` says which kind of path to make (default: this machine's): with it,
    ``file:///C:/x`` is ``C:\\x`` and ``file://server/share/x`` the UNC path
    ``\\\\server\\share\\x``; without it, a URI naming another host is refused (a POSIX
    path cannot reach it). ``ValueError``, saying what is wrong, for anything that is
    not a plain ``file:`` URI of an absolute local path: another scheme, a query or
    fragment (a ``?`` or ``#`` in a name must be percent-encoded), a NUL byte.
    """
    on_windows = os.name == "nt" if windows is None else windows
    parts = urlsplit(uri)
    if parts.scheme.lower() != "file":
        raise ValueError(f"{uri!r} is not a file:// URI: roots and paths must use file://.")
    if parts.query or parts.fragment or uri.endswith(("?", "#")):
        raise ValueError(
            f"{uri!r} has a query or fragment, which a file URI cannot have: write '?' "
            "as %3F and '#' as %23 inside a file name."
        )
    host = "" if parts.netloc.lower() == "localhost" else parts.netloc
    # POSIX names are bytes: ones that are not UTF-8 come back as they were.
    text = unquote(parts.path, errors="replace" if on_windows else "surrogateescape")
    if "\x00" in text or "\x00" in host:
        raise ValueError(f"{uri!r} contains a NUL byte (%00), which no path can hold.")
    if on_windows:
        return _windows_path(uri, unquote(host), text)
    if host:
        raise ValueError(
            f"{uri!r} names a file on the host {host!r}; only local files "
            "(file:///path or file://localhost/path) have a path on this machine."
        )
    if not text.startswith("/"):
        raise ValueError(f"{uri!r} has no absolute path: write file:///absolute/path.")
    return PurePosixPath(text)


def _windows_path(uri: str, host: str, text: str) -> PureWindowsPath:
    if host:
        if not text.strip("/"):
            raise ValueError(f"{uri!r} names the host {host!r} but no share on it.")
        return PureWindowsPath("\\\\" + host + text.replace("/", "\\"))
    drive = _DRIVE_IN_URI.match(text)
    if drive is None:
        raise ValueError(
            f"{uri!r} has no drive letter: write file:///C:/path, or "
            "file://server/share/path for a network share."
        )
    return PureWindowsPath(f"{drive['letter'].upper()}:{drive['rest'] or '/'}")
