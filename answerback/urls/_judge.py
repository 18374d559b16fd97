"""``judge_url``: one verdict on a URL a server asks a person to open."""

from __future__ import annotations

from dataclasses import dataclass, field

import ada_url

from answerback.urls._address import AddressKind, address_facts
from answerback.urls._approved import ApprovedDomains, loopback_site
from answerback.urls._domains import (
    HostParts,
    brand_token,
    embedded_top_domain,
    is_self_hosted_product,
    lookalike_brand,
    lookalike_domain,
    split_host,
    top_domains,
)
from answerback.urls._labels import LabelJudgement, judge_label
from answerback.urls._model import (
    ReasonCode,
    RiskLevel,
    UrlDisplay,
    UrlReason,
    UrlVerdict,
)
from answerback.urls._text import (
    bidi_controls,
    character_name,
    escaped,
    has_inner_control,
    invisible_characters,
    percent_decoded,
    written_authority,
)

_ATTRIBUTES = (
    "href",
    "protocol",
    "username",
    "password",
    "hostname",
    "port",
    "pathname",
    "search",
    "hash",
    "host_type",
)
MAX_URL_LENGTH = 32_768
"""The longest link judged, in characters; a longer one is blocked unread. A person must
be shown a link whole, which pages of it defeat, and no page is reached by such a link:
common web servers refuse request lines past 8 KB by default (RFC 9110 asks only for
8000 octets), and CDNs not much longer ones."""

SHOWN_OF_TOO_LONG = 200
"""How much of a link past ``MAX_URL_LENGTH`` its (blocked) verdict's display shows."""

_SCHEME_DANGERS = {
    "javascript": "runs code in the page you are on",
    "data": "carries a whole page inside the link, from no site at all",
    "file": "opens a file on this computer",
    "blob": "points at data made up by some other page",
    "vbscript": "runs code",
}


@dataclass
class _Findings:
    reasons: list[UrlReason] = field(default_factory=list[UrlReason])

    def add(self, code: ReasonCode, level: RiskLevel, message: str) -> None:
        reason = UrlReason(code=code, level=level, message=message)
        if reason not in self.reasons:
            self.reasons.append(reason)


def judge_url(url: str, *, approved_domains: ApprovedDomains | None = None) -> UrlVerdict:
    """Judge a URL before a person is asked to open it: the level, the reasons in plain
    words, and how to show it.

    The URL is read the way browsers read it (WHATWG, through ``ada-url``), never fetched,
    never resolved. Only https is acceptable, and http only for this computer. The host
    is judged label by label for names that pass for other names, and its site (the
    registrable domain, from the bundled Public Suffix List) is what the person should
    look at. ``approved_domains`` holds sites the person approved before. A link longer
    than ``MAX_URL_LENGTH`` characters is blocked unread, its display cut short.
    """
    findings = _Findings()
    if len(url) > MAX_URL_LENGTH:
        findings.add(
            ReasonCode.TOO_LONG,
            RiskLevel.BLOCK,
            f"The link is {len(url):,} characters long, more than the {MAX_URL_LENGTH:,} a "
            "link may have: nobody can read all of it to see where it goes.",
        )
        shown = escaped(url[:SHOWN_OF_TOO_LONG]) + "…"
        display = UrlDisplay(url=shown, before=shown, site="", after="", host="")
        return _verdict(url, None, display, None, findings, approved_domains)
    _scan_text(url, findings)
    parsed = _Parsed.of(url)
    if parsed is None:
        findings.add(
            ReasonCode.NOT_A_URL,
            RiskLevel.BLOCK,
            "This is not a complete web address that a browser could open.",
        )
        shown = escaped(url)
        display = UrlDisplay(url=shown, before=shown, site="", after="", host="")
        return _verdict(url, None, display, None, findings, approved_domains)

    href, scheme, hostname = parsed.href, parsed.scheme, parsed.hostname
    _scan_decoded(parsed.pathname + parsed.search + parsed.hash, findings)
    if scheme not in ("http", "https"):
        danger = _SCHEME_DANGERS.get(scheme, "hands the link to another program, not a web page")
        findings.add(
            ReasonCode.SCHEME,
            RiskLevel.BLOCK,
            f"A {scheme}: link {danger}; only https web pages can be opened.",
        )
        display = UrlDisplay(url=href, before=href, site="", after="", host="")
        return _verdict(url, href, display, None, findings, approved_domains)

    written = written_authority(url)
    if written is not None:
        _judge_written_host(written.host, hostname, findings)
        if written.backslash:
            findings.add(
                ReasonCode.BACKSLASH,
                RiskLevel.HIGH_RISK,
                "The address uses a backslash where a slash belongs. Browsers read it as "
                f"'/' and open {hostname}; other programs read it differently, so the link "
                "may have been made to show one site and open another.",
            )
    userinfo = parsed.username + (":" + parsed.password if parsed.password else "")
    if userinfo:
        # The user name is quoted (it may be a site's name, put there to deceive); a
        # password never is: reasons are printed and logged.
        before = percent_decoded(parsed.username) + (":****" if parsed.password else "")
        findings.add(
            ReasonCode.USERINFO,
            RiskLevel.BLOCK,
            f"The text before '@' ({before!r}) is a user name, not the site: "
            f"this link opens {hostname}.",
        )

    if parsed.host_type == ada_url.HostType.DEFAULT:
        host = _judge_domain(hostname, scheme, parsed.port, findings)
    else:
        host = _judge_address(hostname, scheme, parsed.port, findings)

    prefix = f"{scheme}://" + (userinfo + "@" if userinfo else "")
    tail = (":" + parsed.port if parsed.port else "") + parsed.pathname
    tail += parsed.search + parsed.hash
    display = UrlDisplay(
        url=prefix + host.before + host.site + host.after + tail,
        before=prefix + host.before,
        site=host.site,
        after=host.after + tail,
        host=host.before + host.site + host.after,
    )
    return _verdict(url, href, display, host.key, findings, approved_domains)


@dataclass(frozen=True, slots=True)
class _Parsed:
    """The parts of a URL as a WHATWG parser (ada) reads them."""

    href: str
    scheme: str
    username: str
    password: str
    hostname: str
    port: str
    pathname: str
    search: str
    hash: str
    host_type: ada_url.HostType

    @classmethod
    def of(cls, url: str) -> _Parsed | None:
        try:
            parts = ada_url.parse_url(url, _ATTRIBUTES)
        except ValueError:
            return None
        return cls(
            href=parts.get("href", ""),
            scheme=parts.get("protocol", "").removesuffix(":"),
            username=parts.get("username", ""),
            password=parts.get("password", ""),
            hostname=parts.get("hostname", ""),
            port=parts.get("port", ""),
            pathname=parts.get("pathname", ""),
            search=parts.get("search", ""),
            hash=parts.get("hash", ""),
            host_type=parts.get("host_type", ada_url.HostType.DEFAULT),
        )


@dataclass(frozen=True, slots=True)
class _Host:
    before: str
    site: str
    after: str
    key: str
    """The site in ASCII, for approvals."""


def _judge_address(hostname: str, scheme: str, port: str, findings: _Findings) -> _Host:
    facts = address_facts(hostname)
    shown = str(facts.embedded_ipv4 or facts.address)
    if facts.embedded_ipv4 is not None:
        findings.add(
            ReasonCode.NUMERIC_HOST,
            RiskLevel.HIGH_RISK,
            f"The host {hostname} is the IPv4 address {shown} written in IPv6 form, which "
            "hides which address it is.",
        )
    if facts.kind is AddressKind.LOOPBACK:
        _judge_loopback(hostname, findings)
        key = loopback_site(hostname, port, scheme)
    else:
        key = hostname
        _require_https(scheme, hostname, findings)
        findings.add(
            ReasonCode.IP_ADDRESS,
            RiskLevel.HIGH_RISK,
            f"The host is a bare IP address ({shown}), not a name: nothing says whose "
            "server this is.",
        )
        _judge_port(port, findings)
    if facts.kind in (AddressKind.PRIVATE, AddressKind.LINK_LOCAL):
        where = (
            "a device on your local network (or a cloud server's internal metadata service)"
            if facts.kind is AddressKind.LINK_LOCAL
            else "a device on a private network, not a site on the internet"
        )
        findings.add(
            ReasonCode.PRIVATE_ADDRESS,
            RiskLevel.HIGH_RISK,
            f"{shown} is {where}: a remote server has no business sending you there.",
        )
    elif facts.kind in (AddressKind.RESERVED, AddressKind.THIS_HOST):
        what = (
            "means this computer on many systems"
            if facts.kind is AddressKind.THIS_HOST
            else "is reserved and belongs to no public site"
        )
        findings.add(
            ReasonCode.RESERVED_ADDRESS,
            RiskLevel.HIGH_RISK,
            f"{shown} {what}.",
        )
    return _Host(before="", site=hostname, after="", key=key)


def _judge_domain(hostname: str, scheme: str, port: str, findings: _Findings) -> _Host:
    trailing_dot = hostname.endswith(".")
    labels = hostname.removesuffix(".").split(".")
    if hostname == "localhost" or hostname.removesuffix(".").endswith(".localhost"):
        _judge_loopback(hostname, findings)
        key = loopback_site(hostname, port, scheme)
        return _Host(before="", site=hostname, after="", key=key)
    _require_https(scheme, hostname, findings)
    _judge_port(port, findings)
    if "" in labels:
        findings.add(
            ReasonCode.UNUSUAL_CHARACTER,
            RiskLevel.WARN,
            f"The host {hostname} has an empty part between two dots, which no real name has.",
        )
    # A top-level domain that is not public is no registry's home for any script: a
    # resolver that answers for a made-up Cyrillic "com", or a name of one label, follows
    # no registry's rules about which script a name may be written in.
    public_top_level = len(labels) > 1 and bool(split_host(labels[-1]).suffix)
    top_level = ada_url.idna_to_unicode(labels[-1]) if public_top_level else None
    judged = [judge_label(label, top_level) for label in labels]
    for label in judged:
        for reason in label.reasons:
            findings.add(reason.code, reason.level, reason.message)

    after = "." if trailing_dot else ""
    parts = split_host(hostname)
    if parts.registrable is None:
        _no_registrable_domain(hostname, parts, findings)
        whole = ".".join(label.shown for label in judged)
        return _Host(before="", site=whole, after=after, key=hostname.removesuffix("."))
    split = len(judged) - (parts.registrable.count(".") + 1)
    imitates = _judge_site(judged[split:], parts, findings)
    _judge_subdomain(judged[:split], judged[split], parts.registrable, findings)
    # A registrable domain that imitates a well-known one is shown in ACE as a whole, even
    # where each label alone looked harmless.
    site = ".".join(label.ascii if imitates else label.shown for label in judged[split:])
    before = "".join(label.shown + "." for label in judged[:split])
    return _Host(before=before, site=site, after=after, key=parts.registrable)


def _judge_site(labels: list[LabelJudgement], parts: HostParts, findings: _Findings) -> bool:
    """Judge the registrable domain against well-known ones; True when it must be shown
    in ACE because it imitates one."""
    registrable = parts.registrable or ""
    text = ".".join(label.text for label in labels)
    imitated = lookalike_domain(registrable, text)
    if imitated is not None:
        findings.add(
            ReasonCode.LOOKALIKE_DOMAIN,
            RiskLevel.HIGH_RISK,
            f"{_both(registrable, text)} looks like {imitated} but is a different site.",
        )
        return True
    name = labels[0].text
    brand = lookalike_brand(name)
    if brand is not None:
        findings.add(
            ReasonCode.LOOKALIKE_DOMAIN,
            RiskLevel.HIGH_RISK,
            f"The name {_both(labels[0].ascii, name)} in {registrable} imitates {brand!r} "
            "with other letters.",
        )
        return True
    if registrable not in top_domains() and _judge_brand_name(name, parts, findings):
        return False
    tokens = name.split("-")
    if len(tokens) > 1:
        for token in tokens:
            brand = brand_token(token)
            if brand is not None:
                level = RiskLevel.HIGH_RISK if token != brand else RiskLevel.WARN
                findings.add(
                    ReasonCode.BRAND_IN_DOMAIN,
                    level,
                    f"{registrable} has {brand!r} in its name but is not {brand}'s site; "
                    "anyone can register a name like that.",
                )
                break
    return False


def _judge_brand_name(name: str, parts: HostParts, findings: _Findings) -> bool:
    """A site whose whole name is a brand's, on a domain whose owner lets others make
    sites under it ("paypal.herokuapp.com", "paypal.com.ru"): the name alone proves
    nothing there. Under a country's own registry ("apple.com.cn", "sony.co.jp") the
    brand's own country site is the common case, so that says nothing. True when it
    said so."""
    if not parts.shared or brand_token(name) != name:
        return False
    registrable, suffix = parts.registrable or "", parts.suffix
    first, _, rest = suffix.partition(".")
    if first == name:  # the brand's own service: "github.github.io"
        return False
    where = f"{suffix}, where anyone can make one; it need not be {name}'s"
    if rest and f"{name}.{first}" in top_domains():
        # "apple.com.de" is apple.com with more after it, on a reseller's domain: no
        # brand runs its country site there.
        findings.add(
            ReasonCode.BRAND_IN_DOMAIN,
            RiskLevel.HIGH_RISK,
            f"{registrable} reads as {name}.{first} with more after it, but it is a name "
            f"under {where}.",
        )
    else:
        findings.add(
            ReasonCode.BRAND_IN_DOMAIN,
            RiskLevel.WARN,
            f"{registrable} is a site on {where}.",
        )
    return True


def _judge_subdomain(
    labels: list[LabelJudgement],
    site_name: LabelJudgement,
    registrable: str,
    findings: _Findings,
) -> None:
    """A well-known name to the left of another site's name is the site's own choice of
    words, made to be read first; with the site's own name after it ("github" before
    "com.zip") it may spell a well-known domain outright."""
    if not labels:
        return
    texts = [label.text for label in labels]
    subdomain = ".".join(label.ascii for label in labels)
    embedded = embedded_top_domain([*texts, site_name.text])
    if embedded is not None:
        findings.add(
            ReasonCode.BRAND_IN_SUBDOMAIN,
            RiskLevel.HIGH_RISK,
            f"The site is {registrable}: the {subdomain!r} in front of it is a name that "
            f"{registrable} chose, made to look like {embedded}.",
        )
        return
    own_name = registrable.split(".", 1)[0]
    for text in texts:
        for token in dict.fromkeys([text, *text.split("-")]):
            brand = brand_token(token)
            if brand is None or brand == own_name:
                continue
            level = (
                RiskLevel.WARN
                if is_self_hosted_product(brand) and token == brand
                else RiskLevel.HIGH_RISK
            )
            findings.add(
                ReasonCode.BRAND_IN_SUBDOMAIN,
                level,
                f"The site is {registrable}: {brand!r} in front of it is only a name that "
                f"{registrable} gave one of its pages, not {brand}'s site.",
            )
            return


def _approved_name(shown_site: str, site: str | None) -> str:
    """The site as the person approved it: with its port on this computer, where the
    port picks the program ("localhost:8080"), else as shown."""
    if site is not None and site.startswith(f"{shown_site}:"):
        return site
    return shown_site or site or ""


def _both(ascii: str, text: str) -> str:
    """A name as the browser sends it, and as it was written when that differs."""
    return ascii if ascii == text else f"{ascii} (written '{escaped(text)}')"


def _no_registrable_domain(hostname: str, parts: HostParts, findings: _Findings) -> None:
    if parts.suffix:
        message = f"{hostname} is a shared domain suffix, not a site anyone owns alone."
    else:
        last = hostname.removesuffix(".").rsplit(".", 1)[-1]
        message = (
            f"{hostname} does not end in a public top-level domain ({last!r} is not one): "
            "the name means something only on some networks."
        )
    findings.add(ReasonCode.NO_REGISTRABLE_DOMAIN, RiskLevel.WARN, message)


def _judge_loopback(hostname: str, findings: _Findings) -> None:
    findings.add(
        ReasonCode.LOOPBACK,
        RiskLevel.WARN,
        f"{hostname} is this computer: the page comes from a program running here, not "
        "from a website.",
    )


def _require_https(scheme: str, hostname: str, findings: _Findings) -> None:
    if scheme == "http":
        findings.add(
            ReasonCode.PLAIN_HTTP,
            RiskLevel.BLOCK,
            f"The link uses plain http to {hostname}: anyone on the way could read or change "
            "the page. Only https is allowed (http only for this computer).",
        )


def _judge_port(port: str, findings: _Findings) -> None:
    if port:
        findings.add(
            ReasonCode.PORT,
            RiskLevel.WARN,
            f"The link names port {port}, which ordinary web pages do not need.",
        )


def _judge_written_host(written: str, hostname: str, findings: _Findings) -> None:
    """What the host as written says that the canonical host no longer shows."""
    if "%" in written:
        findings.add(
            ReasonCode.ENCODED_HOST,
            RiskLevel.HIGH_RISK,
            f"The host is written with percent-escapes ({escaped(written)!r}) that spell "
            f"{hostname}: a real link has no reason to hide its host.",
        )
    for char in invisible_characters(percent_decoded(written)):
        findings.add(
            ReasonCode.INVISIBLE_CHARACTER,
            RiskLevel.HIGH_RISK,
            f"The host contains an invisible character ({character_name(char)}); "
            f"browsers drop it and open {hostname}.",
        )
    if _is_ipv4(hostname) and written.lower().removesuffix(".") != hostname:
        findings.add(
            ReasonCode.NUMERIC_HOST,
            RiskLevel.HIGH_RISK,
            f"The host {escaped(written)!r} is the IP address {hostname} written in an "
            "unusual form, which hides which address it is.",
        )


def _is_ipv4(hostname: str) -> bool:
    parts = hostname.split(".")
    return len(parts) == 4 and all(part.isdigit() for part in parts)


def _scan_text(url: str, findings: _Findings) -> None:
    """Characters in the URL as given that reorder or hide text, wherever they are."""
    if not url.isascii() or "%" in url:  # plain ASCII cannot hide a bidi control
        for char in bidi_controls(url + percent_decoded(url)):
            findings.add(
                ReasonCode.BIDI_CONTROL,
                RiskLevel.BLOCK,
                f"The link contains {character_name(char)}, which reorders the text around "
                "it so that what you read is not what opens.",
            )
    if has_inner_control(url):
        findings.add(
            ReasonCode.CONTROL_CHARACTER,
            RiskLevel.HIGH_RISK,
            "The link contains a tab, line break or other control character, which "
            "browsers silently drop: it was written to look different from what opens.",
        )


def _scan_decoded(rest: str, findings: _Findings) -> None:
    """Invisible characters in the path, query or fragment (percent-escaped or not)."""
    if "%" not in rest:
        return  # the parser escapes every character outside ASCII, so none can hide here
    for char in invisible_characters(percent_decoded(rest)):
        findings.add(
            ReasonCode.INVISIBLE_CHARACTER,
            RiskLevel.HIGH_RISK,
            "The path, query or fragment contains an invisible character "
            f"({character_name(char)}), which can make two different links look the same.",
        )


def _verdict(
    url: str,
    canonical: str | None,
    display: UrlDisplay,
    site: str | None,
    findings: _Findings,
    approved_domains: ApprovedDomains | None,
) -> UrlVerdict:
    reasons = findings.reasons
    approved = site is not None and approved_domains is not None and site in approved_domains
    if approved and all(reason.level < RiskLevel.BLOCK for reason in reasons):
        reasons = [reason for reason in reasons if not reason.about_the_site]
        # "localhost" approved alone covers localhost:9090 too: name what was approved.
        approved_as = site if site in frozenset(approved_domains or ()) else None
        reasons.append(
            UrlReason(
                code=ReasonCode.APPROVED,
                level=RiskLevel.OK,
                message=f"You approved {_approved_name(display.site, approved_as)} before.",
            )
        )
    ordered = tuple(sorted(reasons, key=lambda reason: -reason.level))
    level = max((reason.level for reason in ordered), default=RiskLevel.OK)
    return UrlVerdict(
        url=url,
        level=level,
        reasons=ordered,
        canonical_url=canonical,
        display=display,
        site=site,
        approved=approved,
    )
