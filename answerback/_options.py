"""The checks of the options that public constructors and run functions take.

An option is checked when the object is built (or the function called), not when it is
first used, so a wrong one fails where it was written, with an error that names it and
says what to pass: a value of the wrong type is a ``TypeError``, a value of the right
type that means nothing (a count of 0, a negative timeout, an unknown word) a
``ValueError``. ``bool`` is not taken for a number, and NaN and infinity are not taken
for seconds (``None`` says "for ever" where there is such a choice). Each check returns
the value it passed, so a constructor can check and store in one line.

Pure code: every layer may use it.
"""

from __future__ import annotations

import ipaddress
import math
from collections.abc import Collection
from typing import Any, TypeVar, cast
from urllib.parse import urlsplit

T = TypeVar("T")


def positive_int(name: str, value: object, unit: str) -> int:
    """``value`` if it is an ``int`` of at least 1 (``unit`` says of what: "bytes")."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int ({unit}), got {value!r}")
    if value <= 0:
        raise ValueError(f"{name} must be positive, got {value!r}")
    return value


def positive_int_or_none(name: str, value: object, unit: str, none_means: str) -> int | None:
    """``value`` if it is ``None`` (``none_means`` says what that does) or a positive ``int``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int ({unit}) or None ({none_means}), got {value!r}")
    if value <= 0:
        raise ValueError(f"{name} must be positive, or None ({none_means}), got {value!r}")
    return value


def whole_number(name: str, value: object, unit: str, zero_means: str) -> int:
    """``value`` if it is an ``int`` of 0 or more (``zero_means`` says what 0 does)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int ({unit}), got {value!r}")
    if value < 0:
        raise ValueError(f"{name} must be 0 or more ({unit}; 0: {zero_means}), got {value!r}")
    return value


def positive_seconds(name: str, value: object) -> float:
    """``value`` if it is a finite number of seconds above 0 (an ``int`` or ``float``)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number of seconds (int or float), got {value!r}")
    if not 0 < value < math.inf:
        raise ValueError(f"{name} must be a positive, finite number of seconds, got {value!r}")
    return value


def positive_seconds_or_none(
    name: str, value: object, none_means: str, *, zero_means: str | None = None
) -> float | None:
    """``value`` if it is ``None`` (``none_means`` says what that does) or positive seconds,
    or 0 where that means something (``zero_means``: "do not wait").

    Called on every ``Client.call_tool`` given a timeout, so it stays a few comparisons.
    """
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(
            f"{name} must be a number of seconds (int or float) or None ({none_means}), "
            f"got {value!r}"
        )
    if not 0 < value < math.inf and (zero_means is None or value != 0):
        what = (
            "a positive, finite number of seconds"
            if zero_means is None
            else f"a finite number of seconds, 0 or more (0: {zero_means})"
        )
        raise ValueError(f"{name} must be {what}, or None ({none_means}), got {value!r}")
    return value


def one_of(name: str, value: object, choices: Collection[str]) -> str:
    """``value`` if it is one of the words ``choices``, listing them if not."""
    if isinstance(value, str) and value in choices:
        return value
    listed = ", ".join(map(repr, choices))
    if not isinstance(value, str):
        raise TypeError(f"{name} must be one of {listed} (a string), got {value!r}")
    raise ValueError(f"{name} must be one of {listed}, got {value!r}")


def flag(name: str, value: object) -> bool:
    """``value`` if it is ``True`` or ``False`` (a truthy string is not taken for one)."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be True or False, got {value!r}")
    return value


def text(name: str, value: object, what: str, *, secret: bool = False) -> str:
    """``value`` if it is a string (``what`` says which: "the server's name"). A
    ``secret`` is named by its type only: an exception's text ends up in logs."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string ({what}), got {_shown(value, secret)}")
    return value


def _shown(value: object, secret: bool) -> str:
    return f"a {type(value).__name__} (not shown: it may be a secret)" if secret else repr(value)


def instance_or_none(
    name: str, value: T | None, kind: type[Any], what: str, *, secret: bool = False
) -> T | None:
    """``value`` if it is ``None`` or a ``kind`` (``what`` says how to make one; a
    ``secret``, such as credentials, is named by its type only, as in ``text``)."""
    if value is not None and not isinstance(value, kind):
        raise TypeError(f"{name} must be {what} or None, got {_shown(value, secret)}")
    return value


def callable_or_none(name: str, value: T | None, what: str) -> T | None:
    """``value`` if it is ``None`` or can be called (``what`` says what it is called with)."""
    if value is not None and not callable(value):
        raise TypeError(f"{name} must be {what} or None, got {value!r}")
    return value


def endpoint_path(name: str, value: object) -> str:
    """``value`` if it can be the path an HTTP endpoint is served at (``"/mcp"``)."""
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string starting with '/', such as '/mcp', got {value!r}")
    if not value.startswith("/"):
        raise ValueError(f"{name} must start with '/', such as '/mcp', got {value!r}")
    return value


def port_number(value: object) -> int:
    """``value`` if it can be the TCP ``port`` to listen on (0: any free port)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"port must be an int from 0 to 65535, such as 8000, got {value!r}")
    if not 0 <= value <= 65535:
        raise ValueError(f"port must be from 0 to 65535, such as 8000, got {value!r}")
    return value


def text_or_none(name: str, value: object, what: str, *, secret: bool = False) -> str | None:
    """``value`` if it is ``None`` or a string (``what`` says which: "the client's ID";
    a ``secret`` is named by its type only, as in ``text``)."""
    if value is not None and not isinstance(value, str):
        raise TypeError(f"{name} must be a string ({what}) or None, got {_shown(value, secret)}")
    return value


def non_empty_text(name: str, value: object, what: str) -> str:
    """``value`` if it is a string with something in it (``what`` says which)."""
    checked = text(name, value, what)
    if not checked:
        raise ValueError(f"{name} must not be empty ({what}), got ''")
    return checked


def strings(name: str, value: object, what: str, *, example: str) -> list[str]:
    """``value`` as a list if it is a list (or tuple, set) of strings, ``what`` saying
    of what and ``example`` showing one: a bare string is not taken for a list of its
    letters."""
    if isinstance(value, str | bytes) or not isinstance(value, Collection):
        raise TypeError(
            f"{name} must be a list of strings ({what}), such as {example}, got {value!r}"
        )
    found: list[object] = list(cast(Collection[object], value))
    for item in found:
        if not isinstance(item, str):
            raise TypeError(
                f"{name} must be a list of strings ({what}), such as {example}, got {item!r} in it"
            )
    return cast(list[str], found)


def seconds(name: str, value: object, zero_means: str) -> float:
    """``value`` if it is a finite number of seconds, 0 or more (``zero_means`` says what
    0 does)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"{name} must be a number of seconds (int or float), got {value!r}")
    if not 0 <= value < math.inf:
        raise ValueError(
            f"{name} must be a finite number of seconds, 0 or more (0: {zero_means}), got {value!r}"
        )
    return value


def http_url(
    name: str, value: object, what: str, *, secure: bool = False, opt_out: str | None = None
) -> str:
    """``value`` if it is an absolute http(s) URL (``what`` says of what). ``secure``
    also refuses plain http off this machine: for an address that tokens, secrets or
    signing keys travel to or from, where anyone on the way could read or replace them.
    ``opt_out`` is how to lift that refusal (``"JWTVerifier(allow_insecure_http=True)"``),
    for the error to say."""
    if not isinstance(value, str):
        raise TypeError(
            f"{name} must be a string, the http(s) URL of {what}, such as "
            f"'https://example.com/...', got {value!r}"
        )
    scheme, _, rest = value.partition("://")
    if scheme.lower() not in ("http", "https") or not rest or rest.startswith("/"):
        raise ValueError(
            f"{name} must be the absolute http(s) URL of {what}, such as "
            f"'https://example.com/...', got {value!r}"
        )
    if secure and scheme.lower() == "http" and not is_loopback(_host_of(value)):
        elsewhere = (
            "; on a private network you trust (a cluster's internal service, a "
            f"docker-compose network), {opt_out} accepts it there too."
            if opt_out
            else ", and nowhere else."
        )
        raise ValueError(
            f"{name} must be an https URL of {what}, got {value!r}: over plain http anyone "
            "on the network path could read or replace the tokens, secrets and signing keys "
            "exchanged there (MCP requires https for authorization servers). Plain http is "
            f"accepted on this machine (localhost, 127.0.0.1, ::1), for development{elsewhere}"
        )
    return value


def is_loopback(host: str) -> bool:
    """Whether ``host`` is this machine: ``localhost`` and its subdomains (RFC 6761),
    also written fully qualified (``localhost.``), 127.0.0.0/8, ::1, or 127.0.0.0/8
    mapped into IPv6 (``::ffff:127.0.0.1``), which reaches the same IPv4 loopback."""
    name = host.removesuffix(".")
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped.is_loopback
    return address.is_loopback


def _host_of(url: str) -> str:
    try:
        return urlsplit(url).hostname or ""
    except ValueError:  # a malformed address (an unclosed IPv6 bracket) is no host here
        return ""


def having_methods(name: str, value: object, methods: Collection[str], what: str) -> None:
    """Refuse ``value`` unless it has each of ``methods`` (``what`` says what to pass):
    the check of an object that stands for a protocol, which ``isinstance`` cannot make
    for a protocol with attributes or one not marked runtime-checkable."""
    if not all(callable(getattr(value, method, None)) for method in methods):
        raise TypeError(f"{name} must be {what}, got {value!r}")
