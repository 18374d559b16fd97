"""The token stores a program keeps OAuth tokens in: a private JSON file, the keyring.

The file store is tested on a real file system (permissions, atomic replace, a corrupt
file, concurrent writers); the keyring store against an in-memory keyring backend,
since no system keyring runs here.
"""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from keyring.backend import KeyringBackend
from keyring.errors import PasswordDeleteError

from answerback.client import FileTokenStore, KeyringTokenStore, TokenStore, TokenStoreError

pytestmark = pytest.mark.anyio
posix_only = pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")

RECORD = {"access_token": "at-1", "refresh_token": "rt-1", "expires_at": 1700000000.5}


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


async def test_a_file_store_keeps_records_across_instances(tmp_path: Path) -> None:
    path = tmp_path / "answerback" / "tokens.json"
    store = FileTokenStore(path)
    assert isinstance(store, TokenStore)
    assert await store.get("tokens:https://a.example/mcp") is None
    await store.set("tokens:https://a.example/mcp", RECORD)
    await store.set("client:https://as.example", {"client_id": "c"})
    again = FileTokenStore(path)
    assert await again.get("tokens:https://a.example/mcp") == RECORD
    assert await again.keys() == ["client:https://as.example", "tokens:https://a.example/mcp"]
    await again.delete("tokens:https://a.example/mcp")
    await again.delete("never-stored")
    assert await store.get("tokens:https://a.example/mcp") is None
    assert json.loads(path.read_text()) == {"client:https://as.example": {"client_id": "c"}}


async def test_a_returned_record_is_a_copy(tmp_path: Path) -> None:
    store = FileTokenStore(tmp_path / "tokens.json")
    value: dict[str, Any] = {"scopes": ["a"]}
    await store.set("k", value)
    value["scopes"].append("changed")
    got = await store.get("k")
    assert got == {"scopes": ["a"]}


@posix_only
async def test_the_file_is_0600_in_a_0700_directory(tmp_path: Path) -> None:
    path = tmp_path / "config" / "answerback" / "tokens.json"
    await FileTokenStore(path).set("k", RECORD)
    assert mode(path) == 0o600
    assert mode(path.parent) == 0o700
    assert sorted(p.name for p in path.parent.iterdir()) == [".tokens.json.lock", "tokens.json"]


@posix_only
async def test_a_file_others_can_read_is_refused_with_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    path.write_text(json.dumps({"k": RECORD}))
    path.chmod(0o644)
    store = FileTokenStore(path)
    with pytest.raises(TokenStoreError, match=r"can be read by other users.*chmod 600 "):
        await store.get("k")
    with pytest.raises(TokenStoreError, match="chmod 600"):
        await store.set("k", {"access_token": "new"})
    assert json.loads(path.read_text()) == {"k": RECORD}
    path.chmod(0o600)
    assert await store.get("k") == RECORD


@posix_only
async def test_a_directory_others_can_write_is_refused(tmp_path: Path) -> None:
    directory = tmp_path / "shared"
    directory.mkdir()
    directory.chmod(0o777)
    with pytest.raises(TokenStoreError, match=f"chmod 700 {directory}"):
        await FileTokenStore(directory / "tokens.json").set("k", RECORD)
    assert not (directory / "tokens.json").exists()


@posix_only
async def test_a_symbolic_link_is_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.json"
    target.write_text("{}")
    target.chmod(0o600)
    (tmp_path / "tokens.json").symlink_to(target)
    with pytest.raises(TokenStoreError, match="not a link"):
        await FileTokenStore(tmp_path / "tokens.json").get("k")


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ('{"k": {"access_token": "at"', r"not valid JSON \(line 1, column 28"),
        ('["a list"]', "not a token store"),
        ('{"k": "a string"}', "not a token store"),
    ],
)
async def test_a_corrupt_file_is_a_clear_error_and_is_kept(
    tmp_path: Path, content: str, match: str
) -> None:
    path = tmp_path / "tokens.json"
    path.write_text(content)
    path.chmod(0o600)
    store = FileTokenStore(path)
    with pytest.raises(TokenStoreError, match=match) as caught:
        await store.get("k")
    assert "move it aside" in str(caught.value).lower()
    with pytest.raises(TokenStoreError, match=match):
        await store.set("k", RECORD)
    assert path.read_text() == content


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (b'{"k": "caf\xe9"}', "not UTF-8 text"),
        (b"[" * 100_000 + b"]" * 100_000, "nests its values too deeply"),
    ],
    ids=["latin-1", "deep"],
)
async def test_an_unreadable_file_is_a_clear_error_and_is_kept(
    tmp_path: Path, content: bytes, match: str
) -> None:
    """Both were a UnicodeDecodeError or a RecursionError: a traceback in the CLI."""
    path = tmp_path / "tokens.json"
    path.write_bytes(content)
    path.chmod(0o600)
    with pytest.raises(TokenStoreError, match=match) as caught:
        await FileTokenStore(path).get("k")
    assert "move it aside" in str(caught.value).lower()
    assert path.read_bytes() == content


async def test_a_directory_in_the_files_place_is_a_clear_error(tmp_path: Path) -> None:
    """Opening it raised IsADirectoryError, before the check that names the problem."""
    path = tmp_path / "tokens.json"
    path.mkdir()
    with pytest.raises(TokenStoreError, match="is not a regular file"):
        await FileTokenStore(path).get("k")


async def test_a_value_that_is_not_json_leaves_the_file_alone(tmp_path: Path) -> None:
    store = FileTokenStore(tmp_path / "tokens.json")
    await store.set("k", RECORD)
    with pytest.raises(TypeError):
        await store.set("k", {"when": object()})
    assert await store.get("k") == RECORD


async def test_concurrent_writers_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    stores = [FileTokenStore(path), FileTokenStore(path)]

    async def write(index: int) -> None:
        await stores[index % 2].set(f"key-{index}", {"n": index})

    async with anyio.create_task_group() as group:
        for index in range(40):
            group.start_soon(write, index)
    assert await stores[0].keys() == sorted(f"key-{index}" for index in range(40))
    assert not list(tmp_path.glob("*.tmp"))  # noqa: ASYNC240


async def test_clear_forgets_everything(tmp_path: Path) -> None:
    store = FileTokenStore(tmp_path / "tokens.json")
    await store.set("a", {})
    await store.set("b", {})
    await store.clear()
    assert await store.keys() == []


# -- the keyring -----------------------------------------------------------------------


class MemoryKeyring(KeyringBackend):
    """A keyring backend in a dict: the system keyrings cannot run here."""

    priority = 1  # pyright: ignore[reportAssignmentType]

    def __init__(self) -> None:
        super().__init__()
        self.entries: dict[tuple[str, str], str] = {}

    def get_password(self, service: str, username: str) -> str | None:
        return self.entries.get((service, username))

    def set_password(self, service: str, username: str, password: str) -> None:
        self.entries[(service, username)] = password

    def delete_password(self, service: str, username: str) -> None:
        if self.entries.pop((service, username), None) is None:
            raise PasswordDeleteError("not found")


async def test_a_keyring_store_keeps_one_entry_per_record() -> None:
    backend = MemoryKeyring()
    store = KeyringTokenStore(backend=backend)
    assert isinstance(store, TokenStore)
    await store.set("tokens:https://a.example/mcp", RECORD)
    assert json.loads(backend.entries[("answerback", "tokens:https://a.example/mcp")]) == RECORD
    assert await KeyringTokenStore(backend=backend).get("tokens:https://a.example/mcp") == RECORD
    assert await KeyringTokenStore("other", backend=backend).get("x") is None
    await store.delete("tokens:https://a.example/mcp")
    await store.delete("tokens:https://a.example/mcp")
    assert backend.entries == {}


async def test_a_keyring_entry_that_is_not_a_record_says_how_to_remove_it() -> None:
    backend = MemoryKeyring()
    backend.entries[("answerback", "k")] = "hunter2"
    with pytest.raises(TokenStoreError, match="keyring del answerback 'k'"):
        await KeyringTokenStore(backend=backend).get("k")


async def test_no_usable_keyring_is_a_clear_error() -> None:
    from keyring.backends.fail import Keyring as NoKeyring

    store = KeyringTokenStore(backend=NoKeyring())
    with pytest.raises(TokenStoreError, match="keep tokens in a FileTokenStore"):
        await store.set("k", RECORD)


def test_without_the_keyring_package_the_error_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "keyring", None)
    with pytest.raises(ImportError, match=r"answerback\[keyring\]"):
        KeyringTokenStore()
