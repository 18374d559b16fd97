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
import secrets

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
            stem = _REJECTED_CHARACTER.sub("_", name)[:_STEM_LENGTH] or "x"
            # A safe name given earlier may already be this stand-in: hash again with a
            # counter until it is free, so no order of names makes two collide.
            safe, attempt = "", 0
            while not safe or safe in self._incoming:
                salted = name if attempt == 0 else f"{name}\0{attempt}"
                safe = f"{stem}_{hashlib.sha256(salted.encode()).hexdigest()[:_HASH_LENGTH]}"
                attempt += 1
        self._outgoing[name] = safe
        self._incoming[safe] = name
        return safe

    def from_provider(self, safe: str) -> str:
        """The MCP string behind ``safe``; unknown strings come back as they are."""
        return self._incoming.get(safe, safe)

    def issued(self, safe: str) -> bool:
        """Whether ``safe`` is a string ``to_provider`` gave out for this request."""
        return safe in self._incoming


class ToolNames:
    """The two maps a request needs: one for tool names, one for tool-use ids."""

    def __init__(self) -> None:
        self.names = ReversibleNames()
        self.ids = ReversibleNames()

    def answered_id(self, provider_id: object, seen: set[str]) -> str:
        """The MCP id of a tool call the provider answered with ``provider_id`` (``seen``:
        the ids of the reply's earlier calls, updated here). Some OpenAI-compatible
        servers (older llama.cpp and Ollama) send no id, or the same one for every call
        or round; such a call gets a fresh id, so the server can answer each call once.
        The next request sends the fresh id as it is, and the endpoint reads it back
        from the same conversation."""
        raw = provider_id if isinstance(provider_id, str) else ""
        if not raw or raw in seen or self.ids.issued(raw):
            fresh = f"call_{secrets.token_hex(8)}"
            seen.add(fresh)
            return fresh
        seen.add(raw)
        return self.ids.from_provider(raw)
