"""IP address hosts: which ones are this computer, the local network, or not public at all."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from enum import Enum

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class AddressKind(Enum):
    LOOPBACK = "loopback"
    PRIVATE = "private"
    LINK_LOCAL = "link-local"
    RESERVED = "reserved"
    THIS_HOST = "this-host"
    PUBLIC = "public"


# Written out rather than taken from ipaddress's is_private/is_global, whose answers have
# changed between Python versions; a verdict must not.
_KINDS: tuple[tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, AddressKind], ...] = tuple(
    (ipaddress.ip_network(network), kind)
    for network, kind in (
        ("0.0.0.0/8", AddressKind.THIS_HOST),
        ("127.0.0.0/8", AddressKind.LOOPBACK),
        ("10.0.0.0/8", AddressKind.PRIVATE),
        ("100.64.0.0/10", AddressKind.PRIVATE),
        ("172.16.0.0/12", AddressKind.PRIVATE),
        ("192.168.0.0/16", AddressKind.PRIVATE),
        ("169.254.0.0/16", AddressKind.LINK_LOCAL),
        ("192.0.0.0/24", AddressKind.RESERVED),
        ("192.0.2.0/24", AddressKind.RESERVED),
        ("198.18.0.0/15", AddressKind.RESERVED),
        ("198.51.100.0/24", AddressKind.RESERVED),
        ("203.0.113.0/24", AddressKind.RESERVED),
        ("224.0.0.0/3", AddressKind.RESERVED),
        ("::/128", AddressKind.THIS_HOST),
        ("::1/128", AddressKind.LOOPBACK),
        ("fc00::/7", AddressKind.PRIVATE),
        ("fe80::/10", AddressKind.LINK_LOCAL),
        ("ff00::/8", AddressKind.RESERVED),
        ("2001:db8::/32", AddressKind.RESERVED),
        ("100::/64", AddressKind.RESERVED),
    )
)


@dataclass(frozen=True, slots=True)
class AddressFacts:
    address: IPAddress
    kind: AddressKind
    embedded_ipv4: ipaddress.IPv4Address | None
    """The IPv4 address an IPv6 literal carries (``::ffff:127.0.0.1``), which hides a
    familiar address behind an unfamiliar form."""


def address_facts(host: str) -> AddressFacts:
    """Classify a canonical IP host (``127.0.0.1`` or ``[::1]``)."""
    address = ipaddress.ip_address(host.removeprefix("[").removesuffix("]"))
    embedded: ipaddress.IPv4Address | None = None
    if isinstance(address, ipaddress.IPv6Address):
        embedded = address.ipv4_mapped or address.sixtofour
        if embedded is None and address.teredo is not None:
            embedded = address.teredo[1]
        value = int(address)
        if embedded is None and 1 < value < 2**32:
            embedded = ipaddress.IPv4Address(value)  # the deprecated ::a.b.c.d form
        if embedded is None and address in ipaddress.ip_network("64:ff9b::/96"):
            embedded = ipaddress.IPv4Address(value & 0xFFFFFFFF)  # NAT64
    judged = embedded or address
    kind = next(
        (
            kind
            for network, kind in _KINDS
            if judged.version == network.version and judged in network
        ),
        AddressKind.PUBLIC,
    )
    return AddressFacts(address=address, kind=kind, embedded_ipv4=embedded)


def is_loopback_host(host: str) -> bool:
    """Whether a canonical host is this computer: ``localhost``, ``*.localhost``, or a
    loopback address (``127.0.0.1``, ``[::1]``, or in IPv6 form, ``[::ffff:7f00:1]``).

    The judge counts every spelling of a loopback address as this computer (the IPv6 form
    only adds a finding), so approvals must too: else an approved verdict's site, kept
    with its port, would not match itself."""
    name = host.removesuffix(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        facts = address_facts(host)
    except ValueError:
        return False
    return facts.kind is AddressKind.LOOPBACK
