"""``answerback call/list/logout`` against a protected server, as subprocesses.

The server is an answerback MCP server behind ``ResourceServer``, the authorization
server the test one (tests/servers/oauth_server.py). Headless runs authorize with a
token (``--token``, ``$ANSWERBACK_TOKEN``) or client credentials and never wait for a
browser; the interactive login runs with ``--login browser`` and a browser stand-in
named in ``$BROWSER`` (Python's ``webbrowser`` runs it with the URL), which logs in as
``$LOGIN_USER`` and follows the redirect back to the command's loopback listener.
"""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
import sys
import uuid
from collections.abc import Generator
from pathlib import Path
from typing import Any

import anyio
import pytest
from login_support import browser_program, serving_protected
from oauth_fixtures import AuthServer, running_auth_server
from test_terminal_e2e import PROMPT, TMUX, Terminal

from answerback.server import JWTVerifier, TokenVerifier

REPO = Path(__file__).resolve().parents[1]
PATIENCE_SECONDS = 60


@pytest.fixture(scope="module")
def auth_server() -> Generator[AuthServer]:
    with running_auth_server() as server:  # no default user: a login must name one
        yield server


@pytest.fixture(scope="module")
def server_url(auth_server: AuthServer) -> Generator[str]:
    def verifier(url: str) -> TokenVerifier:
        return JWTVerifier(jwks_url=auth_server.jwks_url, issuer=auth_server.issuer, audience=url)

    with serving_protected(auth_server.issuer, verifier) as url:
        yield url


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """The user's config directory for one test (where the token file goes)."""
    return tmp_path / "config"


def answerback(
    *args: str, home: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the command as a script would: no terminal, this test's config directory."""
    clean = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("ANSWERBACK_") and name not in ("BROWSER", "XDG_CONFIG_HOME")
    }
    return subprocess.run(
        [sys.executable, "-m", "answerback", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=REPO,
        env={**clean, "XDG_CONFIG_HOME": str(home), **(env or {})},
        timeout=PATIENCE_SECONDS,
        check=False,
    )


def token_for(auth_server: AuthServer, url: str, user: str) -> str:
    async def get() -> str:
        client = await auth_server.register()
        return (await auth_server.authorize(client, user=user, resource=url))["access_token"]

    return anyio.run(get)


# -- headless --------------------------------------------------------------------------


def test_a_token_given_on_the_command_line_or_in_the_environment(
    auth_server: AuthServer, server_url: str, home: Path
) -> None:
    token = token_for(auth_server, server_url, "carol")
    done = answerback("call", server_url, "whoami", "--token", token, home=home)
    assert (done.returncode, done.stdout) == (0, "carol\n"), done.stderr
    done = answerback("call", server_url, "whoami", home=home, env={"ANSWERBACK_TOKEN": token})
    assert (done.returncode, done.stdout) == (0, "carol\n"), done.stderr
    assert not (home / "answerback" / "tokens.json").exists()


def test_a_token_the_server_refuses_exits_5_saying_why(
    auth_server: AuthServer, server_url: str, home: Path
) -> None:
    elsewhere = anyio.run(lambda: auth_server.mint(aud="http://127.0.0.1:1/mcp", scope="mcp"))
    done = answerback("call", server_url, "whoami", "--token", elsewhere, home=home)
    assert done.returncode == 5
    assert done.stdout == ""
    assert "cannot log in to 127.0.0.1" in done.stderr
    assert "not meant for this resource" in done.stderr


def test_a_refused_token_says_what_the_command_can_change(
    auth_server: AuthServer, server_url: str, home: Path
) -> None:
    """The server's 401 to ``--token`` is worded for a user of the command: the library's
    advice (``auth=``) is for programs."""
    elsewhere = anyio.run(lambda: auth_server.mint(aud="http://127.0.0.1:1/mcp", scope="mcp"))
    done = answerback("call", server_url, "whoami", home=home, env={"ANSWERBACK_TOKEN": elsewhere})
    assert done.returncode == 5, done.stderr
    given = "it refused the token given by --token or $ANSWERBACK_TOKEN with HTTP 401 ("
    assert given in done.stderr
    assert "give a token it accepts, or none, for the command to log in" in done.stderr
    assert "auth=" not in done.stderr
    assert "answerback.client.OAuth" not in done.stderr


def test_client_credentials(auth_server: AuthServer, server_url: str, home: Path) -> None:
    robot = anyio.run(auth_server.confidential_client)
    done = answerback(
        "call",
        server_url,
        "whoami",
        "--client-id",
        robot["client_id"],
        home=home,
        env={"ANSWERBACK_CLIENT_SECRET": robot["client_secret"]},
    )
    assert (done.returncode, done.stdout) == (0, f"{robot['client_id']}\n"), done.stderr
    wrong = answerback(
        "list",
        server_url,
        "--client-id",
        robot["client_id"],
        "--client-secret",
        "not-the-secret",
        home=home,
    )
    assert wrong.returncode == 5
    assert "invalid_client" in wrong.stderr


def test_without_a_terminal_nothing_waits_for_a_browser(server_url: str, home: Path) -> None:
    done = answerback("list", server_url, home=home, env={"BROWSER": "/bin/false"})
    assert done.returncode == 5
    assert "requires a login, and this run does not wait for one" in done.stderr
    assert "--token" in done.stderr


def test_contradictory_options_are_a_usage_error(server_url: str, home: Path) -> None:
    done = answerback("list", server_url, "--client-secret", "s", home=home)
    assert done.returncode == 2
    assert "--client-secret needs --client-id" in done.stderr


# -- the interactive login -------------------------------------------------------------


def test_log_in_once_then_scripts_reuse_the_tokens_until_logout(
    server_url: str, home: Path, tmp_path: Path
) -> None:
    browser = {"BROWSER": str(browser_program(tmp_path)), "LOGIN_USER": "dave"}
    first = answerback("call", server_url, "whoami", "--login", "browser", home=home, env=browser)
    assert (first.returncode, first.stdout) == (0, "dave\n"), first.stderr
    assert "Opening the login page in your browser: http://127.0.0.1:" in first.stderr

    tokens = home / "answerback" / "tokens.json"
    assert stat.S_IMODE(tokens.stat().st_mode) == 0o600
    assert stat.S_IMODE(tokens.parent.stat().st_mode) == 0o700
    kept: dict[str, Any] = json.loads(tokens.read_text())
    assert any(server_url in key for key in kept)

    # A script (no terminal, no browser) uses what the login left.
    again = answerback("call", server_url, "whoami", home=home)
    assert (again.returncode, again.stdout) == (0, "dave\n"), again.stderr
    assert "Opening the login page" not in again.stderr

    out = answerback("logout", server_url, home=home)
    assert out.returncode == 0
    assert "Logged out of 127.0.0.1" in out.stderr
    after = answerback("call", server_url, "whoami", "--login", "never", home=home)
    assert after.returncode == 5
    assert "--login never was given" in after.stderr


def test_a_declined_login_exits_5(server_url: str, home: Path, tmp_path: Path) -> None:
    browser = {"BROWSER": str(browser_program(tmp_path)), "LOGIN_USER": "erin", "LOGIN_DENY": "1"}
    done = answerback("list", server_url, "--login", "browser", home=home, env=browser)
    assert done.returncode == 5
    assert "access_denied" in done.stderr
    assert done.stderr.rstrip().endswith("declined or cancelled in the browser.")


def test_a_token_file_others_can_read_is_refused(
    server_url: str, home: Path, tmp_path: Path
) -> None:
    tokens = home / "answerback" / "tokens.json"
    tokens.parent.mkdir(parents=True, mode=0o700)
    tokens.write_text("{}")
    tokens.chmod(0o644)
    done = answerback("list", server_url, home=home)
    assert done.returncode == 5
    assert f"chmod 600 {tokens}" in done.stderr


def test_logout_needs_an_http_server(home: Path) -> None:
    done = answerback("logout", f"{sys.executable} examples/library_server.py", home=home)
    assert done.returncode == 2
    assert "only HTTP servers log in (and out)" in done.stderr


def test_logout_with_nothing_stored_says_so_and_makes_nothing(home: Path) -> None:
    """It said "Logged out", and made the config directory and token file to say it."""
    done = answerback("logout", "http://127.0.0.1:1/mcp", home=home)
    assert (done.returncode, done.stderr) == (
        0,
        "No tokens are kept for 127.0.0.1:1 (http://127.0.0.1:1/mcp): nothing to log out of.\n",
    )
    assert not home.exists()
    tokens = home / "answerback" / "tokens.json"
    tokens.parent.mkdir(parents=True, mode=0o700)
    tokens.write_text('{"tokens http://elsewhere/mcp": {"access_token": "x"}}')
    tokens.chmod(0o600)
    before = tokens.stat()
    done = answerback("logout", "http://127.0.0.1:1/mcp", home=home)
    assert done.returncode == 0
    assert "nothing to log out of" in done.stderr
    assert (tokens.stat().st_ino, tokens.stat().st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert sorted(path.name for path in tokens.parent.iterdir()) == ["tokens.json"]


def test_logout_of_a_url_with_a_bad_port_is_a_usage_error(home: Path) -> None:
    """It was a traceback."""
    done = answerback("logout", "http://127.0.0.1:http/mcp", home=home)
    assert done.returncode == 2
    assert "Cannot connect to 'http://127.0.0.1:http/mcp': it is not a valid URL" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.skipif(TMUX is None, reason="tmux is missing: apt-get install tmux")
def test_connect_at_a_terminal_logs_in_by_itself(
    server_url: str, tmp_path: Path, home: Path
) -> None:
    """``answerback connect`` in a real terminal (tmux): no option needed, the login
    happens in the browser and the session goes on."""
    assert TMUX is not None
    person = tmp_path / "person"
    person.mkdir()
    terminal = Terminal(TMUX, f"answerback-auth-{uuid.uuid4().hex[:12]}", person)
    browser = f"BROWSER={shlex.quote(str(browser_program(tmp_path)))} LOGIN_USER=gina"
    command = f"{shlex.quote(sys.executable)} -m answerback connect {server_url}"
    try:
        terminal.start(f"env {browser} {command}")
        terminal.wait_for(r"Opening the login page in your browser: http://127\.0\.0\.1:")
        terminal.wait_for(PROMPT)
        terminal.type("call whoami")
        terminal.wait_for(r"^gina$")
        terminal.type("quit")
        terminal.wait_for(r"\[exited 0\]")
    finally:
        subprocess.run(
            [TMUX, "-L", terminal.socket, "kill-server"],
            capture_output=True,
            timeout=30,
            check=False,
        )
    tokens = person / ".config" / "answerback" / "tokens.json"
    assert stat.S_IMODE(tokens.stat().st_mode) == 0o600


def test_one_token_is_never_sent_to_two_servers(server_url: str, home: Path) -> None:
    done = answerback("connect", server_url, "http://127.0.0.1:1/mcp", "--token", "t", home=home)
    assert done.returncode == 2
    assert "--token is sent to one server" in done.stderr
