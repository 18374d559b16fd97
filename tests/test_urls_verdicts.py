"""judge_url and ApprovedDomains: the issue's examples, display, approvals, the public API."""

from __future__ import annotations

import random
import subprocess
import sys
import urllib.parse

import pytest

from answerback.urls import (
    ApprovedDomains,
    ReasonCode,
    RiskLevel,
    UrlDisplay,
    _unicode,
    judge_url,
)


@pytest.mark.parametrize(
    ("url", "level"),
    [
        ("https://example.com/auth", RiskLevel.OK),
        ("https://münchen.de/", RiskLevel.OK),
        ("https://xn--mnchen-3ya.de/", RiskLevel.OK),
        ("https://аррӏе.com/", RiskLevel.HIGH_RISK),  # noqa: RUF001 - the lookalike under test
        ("https://google.com@evil.com/", RiskLevel.BLOCK),
        ("javascript:alert(1)", RiskLevel.BLOCK),
        ("http://2130706433/", RiskLevel.HIGH_RISK),
        ("https://accounts.google.com.evil-login.net/", RiskLevel.HIGH_RISK),
    ],
)
def test_the_issues_examples(url: str, level: RiskLevel) -> None:
    assert judge_url(url).level is level


def test_the_url_is_read_as_browsers_read_it_not_as_urllib_does() -> None:
    url = "https://evil.com\\@good.com/"
    assert urllib.parse.urlsplit(url).hostname == "good.com"
    verdict = judge_url(url)
    assert verdict.site == "evil.com"
    assert verdict.canonical_url == "https://evil.com/@good.com/"
    assert verdict.display.site == "evil.com"


def test_numeric_hosts_are_shown_as_the_address_they_are() -> None:
    verdict = judge_url("http://2130706433/")
    assert verdict.canonical_url == "http://127.0.0.1/"
    assert verdict.display.url == "http://127.0.0.1/"
    assert any("2130706433" in reason.message for reason in verdict.reasons)


def test_only_the_suspicious_label_is_shown_in_ace() -> None:
    verdict = judge_url("https://münchen.аррӏе.com/")  # noqa: RUF001
    assert verdict.display.host == "münchen.xn--80ak6aa92e.com"
    assert verdict.display.site == "xn--80ak6aa92e.com"


def test_display_emphasises_the_registrable_domain() -> None:
    display = judge_url("https://accounts.google.com.evil-login.net/path?q=1#top").display
    assert display == UrlDisplay(
        url="https://accounts.google.com.evil-login.net/path?q=1#top",
        before="https://accounts.google.com.",
        site="evil-login.net",
        after="/path?q=1#top",
        host="accounts.google.com.evil-login.net",
    )


def test_display_keeps_user_information_in_view() -> None:
    display = judge_url("https://google.com@evil.com/").display
    assert (display.before, display.site) == ("https://google.com@", "evil.com")


def test_display_is_never_truncated() -> None:
    url = "https://example.com/" + "segment/" * 2000 + "?q=" + "x" * 5000
    verdict = judge_url(url)
    assert verdict.display.url == url
    assert verdict.canonical_url == url


def test_what_is_not_a_url_is_shown_with_hidden_characters_escaped() -> None:
    verdict = judge_url("https://ex\u202eample.com/")
    assert verdict.canonical_url is None
    assert verdict.display.url == "https://ex\\u{202e}ample.com/"
    assert verdict.site is None


def test_reasons_are_most_serious_first_and_explained_in_words() -> None:
    verdict = judge_url("http://аррӏе.com:8080/")  # noqa: RUF001
    levels = [reason.level for reason in verdict.reasons]
    assert levels == sorted(levels, reverse=True)
    assert verdict.level is RiskLevel.BLOCK
    assert verdict.blocked
    lines = verdict.explain().splitlines()
    assert lines[0] == "block: http://xn--80ak6aa92e.com:8080/"
    assert len(lines) == 1 + len(verdict.reasons)
    assert all(line.startswith("- ") for line in lines[1:])


def test_levels_are_ordered() -> None:
    assert RiskLevel.OK < RiskLevel.WARN < RiskLevel.HIGH_RISK < RiskLevel.BLOCK
    assert max(RiskLevel.WARN, RiskLevel.BLOCK, RiskLevel.OK) is RiskLevel.BLOCK


def test_an_approved_site_is_not_questioned_again() -> None:
    approved = ApprovedDomains()
    before = judge_url("https://example.com:8443/", approved_domains=approved)
    assert before.level is RiskLevel.WARN
    assert approved.approve(before) == "example.com"
    after = judge_url("https://login.example.com:8443/", approved_domains=approved)
    assert after.approved
    assert after.level is RiskLevel.OK
    assert [reason.code for reason in after.reasons] == [ReasonCode.APPROVED]


def test_approval_never_clears_how_a_url_is_written() -> None:
    approved = ApprovedDomains(["127.0.0.1"])
    verdict = judge_url("http://2130706433/", approved_domains=approved)
    assert verdict.approved
    assert verdict.level is RiskLevel.HIGH_RISK
    codes = {reason.code for reason in verdict.reasons}
    assert ReasonCode.NUMERIC_HOST in codes
    assert ReasonCode.LOOPBACK not in codes


def test_approval_never_overrides_a_block() -> None:
    approved = ApprovedDomains(["evil.com"])
    verdict = judge_url("https://google.com@evil.com/", approved_domains=approved)
    assert verdict.level is RiskLevel.BLOCK
    assert ReasonCode.APPROVED not in {reason.code for reason in verdict.reasons}
    with pytest.raises(ValueError, match="blocked"):
        approved.approve(verdict)


def test_approved_domains_store_sites_in_ascii() -> None:
    approved = ApprovedDomains()
    assert approved.approve(" Accounts.München.de. ") == "xn--mnchen-3ya.de"
    assert "münchen.de" in approved
    assert "www.xn--mnchen-3ya.de" in approved
    assert "example.com" not in approved
    assert 42 not in approved
    assert "not a host/" not in approved
    assert approved.approve("[::1]:8080") == "[::1]:8080"  # on loopback the port counts
    assert list(approved) == ["[::1]:8080", "xn--mnchen-3ya.de"]
    assert len(approved) == 2
    approved.revoke("MÜNCHEN.de")
    assert list(approved) == ["[::1]:8080"]
    assert repr(approved) == "ApprovedDomains(['[::1]:8080'])"


@pytest.mark.parametrize("text", ["", "example.com/path", "user@example.com", "exa mple.com"])
def test_approving_something_that_is_not_a_host_says_what_to_pass(text: str) -> None:
    with pytest.raises(ValueError, match="not a host name; approve a domain"):
        ApprovedDomains().approve(text)


def test_judging_never_touches_the_network() -> None:
    """In a fresh interpreter, so the suffix list is loaded (the first judgement's work)
    with the network refused."""
    code = (
        "import socket\n"
        "def refuse(*args, **kwargs):\n"
        "    raise AssertionError('the URL verdict must not use the network')\n"
        "socket.getaddrinfo = refuse\n"
        "socket.socket.connect = refuse\n"
        "from answerback.urls import judge_url\n"
        "verdict = judge_url('https://accounts.google.com.evil-login.net/')\n"
        "assert verdict.site == 'evil-login.net', verdict.site\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_data_loads_on_first_use_not_on_import() -> None:
    code = (
        "import sys\n"
        "import answerback.urls\n"
        "from answerback.urls import _unicode\n"
        "assert 'tldextract' not in sys.modules\n"
        "assert _unicode._tables.cache_info().currsize == 0\n"
        "answerback.urls.judge_url('https://example.com/')\n"
        "assert _unicode._tables.cache_info().currsize == 1\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_reason_codes_are_stable_strings() -> None:
    assert ReasonCode.USERINFO == "userinfo"
    assert ReasonCode("lookalike-domain") is ReasonCode.LOOKALIKE_DOMAIN


def test_skeletons_see_through_lookalike_letters() -> None:
    assert _unicode.skeleton("gооglé") == "google"  # noqa: RUF001 - Cyrillic o's
    assert _unicode.skeleton("g00gle") == "google"
    assert _unicode.skeleton("rnicrosoft") == _unicode.skeleton("microsoft")
    assert _unicode.skeleton("münchen") == _unicode.skeleton("munchen")


def test_any_text_gets_a_verdict_whose_display_holds_together() -> None:
    # Pieces of URLs, tricks and broken encodings, glued at random (fixed seed): judging
    # never raises and the display always splits exactly at the site.
    pieces = [
        "https://", "http://", "javascript:", "HTTPS:\\\\", "//", "xn--", "xn--80ak6aa92e",
        "münchen", "google", ".com", ".рф", ".", "@", ":", "[::ffff:1.2.3.4]", "[", "%",
        "%E2%80%AE", "\u202e", "\u200b", "\t", " ", "/", "\\", "?", "#", "0x7f", "0177",
        "2130706433", "256", ":8080", ":99999", "\u0131", "\u0307", "\u09ea", "ß",
        "\U0001d41a", "\ud800", "\x00", "localhost", "-", "\uff41", "\u3002", "a" * 70,
    ]  # fmt: skip
    rng = random.Random(20260728)
    for _ in range(3000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 8)))
        verdict = judge_url(text)
        display = verdict.display
        assert display.before + display.site + display.after == display.url, text
        assert (verdict.canonical_url is None) == (ReasonCode.NOT_A_URL in verdict.codes), text
