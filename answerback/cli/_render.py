"""How results, listings and log lines look on a terminal (rich) or in a pipe (plain).

A person reads a tool's answer, not its JSON: text as text, an image as a line that says
what it is and how big, structured content as indented JSON. The same functions serve
``call`` and the interactive session; ``--json`` bypasses them for programs. Whatever a
server wrote comes out with its control characters written out (``clean``): it is shown,
never obeyed by the terminal.
"""

from __future__ import annotations

import base64
import binascii
import codecs
import json
import unicodedata
from typing import Any

from rich.cells import cell_len, chop_cells
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from answerback.interact import clean
from answerback.types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    GetPromptResult,
    ImageContent,
    LoggingMessageNotificationParams,
    Prompt,
    ReadResourceResult,
    Resource,
    ResourceContents,
    ResourceLink,
    ResourceTemplate,
    TextContent,
    TextResourceContents,
    Tool,
)

_LEVEL_STYLES = {
    "debug": "dim",
    "info": "cyan",
    "notice": "blue",
    "warning": "yellow",
    "error": "red",
    "critical": "bold red",
    "alert": "bold red",
    "emergency": "bold red reverse",
}


def shown(text: str, *, newlines: bool = True) -> str:
    """A peer's text as rich markup that prints it as it is: written-out control
    characters, escaped markup; without ``newlines``, its line breaks written out too,
    for text that must stay on its line (a name, a progress message)."""
    return escape(clean(text, newlines=newlines))


def size_text(data: str) -> str:
    """The decoded size of base64 ``data``, as a person reads it ("12 KB")."""
    try:
        count = len(base64.b64decode(data, validate=False))
    except (binascii.Error, ValueError):
        count = len(data)
    if count < 1024:
        return f"{count} B"
    if count < 1024 * 1024:
        return f"{round(count / 1024)} KB"
    return f"{count / (1024 * 1024):.1f} MB"


def content_text(block: object) -> str:
    """One content block as text: text itself, anything binary described in brackets."""
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, ImageContent):
        return f"[image {block.mime_type}, {size_text(block.data)}]"
    if isinstance(block, AudioContent):
        return f"[audio {block.mime_type}, {size_text(block.data)}]"
    if isinstance(block, ResourceLink):
        label = f" ({block.name})" if block.name and block.name != block.uri else ""
        return f"[resource link {block.uri}{label}]"
    if isinstance(block, EmbeddedResource):
        return resource_text(block.resource)
    kind = getattr(block, "type", type(block).__name__)
    return f"[{kind} content]"


def resource_text(contents: ResourceContents) -> str:
    if isinstance(contents, TextResourceContents):
        return contents.text
    if not isinstance(contents, BlobResourceContents):
        # Neither text nor a blob: a newer server's kind of contents.
        mime = f", {contents.mime_type}" if contents.mime_type else ""
        return f"[resource {contents.uri}{mime}, contents of a kind not shown]"
    mime = contents.mime_type or "application/octet-stream"
    if (text := _blob_as_text(contents.blob, mime)) is not None:
        return text
    return f"[resource {contents.uri}, {mime}, {size_text(contents.blob)}]"


_TEXT_TYPES = ("application/json", "application/xml", "application/yaml")


def _blob_as_text(blob: str, mime: str) -> str | None:
    """A blob whose type says it is text (``text/plain``, JSON), decoded to show it;
    ``None`` if the type says otherwise or it is not UTF-8."""
    kind = mime.partition(";")[0].strip().lower()
    if not (kind.startswith("text/") or kind in _TEXT_TYPES or kind.endswith("+json")):
        return None
    try:
        return base64.b64decode(blob, validate=False).decode()
    except (binascii.Error, ValueError):
        return None


def pretty_json(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


_JSON_ESCAPED = frozenset(("Cc", "Cf", "Cs"))
"""What ``json_output`` escapes beyond ASCII: the categories ``clean`` writes out."""


def json_output(value: Any, encoding: str | None = "utf-8") -> str:
    """``--json``'s text: ``value`` as JSON, with each character JSON leaves raw that a
    terminal would obey or hide (C1 controls such as U+009B, bidi overrides and other
    format characters, lone surrogates) written as a ``\\u`` escape, which every JSON
    reader turns back into that character: a program reads what the server sent, a
    person's terminal shows it.

    Written in ``encoding`` other than UTF-8 (a latin-1 or ASCII locale), every
    character past ASCII is escaped: one that encoding cannot hold would otherwise come
    out as a Python escape (``\\xe9``), which is not JSON."""
    if not _is_utf8(encoding):
        return json.dumps(value, indent=2, ensure_ascii=True)
    text = pretty_json(value)
    table = {
        ord(char): json.dumps(char)[1:-1]  # \uXXXX, or a surrogate pair past U+FFFF
        for char in set(text)
        if not char.isascii() and unicodedata.category(char) in _JSON_ESCAPED
    }
    return text.translate(table) if table else text


def _is_utf8(encoding: str | None) -> bool:
    """Whether text written in ``encoding`` keeps every character (``None``: a stream
    of text that is not encoded, such as ``io.StringIO``)."""
    try:
        return codecs.lookup(encoding or "utf-8").name == "utf-8"
    except LookupError:
        return False


def result_text(result: CallToolResult) -> str:
    """A tool's result for a person: each content block, then structured content as
    JSON when it says more than the text does."""
    parts = [content_text(block) for block in result.content]
    structured = result.structured_content
    if structured is not None and not _said(structured, parts):
        parts.append(pretty_json(structured))
    return clean("\n".join(parts))


def _said(structured: dict[str, Any], parts: list[str]) -> bool:
    """Whether the text already says what the structured content does: the same JSON,
    or a plain value a server wrapped as ``{"result": value}``."""
    for part in parts:
        try:
            value: object = json.loads(part)
        except json.JSONDecodeError:
            value = part
        if value == structured or structured == {"result": value}:
            return True
    return False


def read_text(result: ReadResourceResult) -> str:
    return clean("\n".join(resource_text(contents) for contents in result.contents))


def prompt_text(result: GetPromptResult) -> str:
    lines = [f"({result.description})"] if result.description else []
    lines += [f"{message.role}: {content_text(message.content)}" for message in result.messages]
    return clean("\n".join(lines))


LOG_CONTINUED = " " * 9 + "│ "
"""What starts each further line of a server's log message, under its first line's text."""


def log_line(
    server: str, params: LoggingMessageNotificationParams, width: int | None = None
) -> str:
    """A server's log message as rich markup: level, server, logger, message.

    Only the first line is the message's own; every further line starts with
    ``LOG_CONTINUED``, so a message with line breaks cannot forge lines that look like
    the client's (a prompt, "form accepted"). Server and logger stay on the first line.
    Given the terminal's ``width``, the message is also cut into rows that fit it, each
    further row marked: a terminal wrapping a long line itself would start a row with
    whatever the server padded up to the edge.
    """
    data = params.data if isinstance(params.data, str) else json.dumps(params.data)
    style = _LEVEL_STYLES.get(params.level, "")
    where = clean(f"{server}/{params.logger}" if params.logger else server, newlines=False)
    head = f"{params.level.upper():<8} {where}: "
    lines = clean(data).split("\n")
    if width is not None:
        lines = _rows(lines, width - cell_len(head), width - cell_len(LOG_CONTINUED))
    first, *more = lines
    text = escape(first) + "".join(f"\n[dim]{LOG_CONTINUED}[/]{escape(line)}" for line in more)
    return f"[{style}]{params.level.upper():<8}[/] [bold]{escape(where)}[/]: {text}"


def _rows(lines: list[str], first_room: int, room: int) -> list[str]:
    """``lines`` cut to rows of at most ``first_room`` cells for the first, ``room`` for
    the rest (at least one cell each: a narrow terminal still shows everything)."""
    rows: list[str] = []
    for line in lines:
        left = line
        while True:
            fits = max(first_room if not rows else room, 1)
            chunk = chop_cells(left, fits)[0] if left else ""
            rows.append(chunk)
            left = left[len(chunk) :]
            if not left:
                break
    return rows


def print_listing(
    console: Console,
    server: str,
    tools: list[Tool],
    resources: list[Resource],
    templates: list[ResourceTemplate],
    prompts: list[Prompt],
    *,
    show: tuple[str, ...] = ("tools", "resources", "prompts"),
) -> None:
    """The server's tools, resources and prompts: tables on a terminal, lines otherwise."""
    sections: list[tuple[str, list[tuple[str, str]]]] = []
    if "tools" in show:
        sections.append(("tools", [(t.name, _first_line(t.description)) for t in tools]))
    if "resources" in show:
        rows = [(r.uri, _first_line(r.description) or _other(r.name, r.uri)) for r in resources]
        # A template is read with its {placeholders} filled in, never as it is written.
        rows += [
            (t.uri_template, f"(template) {_first_line(t.description) or _other(t.name, '')}")
            for t in templates
        ]
        sections.append(("resources", rows))
    if "prompts" in show:
        sections.append(("prompts", [(p.name, _first_line(p.description)) for p in prompts]))
    for title, rows in sections:
        if console.is_terminal:
            table = Table(title=f"{shown(server)}: {title}", title_justify="left", expand=False)
            table.add_column("name", style="bold")
            table.add_column("description")
            for name, description in rows:
                table.add_row(shown(name, newlines=False), shown(description))
            if not rows:
                table.add_row("[dim](none)[/]", "")
            console.print(table)
        else:
            heading = clean(f"{server} {title}:", newlines=False)
            console.print(heading, markup=False, highlight=False, soft_wrap=True)
            for name, description in rows:
                line = f"  {name}  {description}" if description else f"  {name}"
                console.print(
                    clean(line, newlines=False), markup=False, highlight=False, soft_wrap=True
                )
            if not rows:
                console.print("  (none)", markup=False, highlight=False, soft_wrap=True)


def _first_line(text: str | None) -> str:
    """The first line of a description, ending in "…" when more lines follow."""
    lines = (text or "").strip().splitlines()
    if not lines:
        return ""
    return lines[0].rstrip() + (" …" if len(lines) > 1 else "")


def _other(name: str, uri: str) -> str:
    """A resource's name, when it says more than its URI."""
    return name if name != uri else ""
