"""Tools: from a Python function to an MCP tool, and from its return value to a result.

The input schema comes from the function's signature (pydantic does the work, so
models, ``Annotated`` constraints and defaults all carry over). The parameter annotated
with ``Context`` is injected, never exposed. An argument the function has no parameter
for is an invalid-arguments error naming the arguments there are (as the client sends
them, aliases included), never dropped: a misspelt optional one would leave its
parameter at the default without a word. A hand-written ``input_schema=`` is the
contract instead: a key it allows that the function does not take is dropped, and only
one that says ``"additionalProperties": false`` refuses unknown keys.

The return annotation decides structured output: what is always a JSON object (a
model, dataclass, ``TypedDict``, or a ``dict``, whose keys pydantic writes as strings)
is the structured content itself; any other type (a list, a scalar, a union that may be
something else, ``None`` included) is wrapped as ``{"result": value}``, which is how a
``list[str]`` tool produces ``structured_content == {"result": [...]}``.

An annotation that mentions content blocks (``ImageContent``, ``ContentBlock``, a list
or union with one in it) declares no output schema: such a tool returns content, which
is what the model reads, and a schema would make every client demand structured content
beside it. Content returned is sent block by block: a block, or a list holding one (the
rest of it a ``str`` sent as text, ``None`` as nothing, anything else as its JSON text),
as the official SDK sends it. Under an annotation that admits anything (``-> Any``,
``-> list[object]``) the tool keeps its schema, and the blocks also go, as written on
the wire, into the structured content, which is checked against the schema like a
``CallToolResult``'s: no result is sent that its own tool's schema refuses.

Binary data (``bytes``, ``bytearray``, ``memoryview``) is never sent as text, where it
would be its Python repr: a return annotation that allows nothing else (``-> bytes``,
``-> bytes | None``) is refused at registration, and such a value returned anyway is an
error result saying what to return instead; inside a container (``list[bytes]``) it is
sent as text when it is UTF-8, else refused when returned. Any
other value with no JSON form (a class of the author's own) goes out as its ``str()``,
with a warning the first time each tool returns each such type.

``None`` is empty content under ``-> None``, ``-> X | None`` or no annotation (a tool
may act and have nothing to say, as the official SDK has it), and an error result under
an annotation without ``None``, where it can only be a forgotten ``return``.

A ``CallToolResult`` the tool builds itself is sent as it is, with two checks: a tool
with an output schema owes a successful result ``structured_content`` that fits it (as
the specification says servers MUST), judged by the JSON Schema checker the client uses
too (``forms/_json_schema.py``), so the server refuses what an answerback client would;
and no content block, there or in returned content, may be of a type MCP does not define
(``UnknownContent``, which the shared model keeps only so a client can read a newer
server's content): either is an error result naming the tool.

A result is built straight as its wire dict: it is only ever sent, and building the
``CallToolResult`` model just to dump it again cost more than the rest of a plain call.
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from types import UnionType
from typing import Annotated, Any, Literal, Union, cast, get_args, get_origin

import pydantic
import pydantic_core
from pydantic import BaseModel, TypeAdapter

from answerback.forms._json_schema import SchemaCheck, compile_schema, cut
from answerback.forms._patterns import BUDGET_WORDS
from answerback.jsonrpc import JSONObject
from answerback.jsonrpc._endpoint import new_error_reference, redacted_message
from answerback.server._functions import (
    ANY_VALUE,
    KNOWN_CONTENT,
    NAN_KEPT,
    accepted_arguments,
    call,
    read_signature,
    type_name,
    unknown_arguments,
    unknown_content_type,
    unreadable_parameters,
    written_at,
)
from answerback.server._literals import reading_member_values
from answerback.server._output_schema import output_json_schema, wrapped_output_schema
from answerback.server._roots_guard import PathOutsideRootsError
from answerback.types import (
    AudioContent,
    CallToolResult,
    EmbeddedResource,
    Icon,
    ImageContent,
    InputRequiredResult,
    ResourceLink,
    TextContent,
    Tool,
    ToolAnnotations,
    UnknownContent,
)
from answerback.types._errors import listed_problems, shown_problems

logger = logging.getLogger("answerback.server")

_CONTENT_TYPES = (TextContent, ImageContent, AudioContent, EmbeddedResource, ResourceLink)
_RETURNED_BLOCKS = (*_CONTENT_TYPES, UnknownContent)
"""What a tool may return as content: the known kinds, and ``UnknownContent``, which is
recognised as content only to be refused (``_unknown_content_result``)."""
_NO_RETURN = (inspect.Signature.empty, None, type(None))
_BINARY = (bytes, bytearray, memoryview)
_BINARY_ADVICE = (
    "return an ImageContent or AudioContent (the data as base64), an EmbeddedResource "
    "holding a BlobResourceContents, or text"
)
"""What a tool returns in place of binary data, which JSON text cannot carry as it is."""
_ARGUMENTS_CONFIG = pydantic.ConfigDict(extra="ignore")
"""The arguments model drops keys it has no field for; whether such a key is refused is
decided beside it (``RegisteredTool.refuses_others``), because pydantic's own refusal
(``extra="forbid"``) costs every call about a microsecond more, while counting the
fields set costs nothing."""
_REFUSING_CONFIG = pydantic.ConfigDict(extra="forbid")
"""The arguments model again, refusing other keys: run only for arguments that hold one,
for pydantic's own verdict on them (the names as the client sent them, aliases too)."""


@dataclass(slots=True)
class RegisteredTool:
    """A tool the server offers: its wire description and how to call it."""

    definition: Tool
    function: Callable[..., Any]
    arguments_model: type[BaseModel]
    context_parameter: str | None
    output_adapter: TypeAdapter[Any] | None
    wraps_result: bool
    scopes: frozenset[str] = frozenset()
    """OAuth scopes a caller's token must hold to call it (over HTTP with a
    ``ResourceServer``; elsewhere there is no token to check)."""
    output_validator: SchemaCheck | Literal[False] | None = None
    """The checker of ``definition.output_schema``, built for the first ``CallToolResult``
    the tool returns itself, or content it returns (plain values never need it);
    ``False`` if the schema could not be compiled, when such results are sent unchecked."""
    refuses_none: bool = False
    """Whether returning ``None`` is an error: under a return annotation that does not
    allow it (``-> str``, ``-> ImageContent``), where it means a forgotten ``return``.
    ``-> None``, ``-> X | None`` and a function with no annotation send empty content."""
    may_hold_blocks: bool = True
    """Whether a returned list may hold content blocks, so is looked through for them:
    not under an annotation a list with one in it would not fit (``list[int]``), where
    the look would cost as much as sending the list."""
    on_loop: bool = False
    """An ``async def``, awaited on the event loop; anything else runs in a worker
    thread (``Signature.on_loop``)."""
    refuses_others: bool = True
    """Whether an argument the function has no parameter for is refused, not dropped: it
    is most likely a misspelt optional one, which would otherwise keep its default without
    a word (the generated input schema says ``"additionalProperties": false``). Under an
    ``input_schema=`` written by hand that allows other keys, the schema is the contract:
    a key it allows and the function does not take is dropped, since a client that checked
    its arguments against the advertised schema could not foresee a refusal."""
    refusing_model: type[BaseModel] | None = None
    """``arguments_model`` refusing other keys (``_REFUSING_CONFIG``), made the first time
    arguments hold one."""
    sent_as_str: set[type] = field(default_factory=set[type])
    """The types of values with no JSON form this tool returned, sent as their ``str()``:
    the author is warned of each once, not on every call."""

    @classmethod
    def from_function(
        cls,
        function: Callable[..., Any],
        *,
        name: str | None,
        title: str | None,
        description: str | None,
        annotations: ToolAnnotations | None,
        structured_output: bool | None,
        context_type: type,
        input_schema: dict[str, Any] | None = None,
        scopes: Sequence[str] = (),
        icons: list[Icon] | None = None,
        meta: dict[str, Any] | None = None,
    ) -> RegisteredTool:
        signature = read_signature(function, context_type)
        fields: dict[str, Any] = {
            name: (reading_member_values(annotation), default)
            for name, (annotation, default) in signature.parameters.items()
        }
        context_parameter = signature.context_parameter
        refuses_others = input_schema is None or input_schema.get("additionalProperties") is False
        try:
            arguments_model = pydantic.create_model(  # type: ignore[call-overload]
                f"{function.__name__}Arguments", __config__=_ARGUMENTS_CONFIG, **fields
            )
            advertised_schema = input_schema or {
                **_clean_schema(arguments_model.model_json_schema()),
                "additionalProperties": False,
            }
        except pydantic.PydanticUserError as exc:
            raise _unreadable_parameters(function, signature.parameters, exc) from None

        returns = _output_annotation(signature.returns)
        if _names_binary(returns):
            raise TypeError(
                f"tool {function.__name__!r} ({written_at(function) or 'unknown place'}): its "
                f"return annotation {type_name(returns)} allows only binary data, which a tool "
                "result cannot hold: "
                f"{_BINARY_ADVICE}"
            )
        output_adapter, output_schema, wraps_result = _described_output(
            function.__name__, returns, structured_output
        )
        definition = Tool(
            name=name or function.__name__,
            title=title,
            description=description if description is not None else inspect.getdoc(function),
            input_schema=advertised_schema,
            output_schema=output_schema,
            annotations=annotations,
            icons=icons,
            meta=meta,
        )
        return cls(
            definition,
            function,
            arguments_model,
            context_parameter,
            output_adapter,
            wraps_result,
            frozenset(scopes),
            refuses_none=returns not in _NO_RETURN and not _admits_none(returns),
            may_hold_blocks=output_adapter is None or _admits_blocks(output_adapter),
            on_loop=signature.on_loop,
            refuses_others=refuses_others,
        )

    async def call(
        self, arguments: dict[str, Any], context: Any
    ) -> JSONObject | InputRequiredResult:
        """Run the tool: its wire result, or the ``InputRequiredResult`` it returned (which
        only a 2026-07-28 client may receive). Invalid arguments become an ``isError``
        result; exceptions propagate to the caller, which decides how to report them."""
        try:
            parsed = self.arguments_model.model_validate(arguments)
            # Fewer fields set than keys sent: a key named no parameter (or two keys one).
            if self.refuses_others and len(parsed.model_fields_set) < len(arguments):
                parsed = self._refusing().model_validate(arguments)
        except pydantic.ValidationError as exc:
            return self._invalid_arguments_result(arguments, exc)
        kwargs = dict(vars(parsed))  # the validated values, by parameter name
        if self.context_parameter is not None:
            kwargs[self.context_parameter] = context
        return self.to_result(await call(self.function, kwargs, self.on_loop))

    def to_result(self, value: Any) -> JSONObject | InputRequiredResult:
        """The wire result for what the tool function returned."""
        if isinstance(value, InputRequiredResult):
            return value
        if isinstance(value, CallToolResult):
            if (kind := unknown_content_type(value.content)) is not None:
                return self._unknown_content_result(kind)
            if value.is_error or self.definition.output_schema is None:
                return value.to_wire()
            return self._checked_result(value)
        if value is None and self.refuses_none:
            return self._none_result()
        if isinstance(value, _BINARY):
            return self._binary_result(value)
        if self.may_hold_blocks and (items := _content_items(value)) is not None:
            return self._content_result(value, items)
        if self.output_adapter is not None:
            try:
                # Checked, not only dumped: pydantic dumps a value of the wrong type with
                # a warning, and the client would get content that breaks the schema.
                value = self.output_adapter.validate_python(value)
            except pydantic.ValidationError as exc:
                return self._unfit_result(exc)
            try:
                dumped = self.output_adapter.dump_python(value, mode="json", by_alias=True)
            except (UnicodeDecodeError, pydantic_core.PydanticSerializationError) as exc:
                return self._unwritable_result(exc)
            if isinstance(value, str):
                text = value
            else:
                try:
                    text = json.dumps(dumped, ensure_ascii=False, allow_nan=False)
                except ValueError:  # NaN or Infinity: refused here, so every transport agrees
                    return self._not_json_result()
            structured = {"result": dumped} if self.wraps_result else dumped
            return _wire_result([_text_block(text)], structured=structured)
        if value is None:
            return _wire_result([])
        text = value if isinstance(value, str) else self._text(value)
        return self._binary_result(value) if text is None else _wire_result([_text_block(text)])

    def _refusing(self) -> type[BaseModel]:
        if self.refusing_model is None:
            self.refusing_model = type(
                self.arguments_model.__name__,
                (self.arguments_model,),
                {"model_config": _REFUSING_CONFIG, "__module__": __name__},
            )
        return self.refusing_model

    def _invalid_arguments_result(
        self, arguments: dict[str, Any], exc: pydantic.ValidationError
    ) -> JSONObject:
        """The error result for arguments the signature refuses: each problem, an
        unknown argument (a misspelt name would otherwise leave its parameter at its
        default without a word) named with the arguments the tool takes."""
        if self.refuses_others and not any(
            error["type"] == "extra_forbidden" for error in exc.errors()
        ):
            try:  # the refusing model's verdict names other keys too, if any
                self._refusing().model_validate(arguments)
            except pydantic.ValidationError as refused:
                exc = refused
        errors = exc.errors(include_url=False)
        # pydantic's own judgement, by the names the client sent (an alias, not the
        # parameter's Python name), rather than one recomputed here.
        unknown = [
            str(error["loc"][0])
            for error in errors
            if error["type"] == "extra_forbidden" and error["loc"]
        ]
        problems = [
            f"{'.'.join(map(str, error['loc'])) or 'arguments'}: {error['msg']}"
            for error in errors
            if error["type"] != "extra_forbidden"
        ]
        if unknown:
            problems.insert(0, unknown_arguments(unknown))
        message = f"Invalid arguments for tool {self.definition.name!r}: {'; '.join(problems)}"
        if unknown:
            message += f". {accepted_arguments(self.arguments_model.model_fields)}"
        return _error_result(message)

    def _content_result(self, value: Any, items: list[Any]) -> JSONObject:
        """The result for returned content (see the module's docstring), with the
        structured content the tool's output schema asks for, if it has one."""
        if (kind := unknown_content_type(items)) is not None:
            return self._unknown_content_result(kind)
        content: list[JSONObject] = []
        for item in items:
            if isinstance(item, _RETURNED_BLOCKS):
                content.append(item.to_wire())
            elif item is not None:
                text = item if isinstance(item, str) else self._text(item)
                if text is None:
                    return self._binary_result(item)
                content.append(_text_block(text))
        if self.output_adapter is None:
            return _wire_result(content)
        try:
            value = self.output_adapter.validate_python(value)
        except pydantic.ValidationError as exc:
            return self._unfit_result(exc)
        try:
            data, others = _as_data(value)
        except (UnicodeDecodeError, pydantic_core.PydanticSerializationError) as exc:
            return self._unwritable_result(exc)
        try:
            json.dumps(others, allow_nan=False)  # the blocks hold none: their models refuse it
        except ValueError:
            return self._not_json_result()
        structured = {"result": data} if self.wraps_result else data
        advice = (
            "return content under an annotation that names it (-> list[ContentBlock]), "
            "which declares no output schema, or a value that fits the annotation."
        )
        if (refused := self._misfit(structured, advice)) is not None:
            return refused
        return _wire_result(content, structured=structured)

    def _text(self, value: Any) -> str | None:
        """The text of a value returned without a schema to write it by: its JSON, or,
        for a value with no JSON form (a class of the author's own), its ``str()``, of
        which the author is warned once per type; ``None`` for binary data, which no
        text stands for (``_binary_result``)."""
        if isinstance(value, _BINARY):
            return None
        try:
            return json.dumps(ANY_VALUE.dump_python(value, mode="json"), ensure_ascii=False)
        except UnicodeDecodeError:  # bytes inside, that are not UTF-8 text
            return None
        except (TypeError, ValueError, pydantic_core.PydanticSerializationError) as exc:
            kind: type = type(cast(object, value))
            if kind not in self.sent_as_str:
                self.sent_as_str.add(kind)
                logger.warning(
                    "tool %r returned a value of type %s, which has no JSON form (%s), so it "
                    "is sent as its str(); if the model should read something else, return a "
                    "JSON value, a pydantic model, a dataclass or content blocks (said once "
                    "per type)",
                    self.definition.name,
                    type_name(kind),
                    cut(str(exc)),
                )
            return str(value)

    def _binary_result(self, value: Any) -> JSONObject:
        """The error result for binary data returned (``bytes``, or a value holding
        bytes that are not UTF-8 text): sent as text it would be its Python repr."""
        name = self.definition.name
        kind = type_name(type(value))
        if not isinstance(value, _BINARY):
            kind = f"bytes that are not UTF-8 text, inside a {kind}"
        logger.warning("tool %r returned binary data (%s), which it cannot send", name, kind)
        return _error_result(
            f"Tool {name!r} returned binary data ({kind}), which a tool result cannot "
            f"hold: {_BINARY_ADVICE}."
        )

    def _none_result(self) -> JSONObject:
        """The error result for ``None`` from a tool whose return annotation does not
        allow it: sent as empty content, it would hide a forgotten ``return``."""
        name = self.definition.name
        logger.warning("tool %r returned None, which its return annotation does not allow", name)
        return _error_result(
            f"Tool {name!r} returned None, which its return annotation does not allow: "
            "add the missing return, or annotate the tool `-> ... | None` if it may have "
            "nothing to return."
        )

    def _unfit_result(self, exc: pydantic.ValidationError) -> JSONObject:
        """The error result for a value that does not fit the tool's return annotation,
        whose schema the tool declared as its ``outputSchema``."""
        name = self.definition.name
        problems = listed_problems(exc, "value")
        logger.warning("tool %r returned a value its annotation does not allow: %s", name, problems)
        return _error_result(
            f"Tool {name!r} returned a value that does not fit its return annotation "
            f"({problems}): return what the annotation says, or change the annotation."
        )

    def _checked_result(self, result: CallToolResult) -> JSONObject:
        """A successful ``CallToolResult`` the tool built itself, as it is if its
        ``structured_content`` fits the tool's output schema; else the error result
        saying what is wrong with it."""
        name = self.definition.name
        advice = (
            "return structured_content that fits the schema of its return annotation, or "
            "is_error=True for a failure."
        )
        if result.structured_content is None:
            logger.warning(
                "tool %r returned a CallToolResult without the structured_content its "
                "output schema requires",
                name,
            )
            return _error_result(
                f"Tool {name!r} returned a CallToolResult without structured_content, which "
                f"its output schema requires: {advice}"
            )
        refused = self._misfit(result.structured_content, advice)
        return result.to_wire() if refused is None else refused

    def _misfit(self, structured: Any, advice: str) -> JSONObject | None:
        """The error result for ``structured`` content the tool's output schema does not
        allow (``advice`` saying what to do), or ``None`` if it fits."""
        name = self.definition.name
        validator = self._output_validator()
        if validator is False:
            return None
        try:
            verdict = validator.judge(structured, "structured_content")
        except Exception as exc:  # RecursionError: content nested too deeply to check
            reason = cut(str(exc) or type(exc).__name__)
            logger.warning(
                "tool %r returned structured_content its output schema could not be "
                "applied to (%s)",
                name,
                reason,
            )
            # Failing closed: content this deep could not be sent anyway (pydantic's
            # serialiser stops sooner than the check does).
            return _error_result(
                f"Tool {name!r} returned structured_content that could not be checked "
                f"against its output schema ({reason}): return content nested less deeply."
            )
        problems = verdict.problems
        if verdict.too_slow:
            # The schema is the server's own, so its author is the one to tell; and the
            # content is refused, not sent unchecked: a hidden problem may remain.
            found = shown_problems(problems) if problems else "nothing wrong before it stopped"
            logger.warning(
                "tool %r returned structured_content too slow to check against its output "
                "schema: %s",
                name,
                found,
            )
            return _error_result(
                f"Tool {name!r} returned structured_content that is too slow to check "
                "against its output schema: its patterns took more than the time one result "
                f"may spend on them ({BUDGET_WORDS}; {found}). Give "
                "the output schema patterns that do not backtrack, or fewer of them."
            )
        if not problems:
            return None
        logger.warning(
            "tool %r returned structured_content its output schema does not allow: %s",
            name,
            "; ".join(problems),
        )
        return _error_result(
            f"Tool {name!r} returned structured_content that does not fit its output schema "
            f"({shown_problems(problems)}): {advice}"
        )

    def _output_validator(self) -> SchemaCheck | Literal[False]:
        """The checker of the tool's output schema, compiled once, on first use."""
        if self.output_validator is None:
            schema = self.definition.output_schema
            assert schema is not None
            try:
                self.output_validator = compile_schema(schema)
            except Exception as exc:  # the server's own schema: never expected
                logger.warning(
                    "tool %r: its output schema cannot be checked (%s); the results it "
                    "builds itself are sent unchecked",
                    self.definition.name,
                    cut(getattr(exc, "message", None) or str(exc)),
                )
                self.output_validator = False
        return self.output_validator

    def _unknown_content_result(self, kind: str) -> JSONObject:
        """The error result for content of a type MCP does not define, which the tool
        built itself (even in an ``is_error`` result): sent on, no client could show it."""
        name = self.definition.name
        logger.warning("tool %r returned content of the unknown type %r", name, kind)
        return _error_result(
            f"Tool {name!r} returned content of the unknown type {kind!r}: {KNOWN_CONTENT}."
        )

    def _unwritable_result(self, exc: Exception) -> JSONObject:
        """The error result for a value of the right type that pydantic cannot write as
        JSON: ``bytes`` that are not UTF-8 text, or a serializer of the author's that
        fails. Not the tool's failure, so not "Error executing tool" with a traceback."""
        name = self.definition.name
        reason = "bytes that are not UTF-8 text" if isinstance(exc, UnicodeDecodeError) else exc
        logger.warning("tool %r returned a value JSON cannot hold: %s", name, reason)
        return _error_result(
            f"Tool {name!r} returned a value JSON cannot hold ({reason}): {_BINARY_ADVICE}."
        )

    def _not_json_result(self) -> JSONObject:
        """The error result for output holding NaN or Infinity. Only in-process could
        carry it (no JSON there); stdio and HTTP failed the whole call instead."""
        name = self.definition.name
        logger.warning("tool %r returned NaN or Infinity, which JSON cannot carry", name)
        return _error_result(
            f"Tool {name!r} returned NaN or Infinity, which JSON cannot carry: have it "
            "return None or a string instead."
        )


def _text_block(text: str) -> JSONObject:
    return {"type": "text", "text": text}


def _wire_result(
    content: list[JSONObject], *, structured: Any = None, is_error: bool = False
) -> JSONObject:
    if structured is None:
        return {"content": content, "isError": is_error}
    return {"content": content, "structuredContent": structured, "isError": is_error}


def _error_result(message: str) -> JSONObject:
    return _wire_result([_text_block(message)], is_error=True)


def tool_error_result(name: str, exc: Exception, *, redact: bool) -> JSONObject:
    """The result for tool ``name`` that raised, logged with its traceback: the model
    sees what went wrong, or, with ``redact``, only a reference to the log line (the
    exception's text may hold secrets). A path the roots guard refused is no failure:
    its text, about the client's own path and roots, always reaches the client."""
    if isinstance(exc, PathOutsideRootsError):  # a deliberate refusal, written for the client
        logger.info("tool %r refused a path: %s", name, exc)
        return _error_result(f"Error executing tool: {exc}")
    if redact:
        reference = new_error_reference()
        logger.warning("tool %r failed (reference %s): %s", name, reference, exc, exc_info=exc)
        return _error_result(redacted_message("Error executing tool", reference))
    logger.warning("tool %r failed: %s", name, exc, exc_info=exc)
    return _error_result(f"Error executing tool: {exc}" if str(exc) else type(exc).__name__)


def _output_annotation(annotation: Any) -> Any:
    """The return annotation that declares the output: minus ``InputRequiredResult`` (a
    round, not the output) and, next to other types, minus ``CallToolResult`` (a result
    the tool builds itself, whose structured content must fit what the rest declare:
    ``-> Weather | CallToolResult`` declares ``Weather``'s schema, as does the official
    SDK's spelling, ``-> Annotated[CallToolResult, Weather]``)."""
    annotation = _declared(annotation)
    if annotation is InputRequiredResult:
        return None
    if get_origin(annotation) not in (Union, UnionType):
        return annotation
    args = tuple(_declared(arg) for arg in get_args(annotation))
    rest = tuple(arg for arg in args if arg is not InputRequiredResult)
    if any(arg is not CallToolResult for arg in rest):
        rest = tuple(arg for arg in rest if arg is not CallToolResult)
    if rest == get_args(annotation):
        return annotation
    return rest[0] if len(rest) == 1 else Union[rest]  # noqa: UP007


def _declared(annotation: Any) -> Any:
    """``Annotated[CallToolResult, Weather]`` read as what it declares, ``Weather``
    (a result built by hand that must fit it); any other annotation as it is."""
    if get_origin(annotation) is Annotated:
        base, *metadata = get_args(annotation)
        if base is CallToolResult and len(metadata) == 1:
            return metadata[0]
    return annotation


def _names_content(annotation: object) -> bool:
    """Whether a return annotation names content: a content block, ``CallToolResult``,
    or a union, list or tuple with one in it (``ContentBlock``, ``list[ImageContent |
    str]``, ``ImageContent | None``), as the official SDK reads it."""
    origin = get_origin(annotation)
    if origin is None:
        return isinstance(annotation, type) and issubclass(
            annotation, (*_RETURNED_BLOCKS, CallToolResult)
        )
    if origin is Annotated:
        return _names_content(get_args(annotation)[0])
    if origin in (Union, UnionType, list, tuple, Sequence):
        return any(_names_content(arg) for arg in get_args(annotation))
    return False


def _names_binary(annotation: object) -> bool:
    """Whether a return annotation allows only binary data (``bytes``, ``bytearray``,
    ``memoryview``, or a union of them and ``None``): every value but ``None`` would be
    refused when returned. A union with anything else in (``str | bytes``) may return
    that, and binary data inside a container (``list[bytes]``, a model's ``bytes``
    field) is sent as text when it is UTF-8, so neither is refused here."""
    if isinstance(annotation, type):
        return issubclass(annotation, _BINARY)
    origin = get_origin(annotation)
    if origin is Annotated:
        return _names_binary(get_args(annotation)[0])
    if origin not in (Union, UnionType):
        return False
    members = [arg for arg in get_args(annotation) if arg is not type(None)]
    return bool(members) and all(_names_binary(arg) for arg in members)


def _admits_none(annotation: object) -> bool:
    """Whether a return annotation allows ``None``: ``Any``, ``object``, or a union with
    ``None`` in it."""
    if annotation in (Any, object, None, type(None)):
        return True
    origin = get_origin(annotation)
    if origin is Annotated:
        return _admits_none(get_args(annotation)[0])
    if origin in (Union, UnionType):
        return any(_admits_none(arg) for arg in get_args(annotation))
    return False


_PROBE = [TextContent(text="")]


def _admits_blocks(adapter: TypeAdapter[Any]) -> bool:
    """Whether a list holding a content block fits the annotation (``-> list[object]``,
    ``-> Any``); a list that would not is refused by the annotation anyway."""
    try:
        adapter.validate_python(_PROBE)
    except pydantic.ValidationError:
        return False
    return True


def _content_items(value: Any) -> list[Any] | None:
    """The items of returned content: a block, or a list (or tuple) holding at least
    one; ``None`` for any other value."""
    # Strings first: the commonest return value, and the ``Sequence`` check is slow.
    if isinstance(value, str | bytes):
        return None
    if isinstance(value, _RETURNED_BLOCKS):
        return [value]
    if not isinstance(value, Sequence):
        return None
    items = list(cast(Sequence[Any], value))
    # By type, not item by item: ten times faster on a long list of plain values.
    if any(issubclass(kind, _RETURNED_BLOCKS) for kind in set(map(type, items))):
        return items
    return None


def _as_data(value: Any) -> tuple[Any, list[Any]]:
    """Returned content as structured data, each block as written on the wire (no
    ``null`` for an absent ``annotations`` or ``_meta``, which the schema forbids); and
    the rest of it, which may still hold NaN or Infinity."""
    if isinstance(value, _RETURNED_BLOCKS):
        return value.to_wire(), []
    data: list[Any] = []
    others: list[Any] = []
    for item in cast(Sequence[Any], value):
        if isinstance(item, _RETURNED_BLOCKS):
            data.append(item.to_wire())
        else:
            dumped = ANY_VALUE.dump_python(item, mode="json", by_alias=True)
            data.append(dumped)
            others.append(dumped)
    return data, others


def _described_output(
    tool: str, returns: Any, structured_output: bool | None
) -> tuple[TypeAdapter[Any] | None, dict[str, Any] | None, bool]:
    """The adapter and output schema of a tool's return annotation, and whether values
    are wrapped as ``{"result": value}``: none for content blocks, no return,
    ``structured_output=False``, or (unless ``structured_output=True`` asks for one) a
    type JSON Schema cannot describe, whose values are then sent as text."""
    if structured_output is False:
        return None, None, False
    if _names_content(returns) or returns in _NO_RETURN:
        if structured_output:
            raise TypeError(
                f"tool {tool!r}: structured_output=True needs a return annotation that is "
                "not content blocks"
            )
        return None, None, False
    try:
        adapter = _output_adapter(returns)
        schema = _unreferenced_root(output_json_schema(adapter))
    except pydantic.PydanticUserError as exc:
        if structured_output or not _undescribable(exc):
            advice = "" if structured_output else ", or pass structured_output=False"
            raise TypeError(
                f"tool {tool!r}: its return annotation {type_name(returns)} has no JSON "
                f"Schema{_pydantic_reason(exc)}; return {_DESCRIBABLE}{advice}"
            ) from None
        return None, None, False
    # What is always written as a JSON object (a model, dataclass, TypedDict, or any
    # mapping: pydantic writes every key as a string) is the structured content itself.
    if schema.get("type") == "object":
        return adapter, _clean_schema(schema), False
    return adapter, wrapped_output_schema(_clean_schema(schema)), True


def _output_adapter(returns: Any) -> TypeAdapter[Any]:
    """The adapter of a return annotation, keeping NaN and Infinity (``NAN_KEPT``) where
    the annotation takes a config: ``-> Any`` and ``-> dict[str, Any]`` would otherwise
    send ``null`` in their place. A model, dataclass or ``TypedDict`` brings its own
    config (its ``float`` fields keep them anyway)."""
    try:
        return TypeAdapter(returns, config=NAN_KEPT)
    except pydantic.PydanticUserError as exc:
        if exc.code != "type-adapter-config-unused":
            raise
        return TypeAdapter(returns)


_DESCRIBABLE = (
    "a JSON type, a pydantic model, a dataclass or a TypedDict "
    "(typing_extensions.TypedDict before Python 3.12)"
)
"""What a tool's parameters and structured results may be: what JSON Schema describes."""


def _undescribable(exc: pydantic.PydanticUserError) -> bool:
    """Whether pydantic refused a type for having no schema at all (a plain class of the
    user's own), rather than for a mistake in how it is written."""
    return isinstance(
        exc, pydantic.PydanticSchemaGenerationError | pydantic.PydanticInvalidForJsonSchema
    )


def _pydantic_reason(exc: pydantic.PydanticUserError) -> str:
    """pydantic's reason, where it helps: not for a type with no schema, where it says to
    change a model's config, and a tool's author has no model to change."""
    return "" if _undescribable(exc) else f" ({str(exc).strip().splitlines()[0]})"


def _unreadable_parameters(
    function: Callable[..., Any],
    parameters: dict[str, tuple[Any, Any]],
    exc: pydantic.PydanticUserError,
) -> TypeError:
    """The error for a tool whose parameters pydantic cannot read from JSON, naming each
    parameter that fails alone."""
    which = ", ".join(unreadable_parameters(parameters)) or "its parameters"
    return TypeError(
        f"tool {function.__name__!r}: a client cannot send {which} as JSON"
        f"{_pydantic_reason(exc)}; annotate each with {_DESCRIBABLE}"
    )


def _unreferenced_root(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with a root that only refers to one of its ``$defs`` (pydantic's way
    with a recursive model) replaced by that definition, the ``$defs`` kept beside it:
    the model is then an object schema and its value the structured content itself."""
    definitions = schema.get("$defs")
    reference = schema.get("$ref")
    prefix = "#/$defs/"
    if len(schema) != 2 or not isinstance(definitions, dict) or not isinstance(reference, str):
        return schema
    if not reference.startswith(prefix):
        return schema
    target = cast(dict[str, Any], definitions).get(reference.removeprefix(prefix))
    if not isinstance(target, dict):
        return schema
    return {**cast(dict[str, Any], target), "$defs": definitions}


def _clean_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """Drop the generated model title of the arguments object; keep everything else."""
    schema = dict(schema)
    title = schema.get("title")
    if isinstance(title, str) and title.endswith("Arguments"):
        del schema["title"]
    return schema
