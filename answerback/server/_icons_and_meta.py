"""Icons and ``_meta`` a server gives its definitions and ``serverInfo``, checked when given.

They are sent as they are, to every client, and listed again on every request for the
list: a misspelt icon field would be ignored by every client, an icon whose ``src`` has a
scheme clients must refuse (``javascript:``, ``file:``) only ever dropped or a hazard,
a ``_meta`` value JSON cannot carry would fail every listing, and a ``_meta`` key outside
the specification's key format, or under a prefix it reserves for MCP, is one no client
may rely on. So each is refused at registration, naming it and saying what to pass.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any, cast

from answerback.server._arguments import (
    JSON_ADVICE,
    bad_value,
    check_optional_text,
    check_text,
    wrong_type,
)
from answerback.types import Icon

URI_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
"""What starts an absolute URI: its scheme and colon (RFC 3986)."""

_ICONS_ADVICE = (
    "Pass a list of Icon(src='https://example.com/icon.png', mime_type='image/png'), or of "
    "dicts of the same fields, or None."
)
_ICON_FIELDS = {
    "src": "src",
    "mimeType": "mime_type",
    "mime_type": "mime_type",
    "sizes": "sizes",
    "theme": "theme",
}
"""An icon dict's keys (wire names, and the Python names ``Icon`` takes too)."""
_ICON_SRC_ADVICE = (
    "The MCP specification allows an icon's src to be an https or http URL, or a data: URI "
    "with the image in it (clients must refuse other schemes, such as javascript: or "
    "file:): pass Icon(src='https://example.com/icon.png') or "
    "Icon(src='data:image/png;base64,...')."
)
_ICON_THEMES = ("light", "dark")
_META_ADVICE = "Pass a dict of JSON values with string keys, such as {'com.example/tier': 'pro'}."
_LABEL = re.compile(r"[A-Za-z](?:[A-Za-z0-9-]*[A-Za-z0-9])?")
"""A label of a ``_meta`` key's prefix: a letter first, a letter or digit last, and
letters, digits or hyphens between."""
_NAME = re.compile(r"(?:[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)?")
"""A ``_meta`` key's name: empty, or an alphanumeric first and last, with alphanumerics,
``-``, ``_`` and ``.`` between."""
_RESERVED_LABELS = ("modelcontextprotocol", "mcp")
"""A prefix whose second label is one of these is reserved for MCP itself."""
_META_KEY_ADVICE = (
    "A _meta key is an optional prefix of dot-separated labels ending in '/' (your own, in "
    "reverse DNS: 'com.example/'), then a name that begins and ends with a letter or digit, "
    "with letters, digits, '-', '_' and '.' between: such as 'com.example/tier'."
)


def checked_icons(call: str, icons: object) -> list[Icon] | None:
    """``icons`` as ``Icon`` objects of this server's own (a list the caller changes later
    changes nothing), if it is ``None`` or a list (or tuple) of ``Icon`` objects or dicts
    of their fields, each with a ``src`` the specification allows (``checked_icon_src``),
    a ``theme`` of ``"light"`` or ``"dark"``, and no field an ``Icon`` does not have (a
    misspelt ``mimetype`` would be sent, and ignored by every client)."""
    if icons is None:
        return None
    if not isinstance(icons, list | tuple):
        raise wrong_type(call, "icons", "a list of Icon", icons, _ICONS_ADVICE)
    items = cast("Sequence[object]", icons)
    return [_checked_icon(call, f"icons[{index}]", item) for index, item in enumerate(items)]


def _checked_icon(call: str, where: str, item: object) -> Icon:
    """One icon of ``checked_icons``: an ``Icon`` or a dict, as a new ``Icon``."""
    if isinstance(item, Icon):
        fields: dict[str, object] = {
            "src": item.src,
            "mime_type": item.mime_type,
            "sizes": item.sizes,
            "theme": item.theme,
            **(item.model_extra or {}),
        }
    elif isinstance(item, dict):
        fields = {}
        for key, value in cast(dict[object, object], item).items():
            field = _ICON_FIELDS.get(key) if isinstance(key, str) else None
            if field is None:
                raise bad_value(
                    call,
                    where,
                    f"has the key {key!r}, which is no field of an icon",
                    "An icon has src, and may have mimeType, sizes and theme.",
                )
            fields[field] = value
        if "src" not in fields:
            raise bad_value(call, where, "has no 'src'", "Every icon needs one: " + _ICONS_ADVICE)
    else:
        raise wrong_type(call, where, "an Icon or a dict", item, _ICONS_ADVICE)
    extra = [name for name in fields if name not in _ICON_FIELDS.values()]
    if extra:
        raise bad_value(
            call,
            where,
            f"has the field {extra[0]!r}, which an icon does not have",
            "An icon has src, and may have mime_type, sizes and theme.",
        )
    src = checked_icon_src(call, f"{where}.src", fields["src"])
    mime_type = fields.get("mime_type")
    check_optional_text(
        call, f"{where}.mime_type", mime_type, "Pass the image's MIME type, such as 'image/png'."
    )
    sizes = fields.get("sizes")
    if sizes is not None:
        sizes_advice = "Pass sizes such as ['48x48', '96x96'], or ['any'] for an SVG, or None."
        if not isinstance(sizes, list | tuple):
            raise wrong_type(call, f"{where}.sizes", "a list of strings", sizes, sizes_advice)
        for index, size in enumerate(cast("Sequence[object]", sizes)):
            check_text(call, f"{where}.sizes[{index}]", size, sizes_advice)
    theme = fields.get("theme")
    if theme is not None and theme not in _ICON_THEMES:
        theme_advice = (
            "Pass 'light' for an icon made for a light background, 'dark' for a dark one, or "
            "None for any."
        )
        if not isinstance(theme, str):
            raise wrong_type(call, f"{where}.theme", "'light' or 'dark'", theme, theme_advice)
        raise bad_value(
            call, f"{where}.theme", f"must be 'light' or 'dark', not {theme!r}", theme_advice
        )
    return Icon(
        src=src,
        mime_type=cast("str | None", mime_type),
        sizes=list(cast("Sequence[str]", sizes)) if sizes is not None else None,
        theme=cast("str | None", theme),
    )


def checked_icon_src(call: str, where: str, src: object) -> str:
    """``src`` if it is what the specification allows an icon's ``src`` to be: an https
    or http URL with a host, or a ``data:`` URI (``data:image/png;base64,...``). Clients
    must refuse other schemes (``javascript:``, ``file:``, ``ftp:``, ``ws:``, an app's
    own), so an icon with one would only ever be dropped, or be a hazard."""
    check_text(call, where, src, _ICON_SRC_ADVICE)
    text_src = cast(str, src)
    scheme, colon, rest = text_src.partition(":")
    scheme = scheme.lower()
    if colon and scheme in ("https", "http"):
        host = rest.removeprefix("//").split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
        if rest.startswith("//") and host.rpartition("@")[2]:
            return text_src
        problem = f"is {_shown_src(text_src)}, an {scheme} URL with no host"
    elif colon and scheme == "data":
        if "," in rest:
            return text_src
        problem = f"is {_shown_src(text_src)}, a data: URI with no ',' before its data"
    elif colon and URI_SCHEME.match(text_src):
        problem = f"is {_shown_src(text_src)}, whose scheme {scheme + ':'!r} is not allowed"
    else:
        problem = f"is {_shown_src(text_src)}, which is no absolute URI"
    raise bad_value(call, where, problem, _ICON_SRC_ADVICE)


def _shown_src(src: str) -> str:
    """An icon's ``src`` for an error: a ``data:`` URI may be long."""
    shown = repr(src)
    return shown if len(shown) <= 60 else shown[:57] + "..."


def checked_meta_dict(call: str, meta: object) -> dict[str, Any] | None:
    """A copy of ``meta`` (sent as a definition's ``_meta``), if it is ``None`` or a dict
    with string keys and JSON values all the way down (lists and tuples become lists);
    else the error naming the first key that holds something else. Checked here, when
    registered: sent as it is, a value JSON cannot carry would fail every list."""
    if meta is None:
        return None
    if not isinstance(meta, dict):
        raise wrong_type(call, "meta", "a dict", meta, _META_ADVICE)
    for key in cast(dict[object, object], meta):
        if isinstance(key, str):
            _check_meta_key(call, key)
    return cast(dict[str, Any], _json_copy(call, "meta", cast(object, meta)))


def _check_meta_key(call: str, key: str) -> None:
    """Refuse a ``_meta`` key name the specification's format does not allow (2025-11-25,
    "General fields"), or one under a prefix it reserves for MCP (second label
    ``modelcontextprotocol`` or ``mcp``, as in ``io.modelcontextprotocol/``). MCP defines
    no key for a tool's, prompt's or resource's ``_meta``, so a reserved key there is
    one no client may read as meant, and one a later revision may give another meaning."""
    prefix, slash, name = key.rpartition("/")
    labels = prefix.split(".") if slash else []
    if "/" in prefix:
        problem = "which has more than one '/' (only the prefix ends in one)"
    elif (
        bad := next((label for label in labels if not _LABEL.fullmatch(label)), None)
    ) is not None:
        problem = (
            f"whose prefix {prefix + '/'!r} has an empty label (a label is what stands "
            "between its dots)"
            if not bad
            else f"whose prefix label {bad!r} must begin with a letter and end with a letter "
            "or digit, with letters, digits or '-' between"
        )
    elif not _NAME.fullmatch(name):
        problem = (
            f"whose name {name!r} must begin and end with a letter or digit, with letters, "
            "digits, '-', '_' or '.' between"
        )
    elif len(labels) > 1 and labels[1].lower() in _RESERVED_LABELS:
        raise bad_value(
            call,
            "meta",
            f"has the key {key!r}, whose prefix {prefix + '/'!r} the MCP specification "
            f"reserves for MCP itself (its second label is {labels[1]!r})",
            "Use a prefix of your own, in reverse DNS, such as 'com.example/'.",
        )
    else:
        return
    raise bad_value(call, "meta", f"has the key {key!r}, {problem}", _META_KEY_ADVICE)


def _json_copy(call: str, where: str, value: object) -> object:
    """``value`` as JSON data (``where`` names it in an error: ``meta['ui']['size']``)."""
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise bad_value(
                call, where, f"is {value}, which JSON cannot carry", "Pass a finite number."
            )
        return value
    if isinstance(value, dict):
        copied: dict[str, object] = {}
        for key, item in cast(dict[object, object], value).items():
            if not isinstance(key, str):
                raise wrong_type(call, f"the key {key!r} in {where}", "a string", key, _META_ADVICE)
            copied[key] = _json_copy(call, f"{where}[{key!r}]", item)
        return copied
    if isinstance(value, list | tuple):
        items = cast("Sequence[object]", value)
        return [_json_copy(call, f"{where}[{index}]", item) for index, item in enumerate(items)]
    raise wrong_type(call, where, "a JSON value", value, JSON_ADVICE)
