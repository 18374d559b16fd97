"""What the tests that need a real redis-server share (a pytest plugin: tests/conftest.py
loads it, so every test module can ask for its fixtures by name).

- ``redis``: a private redis-server for one test, saving nothing; where redis-server (or
  the redis package) is missing, the test is skipped, saying what to install.
- ``asyncio_only``: a mark that runs a module's async tests on asyncio alone (with the
  loop that reports unhandled failures): redis-py's asyncio client, which these tests
  and ``RedisState`` use, runs on nothing else.
- ``redis_on``: a redis-server on a given port, to bring a stopped one back where its
  clients look for it.
- ``heard``: what a logger says while a block runs, and a wait for a line (the replicas'
  and the client's lines on Redis going and coming back).
"""

from __future__ import annotations

import logging
from collections.abc import Generator, Iterator
from contextlib import contextmanager
from pathlib import Path

import anyio
import pytest
from support import PATIENCE_SECONDS, ReportingEventLoop

from scale_out.cluster import (
    Process,
    Redis,
    missing_for_redis,
    redis_server,
    redis_server_path,
    started,
)

_ON_ASYNCIO = pytest.param(("asyncio", {"loop_factory": ReportingEventLoop}), id="asyncio")

asyncio_only = pytest.mark.asyncio_only
"""Put it in a module's ``pytestmark``: its async tests (and module-scoped async fixtures)
run on asyncio only, in place of conftest's asyncio and trio; its other tests as they are."""


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "asyncio_only: run the async tests on asyncio alone (scale_out.fixtures)"
    )


@pytest.hookimpl(tryfirst=True)
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Give an ``asyncio_only`` test that runs on a backend the one backend, before
    pytest parametrizes it (a direct parametrization outranks conftest's fixture)."""
    if "anyio_backend" in metafunc.fixturenames and metafunc.definition.get_closest_marker(
        "asyncio_only"
    ):
        only = pytest.mark.parametrize("anyio_backend", [_ON_ASYNCIO], scope="module")
        metafunc.definition.add_marker(only)


@pytest.fixture
def redis(tmp_path: Path) -> Iterator[Redis]:
    """A redis-server of the test's own, on a free loopback port."""
    missing = missing_for_redis()
    if missing is not None:
        pytest.skip(missing)
    with redis_server(tmp_path) as running:
        yield running


@contextmanager
def redis_on(port: int, workdir: Path) -> Generator[Process]:
    """A redis-server on ``port`` (the one a stopped Redis had, where its clients look
    for it), saving nothing, once it listens."""
    path = redis_server_path()
    assert path is not None, "redis-server is not installed: run `make services`"
    argv = [path, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", str(workdir)]
    with started("redis-server", argv, port, workdir / f"redis-again-{port}.log") as process:
        process.wait_listening()
        yield process


class Heard(logging.Handler):
    """The messages ``answerback.http`` logs, and a wait for one containing a text."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []
        self._waiting: list[tuple[str, anyio.Event]] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        self.messages.append(message)
        for text, event in self._waiting:
            if text in message:
                event.set()

    def containing(self, text: str) -> list[str]:
        return [message for message in self.messages if text in message]

    async def wait_for(self, text: str) -> None:
        event = anyio.Event()
        self._waiting.append((text, event))
        if not self.containing(text):
            with anyio.fail_after(PATIENCE_SECONDS):
                await event.wait()


@contextmanager
def heard(name: str = "answerback.http") -> Generator[Heard]:
    """What the logger ``name`` logs (at every level) while the block runs."""
    logger = logging.getLogger(name)
    handler, level = Heard(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
