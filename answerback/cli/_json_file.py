"""Reading a JSON file the person named (the config file, the answers file).

Every way such a file can be unreadable is said in one line with what to do, rather
than a traceback: it cannot be opened, it is not UTF-8, it is not JSON, or it nests
deeper than the parser can follow. A byte order mark, which Windows editors write, is
accepted.
"""

from __future__ import annotations

import json
from pathlib import Path


class UnreadableFile(ValueError):
    """The file cannot be read as JSON; the message says why and what to do."""


def read_json(path: Path, what: str) -> object:
    """The JSON ``path`` holds; ``what`` names the file in messages ("the answers file")."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise UnreadableFile(f"Cannot read {what} {path}: {exc.strerror}.") from exc
    except UnicodeDecodeError as exc:
        raise UnreadableFile(
            f"{what.capitalize()} {path} is not UTF-8 text (byte {exc.start} cannot be "
            "read): save it as UTF-8."
        ) from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise UnreadableFile(
            f"{what.capitalize()} {path} is not valid JSON (line {exc.lineno}, column "
            f"{exc.colno}: {exc.msg})."
        ) from exc
    except RecursionError:
        raise UnreadableFile(
            f"{what.capitalize()} {path} is not valid JSON here: it nests its values "
            "too deeply to be read."
        ) from None
