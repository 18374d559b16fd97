"""Plain lines and ``--json`` after review 3 of stop 55: a link no browser opened could
only be cancelled in line mode (the full screen's card asks whether the person opened
it by hand), ``--json`` in a locale that cannot hold the text wrote Python escapes
(``\\U0001f375``), which are not JSON, and a multi-select given a tuple said "not a
list" while showing one.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from test_cli import answerback, script_server
from test_terminal_screens import BOTH, call, lines, recorder

from answerback.forms import AnswerError, MultiSelectField, Option
from answerback.interact.terminal import LinePresenter

SAFE = "https://example.com/"


@pytest.mark.anyio
@pytest.mark.parametrize("anyio_backend", BOTH)
@pytest.mark.parametrize(("typed", "action"), [("a", "accept"), ("d", "decline"), ("c", "cancel")])
async def test_line_mode_asks_whether_a_link_no_browser_opened_was_opened_by_hand(
    typed: str, action: str
) -> None:
    out = io.StringIO()
    opened: list[str] = []
    presenter = LinePresenter(input=lines("o", typed), output=out, opener=recorder(opened, False))
    assert await call(presenter, "sign_in", {"url": SAFE}) == action
    assert opened == [SAFE]
    said = out.getvalue()
    assert f"No browser could be opened; open {SAFE} yourself." in said
    assert "[a] I opened it myself, [d]ecline, [c]ancel" in said


EMOJI_SERVER = """
from answerback.server import MCPServer

mcp = MCPServer("cafe")


@mcp.tool(description="Pours tea \\N{TEACUP WITHOUT HANDLE}.")
def pour() -> str:
    return "tea \\N{TEACUP WITHOUT HANDLE} caf\\N{LATIN SMALL LETTER E WITH ACUTE}"


if __name__ == "__main__":
    mcp.run()
"""


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_json_in_a_locale_that_cannot_hold_the_text_is_still_json(
    tmp_path: Path, encoding: str
) -> None:
    """Written as ``\\u`` escapes, which every JSON reader turns back into the text."""
    server = script_server(tmp_path, "cafe.py", EMOJI_SERVER)
    env = {"PYTHONIOENCODING": encoding}
    called = answerback("call", server, "pour", "--json", env=env)
    listed = answerback("list", server, "--json", env=env)
    for done in (called, listed):
        assert done.returncode == 0, done.stderr
    assert json.loads(called.stdout)["content"][0]["text"] == "tea \N{TEACUP WITHOUT HANDLE} café"
    [pour] = json.loads(listed.stdout)["tools"]
    assert pour["description"] == "Pours tea \N{TEACUP WITHOUT HANDLE}."


def test_a_multi_select_given_a_tuple_names_the_type() -> None:
    field = MultiSelectField(name="rooms", options=(Option("a"),))
    with pytest.raises(AnswerError) as raised:
        field.coerce(("a",))
    [error] = raised.value.errors
    assert error.message == "must be a list of choices, not a tuple"
