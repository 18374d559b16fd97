"""The TypeScript SDK's client (pinned in interop/package.json, installed by ``make``)
calling answerback's tools over stdio.

Most hosts are built on this client, and it checks each result's structured content
against the tool's output schema strictly: every ``$ref`` must resolve and every
``format`` is asserted. A mismatch fails the whole call, so each shape below once failed
in those hosts while passing with lenient clients (``tests/servers/structured_server.py``
says why each is there).
"""

from __future__ import annotations

import json
import shutil
import sys
from typing import Any

import anyio
import pytest
from support import PATIENCE_SECONDS, REPO, SERVERS

NODE = shutil.which("node")
TYPESCRIPT_CLIENT = REPO / "interop" / "typescript_client.mjs"
SDK = REPO / "interop" / "node_modules" / "@modelcontextprotocol" / "sdk"

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.interop,
    pytest.mark.skipif(NODE is None, reason="node is not installed"),
    pytest.mark.skipif(not SDK.exists(), reason=f"{SDK} is missing: run `npm ci --prefix interop`"),
]

# tool: the structured content the TypeScript client must accept
SENT: dict[str, Any] = {
    "stations": {"result": [{"city": "Oslo", "celsius": 14}, {"city": "Bergen", "celsius": 11}]},
    "regions": {"name": "Norway", "parts": [{"name": "Vestland", "parts": []}]},
    "departures": {"result": [{"train": "Bergensbanen", "leaves": "2026-12-06T08:25:00"}]},
    "timetable": {"1": {"train": "Dovrebanen", "leaves": "2026-12-06T09:02:00"}},
    "opening_time": {"result": "09:30:00"},
    "delay": {"result": "-PT2M"},
    "fare": {"adults": 2, "total": 180},
    "stamped": {"at": 1767225600},
}


async def test_typescript_client_accepts_the_structured_content_of_answerbacks_tools() -> None:
    assert NODE is not None
    command = [
        NODE,
        str(TYPESCRIPT_CLIENT),
        ",".join(SENT),
        sys.executable,
        str(SERVERS / "structured_server.py"),
    ]
    with anyio.fail_after(PATIENCE_SECONDS * 3):
        done = await anyio.run_process(command, cwd=REPO, check=False)
    assert done.returncode == 0, done.stderr.decode()
    calls = [json.loads(line) for line in done.stdout.decode().splitlines()]
    assert [call["tool"] for call in calls] == list(SENT)
    for call in calls:
        assert "error" not in call, f"{call['tool']}: {call.get('error')}"
        result = call["result"]
        assert result["isError"] is False, result["content"]
        assert result["structuredContent"] == SENT[call["tool"]]
