"""A replica whose Redis is not there, or refuses it, at start-up: one line naming
Redis and what to do, exit status 1 (as for a port in use), not uvicorn's traceback of
the lifespan. Real processes: the example replica, a redis-server."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from scale_out.cluster import ROOT, free_port, missing_for_redis, redis_server
from support import PATIENCE_SECONDS

from answerback.server import MCPServer
from answerback.transports.http import RedisState

pytest.importorskip("redis")

EXAMPLE = ROOT / "examples" / "scaled_out_server.py"

# The example, with no wait for a Redis that is not up yet: the wait (30 s) is the same
# code path as giving up at once, and a test must not sit through it.
NO_WAIT = f"""
import runpy, sys
import answerback.transports.http._redis_state as redis_state
redis_state.START_SECONDS = 0
sys.argv = [{str(EXAMPLE)!r}, *sys.argv[1:]]
runpy.run_path({str(EXAMPLE)!r}, run_name="__main__")
"""


def replica(tmp_path: Path, redis_url: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "replica.py"
    script.write_text(NO_WAIT, encoding="utf-8")
    return subprocess.run(
        [sys.executable, str(script), "--port", "0", "--redis", redis_url],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=PATIENCE_SECONDS * 3,
        check=False,
    )


def test_a_replica_with_no_redis_says_so_in_one_line(tmp_path: Path) -> None:
    port = free_port()  # nothing listens there
    done = replica(tmp_path, f"redis://:secret@127.0.0.1:{port}/0")
    assert done.returncode == 1, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    # How the refused connection is worded depends on the event loop and the platform.
    assert lines[0].startswith(
        f"answerback: the server cannot start: Redis at redis://***@127.0.0.1:{port}/0 failed: "
    ), lines[0]
    assert lines[0].endswith(
        "(waited 0 s for it). Start Redis before the server, or correct RedisState's url."
    ), lines[0]


@pytest.mark.skipif(missing_for_redis() is not None, reason=str(missing_for_redis()))
def test_a_replica_redis_refuses_says_to_correct_the_password(tmp_path: Path) -> None:
    with redis_server(tmp_path) as redis:  # it has no password: one given is refused
        url = redis.url.replace("redis://", "redis://:secret@")
        done = replica(tmp_path, url)
    lines = done.stderr.splitlines()
    assert done.returncode == 1, done.stderr
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("answerback: the server cannot start: Redis at redis://***@")
    assert lines[0].endswith("Correct the user or password in RedisState's url."), lines[0]


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_any_asgi_server_is_told_the_reason_in_one_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Served by another ASGI server (uvicorn's own command, hypercorn), the failed
    start's message is the reason, not Starlette's traceback."""
    import answerback.transports.http._redis_state as redis_state

    monkeypatch.setattr(redis_state, "START_SECONDS", 0)
    port = free_port()
    app = MCPServer("replica").http_app(state=RedisState(f"redis://127.0.0.1:{port}/0"))
    sent: list[dict[str, Any]] = []
    incoming = [{"type": "lifespan.startup"}]

    async def receive() -> dict[str, Any]:
        return incoming.pop(0)

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}
    with anyio.fail_after(PATIENCE_SECONDS), pytest.raises(redis_state.StateUnavailable):
        await app(scope, receive, send)
    [failed] = sent
    assert failed["type"] == "lifespan.startup.failed"
    said = failed["message"]
    assert "\n" not in said, said
    assert said.startswith(f"StateUnavailable: Redis at redis://127.0.0.1:{port}/0 failed: ")
    assert said.endswith("Start Redis before the server, or correct RedisState's url."), said
