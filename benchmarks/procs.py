"""Subprocesses the benchmark starts: HTTP servers on 127.0.0.1, and their memory use."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Generator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parent.parent
SERVERS = Path(__file__).resolve().parent / "servers"


def server_script(name: str) -> str:
    """The path of a script in ``benchmarks/servers`` (runnable without this package)."""
    return str(SERVERS / f"{name}.py")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def rss_kib(pid: int) -> int:
    """The resident set size of process ``pid`` in KiB (``VmRSS`` in /proc/<pid>/status)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"/proc/{pid}/status has no VmRSS line")


def child_pids() -> set[int]:
    """The processes this one has started and that still run (the stdio servers of the
    clients connected now), from ``/proc/self/task/*/children``."""
    pids: set[int] = set()
    for children in Path("/proc/self/task").glob("*/children"):
        try:
            pids.update(int(pid) for pid in children.read_text().split())
        except OSError:
            continue  # the thread ended while we looked
    return pids


@dataclass(frozen=True, slots=True)
class ServerProcess:
    """A running server subprocess and where to reach it."""

    pid: int
    port: int
    url: str


@contextmanager
def http_server(
    script: str, args: Sequence[str] = (), *, path: str = "/mcp"
) -> Generator[ServerProcess, None, None]:
    """Run ``python script --http PORT *args`` until the block ends; wait until it listens."""
    port = free_port()
    with tempfile.TemporaryFile() as log:
        proc = subprocess.Popen(
            [sys.executable, script, "--http", str(port), *args],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            cwd=ROOT,
            env=dict(os.environ),
        )
        try:
            _wait_listening(proc, port, log)
            yield ServerProcess(pid=proc.pid, port=port, url=f"http://127.0.0.1:{port}{path}")
        finally:
            _stop(proc)


def _wait_listening(
    proc: subprocess.Popen[bytes], port: int, log: IO[bytes], timeout: float = 30.0
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(
                f"server exited with {proc.returncode} before listening: {_tail(log)}"
            )
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"server did not listen on port {port} within {timeout}s: {_tail(log)}")


def _tail(log: IO[bytes]) -> str:
    log.seek(0)
    return log.read().decode(errors="replace")[-2000:]


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
