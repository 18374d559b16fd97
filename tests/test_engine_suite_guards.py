"""The suite's own nets (conftest.py, the pytest settings in pyproject.toml) catch what
they are there for, shown on a small suite run in a subprocess with the same conftest:

- an asyncio task that fails with nobody awaiting it (asyncio only logs "Task exception
  was never retrieved", so the test would pass),
- an exception where Python can only print it (``__del__``),
- a trio test that hangs (pytest-timeout's alarm cannot stop one).

And the HTTP tests' ``serve`` cleans up after a failing test as after a passing one.
"""

from __future__ import annotations

import gc
import re
import tomllib
import warnings

import pytest
from http_support import serve
from http_support.apps import http_app
from support import REPO, TESTS

SUITE = '''
import asyncio
import gc

import anyio
import pytest

pytestmark = pytest.mark.anyio


class Unwound(BaseException):
    """Not an Exception: asyncio's test runner does not re-raise it, only logs it."""


async def test_a_task_fails_unheard(anyio_backend_name):
    if anyio_backend_name != "asyncio":
        pytest.skip("asyncio tasks only")

    async def fail():
        raise Unwound("nobody heard")

    task = asyncio.get_running_loop().create_task(fail())
    await anyio.wait_all_tasks_blocked()
    assert task.done()
    del task
    gc.collect()


def test_del_raises():
    class Broken:
        def __del__(self):
            raise RuntimeError("raised in __del__")

    Broken()
    gc.collect()


async def test_hangs(anyio_backend_name):
    if anyio_backend_name != "trio":
        pytest.skip("pytest-timeout stops asyncio tests itself")
    await anyio.sleep_forever()
'''


def suite_conftest() -> str:
    """The suite's conftest, its nets and fixtures, without the plugins it loads for other
    tests (they import the suite's own packages, which the small suite does not have)."""
    text = (TESTS / "conftest.py").read_text()
    return re.sub(r"(?m)^pytest_plugins = .*\n(\"\"\".*\"\"\"\n)?", "", text)


def project_ini(timeout: int) -> str:
    """The project's pytest settings, with a short time limit."""
    settings = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["pytest"]
    ini = settings["ini_options"]
    filters = "\n".join(f"    {line}" for line in ini["filterwarnings"])
    return f"[pytest]\ntimeout = {timeout}\nfilterwarnings =\n{filters}\n"


def test_the_nets_fail_what_would_otherwise_pass(pytester: pytest.Pytester) -> None:
    pytester.makeini(project_ini(timeout=3))
    pytester.makeconftest(suite_conftest())
    pytester.makepyfile(support=(TESTS / "support.py").read_text(), test_suite=SUITE)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rfEs")
    outcomes = result.parseoutcomes()
    report = result.stdout.str()
    # The unheard task fails at teardown (the test itself passed), the __del__ test in
    # its call, the hanging test by its time limit; the rest are skips.
    assert "asyncio reported failures nobody handled" in report
    assert "Task exception was never retrieved" in report
    assert "raised in __del__" in report
    assert "TimeoutError" in report
    assert outcomes.get("errors") == 1, report
    assert outcomes.get("failed") == 2, report  # the __del__ test, the hang on trio


@pytest.mark.anyio
async def test_a_test_failing_inside_serve_still_stops_the_server() -> None:
    """uvicorn is stopped, not cancelled, so it closes its listening socket (a leaked
    one warns when collected, failing whichever test is running then)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with pytest.raises(ExceptionGroup) as failure:
            async with serve(http_app()):
                raise RuntimeError("the test failed")
        gc.collect()
    assert failure.group_contains(RuntimeError, match="the test failed")
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []


FOUND_AT_THE_END = '''
import asyncio
import gc

import anyio
import pytest

pytestmark = pytest.mark.anyio


class Unwound(BaseException):
    """Not an Exception: asyncio's test runner does not re-raise it, only logs it."""


async def test_a_failed_task_left_in_a_cycle(anyio_backend_name):
    if anyio_backend_name != "asyncio":
        pytest.skip("asyncio tasks only")

    async def fail():
        raise Unwound("found only by the last collection")

    gc.disable()  # the run's last collection, not an earlier one, finds it
    task = asyncio.get_running_loop().create_task(fail())
    await anyio.wait_all_tasks_blocked()
    cycle: list[object] = [task]
    cycle.append(cycle)
'''


def test_a_failure_found_after_the_last_test_fails_a_run_on_several_workers(
    pytester: pytest.Pytester,
) -> None:
    """A pytest-xdist worker's own exit status does not fail the run: what its final
    collection finds must reach the controller, or ``make test`` would pass over it."""
    pytester.makeini(project_ini(timeout=30))
    pytester.makeconftest(suite_conftest())
    pytester.makepyfile(support=(TESTS / "support.py").read_text(), test_suite=FOUND_AT_THE_END)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "2")
    report = result.stdout.str()
    assert result.parseoutcomes().get("passed") == 1, report  # the test itself passed
    assert "asyncio reported failures nobody handled" in report
    assert "found only by the last collection" in report
    assert result.ret == pytest.ExitCode.TESTS_FAILED
