"""Real processes for the scale-out tests and benchmark: redis-server, replicas, haproxy.

Each runs on 127.0.0.1 on a port that was free a moment ago (other test runs share the
machine, so never a fixed one), writes its output to a log file whose tail is shown if it
fails to start, and is stopped when its context manager ends. Waiting for one to be ready
polls its port under a deadline and stops early if the process exits.

Used as ``scale_out.cluster`` by the tests and as ``tests.scale_out.cluster`` by the
benchmark, so it imports nothing from the test suite.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Generator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REPLICA_SCRIPT = Path(__file__).resolve().parent / "replica_server.py"
READY_SECONDS = 30.0
"""How long a process may take to listen before start-up counts as failed."""
STOP_SECONDS = 10.0
HEARTBEAT_SECONDS = 1.0
"""The replicas' heartbeat (the default): a dead owner is noticed within a few of these."""
REPLICA_NAMES = ("A", "B", "C")
_PR_SET_PDEATHSIG = 1


def redis_server_path() -> str | None:
    return shutil.which("redis-server") or _existing("/usr/bin/redis-server")


def haproxy_path() -> str | None:
    return shutil.which("haproxy") or _existing("/usr/sbin/haproxy")


def _existing(path: str) -> str | None:
    return path if Path(path).exists() else None


def missing_for_redis() -> str | None:
    """Why the Redis-backed replicas cannot run here, or ``None`` when they can."""
    if importlib.util.find_spec("redis") is None:
        return "the redis Python package is missing: pip install 'answerback[redis]'"
    if redis_server_path() is None:
        return (
            "redis-server is not installed: run `make services` (or apt-get install redis-server)"
        )
    return None


def missing_for_haproxy() -> str | None:
    """Why the load-balanced tests cannot run here, or ``None`` when they can."""
    if haproxy_path() is None:
        return "haproxy is not installed: run `make services` (or apt-get install haproxy)"
    return missing_for_redis()


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listened on a moment ago."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Process:
    """A started program, the port it serves and the log it writes."""

    name: str
    popen: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def running(self) -> bool:
        return self.popen.poll() is None

    def log_tail(self, size: int = 3000) -> str:
        try:
            return self.log.read_text(errors="replace")[-size:]
        except OSError:
            return "(no log)"

    def wait_listening(self, deadline_seconds: float = READY_SECONDS) -> None:
        """Return once the port accepts connections; fail with the log if the process
        exits first or the deadline passes."""
        deadline = time.monotonic() + deadline_seconds
        while time.monotonic() < deadline:
            if self.popen.poll() is not None:
                raise RuntimeError(
                    f"{self.name} exited with status {self.popen.returncode} before listening "
                    f"on port {self.port}:\n{self.log_tail()}"
                )
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                time.sleep(0.05)  # polling a port under a deadline: nothing to wait on
        raise RuntimeError(
            f"{self.name} did not listen on port {self.port} within {deadline_seconds:g} s:\n"
            f"{self.log_tail()}"
        )

    def stop(self) -> None:
        """SIGTERM, and SIGKILL if it does not exit in time; a no-op once it has exited."""
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout=STOP_SECONDS)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()

    def kill(self) -> None:
        """``kill -9``: no chance to clean up, as when a machine dies."""
        if self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait()


def _die_with_parent() -> None:
    """In the child, before it runs (Linux): be sent SIGTERM when the process that
    started it dies, so a test run or benchmark killed from outside (a timeout's
    SIGTERM skips every ``finally``) leaves no server behind."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


@contextmanager
def started(name: str, argv: Sequence[str], port: int, log: Path) -> Generator[Process, None, None]:
    """Run ``argv`` until the block ends (the caller waits for it to listen)."""
    with log.open("wb") as out:
        popen = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
            env=dict(os.environ),
            preexec_fn=_die_with_parent if sys.platform == "linux" else None,
        )
    process = Process(name, popen, port, log)
    try:
        yield process
    finally:
        process.stop()


@dataclass
class Redis:
    """A private redis-server with no persistence."""

    process: Process

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.process.port}/0"


@contextmanager
def redis_server(workdir: Path) -> Generator[Redis, None, None]:
    """A redis-server on a free loopback port, saving nothing to disk."""
    path = redis_server_path()
    if path is None:
        raise RuntimeError("redis-server is not installed: run `make services`")
    port = free_port()
    argv = [
        path,
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
        str(workdir),
    ]
    with started("redis-server", argv, port, workdir / f"redis-{port}.log") as process:
        process.wait_listening()
        yield Redis(process)


@dataclass(frozen=True)
class ReplicaOptions:
    """How the replicas of one deployment are configured (the same for all of them)."""

    redis_url: str | None
    """``None``: state in memory (only meaningful for a single replica)."""
    state_key: bytes = field(default_factory=lambda: secrets.token_bytes(32))
    heartbeat_seconds: float = HEARTBEAT_SECONDS
    auth: bool = False
    """Require ``Authorization: Bearer <user>`` (``replica_server.BearerName``)."""


def replica_argv(name: str, port: int, options: ReplicaOptions) -> list[str]:
    argv = [sys.executable, str(REPLICA_SCRIPT), "--port", str(port), "--name", name]
    argv += ["--heartbeat", str(options.heartbeat_seconds)]
    argv += ["--state-key", options.state_key.hex()]
    if options.redis_url is not None:
        argv += ["--redis", options.redis_url]
    if options.auth:
        argv.append("--auth")
    return argv


@contextmanager
def replicas(
    names: Sequence[str], options: ReplicaOptions, workdir: Path
) -> Generator[list[Process], None, None]:
    """One replica per name, all started at once, each listening when this yields."""
    with ExitStack() as stack:
        processes: list[Process] = []
        for name in names:
            port = free_port()
            argv = replica_argv(name, port, options)
            log = workdir / f"replica-{name}-{port}.log"
            processes.append(stack.enter_context(started(f"replica {name}", argv, port, log)))
        for process in processes:
            process.wait_listening()
        yield processes


def haproxy_config(port: int, backends: Sequence[int]) -> str:
    """Round robin, no cookies, and timeouts long enough for a person's answer.

    ``timeout server``/``timeout client`` bound silence on a connection: an SSE stream
    is silent while a person fills in a form, so they are long; ``timeout tunnel`` is
    not needed (no upgrade). ``option http-no-delay`` keeps haproxy from delaying small
    writes (an SSE event is one) in the hope of merging them. ``balance roundrobin``
    with HTTP keep-alive picks a server for every request, so one client's requests
    land on every replica in turn.
    """
    servers = "\n".join(
        f"    server r{index} 127.0.0.1:{backend} check inter 1s"
        for index, backend in enumerate(backends)
    )
    return f"""\
global
    maxconn 4096

defaults
    mode http
    option http-no-delay
    timeout connect 2s
    timeout client 1h
    timeout server 1h
    timeout http-request 30s
    timeout http-keep-alive 5s

frontend mcp
    bind 127.0.0.1:{port}
    default_backend replicas

backend replicas
    balance roundrobin
{servers}
"""


@contextmanager
def haproxy(backends: Sequence[int], workdir: Path) -> Generator[Process, None, None]:
    """A haproxy in front of ``backends`` (ports), configured by ``haproxy_config``."""
    path = haproxy_path()
    if path is None:
        raise RuntimeError("haproxy is not installed: run `make services`")
    port = free_port()
    config = workdir / f"haproxy-{port}.cfg"
    config.write_text(haproxy_config(port, backends))
    check = subprocess.run([path, "-c", "-f", str(config)], capture_output=True, timeout=30)
    if check.returncode != 0:
        raise RuntimeError(f"haproxy refused {config}: {check.stdout!r} {check.stderr!r}")
    with started(
        "haproxy", [path, "-db", "-f", str(config)], port, config.with_suffix(".log")
    ) as p:
        p.wait_listening()
        yield p


@dataclass
class Cluster:
    """Redis, the replicas sharing it, and (when asked for) haproxy in front of them."""

    redis: Redis
    replicas: list[Process]
    options: ReplicaOptions
    proxy: Process | None = None

    def url(self, index: int) -> str:
        return f"http://127.0.0.1:{self.replicas[index].port}/mcp"

    @property
    def ports(self) -> list[int]:
        return [replica.port for replica in self.replicas]

    @property
    def proxy_url(self) -> str:
        assert self.proxy is not None, "this cluster was started without haproxy"
        return f"http://127.0.0.1:{self.proxy.port}/mcp"

    def logs(self) -> str:
        """Every process's log tail, for a failing test's report."""
        processes = [self.redis.process, *self.replicas, *([self.proxy] if self.proxy else [])]
        return "\n".join(f"--- {p.name}:\n{p.log_tail(1500)}" for p in processes)


@contextmanager
def cluster(
    workdir: Path, *, names: Sequence[str] = REPLICA_NAMES, with_proxy: bool = False
) -> Generator[Cluster, None, None]:
    """A redis-server, one replica per name on it, and haproxy in front if asked."""
    with ExitStack() as stack:
        redis = stack.enter_context(redis_server(workdir))
        options = ReplicaOptions(redis_url=redis.url)
        running = stack.enter_context(replicas(names, options, workdir))
        proxy = (
            stack.enter_context(haproxy([p.port for p in running], workdir)) if with_proxy else None
        )
        yield Cluster(redis, running, options, proxy)
