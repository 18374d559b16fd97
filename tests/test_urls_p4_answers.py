"""``--answers``' ``url`` matcher: it took any link whose text held the name, so an
answer meant for example.com accepted ``https://example.com.evil-login.net/pay`` and
``https://evil-login.net/?r=example.com``, and its line on stderr said nothing of the
verdict, high risk or not. Then, matching hosts, it took a public suffix (``github.io``:
everyone's site there), a wildcard and a single word that never match, refused
``example.com/``, let ``localhost:8080`` answer every port, and accepted a high-risk
link without the file saying it may."""

from __future__ import annotations

import json
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
    action, lines, _ = await answer_link_reporting(path, url)
    return action, lines


async def answer_link_reporting(path: Path, url: str) -> tuple[str, list[str], str | None]:
    """As ``answer_link``, with why the command would then fail (``unfit``), if it would."""
    lines: list[str] = []
    responder = AnswersResponder(load_answers(path), "bank", path, lines.append)
    context = ClientRequestContext(
        session=cast(Any, None), request_id=1, meta=None, url_verdict=judge_url(url)
    )
    params = ElicitRequestURLParams(message="Pay", url=url, elicitation_id="pay-1")
    result = await responder.elicit(context, params)
    assert isinstance(result, ElicitResult)
    return result.action, lines, responder.unfit


def refusal(tmp_path: Path, written: str) -> str:
    """The message loading an answer whose ``url`` is ``written`` fails with."""
    path = answers_file(tmp_path, [{"url": written}])
    with pytest.raises(AnswersError) as refused:
        load_answers(path)
    message = str(refused.value)
    assert message.startswith(f'The answer 1 in {path} has "url" {written!r}, which '), message
    return message


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
        ("example.com/", "https://example.com/pay"),
        ("example.com/start?x=1", "https://login.example.com/other"),
        ("alice.github.io", "https://alice.github.io/"),
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
    entry = {"url": "evil-login.net", "action": "accept", "risk": "high"}
    path = answers_file(tmp_path, [entry])
    action, lines = await answer_link(path, "https://accounts.google.com.evil-login.net/")
    assert action == "accept"
    assert "(judged high risk: The site is evil-login.net" in lines[0], lines


@pytest.mark.parametrize("entry", [{"url": "evil-login.net"}, {"message": "Pay"}])
async def test_a_high_risk_link_is_accepted_only_by_an_answer_that_says_it_may(
    tmp_path: Path, entry: dict[str, Any]
) -> None:
    """At the terminal a person confirms a high-risk link; here the file must say so,
    or the link is cancelled and the command fails saying how."""
    path = answers_file(tmp_path, [entry])
    action, lines, unfit = await answer_link_reporting(
        path, "https://accounts.google.com.evil-login.net/"
    )
    assert action == "cancel"
    assert len(lines) == 1
    assert lines[0].startswith(
        "cancelled the link 'https://accounts.google.com.evil-login.net/' from server bank: "
        f'answer 1 in {path} has no "risk": "high" to accept it (judged high risk: The site '
        "is evil-login.net"
    ), lines
    assert unfit is not None
    assert unfit.startswith(f"The answer 1 in {path} would accept the link "), unfit
    assert unfit.endswith(
        'add "risk": "high" to the answer if it may accept such a link, or decline it '
        '("action": "decline").'
    ), unfit


async def test_a_declining_answer_needs_no_word_about_risk(tmp_path: Path) -> None:
    path = answers_file(tmp_path, [{"url": "evil-login.net", "action": "decline"}])
    action, _, unfit = await answer_link_reporting(
        path, "https://accounts.google.com.evil-login.net/"
    )
    assert (action, unfit) == ("decline", None)


@pytest.mark.parametrize("risk", ["low", "HIGH", True])
def test_risk_takes_only_high(tmp_path: Path, risk: object) -> None:
    path = answers_file(tmp_path, [{"url": "example.com", "risk": risk}])
    with pytest.raises(AnswersError) as refused:
        load_answers(path)
    assert str(refused.value) == (
        f'The answer 1 in {path} has "risk" {risk!r}: the only value is "high", which lets '
        "it accept a link judged high risk; leave it out to have such links cancelled."
    )


@pytest.mark.parametrize("written", ["", "https://", "/oauth", "?q=example.com", "exa mple.com"])
def test_a_url_answer_that_names_no_host_is_refused_saying_what_to_give(
    tmp_path: Path, written: str
) -> None:
    assert refusal(tmp_path, written).endswith(
        'give the site whose links it answers, such as "example.com" (its subdomains match too).'
    )


@pytest.mark.parametrize(
    ("written", "suffix"),
    [
        ("github.io", "github.io"),
        ("herokuapp.com", "herokuapp.com"),
        ("co.uk", "co.uk"),
        ("com", "com"),
        ("https://github.io/pages", "github.io"),
    ],
)
def test_a_url_answer_naming_a_public_suffix_is_refused(
    tmp_path: Path, written: str, suffix: str
) -> None:
    """It answered links to anyone's site there; a link to the suffix itself is
    answered by matching something else."""
    assert refusal(tmp_path, written).endswith(
        f"which names a public suffix ({suffix}): anyone can make a site under it, so it "
        f'would answer links to all of them; give the site, such as "alice.{suffix}" (a '
        f'link to {suffix} itself is answered by an entry without "url", matching its '
        '"message" or "server").'
    )


async def test_a_link_to_a_public_suffix_itself_is_answered_by_its_message(
    tmp_path: Path,
) -> None:
    """What the refusal and docs/cli.md say to write for such a site (gov.uk)."""
    path = answers_file(tmp_path, [{"message": "Pay", "action": "decline"}])
    action, _ = await answer_link(path, "https://gov.uk/pay")
    assert action == "decline"


@pytest.mark.parametrize(
    ("written", "site"), [("*.example.com", "example.com"), ("*", "example.com")]
)
def test_a_url_answer_with_a_wildcard_is_refused_saying_subdomains_match(
    tmp_path: Path, written: str, site: str
) -> None:
    """It was taken as a host named with a star, which no link opens."""
    assert refusal(tmp_path, written).endswith(
        f'which has a wildcard: none is needed, write "{site}" (its subdomains match too), '
        'or leave "url" out to answer every link.'
    )


@pytest.mark.parametrize(
    ("written", "suffix"), [("*.github.io", "github.io"), ("*.co.uk", "co.uk")]
)
def test_a_wildcard_over_a_public_suffix_suggests_a_site_under_it(
    tmp_path: Path, written: str, suffix: str
) -> None:
    """It suggested the suffix itself, which the file then refused."""
    assert refusal(tmp_path, written).endswith(
        f"which has a wildcard over a public suffix ({suffix}): anyone can make a site "
        f'under it, so it would answer links to all of them; give the site, such as "alice.'
        f'{suffix}" (its subdomains match too), or leave "url" out to answer every link.'
    )


@pytest.mark.parametrize("written", [".example.com", "https://.example.com/"])
def test_a_url_answer_with_a_leading_dot_is_refused_saying_subdomains_match(
    tmp_path: Path, written: str
) -> None:
    """Written as a cookie domain, it matched no link, not even example.com's."""
    assert refusal(tmp_path, written).endswith(
        'which starts with a dot: none is needed, write "example.com" (its subdomains match too).'
    )


@pytest.mark.parametrize(
    ("written", "site"), [("example..com", "example.com"), ("a..b.example.com", "a.b.example.com")]
)
def test_a_url_answer_with_an_empty_label_is_refused_saying_so(
    tmp_path: Path, written: str, site: str
) -> None:
    """It was called a public suffix, and "alice.example..com" suggested."""
    assert refusal(tmp_path, written).endswith(
        f'which has an empty label (two dots in a row): write "{site}".'
    )


@pytest.mark.parametrize(
    ("written", "address"),
    [
        ("8080", "0.0.31.144"),
        ("1", "0.0.0.1"),
        ("2130706433", "127.0.0.1"),
        ("0x7f.1", "127.0.0.1"),
    ],
)
def test_a_bare_number_is_not_taken_for_an_ip_address(
    tmp_path: Path, written: str, address: str
) -> None:
    """``8080``, meant as the port, answered links to 0.0.31.144."""
    assert refusal(tmp_path, written).endswith(
        f"which is read as the IP address {address}, not a site: write an address as four "
        f'numbers ("127.0.0.1") or in a URL ("http://{address}/"), and a port after its '
        'host ("localhost:8080").'
    )


async def test_an_address_written_as_a_number_in_a_url_is_answered(tmp_path: Path) -> None:
    path = answers_file(tmp_path, [{"url": "http://2130706433/"}])
    action, lines = await answer_link(path, "http://127.0.0.1/")
    assert action == "accept", lines


@pytest.mark.parametrize(
    ("written", "port"),
    [("localhost:99999", "99999"), ("https://example.com:0/", "0"), ("[::1]:70000", "70000")],
)
def test_a_port_out_of_range_is_refused_saying_so(tmp_path: Path, written: str, port: str) -> None:
    assert refusal(tmp_path, written).endswith(
        f"which has the port {port}, which no link opens: a port is a number from 1 to 65535."
    )


@pytest.mark.parametrize("written", ["  example.com", "example.com\t", "\nhttps://example.com/ "])
async def test_blanks_around_a_url_answer_are_ignored(tmp_path: Path, written: str) -> None:
    """As ``ApprovedDomains`` ignores them: a leading blank was refused, a trailing one not."""
    path = answers_file(tmp_path, [{"url": written}])
    action, lines = await answer_link(path, "https://example.com/pay")
    assert action == "accept", lines


@pytest.mark.parametrize("word", ["oauth", "github"])
def test_a_url_answer_of_one_word_is_refused(tmp_path: Path, word: str) -> None:
    """Written for the old rule (words anywhere in the link), it never matched."""
    assert refusal(tmp_path, word).endswith(
        "which names a single word, not a site: a link is matched by the host it opens, not "
        f'by words in it; give the site, such as "{word}.com" (its subdomains match too), '
        f'or write a host of your own network as a URL, "https://{word}/".'
    )


@pytest.mark.parametrize(
    ("written", "url"),
    [
        ("localhost", "http://localhost:9090/"),
        ("127.0.0.1", "http://127.0.0.1:8080/"),
        ("[::1]", "http://[::1]:8080/"),
        ("printer.local", "https://printer.local/"),
        ("https://intranet/", "https://intranet/login"),
    ],
)
async def test_loopback_addresses_and_names_of_a_private_network_may_be_answered(
    tmp_path: Path, written: str, url: str
) -> None:
    path = answers_file(tmp_path, [{"url": written}])
    action, lines = await answer_link(path, url)
    assert action == "accept", lines


@pytest.mark.parametrize(
    ("written", "url", "action"),
    [
        ("localhost:8080", "http://localhost:8080/", "accept"),
        ("localhost:8080", "http://localhost:9090/", "cancel"),
        ("localhost:8080", "http://localhost/", "cancel"),
        ("localhost:80", "http://localhost/", "accept"),
        ("https://localhost:443/", "https://localhost/", "accept"),
        ("https://localhost:443/", "https://localhost:8443/", "cancel"),
        ("127.0.0.1:8080", "http://127.0.0.1:9090/", "cancel"),
        ("example.com:8443", "https://pay.example.com:8443/", "accept"),
        ("example.com:8443", "https://example.com/", "cancel"),
        ("example.com", "https://example.com:8443/", "accept"),
    ],
)
async def test_a_port_in_a_url_answer_must_be_the_links(
    tmp_path: Path, written: str, url: str, action: str
) -> None:
    """On this computer the port picks the program; ``localhost:8080`` answered them all."""
    path = answers_file(tmp_path, [{"url": written}])
    answered, lines = await answer_link(path, url)
    assert answered == action, lines


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


def test_the_command_fails_when_an_answer_would_accept_a_high_risk_link(tmp_path: Path) -> None:
    path = answers_file(tmp_path, [{"url": "evil-login.net"}])
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
    assert (done.returncode, done.stdout) == (2, "visit: cancel\n"), done.stderr
    assert (
        f"answerback: The answer 1 in {path} would accept the link "
        "'https://accounts.google.com.evil-login.net/pay' from server terminal_server "
        "(judged high risk: "
    ) in done.stderr, done.stderr
    assert 'add "risk": "high" to the answer' in done.stderr, done.stderr
