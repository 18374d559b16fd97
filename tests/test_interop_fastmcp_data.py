"""FastMCP's client reads a wrapped result of answerback's as the value itself.

answerback sends what JSON does not always write as an object (an ``int``, a ``str``,
a list, an optional value) as ``{"result": value}``, and marks that schema with
``"x-fastmcp-wrap-result": true``: FastMCP's ``CallToolResult.data`` is then ``3``,
as it is against a FastMCP server, not an object holding ``result=3``. A model is sent
as itself, unmarked. FastMCP runs only in a subprocess
(``tests/interop/fastmcp_reads_data.py``), never imported here.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from typing import Any

import pytest
from http_support import INTEROP, PATIENCE_SECONDS, REPO

pytestmark = pytest.mark.interop

READER = INTEROP / "fastmcp_reads_data.py"


@pytest.fixture(scope="module")
def fastmcp_read() -> dict[str, Any]:
    if importlib.util.find_spec("fastmcp") is None:  # looked up, not imported
        pytest.fail("fastmcp is not installed: install the dev extra (pip install -e '.[dev]')")
    done = subprocess.run(
        [sys.executable, str(READER)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=PATIENCE_SECONDS,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    read: dict[str, Any] = json.loads(done.stdout)
    return read


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
@pytest.mark.parametrize(
    ("tool", "data"),
    [
        ("count", ["int", 3]),
        ("greeting", ["str", "hello"]),
        ("names", ["list", ["q-0", "q-1"]]),
        ("nothing_found", ["NoneType", None]),
        ("seats", ["list", [{"row": 12, "taken": True}]]),
    ],
)
def test_fastmcp_s_data_is_the_wrapped_value(
    fastmcp_read: dict[str, Any], mode: str, tool: str, data: list[Any]
) -> None:
    read = fastmcp_read[mode][tool]
    assert read["structured"] == {"result": data[1]}
    assert read["data"] == data


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
def test_fastmcp_s_data_of_a_model_is_that_model(fastmcp_read: dict[str, Any], mode: str) -> None:
    read = fastmcp_read[mode]["seat"]
    assert read["structured"] == {"row": 3, "taken": False}
    assert read["data"] == ["Seat", {"row": 3, "taken": False}]
