"""Links a hostile server could dress up past the verdict (probe p4's findings): a
lookalike under a made-up top-level domain, a brand's exact name on a free host or a
reseller's ``com.XX``, a product's domain before a file-like top-level domain, a slash
drawn through a letter, and one approval of this computer covering every program on it."""

# ruff: noqa: RUF001 -- lookalike characters are this module's subject

from __future__ import annotations

import pytest

from answerback.urls import ApprovedDomains, ReasonCode, RiskLevel, judge_url


@pytest.mark.parametrize(
    "url",
    [
        "https://аррӏе.сом/login",  # a Cyrillic "com" is no public top-level domain
        "https://аррӏе/",  # a name of one label
        "https://xn--80ak6aa92e.xn--80ak6aa92e/",
    ],
)
def test_an_all_cyrillic_lookalike_is_high_risk_under_any_unknown_top_level_domain(
    url: str,
) -> None:
    verdict = judge_url(url)
    assert verdict.level is RiskLevel.HIGH_RISK, verdict.explain()
    assert ReasonCode.WHOLE_SCRIPT_CONFUSABLE in verdict.codes
    assert verdict.display.host.startswith("xn--80ak6aa92e"), verdict.display
    assert "аррӏе" not in verdict.display.url


def test_a_cyrillic_name_under_a_public_cyrillic_top_level_domain_stays_readable() -> None:
    verdict = judge_url("https://москва.рф/")
    assert verdict.level is RiskLevel.OK
    assert verdict.display.host == "москва.рф"


@pytest.mark.parametrize(
    ("url", "brand"),
    [
        ("https://paypal.herokuapp.com/", "paypal"),
        ("https://paypal.github.io/", "paypal"),
        ("https://microsoft.github.io/vscode-docs/", "microsoft"),
        ("https://apple.netlify.app/", "apple"),
        ("https://microsoft.web.app/", "microsoft"),
        ("https://paypal.vercel.app/", "paypal"),
        ("https://google.blogspot.com/", "google"),
        ("https://paypal.us.com/", "paypal"),
    ],
)
def test_a_brands_exact_name_on_a_domain_anyone_can_get_is_a_warning(url: str, brand: str) -> None:
    """The reason says only what is known: an org's own page ("microsoft.github.io") is
    as possible as an impostor's, so it never claims the site is not the brand's."""
    verdict = judge_url(url)
    assert verdict.level is RiskLevel.WARN, verdict.explain()
    assert [reason.code for reason in verdict.reasons] == [ReasonCode.BRAND_IN_DOMAIN]
    message = verdict.reasons[0].message
    assert message.endswith(f"where anyone can make one; it need not be {brand}'s."), message
    assert "not " + brand not in message


@pytest.mark.parametrize(
    "url",
    [
        "https://paypal.com.ru/",
        "https://login.paypal.com.ru/",
        "https://paypal.com.se/",
        "https://apple.com.de/",
        "https://google.com.de/",
    ],
)
def test_a_brand_dot_com_under_a_resellers_domain_is_high_risk(url: str) -> None:
    """com.de, com.ru and com.se are names sold by private resellers, not country
    registries: no brand runs its country site there."""
    verdict = judge_url(url)
    assert verdict.level is RiskLevel.HIGH_RISK, verdict.explain()
    assert ReasonCode.BRAND_IN_DOMAIN in verdict.codes
    assert "reads as" in verdict.reasons[0].message
    assert "need not be" in verdict.reasons[0].message


@pytest.mark.parametrize(
    "url",
    [
        "https://www.apple.com.cn/",
        "https://www.apple.com.au/",
        "https://www.apple.co.uk/",
        "https://www.google.com.au/",
        "https://www.google.co.za/",
        "https://www.google.co.kr/",
        "https://www.sony.co.jp/",
        "https://www.nintendo.co.jp/",
        "https://www.mercadolibre.com.ar/",
        "https://www.mercadolibre.com.mx/",
        "https://www.santander.com.br/",
        "https://www.santander.co.uk/",
        "https://www.amazon.com.mx/",
        "https://www.amazon.co.za/",
        "https://www.walmart.com.mx/",
        "https://www.costco.com.au/",
        "https://www.lenovo.com.cn/",
        "https://www.hsbc.com.hk/",
        "https://yandex.com.tr/",
        "https://www.intelcom.ca/",  # a courier's name, not intel.com glued together
    ],
)
def test_brands_real_country_sites_are_ok(url: str) -> None:
    """A brand's name under a country's own registry is most often its own country site;
    warning there would teach people to click through warnings."""
    verdict = judge_url(url)
    assert verdict.level is RiskLevel.OK, verdict.explain()
    assert verdict.reasons == (), verdict.explain()


@pytest.mark.parametrize(
    "url",
    [
        "https://google.co.uk/",
        "https://amazon.com.br/",
        "https://alice.github.io/",
        "https://docs.github.com/",
        "https://github.github.io/",  # the hosting service's own name
    ],
)
def test_brands_own_sites_and_ordinary_pages_stay_ok(url: str) -> None:
    assert judge_url(url).level is RiskLevel.OK, judge_url(url).explain()


@pytest.mark.parametrize(
    "url",
    [
        "https://github.com.zip/",
        "https://gitlab.com.zip/",
        "https://docker.com.mov/",
        "https://outlook.com.zip/",
        "https://microsoft.com.zip/",
    ],
)
def test_a_products_domain_before_a_file_like_top_level_domain_is_high_risk(url: str) -> None:
    verdict = judge_url(url)
    assert verdict.level is RiskLevel.HIGH_RISK, verdict.explain()
    assert ReasonCode.BRAND_IN_SUBDOMAIN in verdict.codes


def test_a_product_name_on_a_companys_own_domain_is_still_a_warning() -> None:
    assert judge_url("https://gitlab.example.org/").level is RiskLevel.WARN


@pytest.mark.parametrize(
    ("url", "ace"),
    [
        ("https://example.com\u0338evil.net/", "xn--comevil-gte.net"),
        ("https://bank\u0338.com/", "xn--bank-t3c.com"),
    ],
)
def test_a_slash_overlay_in_a_host_is_high_risk_and_shown_in_ace(url: str, ace: str) -> None:
    verdict = judge_url(url)
    assert verdict.level is RiskLevel.HIGH_RISK, verdict.explain()
    assert ReasonCode.PUNCTUATION_LOOKALIKE in verdict.codes
    assert verdict.display.host.endswith(ace)
    assert "\u0338" not in verdict.display.url


def test_another_mark_drawn_on_a_plain_letter_is_a_warning_shown_in_ace() -> None:
    verdict = judge_url("https://ba\u0335nk.com/")  # a short stroke through the a
    assert verdict.level is RiskLevel.WARN
    assert ReasonCode.UNUSUAL_CHARACTER in verdict.codes
    assert verdict.display.host == "xn--bank-c3c.com"


def test_approving_a_program_on_this_computer_approves_its_port_only() -> None:
    approved = ApprovedDomains()
    assert approved.approve(judge_url("http://localhost:8080/callback")) == "localhost:8080"
    again = judge_url("http://localhost:8080/done", approved_domains=approved)
    assert again.approved
    assert again.level is RiskLevel.OK
    assert again.reasons[0].message == "You approved localhost:8080 before."
    for other in [
        "http://localhost:2375/containers/json",
        "http://localhost:6379/",
        "https://localhost:8443/",
        "http://localhost/",
    ]:
        verdict = judge_url(other, approved_domains=approved)
        assert not verdict.approved, other
        assert verdict.level is RiskLevel.WARN, other


def test_a_loopback_link_without_a_port_is_remembered_with_its_schemes_port() -> None:
    assert judge_url("http://127.0.0.1/").site == "127.0.0.1:80"
    assert judge_url("https://[::1]/").site == "[::1]:443"
    assert judge_url("https://example.com:8443/").site == "example.com"


def test_a_loopback_host_approved_by_name_alone_approves_every_port() -> None:
    """A host program that approves "localhost" itself means all of it, as before."""
    approved = ApprovedDomains(["localhost"])
    verdict = judge_url("http://localhost:6379/", approved_domains=approved)
    assert verdict.approved
    assert verdict.reasons[0].message == "You approved localhost before."
    assert "localhost:2375" in approved
