"""A program that echoes its input (``cat``) given as the server: the command says it
is not an MCP server (exit 4, a malformed reply), instead of reporting the echo of its
own refusal as the server refusing ("cat refused: Method not found: 'initialize'")."""

from __future__ import annotations

import shutil

import pytest
from test_cli import answerback

from answerback.cli._echo import EchoWatch
from answerback.transports import StdioServer
from answerback.types import METHOD_NOT_FOUND

needs_cat = pytest.mark.skipif(shutil.which("cat") is None, reason="no cat program here")


@needs_cat
@pytest.mark.parametrize("command", [["list", "cat"], ["call", "cat", "greet", "name=Ada"]])
def test_cat_is_named_as_no_mcp_server(command: list[str]) -> None:
    done = answerback(*command)
    assert done.returncode == 4, done.stderr
    assert done.stderr.startswith(
        "answerback: cat is not an MCP server: it sent the command's own messages back "
        "(its 'initialize' request) instead of answering them"
    ), done.stderr
    assert "refused" not in done.stderr
    assert done.stdout == ""


def _refusal(request_id: int, method: str) -> dict[str, object]:
    error = {"code": METHOD_NOT_FOUND, "message": f"Method not found: {method!r}"}
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def test_a_server_request_that_reuses_an_id_of_ours_is_no_echo() -> None:
    """Ids are each side's own: a server may ask ``sampling/…`` under the id of the
    client's ``initialize``; refusing that is not refusing our own request."""
    watch = EchoWatch(StdioServer("unused"))
    watch.saw({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
    watch.saw(_refusal(1, "tasks/list"))
    assert watch.echoed is None
    watch.saw(_refusal(1, "initialize"))
    assert watch.echoed == "initialize"
