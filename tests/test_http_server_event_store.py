"""The default event store: bounded by count, bytes, age and per stream, and a replay
either is complete or is refused (the client then gets a 404, never a replay with a
hole in it)."""

from __future__ import annotations

import pytest

from answerback.transports.http import InMemoryEventStore
from answerback.transports.http import _event_store as event_store_module

pytestmark = pytest.mark.anyio


async def replay(store: InMemoryEventStore, last_event_id: str) -> tuple[str | None, list[bytes]]:
    sent: list[bytes] = []

    async def collect(event_id: str, data: bytes) -> None:
        sent.append(data)

    return await store.replay_events_after(last_event_id, collect), sent


async def test_a_replay_sends_what_came_after_on_that_stream_only() -> None:
    store = InMemoryEventStore()
    first = await store.store_event("a", b"")
    await store.store_event("b", b'{"b":1}')
    await store.store_event("a", b'{"a":1}')
    await store.store_event("a", b'{"a":2}')
    assert await replay(store, first) == ("a", [b'{"a":1}', b'{"a":2}'])


async def test_the_oldest_events_go_past_the_count_bound() -> None:
    store = InMemoryEventStore(max_events=3)
    ids = [await store.store_event("s", f"{n}".encode()) for n in range(5)]
    assert store.event_count == 3
    assert await replay(store, ids[2]) == ("s", [b"3", b"4"])
    assert await replay(store, ids[0]) == (None, [])  # event 1 has gone: no partial replay


async def test_the_oldest_events_go_past_the_byte_bound() -> None:
    store = InMemoryEventStore(max_bytes=1000)
    for n in range(10):
        await store.store_event(f"stream-{n}", b"x" * 300)
    assert store.stored_bytes == 900
    assert len(store) == 3
    oversized = await store.store_event("huge", b"x" * 2000)  # kept by nobody
    assert store.stored_bytes <= 1000
    assert await replay(store, oversized) == (None, [])


async def test_events_past_their_age_go(monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr(event_store_module, "monotonic", lambda: now[0])
    store = InMemoryEventStore(max_age_seconds=60)
    old = await store.store_event("old", b"o")
    kept = await store.store_event("kept", b"")
    now[0] += 30
    await store.store_event("kept", b"k")
    now[0] += 31
    assert await replay(store, old) == (None, [])
    # The priming event has expired too, but nothing after it: the replay is whole.
    assert await replay(store, kept) == ("kept", [b"k"])
    assert store.event_count == 1
    assert len(store) == 1


async def test_a_stream_keeps_its_newest_events_past_its_own_bound() -> None:
    store = InMemoryEventStore(max_events_per_stream=2)
    ids = [await store.store_event("s", f"{n}".encode()) for n in range(4)]
    other = await store.store_event("t", b"t")
    assert store.event_count == 3
    assert await replay(store, ids[2]) == ("s", [b"3"])
    assert await replay(store, ids[1]) == ("s", [b"2", b"3"])  # nothing after it lost
    assert await replay(store, ids[0]) == (None, [])
    assert await replay(store, other) == ("t", [])


async def test_forgetting_a_stream_frees_it_and_its_ids_are_never_reused() -> None:
    store = InMemoryEventStore()
    before = await store.store_event("s", b"12345")
    await store.forget_stream("s")
    assert (store.stored_bytes, store.event_count, len(store)) == (0, 0, 0)
    assert await replay(store, before) == (None, [])
    after = await store.store_event("s", b"678")
    assert after != before
    assert await replay(store, after) == ("s", [])


@pytest.mark.parametrize(
    "crafted",
    ["s_١٢", "s_²", "s_" + "9" * 5000, "s_-1", "s_+1", "s_ 1", "s_", "_", "", "s", "s_99"],
)
async def test_a_crafted_event_id_is_unknown(crafted: str) -> None:
    store = InMemoryEventStore()
    await store.store_event("s", b"")
    await store.store_event("s", b"x")
    assert await replay(store, crafted) == (None, [])


@pytest.mark.parametrize(
    "options",
    [{"max_events": 0}, {"max_bytes": -1}, {"max_age_seconds": 0}, {"max_events_per_stream": 0}],
)
def test_bounds_must_be_positive(options: dict[str, int]) -> None:
    with pytest.raises(ValueError, match=r"must be (a )?positive"):
        InMemoryEventStore(**options)
