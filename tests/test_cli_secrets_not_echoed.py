"""A command line the command suggests repeats the options the person typed, except a
credential's value: ``--token`` and ``--client-secret`` (abbreviated or not, with ``=``
or not) become a reference to the environment variable each also reads. Echoed, the
secret reached stderr, and so CI logs.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest
from test_cli import answerback

from answerback.cli._interface import secrets_hidden

TOKEN = "tok-5ecret-value"
SECRET = "cl1ent-5ecret-value"


def unusable_entry_config(tmp_path: Path) -> Path:
    config = tmp_path / "servers.json"
    servers = {"old": {"type": "sse", "url": "http://127.0.0.1:1/sse"}, "tea": {"command": "x"}}
    config.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return config


@pytest.mark.parametrize(
    ("typed", "shown", "told"),
    [
        (
            ["--tok", TOKEN, "--mode", "legacy"],
            '--token "$ANSWERBACK_TOKEN" --mode legacy',
            "(first set ANSWERBACK_TOKEN to the value you gave --token: it is not repeated here)",
        ),
        (
            ["--client-id", "me", f"--client-secret={SECRET}", "--scope", "a b"],
            "--client-id me --client-secret \"$ANSWERBACK_CLIENT_SECRET\" --scope 'a b'",
            "(first set ANSWERBACK_CLIENT_SECRET to the value you gave --client-secret: it is "
            "not repeated here)",
        ),
    ],
)
def test_the_command_suggested_after_an_unusable_entry_names_no_credential(
    tmp_path: Path, typed: list[str], shown: str, told: str
) -> None:
    config = unusable_entry_config(tmp_path)
    done = answerback("connect", "--config", str(config), *typed)
    assert done.returncode == 2
    said = " ".join(done.stderr.split())
    assert TOKEN not in said
    assert SECRET not in said
    assert said.endswith(f"name them: answerback connect --config {config} {shown} tea {told}")


def test_the_suggested_line_reads_the_credential_from_the_environment(tmp_path: Path) -> None:
    """The line, run by a shell with the variable set, gives the option its value."""
    config = unusable_entry_config(tmp_path)
    done = answerback("connect", "--config", str(config), "--token", TOKEN)
    line = " ".join(done.stderr.split()).split("name them: ")[1].split(" (first set")[0]
    echoed = subprocess.run(
        ["sh", "-c", f"printf '%s\\n' {line.removeprefix('answerback ')}"],
        capture_output=True,
        text=True,
        env={**os.environ, "ANSWERBACK_TOKEN": TOKEN},
        check=True,
    )
    assert echoed.stdout.split("\n")[:-1] == [
        "connect",
        "--config",
        str(config),
        "--token",
        TOKEN,
        "tea",
    ]


def test_a_command_line_typed_without_quotes_is_suggested_without_the_token() -> None:
    done = answerback("call", "python", "server.py", "greet", f"--token={TOKEN}", "name=Ada")
    assert done.returncode == 2
    said = " ".join(done.stderr.split())
    assert TOKEN not in said
    assert said.endswith(
        "in quotes: answerback call 'python server.py' greet --token \"$ANSWERBACK_TOKEN\" "
        "name=Ada (first set ANSWERBACK_TOKEN to the value you gave --token: it is not "
        "repeated here)"
    )


def test_other_options_are_repeated_as_typed(tmp_path: Path) -> None:
    config = unusable_entry_config(tmp_path)
    done = answerback("connect", "--config", str(config), "--login", "never")
    said = " ".join(done.stderr.split())
    expected = shlex.join(["answerback", "connect", "--config", str(config), "--login", "never"])
    assert said.endswith(f"name them: {expected} tea")


@pytest.mark.parametrize(
    ("typed", "shown"),
    [
        (["--t", TOKEN], "--t '<not repeated>'"),  # --token or --timeout: argparse refuses it
        ([f"--client={SECRET}"], "--client '<not repeated>'"),  # --client-id or -secret
        (["--to", TOKEN], '--token "$ANSWERBACK_TOKEN"'),  # --token alone begins so
        (["--timeout", "5", "--client-id", "me"], "--timeout 5 --client-id me"),
    ],
)
def test_an_ambiguous_option_is_left_as_typed_and_its_value_not_repeated(
    typed: list[str], shown: str
) -> None:
    words, _ = secrets_hidden(typed)
    assert " ".join(words) == shown
