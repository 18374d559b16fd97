"""Reversible renaming of tool names and tool-use ids for providers that restrict them.

MCP allows any string as a tool name (``files.read``, ``github/create_issue``) and as a
tool-use id, but OpenAI and Anthropic accept only ``^[a-zA-Z0-9_-]{1,64}$``. Rejecting
such a request would make a perfectly good server unusable with those models, so each
request gets its own two-way map: names a provider accepts pass unchanged, the others
become a readable, hash-suffixed stand-in, and the provider's answer is mapped back so
the server sees its own names again.
"""

from __future__ import annotations

import hashlib
import re

_ACCEPTED = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_REJECTED_CHARACTER = re.compile(r"[^a-zA-Z0-9_-]")
_HASH_LENGTH = 8
_STEM_LENGTH = 64 - 1 - _HASH_LENGTH


class ReversibleNames:
    """One request's map between MCP's strings and those a provider accepts.

    ``to_provider`` is stable (the same MCP name always maps to the same stand-in),
    and ``from_provider`` returns strings it never issued unchanged, so a name the
    model invents reaches the server as it was written.
    """

    def __init__(self) -> None:
        self._outgoing: dict[str, str] = {}
        self._incoming: dict[str, str] = {}

    def to_provider(self, name: str) -> str:
        """The provider-safe stand-in for ``name`` (``name`` itself when it is safe)."""
        known = self._outgoing.get(name)
        if known is not None:
            return known
        if _ACCEPTED.match(name) and name not in self._incoming:
            safe = name
        else:
            digest = hashlib.sha256(name.encode()).hexdigest()[:_HASH_LENGTH]
            stem = _REJECTED_CHARACTER.sub("_", name)[:_STEM_LENGTH] or "x"
            safe = f"{stem}_{digest}"
            if safe in self._incoming:
                raise ValueError(
                    f"the names {self._incoming[safe]!r} and {name!r} map to the same "
                    f"provider name {safe!r}; rename one of them."
                )
        self._outgoing[name] = safe
        self._incoming[safe] = name
        return safe

    def from_provider(self, safe: str) -> str:
        """The MCP string behind ``safe``; unknown strings come back as they are."""
        return self._incoming.get(safe, safe)


class ToolNames:
    """The two maps a request needs: one for tool names, one for tool-use ids."""

    def __init__(self) -> None:
        self.names = ReversibleNames()
        self.ids = ReversibleNames()
