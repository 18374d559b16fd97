"""The "everything" server the official MCP conformance suite tests.

Every tool, resource, prompt and completion the suite's server scenarios name lives
here, written the way any answerback server would write them, so this file doubles as
a tour of the whole server surface: text, image, audio and embedded-resource results,
logging, progress, sampling, elicitation (live on 2025-11-25, as multi-round-trip
results on 2026-07-28), fixed and templated resources, prompts with arguments, images
and embedded resources, completions, list-changed notifications, ``x-mcp-header``
parameters, and hand-made ``InputRequiredResult`` rounds with sealed ``requestState``.

    python conformance/server.py --port 3001

serves both protocol generations at ``http://127.0.0.1:3001/mcp``: 2025-11-25 and
older with sessions, 2026-07-28 statelessly, on the same endpoint.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import io
import json
import struct
import wave
import zlib
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field

from answerback.server import Context, MCPServer
from answerback.transports.http import run_uvicorn
from answerback.types import (
    AudioContent,
    CallToolResult,
    ClientCapabilities,
    CompletionArgument,
    CompletionContext,
    ElicitationCapability,
    EmbeddedResource,
    ImageContent,
    InputRequiredResult,
    PromptReference,
    ResourceTemplateReference,
    SamplingCapability,
    SamplingMessage,
    TextContent,
    TextResourceContents,
)

# -- fixture media, made in code -----------------------------------------------------


def tiny_png() -> bytes:
    """A valid 1x1 red PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)  # 1x1, 8-bit RGB
    pixels = zlib.compress(b"\x00\xff\x00\x00")  # filter byte, then one red pixel
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


def tiny_wav() -> bytes:
    """A valid WAV: 10 ms of silence, 8 kHz mono 16-bit."""
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(8000)
        out.writeframes(b"\x00\x00" * 80)
    return buffer.getvalue()


PNG = tiny_png()
PNG_BASE64 = base64.b64encode(PNG).decode()
WAV_BASE64 = base64.b64encode(tiny_wav()).decode()

mcp = MCPServer(
    "answerback-conformance",
    version="1.0.0",
    instructions="The answerback server the official MCP conformance suite runs against.",
    cache_ttl_ms=60_000,
    cache_scope="public",
)

# -- tools: content of every kind ------------------------------------------------------
# (The first listed tool is called with no arguments by the header-validation
# scenario, so the simplest one comes first.)


@mcp.tool()
def test_simple_text() -> str:
    """Returns a simple text response."""
    return "This is a simple text response for testing."


@mcp.tool()
def test_image_content() -> ImageContent:
    """Returns an image (a 1x1 PNG)."""
    return ImageContent(data=PNG_BASE64, mime_type="image/png")


@mcp.tool()
def test_audio_content() -> AudioContent:
    """Returns audio (a short WAV)."""
    return AudioContent(data=WAV_BASE64, mime_type="audio/wav")


@mcp.tool()
def test_embedded_resource() -> EmbeddedResource:
    """Returns an embedded text resource."""
    return EmbeddedResource(
        resource=TextResourceContents(
            uri="test://embedded-resource",
            mime_type="text/plain",
            text="This is an embedded resource content.",
        )
    )


@mcp.tool()
def test_multiple_content_types() -> list[TextContent | ImageContent | EmbeddedResource]:
    """Returns text, an image and an embedded resource together."""
    return [
        TextContent(text="Multiple content types test:"),
        ImageContent(data=PNG_BASE64, mime_type="image/png"),
        EmbeddedResource(
            resource=TextResourceContents(
                uri="test://mixed-content-resource",
                mime_type="application/json",
                text=json.dumps({"test": "data", "value": 123}),
            )
        ),
    ]


@mcp.tool()
def test_error_handling() -> CallToolResult:
    """Always fails, as a tool result the model can read (not a protocol error)."""
    return CallToolResult(
        content=[TextContent(text="This tool intentionally returns an error for testing")],
        is_error=True,
    )


# -- tools: talking to the client while running ----------------------------------------


@mcp.tool()
async def test_tool_with_logging(ctx: Context) -> str:
    """Sends log messages while it runs."""
    await ctx.info("Tool execution started")
    await asyncio.sleep(0.05)
    await ctx.info("Tool processing data")
    await asyncio.sleep(0.05)
    await ctx.info("Tool execution completed")
    return "Tool with logging executed successfully"


@mcp.tool()
async def test_tool_with_progress(ctx: Context) -> str:
    """Reports progress (if the request carries a progress token)."""
    await ctx.report_progress(0, 100, "Starting")
    await asyncio.sleep(0.05)
    await ctx.report_progress(50, 100, "Halfway")
    await asyncio.sleep(0.05)
    await ctx.report_progress(100, 100, "Done")
    return "Progress reporting completed"


@mcp.tool()
async def test_logging_tool(ctx: Context) -> str:
    """Logs one message; a 2026-07-28 client gets it only if it asked for a log level."""
    await ctx.info("test_logging_tool ran")
    return "Logging tool completed"


@mcp.tool()
async def test_sampling(prompt: str, ctx: Context) -> str:
    """Asks the client's model to answer ``prompt`` (sampling)."""
    result = await ctx.session.create_message(
        [SamplingMessage(role="user", content=TextContent(text=prompt))], max_tokens=100
    )
    text = result.content.text if isinstance(result.content, TextContent) else str(result.content)
    return f"LLM response: {text}"


@mcp.tool()
async def test_missing_capability(ctx: Context) -> str:
    """Needs the client's sampling capability: without it the call fails with -32021."""
    result = await ctx.session.create_message(
        [SamplingMessage(role="user", content=TextContent(text="Say hello."))], max_tokens=20
    )
    return f"Sampled: {result.content}"


class UserResponse(BaseModel):
    username: str = Field(description="User's response")
    email: str = Field(description="User's email address")


@mcp.tool()
async def test_elicitation(message: str, ctx: Context) -> str:
    """Asks the user for a username and an email address (elicitation)."""
    answer = await ctx.elicit(message, schema=UserResponse)
    content = answer.data.model_dump() if answer.action == "accept" else None
    return f"User response: action={answer.action}, content={json.dumps(content)}"


class UserName(BaseModel):
    name: str


class DefaultsForm(BaseModel):
    """A form whose every field has a default (SEP-1034)."""

    name: str = "John Doe"
    age: int = 30
    score: float = 95.5
    status: Literal["active", "inactive", "pending"] = "active"
    verified: bool = True


@mcp.tool()
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """Asks for a form whose fields all have defaults (SEP-1034)."""
    answer = await ctx.elicit("Please review and update the form fields", schema=DefaultsForm)
    content = answer.data.model_dump() if answer.action == "accept" else None
    return f"Elicitation completed: action={answer.action}, content={json.dumps(content)}"


ENUM_FORM: dict[str, Any] = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {
            "type": "string",
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ],
        },
        "legacyEnum": {
            "type": "string",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {
            "type": "array",
            "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
        },
        "titledMulti": {
            "type": "array",
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    },
}


@mcp.tool()
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    """Asks for every kind of choice field (SEP-1330), with the form schema written out."""
    result = await ctx.session.elicit_form("Please choose from the options", ENUM_FORM)
    return f"Elicitation completed: action={result.action}, content={json.dumps(result.content)}"


@mcp.tool()
async def test_streaming_elicitation(ctx: Context) -> str:
    """Asks the user's name: a live request on 2025-11-25, an input request on 2026-07-28
    (never a server-to-client request on the response stream)."""
    answer = await ctx.elicit("What is your name?", schema=UserName)
    return f"Hello, {answer.data.name}!" if answer.action == "accept" else "No name given."


@mcp.tool()
async def test_reconnection(ctx: Context) -> str:
    """Ends its SSE response early (SEP-1699 polling); the answer waits for the client's
    reconnection with Last-Event-ID."""
    ctx.close_sse_stream()
    await asyncio.sleep(0.1)
    return "Reconnection test completed successfully"


# -- tools: list-changed triggers --------------------------------------------------------


@mcp.tool()
async def test_trigger_tool_change() -> str:
    """Tells listening clients that the tool list changed."""
    await mcp.notify_tools_changed()
    return "Sent notifications/tools/list_changed"


@mcp.tool()
async def test_trigger_prompt_change() -> str:
    """Tells listening clients that the prompt list changed."""
    await mcp.notify_prompts_changed()
    return "Sent notifications/prompts/list_changed"


# -- tools: a parameter mirrored in an HTTP header (2026-07-28, SEP-2243) -----------------


@mcp.tool()
def test_custom_header(
    region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})],
) -> str:
    """Echoes ``region``, which clients also send as the ``Mcp-Param-Region`` header."""
    return f"Region: {region}"


# -- tools: JSON Schema 2020-12 kept as written -----------------------------------------

JSON_SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


@mcp.tool(description="Tool with JSON Schema 2020-12 features", input_schema=JSON_SCHEMA_2020_12)
def json_schema_2020_12_tool(
    name: str | None = None,
    address: dict[str, Any] | None = None,
    contactMethod: str | None = None,
    phone: str | None = None,
    email: str | None = None,
) -> str:
    return f"Contact {name or 'someone'} by {contactMethod or 'any means'}"


# -- tools: 2026-07-28 multi-round-trip requests written by hand (SEP-2322) ---------------
# ``ctx.elicit`` and friends do all of this automatically; these tools show the raw
# protocol: return an InputRequiredResult, read the retry's ``ctx.input_responses``,
# keep your own state sealed with ``ctx.seal_state``/``ctx.open_state``.


def ask_form(message: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    schema = {"type": "object", "properties": properties, "required": required}
    return {
        "method": "elicitation/create",
        "params": {"message": message, "requestedSchema": schema},
    }


def ask_model(text: str, max_tokens: int) -> dict[str, Any]:
    message = {"role": "user", "content": {"type": "text", "text": text}}
    return {
        "method": "sampling/createMessage",
        "params": {"messages": [message], "maxTokens": max_tokens},
    }


ASK_ROOTS: dict[str, Any] = {"method": "roots/list", "params": {}}
ASK_NAME = ask_form("What is your name?", {"name": {"type": "string"}}, ["name"])


def answer(ctx: Context, key: str) -> dict[str, Any] | None:
    """The retry's answer to input request ``key``, if it is a usable object."""
    value = (ctx.input_responses or {}).get(key)
    return value if isinstance(value, dict) else None


def form_value(response: dict[str, Any], field: str) -> Any:
    content = response.get("content")
    return content.get(field) if response.get("action") == "accept" and content else None


def sampled_text(response: dict[str, Any]) -> str:
    content = response.get("content")
    return str(content.get("text", "")) if isinstance(content, dict) else ""


@mcp.tool()
def test_input_required_result_elicitation(ctx: Context) -> str | InputRequiredResult:
    """Asks for the user's name with an input request, then greets them."""
    response = answer(ctx, "user_name")
    if response is None:
        return InputRequiredResult(input_requests={"user_name": ASK_NAME})
    return f"Hello, {form_value(response, 'name')}!"


@mcp.tool()
def test_input_required_result_sampling(ctx: Context) -> str | InputRequiredResult:
    """Asks the client's model a question with an input request."""
    response = answer(ctx, "capital_question")
    if response is None:
        question = ask_model("What is the capital of France?", 100)
        return InputRequiredResult(input_requests={"capital_question": question})
    return f"The model says: {sampled_text(response)}"


@mcp.tool()
def test_input_required_result_list_roots(ctx: Context) -> str | InputRequiredResult:
    """Asks for the client's roots with an input request."""
    response = answer(ctx, "client_roots")
    if response is None:
        return InputRequiredResult(input_requests={"client_roots": ASK_ROOTS})
    roots = [root.get("uri") for root in response.get("roots", []) if isinstance(root, dict)]
    return f"Client roots: {', '.join(map(str, roots)) or '(none)'}"


@mcp.tool()
def test_input_required_result_request_state(ctx: Context) -> str | InputRequiredResult:
    """Asks for a confirmation, carrying sealed state to the retry."""
    state = ctx.open_state()
    response = answer(ctx, "confirm")
    if state is None or response is None:
        confirm = ask_form("Please confirm", {"ok": {"type": "boolean"}}, ["ok"])
        return InputRequiredResult(
            input_requests={"confirm": confirm}, request_state=ctx.seal_state({"round": 1})
        )
    return f"state-ok: round {state['round']} confirmed, ok={form_value(response, 'ok')}"


@mcp.tool()
def test_input_required_result_multiple_inputs(ctx: Context) -> str | InputRequiredResult:
    """Asks for a name, a model-written greeting and the roots, all at once."""
    state = ctx.open_state()
    name, greeting, roots = (answer(ctx, key) for key in ("user_name", "greeting", "client_roots"))
    if state is None or name is None or greeting is None or roots is None:
        return InputRequiredResult(
            input_requests={
                "user_name": ASK_NAME,
                "greeting": ask_model("Generate a greeting", 50),
                "client_roots": ASK_ROOTS,
            },
            request_state=ctx.seal_state({"asked": ["user_name", "greeting", "client_roots"]}),
        )
    count = len(roots.get("roots", []))
    return (
        f"{sampled_text(greeting)} {form_value(name, 'name')}! "
        f"({count} root{'s' if count != 1 else ''})"
    )


@mcp.tool()
def test_input_required_result_multi_round(ctx: Context) -> str | InputRequiredResult:
    """Two rounds of questions; the sealed state remembers the first answer."""
    state = ctx.open_state() or {}
    if "name" not in state:
        response = answer(ctx, "step1") if state.get("step") == 1 else None
        if response is None:
            step1 = ask_form("Step 1: What is your name?", {"name": {"type": "string"}}, ["name"])
            return InputRequiredResult(
                input_requests={"step1": step1}, request_state=ctx.seal_state({"step": 1})
            )
        state = {"step": 2, "name": form_value(response, "name")}
    response = answer(ctx, "step2") if state.get("step") == 2 and "color" not in state else None
    if response is None:
        step2 = ask_form(
            "Step 2: What is your favorite color?", {"color": {"type": "string"}}, ["color"]
        )
        return InputRequiredResult(
            input_requests={"step2": step2}, request_state=ctx.seal_state(state)
        )
    return f"{state['name']} likes {form_value(response, 'color')}."


@mcp.tool()
def test_input_required_result_tampered_state(ctx: Context) -> str | InputRequiredResult:
    """Carries sealed state; a retry with altered state fails with -32602."""
    state = ctx.open_state()  # raises InvalidParamsError if the state was tampered with
    response = answer(ctx, "confirm")
    if state is None or response is None:
        confirm = ask_form("Please confirm", {"ok": {"type": "boolean"}}, ["ok"])
        return InputRequiredResult(
            input_requests={"confirm": confirm}, request_state=ctx.seal_state({"issued": True})
        )
    return "state-ok"


@mcp.tool()
def test_input_required_result_capabilities(ctx: Context) -> str | InputRequiredResult:
    """Asks only through what the request's client capabilities allow."""
    can_elicit = ctx.session.check_client_capability(
        ClientCapabilities(elicitation=ElicitationCapability())
    )
    can_sample = ctx.session.check_client_capability(
        ClientCapabilities(sampling=SamplingCapability())
    )
    requests: dict[str, Any] = {}
    if can_elicit and answer(ctx, "user_name") is None:
        requests["user_name"] = ASK_NAME
    if can_sample and answer(ctx, "capital_question") is None:
        requests["capital_question"] = ask_model("What is the capital of France?", 100)
    if requests:
        return InputRequiredResult(input_requests=requests)
    return f"Done (elicitation: {can_elicit}, sampling: {can_sample})"


# -- resources ---------------------------------------------------------------------------


@mcp.resource("test://static-text", name="static-text", mime_type="text/plain")
def static_text() -> str:
    """A static text resource."""
    return "This is the content of the static text resource."


@mcp.resource("test://static-binary", name="static-binary", mime_type="image/png")
def static_binary() -> bytes:
    """A static binary resource (a 1x1 PNG)."""
    return PNG


@mcp.resource("test://watched-resource", name="watched-resource", mime_type="text/plain")
def watched_resource() -> str:
    """A resource clients may subscribe to."""
    return "This resource can be watched for updates."


@mcp.resource("test://template/{id}/data", name="template-data", mime_type="application/json")
def template_data(id: str) -> dict[str, Any]:
    """Data for any ID, from a URI template."""
    return {"id": id, "templateTest": True, "data": f"Data for ID: {id}"}


# -- prompts -----------------------------------------------------------------------------


@mcp.prompt()
def test_simple_prompt() -> str:
    """A prompt with no arguments."""
    return "This is a simple prompt for testing."


@mcp.prompt()
def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
    """A prompt filled in from two arguments."""
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@mcp.prompt()
def test_prompt_with_embedded_resource(resourceUri: str) -> list[Any]:
    """A prompt that embeds a resource."""
    return [
        EmbeddedResource(
            resource=TextResourceContents(
                uri=resourceUri,
                mime_type="text/plain",
                text="Embedded resource content for testing.",
            )
        ),
        "Please process the embedded resource above.",
    ]


@mcp.prompt()
def test_prompt_with_image() -> list[Any]:
    """A prompt that includes an image."""
    return [
        ImageContent(data=PNG_BASE64, mime_type="image/png"),
        "Please analyze the image above.",
    ]


class PromptContext(BaseModel):
    context: str


@mcp.prompt()
async def test_input_required_result_prompt(ctx: Context) -> str:
    """A prompt that asks the user for context first (an input request on 2026-07-28)."""
    answer = await ctx.elicit("What context should the prompt use?", schema=PromptContext)
    context = answer.data.context if answer.action == "accept" else "none given"
    return f"Use this context: {context}"


# -- completions -------------------------------------------------------------------------

SUGGESTIONS = {
    "arg1": ["test", "testing", "test-value-1", "example"],
    "arg2": ["test-value-2", "another", "sample"],
}


@mcp.completion()
async def complete(
    ref: PromptReference | ResourceTemplateReference,
    argument: CompletionArgument,
    context: CompletionContext | None,
) -> list[str]:
    """Suggest values for the prompt arguments and template IDs that start as typed."""
    if isinstance(ref, PromptReference) and ref.name == "test_prompt_with_arguments":
        options = SUGGESTIONS.get(argument.name, [])
    elif isinstance(ref, ResourceTemplateReference) and argument.name == "id":
        options = ["123", "456", "789"]
    else:
        options = []
    return [option for option in options if option.startswith(argument.value)]


# -- running -----------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=3001)
    args = parser.parse_args()
    run_uvicorn(mcp.http_app(path="/mcp"), host=args.host, port=args.port)


if __name__ == "__main__":
    main()
