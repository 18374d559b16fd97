"""The link card in a real terminal (tmux): a link of pages once filled every row
between the card's top and its keys, so the site, the verdict and its reasons were off
screen while ``o`` still opened the link. The card now shows the link's first
characters, says how many more there are, and Ctrl-R shows it whole."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import pytest
from test_terminal_e2e import TMUX, Terminal, connect, terminal

from answerback.interact.terminal._url_card import LINK_CHARACTERS_SHOWN

__all__ = ["terminal"]  # the fixture, used by name

pytestmark = pytest.mark.skipif(
    TMUX is None,
    reason="tmux is missing and could not be installed (not root): apt-get install tmux",
)

LONG_LINK_SERVER = '''
import sys

from answerback.server import Context, MCPServer

mcp = MCPServer("long_links")


@mcp.tool()
async def sign_in(ctx: Context, size: int) -> str:
    """Ask the person to open a link with a ``size``-character state."""
    url = "https://example.com:8443/login?state=" + "A" * size + "THE-END"
    answer = await ctx.elicit_url("Sign in", url, "sign-in-1")
    return f"sign_in: {answer.action}"


mcp.run()
'''


@pytest.mark.parametrize("size", [4_000, 30_000])
def test_a_long_link_leaves_the_site_and_verdict_on_screen(
    terminal: Terminal, tmp_path: Path, size: int
) -> None:
    server = tmp_path / "long_links.py"
    server.write_text(LONG_LINK_SERVER, encoding="utf-8")
    connect(terminal, f"{shlex.quote(sys.executable)} {shlex.quote(str(server))}")
    terminal.type(f"call sign_in size={size}")
    screen = terminal.wait_for(r"o open in browser")
    assert "Site: example.com" in screen, screen
    assert "WARNING" in screen, screen
    assert "The link names port 8443" in screen, screen
    hidden = len("https://example.com:8443/login?state=THE-END") + size - LINK_CHARACTERS_SHOWN
    assert f"… {hidden:,} more characters: Ctrl-R shows the link whole" in screen, screen
    assert "THE-END" not in screen
    terminal.keys("C-r")
    terminal.wait_for(r"Esc/q back")
    terminal.keys("Down", "End")  # the link's line, then its end
    screen = terminal.wait_for(r"AAATHE-END")
    terminal.keys("q")
    terminal.wait_for(r"o open in browser")
    terminal.keys("d")
    terminal.wait_for(r"sign_in: decline")
