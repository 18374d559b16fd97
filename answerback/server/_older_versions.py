"""What the server sends a client whose protocol version predates part of a result.

``types._versions`` says which wire feature arrived in which version; this module is the
one place where the server applies that to what it sends. A strict client of an older
version (one that checks content blocks against its own schema's union) would refuse a
whole result for one block it does not know, so a block is never sent to a version that
lacks it. Content becomes a text block saying what it was, rather than vanishing: the
model still learns that a link or a recording was there (a link's URI stays usable: every
version can read resources), and a result whose only block was new is not left empty.
Fields that are only extra keys on an open object (``title``, ``icons``, ``_meta``) are
left alone: every version's schema lets objects carry more.
"""

from __future__ import annotations

import logging
from typing import Any, cast

from answerback.jsonrpc import JSONObject
from answerback.types import ServerCapabilities, Tool
from answerback.types._versions import has_feature

logger = logging.getLogger("answerback.server")


def fit_capabilities(capabilities: ServerCapabilities, version: str) -> ServerCapabilities:
    """``capabilities`` without the ``completions`` entry before 2025-03-26 (that version
    added it; ``completion/complete`` itself is older and still answered)."""
    if capabilities.completions is None or has_feature(version, "completions_capability"):
        return capabilities
    return capabilities.model_copy(update={"completions": None})


def fit_tools(tools: list[Tool], version: str) -> list[Tool]:
    """Tool definitions without an output schema before 2025-06-18, which added them."""
    if has_feature(version, "structured_content"):
        return tools
    return [tool.model_copy(update={"output_schema": None}) for tool in tools]


def fit_tool_result(result: JSONObject, version: str) -> JSONObject:
    """A ``tools/call`` result a ``version`` client can parse: no ``structuredContent``
    before 2025-06-18 (the tool's text content already carries it), and content blocks of
    a kind the version lacks told as text."""
    if has_feature(version, "resource_links"):  # the newest of these: nothing to fit
        return result
    if not has_feature(version, "structured_content"):
        result.pop("structuredContent", None)
    content = result.get("content")
    if isinstance(content, list):
        blocks = cast(list[Any], content)
        result["content"] = [_fit_block(block, version) for block in blocks]
    return result


def fit_prompt_result(result: JSONObject, version: str) -> JSONObject:
    """A ``prompts/get`` result whose messages hold only content blocks ``version`` has."""
    messages = result.get("messages")
    if isinstance(messages, list):
        for message in cast(list[Any], messages):
            if isinstance(message, dict):
                fields = cast(JSONObject, message)
                fields["content"] = _fit_block(fields.get("content"), version)
    return result


def _fit_block(block: Any, version: str) -> Any:
    """``block``, or a text block describing it if ``version`` has no block of its kind."""
    if not isinstance(block, dict):
        return block
    fields = cast(JSONObject, block)
    kind = fields.get("type")
    if kind == "resource_link" and not has_feature(version, "resource_links"):
        details = [str(fields.get("title") or fields.get("name") or "")]
        details += [str(fields[key]) for key in ("description", "mimeType") if fields.get(key)]
        about = "; ".join(detail for detail in details if detail)
        text = f"Resource link: {fields.get('uri')}" + (f" ({about})" if about else "")
    elif kind == "audio" and not has_feature(version, "audio_content"):
        text = (
            f"[{fields.get('mimeType') or 'audio'} audio left out: protocol version "
            f"{version} has no audio content]"
        )
    else:
        return fields
    logger.info("sent a %s block as text to a client of protocol version %s", kind, version)
    told: JSONObject = {"type": "text", "text": text}
    if "annotations" in fields:
        told["annotations"] = fields["annotations"]
    return told
