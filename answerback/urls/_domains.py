"""Registrable domains (Public Suffix List, offline) and the well-known sites people are
tricked into thinking they are on.

The Public Suffix List is the snapshot ``tldextract`` ships; it is never fetched, so a
verdict is the same on a machine with no network and never leaks the host to anyone.
Private suffixes count ("github.io", "blogspot.com"): "alice.github.io" and
"bob.github.io" are different sites run by different people.
"""

# ruff: noqa: RUF002 -- lookalike characters are this module's subject

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING

import ada_url

from answerback.urls._unicode import skeleton

if TYPE_CHECKING:
    from tldextract import TLDExtract

# Brand labels that are also everyday words a site may use for its own subdomains
# ("mail.example.org", "live.example.org"): naming one is no sign of impersonation.
_GENERIC_LABELS = frozenset(
    {
        "blogger",
        "blockchain",
        "booking",
        "cash",
        "chase",
        "crypto",
        "discover",
        "free",
        "indeed",
        "kraken",
        "ledger",
        "line",
        "live",
        "login",
        "medium",
        "office",
        "orange",
        "proton",
        "signal",
        "target",
        "threads",
        "weather",
        "windows",
        "wise",
    }
)
# Products that companies run under their own names ("gitlab.example.org",
# "outlook.example.org" for an in-house mail server): in a subdomain they only warrant a
# warning, where another brand's name is a strong sign of impersonation.
_SELF_HOSTED_PRODUCTS = frozenset(
    {
        "android",
        "atlassian",
        "chromium",
        "docker",
        "github",
        "gitlab",
        "kubernetes",
        "mailchimp",
        "mozilla",
        "oracle",
        "outlook",
        "python",
        "sendgrid",
        "sharepoint",
        "vmware",
        "wordpress",
        "zendesk",
    }
)
# Shorter labels ("hp", "ups", "bbc") are too common as parts of other names to be brand
# tokens on their own; the whole domain ("bbc.co.uk") still counts when embedded.
_MIN_BRAND_LENGTH = 4
_MIN_IMITATED_LENGTH = 3


@dataclass(frozen=True, slots=True)
class HostParts:
    """A host name split at its public suffix (all ASCII, without a trailing dot)."""

    subdomain: str
    """What the site's owner chose freely: "accounts.google.com" in
    "accounts.google.com.evil-login.net"."""
    registrable: str | None
    """The site: "evil-login.net". None when the host has no public suffix ("intranet",
    "printer.local") or is a public suffix itself ("github.io")."""
    suffix: str
    shared: bool = False
    """Whether the suffix is from the list's private section: a service where anyone may
    make a site ("herokuapp.com", "github.io")."""


@dataclass(frozen=True, slots=True)
class _TopDomains:
    domains: frozenset[str]
    by_skeleton: dict[str, str]
    brands_by_skeleton: dict[str, str]
    tokens_by_skeleton: dict[str, str]


@cache
def _extractor() -> TLDExtract:
    """The offline Public Suffix List, built once: no fetching, no cache directory."""
    from tldextract import TLDExtract

    return TLDExtract(
        cache_dir=None,
        suffix_list_urls=(),
        fallback_to_snapshot=True,
        include_psl_private_domains=True,
    )


def split_host(host: str) -> HostParts:
    """Split an ASCII host name (as a WHATWG parser leaves it) at its public suffix."""
    labels = host.removesuffix(".").split(".")
    # The list spells international suffixes in Unicode; decoding here with ada is much
    # faster than letting tldextract decode ACE labels itself.
    decoded = [_unicode_label(label) for label in labels]
    result = _extractor().extract_str(".".join(decoded))
    suffix_count = result.suffix.count(".") + 1 if result.suffix else 0
    if not result.domain or not suffix_count:
        suffix = ".".join(labels[len(labels) - suffix_count :]) if suffix_count else ""
        return HostParts(subdomain="", registrable=None, suffix=suffix)
    split = len(labels) - suffix_count - 1
    return HostParts(
        subdomain=".".join(labels[:split]),
        registrable=".".join(labels[split:]),
        suffix=".".join(labels[split + 1 :]),
        shared=result.is_private,
    )


def _unicode_label(label: str) -> str:
    if not label.startswith("xn--"):
        return label
    text = ada_url.idna_to_unicode(label)
    return label if "." in text else text


@cache
def _top_domains() -> _TopDomains:
    text = resources.files("answerback.urls").joinpath("data/top_domains.txt")
    domains: list[str] = []
    for line in text.read_text(encoding="utf-8").splitlines():
        entry = line.split("#", 1)[0].strip()
        if entry:
            domains.append(entry)
    brands = {domain.split(".", 1)[0] for domain in domains}
    return _TopDomains(
        domains=frozenset(domains),
        by_skeleton={skeleton(domain): domain for domain in domains},
        brands_by_skeleton={skeleton(brand): brand for brand in brands},
        tokens_by_skeleton={
            skeleton(brand): brand
            for brand in brands
            if len(brand) >= _MIN_BRAND_LENGTH and brand not in _GENERIC_LABELS
        },
    )


def top_domains() -> frozenset[str]:
    """The bundled list of well-known registrable domains."""
    return _top_domains().domains


def lookalike_domain(registrable_ascii: str, registrable_text: str) -> str | None:
    """The well-known domain that ``registrable_text`` looks like without being it
    ("аррӏе.com" → "apple.com", "paypa1.com" → "paypal.com"), if any."""
    top = _top_domains()
    if registrable_ascii in top.domains:
        return None
    found = top.by_skeleton.get(skeleton(registrable_text))
    return found if found is not None and found != registrable_ascii else None


def lookalike_brand(label_text: str) -> str | None:
    """The brand that the label ``label_text`` imitates with other letters ("g00gle",
    "раураl" in Cyrillic → "google", "paypal"); None for the brand itself. Names of one
    or two letters ("x", "vk") are too easily matched by chance to count on their own."""
    found = _top_domains().brands_by_skeleton.get(skeleton(label_text))
    if found is None or found == label_text or len(found) < _MIN_IMITATED_LENGTH:
        return None
    return found


def brand_token(label_text: str) -> str | None:
    """The brand that the label or hyphen-separated part ``label_text`` names, exactly or
    with lookalike letters; None for ordinary words."""
    return _top_domains().tokens_by_skeleton.get(skeleton(label_text))


def brand_domains(brand: str) -> frozenset[str]:
    """The well-known domains whose name is ``brand`` ("google" → google.com, google.de,
    google.co.uk, ...)."""
    return frozenset(domain for domain in top_domains() if domain.split(".", 1)[0] == brand)


def is_self_hosted_product(brand: str) -> bool:
    """Whether ``brand`` names software companies commonly run on their own domains."""
    return brand in _SELF_HOSTED_PRODUCTS


def embedded_top_domain(labels: list[str]) -> str | None:
    """A well-known domain spelled out by consecutive ``labels`` ("google", "com"), which
    inside a subdomain makes another site's address start like that domain."""
    by_skeleton = _top_domains().by_skeleton
    skeletons = [skeleton(label) for label in labels]
    for start in range(len(labels) - 1):
        for end in range(start + 2, min(start + 4, len(labels)) + 1):
            found = by_skeleton.get(".".join(skeletons[start:end]))
            if found is not None:
                return found
    return None
