"""examples/scaled_out_server.py, run as its docstring says: two copies on one real
Redis behind haproxy (round robin, no cookies), so the session's requests and the
answer to its question alternate between them."""

from __future__ import annotations

import secrets
import sys
from pathlib import Path

import anyio
import pytest
from scale_out.cluster import (
    ROOT,
    free_port,
    haproxy,
    missing_for_haproxy,
    missing_for_redis,
    redis_server,
    started,
)

from answerback import Client
from answerback.client import ClientRequestContext
from answerback.types import ElicitRequestParams, ElicitResult, TextContent

EXAMPLE = ROOT / "examples" / "scaled_out_server.py"

pytestmark = [
    pytest.mark.skipif(missing_for_redis() is not None, reason=str(missing_for_redis())),
    pytest.mark.skipif(missing_for_haproxy() is not None, reason=str(missing_for_haproxy())),
    pytest.mark.parametrize("anyio_backend", ["asyncio"]),
]


async def answer_two(context: ClientRequestContext, params: ElicitRequestParams) -> ElicitResult:
    return ElicitResult(action="accept", content={"guests": 2})


@pytest.mark.anyio
async def test_two_copies_behind_round_robin_serve_one_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANSWERBACK_STATE_KEY", secrets.token_hex(32))
    with redis_server(tmp_path) as redis:
        ports = [free_port(), free_port()]
        argv = [
            [sys.executable, str(EXAMPLE), "--port", str(p), "--redis", redis.url] for p in ports
        ]
        with (
            started("copy 1", argv[0], ports[0], tmp_path / "copy-1.log") as first,
            started("copy 2", argv[1], ports[1], tmp_path / "copy-2.log") as second,
        ):
            first.wait_listening()
            second.wait_listening()
            with haproxy(ports, tmp_path) as proxy:
                url = f"http://127.0.0.1:{proxy.port}/mcp"
                async with Client(url, mode="legacy", elicitation_callback=answer_two) as client:
                    with anyio.fail_after(60):
                        results = [await client.call_tool("book_table", {}) for _ in range(3)]
    for result in results:
        text = result.content[0]
        assert isinstance(text, TextContent)
        assert text.text.startswith("Booked a table for 2 on replica ")
