"""Shared fixtures: every async test runs on asyncio and on trio, through anyio's pytest
plugin, and no failure may go unreported.

A failure nobody hears about is a bug even when the test's assertions pass: an asyncio
task whose exception was never retrieved, an exception in a loop callback, an exception
raised where Python can only print it (``__del__``, a thread). Warnings are errors
(``filterwarnings`` in pyproject.toml) and pytest turns unraisable and thread exceptions
into warnings; what reaches an asyncio loop's exception handler is recorded by
``support.ReportingEventLoop`` and fails the test that is running when it is found (and,
for anything found only by the final garbage collection, the whole run). Trio needs no
such net: a trio task's exception always propagates to its nursery.
"""

from __future__ import annotations

import functools
import gc
import signal
from collections.abc import Generator, Iterator
from inspect import iscoroutinefunction
from typing import Any

import anyio
import pytest
from support import ReportingEventLoop, take_unreported_failures

pytest_plugins = ["scale_out.fixtures"]
"""The tests that need a real redis-server share its fixtures (``redis``, ``asyncio_only``)."""

if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    # Started in the background by a script (`make test &`, nohup), the run ignores
    # SIGINT, and so would every server it starts: the Ctrl-C tests could not stop them.
    # A handler is not inherited the way "ignore" is, so the children get the default.
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(
    scope="module",
    params=[
        pytest.param(("asyncio", {"loop_factory": ReportingEventLoop}), id="asyncio"),
        pytest.param(("trio", dict[str, Any]()), id="trio"),
    ],
)
def anyio_backend(request: pytest.FixtureRequest) -> tuple[str, dict[str, Any]]:
    """The backend (and its options) each async test runs on: both, one after the other."""
    return request.param


@pytest.fixture(autouse=True)
def no_unreported_failures() -> Iterator[None]:
    """Fail the test if an asyncio loop's exception handler has been called (by this
    test, or by an earlier one whose failed task was only collected now)."""
    yield
    if found := take_unreported_failures():
        pytest.fail("asyncio reported failures nobody handled:\n" + "\n".join(found))


_FOUND_BY_WORKERS: list[str] = []


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Collect what is left, so a failure held by a reference cycle still shows. A
    pytest-xdist worker hands what it found to the controller (``pytest_testnodedown``),
    which reports it: a worker's own exit status does not fail the run."""
    gc.collect()
    found = take_unreported_failures()
    workeroutput: dict[str, Any] | None = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["unreported_failures"] = found
        return
    found += _FOUND_BY_WORKERS
    if found:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_sep("=", "asyncio reported failures nobody handled", red=True)
            for line in found:
                reporter.write_line(line)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_testnodedown(node: Any, error: object) -> None:
    """Keep what a pytest-xdist worker found after its last test (its final collection)."""
    _FOUND_BY_WORKERS.extend(getattr(node, "workeroutput", {}).get("unreported_failures", ()))


_TRIO_TIME_LIMIT = pytest.StashKey[float]()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Give every trio test a time limit inside its event loop (``pytest_pyfunc_call``).

    pytest-timeout's alarm signal cannot stop a trio test: anyio runs trio as a guest
    of a loop blocked on a queue in the main thread, and the alarm's exception abandons
    the guest run instead of failing the test, so the run hangs. What pytest-timeout
    can still do is end the whole run, stacks dumped, from a thread: that stays as the
    last resort for a test blocked where no cancel scope reaches (a thread).
    """
    for item in items:
        callspec = getattr(item, "callspec", None)
        backend = callspec.params.get("anyio_backend") if callspec is not None else None
        if isinstance(backend, tuple) and backend[0] == "trio":
            marker = item.get_closest_marker("timeout")
            limit = float(marker.args[0] if marker else item.config.getini("timeout"))
            item.stash[_TRIO_TIME_LIMIT] = limit
            item.add_marker(pytest.mark.timeout(limit + 30, method="thread"), append=False)


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> Generator[None, object, object]:
    """Run a trio test inside a cancel scope with its time limit, so a hang fails the
    test with a traceback where it waited."""
    limit = pyfuncitem.stash.get(_TRIO_TIME_LIMIT, None)
    original = pyfuncitem.obj
    if limit is None or not iscoroutinefunction(original):
        return (yield)

    @functools.wraps(original)
    async def within_time_limit(**kwargs: Any) -> object:
        with anyio.fail_after(limit):
            return await original(**kwargs)

    pyfuncitem.obj = within_time_limit
    try:
        return (yield)
    finally:
        pyfuncitem.obj = original
