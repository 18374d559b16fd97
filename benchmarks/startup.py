"""Start-up: how long importing each side's client and server entry points takes.

Every repetition is a fresh interpreter that times only its own import statement, so
interpreter start-up (the same for both) is left out.
"""

from __future__ import annotations

import subprocess
import sys

from benchmarks.clients import Impl
from benchmarks.procs import ROOT

ENTRY_POINTS: dict[str, dict[Impl, str]] = {
    "client": {
        "answerback": "from answerback import Client",
        "official": "from mcp import Client",
    },
    "server": {
        "answerback": "from answerback.server import MCPServer",
        "official": "from mcp.server import MCPServer",
    },
}

_PROGRAM = """\
import time
began = time.perf_counter()
{statement}
print(time.perf_counter() - began)
"""


def import_seconds(statement: str) -> float:
    """Seconds a fresh interpreter spends on ``statement`` (an import)."""
    completed = subprocess.run(
        [sys.executable, "-c", _PROGRAM.format(statement=statement)],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    )
    return float(completed.stdout.strip().splitlines()[-1])


def warm_bytecode() -> None:
    """Import everything once so no timed repetition pays for writing ``.pyc`` files."""
    for statements in ENTRY_POINTS.values():
        for statement in statements.values():
            import_seconds(statement)
