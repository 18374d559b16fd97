"""The sites a person has approved before, so the same site is not questioned twice."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import ada_url

from answerback.urls._address import is_loopback_host
from answerback.urls._domains import split_host
from answerback.urls._model import UrlVerdict


class ApprovedDomains:
    """Sites (registrable domains, or IP hosts) a person has approved, kept in memory.

    Pass it to ``judge_url(..., approved_domains=...)``: for an approved site, findings
    about *which site* this is (a lookalike name, an IP address, a port) are taken as
    already weighed, and the verdict says so. Findings about *how the URL is written* (a
    hidden character, a disguised address) still count, and a blocked URL stays blocked:
    approving a site never makes a dangerous URL safe.

    Approval is by site, as the person saw it emphasised: approving
    ``accounts.example.com`` approves ``example.com``. On this computer the port picks the
    program, so a verdict for ``http://localhost:8080/`` approves ``localhost:8080`` only;
    a loopback host given as text without a port (``"localhost"``) approves all of its
    ports. Names are stored in ASCII, so the
    Unicode and ACE spellings of one name are one entry. Nothing is written to disk; a host
    that wants approvals to outlive the process saves ``list(approved)`` and passes it back.
    """

    __module__ = "answerback.urls"

    def __init__(self, sites: Iterable[str] = ()) -> None:
        self._sites: set[str] = set()
        for site in sites:
            self.approve(site)

    def approve(self, site: str | UrlVerdict) -> str:
        """Remember a site (a domain, a host, or the site of a verdict); return it as stored.

        Raises ``ValueError`` for a blocked verdict or text that is not a host name."""
        if isinstance(site, UrlVerdict):
            if site.blocked or site.site is None:
                raise ValueError(
                    f"{site.url!r} is blocked, so its site cannot be approved: a blocked URL "
                    "must not be opened whatever the person says"
                )
            key = site.site
        else:
            key = canonical_site(site)
        self._sites.add(key)
        return key

    def revoke(self, site: str) -> None:
        """Forget a site (no error if it was not approved)."""
        self._sites.discard(canonical_site(site))

    def __contains__(self, site: object) -> bool:
        if not isinstance(site, str):
            return False
        try:
            key = canonical_site(site)
        except ValueError:
            return False
        # A loopback host approved without a port approves every port on it.
        return key in self._sites or _without_port(key) in self._sites

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._sites))

    def __len__(self) -> int:
        return len(self._sites)

    def __repr__(self) -> str:
        return f"ApprovedDomains({sorted(self._sites)!r})"


def canonical_site(text: str) -> str:
    """The site a host name belongs to, in ASCII: ``Accounts.München.de.`` →
    ``xn--mnchen-3ya.de``; an IP host stays itself (``127.0.0.1``, ``[::1]``); a loopback
    host keeps the port it was given with (``localhost:8080``)."""
    candidate = text.strip()
    try:
        parsed = ada_url.parse_url(f"https://{candidate}/", ("hostname", "host_type", "pathname"))
    except ValueError:
        parsed = None
    if parsed is None or not candidate or parsed.get("pathname") != "/" or "@" in candidate:
        raise ValueError(
            f"{text!r} is not a host name; approve a domain such as 'example.com' or the "
            "verdict itself"
        )
    host = parsed.get("hostname", "")
    if is_loopback_host(host):
        name = host.rstrip(".")
        port = _written_port(candidate)
        return f"{name}:{port}" if port else name
    if parsed.get("host_type") != ada_url.HostType.DEFAULT:
        return host
    return split_host(host).registrable or host.rstrip(".")


def loopback_site(host: str, port: str, scheme: str) -> str:
    """What approval remembers for a page on this computer: its host and the port that
    picks the program (the scheme's own when the link names none)."""
    return f"{host.rstrip('.')}:{port or ('443' if scheme == 'https' else '80')}"


def _written_port(candidate: str) -> str:
    """The port written after a host, 443 too (an https parse drops its default port)."""
    try:
        # A scheme without a default port keeps every port as written, normalised.
        return ada_url.parse_url(f"port-only://{candidate}/", ("port",)).get("port", "")
    except ValueError:
        return ""


def _without_port(key: str) -> str:
    host, colon, port = key.rpartition(":")
    return host if colon and port.isdigit() and not host.endswith(":") else key
