"""``--answers``' ``url`` matcher: it took any link whose text held the name, so an
answer meant for example.com accepted ``https://example.com.evil-login.net/pay`` and
``https://evil-login.net/?r=example.com``, and its line on stderr said nothing of the
verdict, high risk or not."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any, cast

import pytest

from answerback.cli._answers import AnswersError, AnswersResponder, load_answers
from answerback.client import ClientRequestContext
from answerback.types import ElicitRequestURLParams, ElicitResult
from answerback.urls import judge_url

REPO = Path(__file__).resolve().parents[1]
TEAROOM = f"{sys.executable} {REPO / 'tests' / 'servers' / 'terminal_server.py'}"

pytestmark = pytest.mark.anyio


def answers_file(tmp_path: Path, entries: list[dict[str, Any]]) -> Path:
    path = tmp_path / "answers.json"
    path.write_text(json.dumps(entries), encoding="utf-8")
    return path


async def answer_link(path: Path, url: str) -> tuple[str, list[str]]:
    """The action the answers at ``path`` give the link ``url``, and the lines reported."""
    lines: list[str] = []
    responder = AnswersResponder(load_answers(path), "bank", path, lines.append)
    context = ClientRequestContext(
        session=cast(Any, None), request_id=1, meta=None, url_verdict=judge_url(url)
    )
    params = ElicitRequestURLParams(message="Pay", url=url, elicitation_id="pay-1")
    result = await responder.elicit(context, params)
    assert isinstance(result, ElicitResult)
    return result.action, lines


@pytest.mark.parametrize(
    "url",
    [
        "https://example.com.evil-login.net/pay",
        "https://evil-login.net/?r=example.com",
        "https://notexample.com/",
        "https://example.community/",
    ],
)
async def test_a_url_answer_does_not_match_a_link_that_only_mentions_its_host(
    tmp_path: Path, url: str
) -> None:
    path = answers_file(tmp_path, [{"url": "example.com", "action": "accept"}])
    action, lines = await answer_link(path, url)
    assert action == "cancel"
    assert "no unused answer" in lines[0]


@pytest.mark.parametrize(
    ("written", "url"),
    [
        ("example.com", "https://example.com/pay"),
        ("example.com", "https://login.example.com/pay"),
        ("Example.COM.", "https://example.com./pay"),
        ("https://example.com/start", "https://pay.example.com/other"),
        ("münchen.de", "https://xn--mnchen-3ya.de/"),
    ],
)
async def test_a_url_answer_matches_its_host_and_subdomains(
    tmp_path: Path, written: str, url: str
) -> None:
    path = answers_file(tmp_path, [{"url": written, "action": "accept"}])
    action, lines = await answer_link(path, url)
    assert action == "accept", lines
    assert lines[0].endswith("(judged ok)"), lines


async def test_the_line_for_an_answered_link_names_its_verdict(tmp_path: Path) -> None:
    path = answers_file(tmp_path, [{"url": "evil-login.net", "action": "accept"}])
    action, lines = await answer_link(path, "https://accounts.google.com.evil-login.net/")
    assert action == "accept"
    assert "(judged high risk: The site is evil-login.net" in lines[0], lines


@pytest.mark.parametrize("written", ["", "https://", "exa mple.com", "a/b?c"])
def test_a_url_answer_that_names_no_host_is_refused_saying_what_to_give(
    tmp_path: Path, written: str
) -> None:
    path = answers_file(tmp_path, [{"url": written}])
    with pytest.raises(AnswersError, match=re.escape('such as "example.com"')):
        load_answers(path)


def test_the_command_reports_the_verdict_of_a_link_it_accepts(tmp_path: Path) -> None:
    path = answers_file(tmp_path, [{"url": "evil-login.net", "action": "decline"}])
    link = "url=https://accounts.google.com.evil-login.net/pay"
    command = ["call", TEAROOM, "visit", link, "--answers", str(path)]
    done = subprocess.run(
        [sys.executable, "-m", "answerback", *command],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, "visit: decline\n"), done.stderr
    assert "from server terminal_server: from" in done.stderr
    assert "(judged high risk: The site is evil-login.net" in done.stderr, done.stderr
