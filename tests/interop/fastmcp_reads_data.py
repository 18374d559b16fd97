"""FastMCP's client (``fastmcp`` on PyPI) reading the results of answerback's tools.

It calls every tool of ``tests/interop/answerback_wrapped_results.py`` (one stdio
process per protocol generation, started with the Python running this script) and
prints one JSON object: by mode, then by tool, the structured content and FastMCP's
``CallToolResult.data`` (its type's name and its value as JSON).

Any failure prints one line to stderr and exits 1.

Usage:
    python fastmcp_reads_data.py
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, cast

import anyio
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

SERVER = Path(__file__).with_name("answerback_wrapped_results.py")
TOOLS = ("count", "greeting", "names", "nothing_found", "seats", "seat")
LIMIT_SECONDS = 20.0


def as_json(value: Any) -> Any:
    """``value`` as JSON: FastMCP builds objects (dataclasses) for an object schema."""
    if isinstance(value, list):
        return [as_json(item) for item in cast(list[Any], value)]
    fields: object = getattr(value, "__dict__", None)
    if isinstance(fields, dict):
        return {key: as_json(item) for key, item in cast(dict[str, Any], fields).items()}
    return value


async def reading(mode: str) -> dict[str, Any]:
    # The whole environment, so the server imports the answerback under test.
    transport = StdioTransport(
        sys.executable, [str(SERVER)], env=dict(os.environ), keep_alive=False
    )
    read: dict[str, Any] = {}
    async with Client(transport, mode=mode) as client:
        for tool in TOOLS:
            result = await client.call_tool(tool, {})
            read[tool] = {
                "structured": result.structured_content,
                "data": [type(result.data).__name__, as_json(result.data)],
            }
    return read


async def run() -> dict[str, Any]:
    with anyio.fail_after(LIMIT_SECONDS):
        return {mode: await reading(mode) for mode in ("legacy", "2026-07-28")}


def main() -> int:
    try:
        seen = anyio.run(run)
    except (Exception, BaseExceptionGroup) as exc:
        print(f"fastmcp_reads_data: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(seen, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
