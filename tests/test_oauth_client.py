"""The OAuth client: discovery, registration, the token endpoint and step-up, each
checked against small local fakes of the servers involved."""

from __future__ import annotations

import pytest

from answerback.client import InMemoryTokenStore, TokenStore

pytestmark = pytest.mark.anyio


async def test_in_memory_store_keeps_a_copy_of_each_record() -> None:
    store: TokenStore = InMemoryTokenStore()
    scopes = ["mcp"]
    await store.set("token https://rs/mcp", {"access_token": "a", "scopes": scopes})
    scopes.append("admin")
    got = await store.get("token https://rs/mcp")
    assert got == {"access_token": "a", "scopes": ["mcp"]}
    assert got is not None
    got["access_token"] = "changed"
    assert await store.get("token https://rs/mcp") == {"access_token": "a", "scopes": ["mcp"]}
    await store.delete("token https://rs/mcp")
    await store.delete("token https://rs/mcp")
    assert await store.get("token https://rs/mcp") is None
