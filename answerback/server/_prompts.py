"""Prompts: message templates a user picks, filled from string arguments.

A function registered with ``@mcp.prompt()`` receives the arguments and returns the
messages: a ``str`` is one user message; ``PromptMessage`` objects, message dicts
(``{"role": "user", "content": "text"}``, as the official SDK accepts), content blocks
(text, images, embedded resources) and strings may be mixed in a list; a
``GetPromptResult`` passes through. A content block of a type MCP does not define is
refused, never sent, and a return annotation none of these fits (``-> int``) when the
prompt is registered.

Arguments are strings on the wire; each is converted to its parameter's annotation,
as pydantic reads text (``"3"`` for an ``int``, ``"false"`` for a ``bool``, an ``Enum``
or a ``Literal`` by its value, as the argument's description lists it), and one that
needs a structure (a model, a list, a dict) is read from JSON text. A value that does
not convert is the client's mistake, -32602 naming the argument: the function never
receives the raw text in place of the type it declared.
A parameter no text can become (a plain class of the author's own, a callable) is
refused when the prompt is registered, and an argument the prompt has no parameter for
when it is given (-32602, naming the arguments there are). A ``Literal`` or ``Enum``
parameter lists its values in its argument's description. ``""`` for an optional
argument that cannot be ``""`` (``count: int | None = None``) means the argument was
not given: some clients (the MCP Inspector) send it for a field left empty.
"""

from __future__ import annotations

import collections.abc
import contextlib
import inspect
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from types import NoneType, UnionType
from typing import (
    Annotated,
    Any,
    Literal,
    Never,
    NoReturn,
    Union,
    cast,
    get_args,
    get_origin,
)

import pydantic
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from answerback.server._functions import (
    KNOWN_CONTENT,
    Signature,
    accepted_arguments,
    call,
    read_signature,
    type_name,
    unknown_arguments,
    unknown_content_type,
    unreadable_parameters,
    wire_name,
)
from answerback.server._literals import choice_text, reading_literal_text
from answerback.types import (
    AudioContent,
    EmbeddedResource,
    GetPromptResult,
    Icon,
    ImageContent,
    InputRequiredResult,
    InvalidParamsError,
    Prompt,
    PromptArgument,
    PromptMessage,
    ResourceLink,
    TextContent,
    UnknownContent,
)
from answerback.types._errors import listed_problems

_BLOCKS = (TextContent, ImageContent, AudioContent, EmbeddedResource, ResourceLink, UnknownContent)
"""Content a prompt may return as a user message; ``UnknownContent`` only to be refused
by ``_check_content``, with the message that says why."""
_RETURNS = (
    "return str, PromptMessage, a message dict, content blocks, a list of these, or GetPromptResult"
)
_MESSAGE_DICT = (
    "a message dict has a 'role' ('user' or 'assistant') and a 'content' (a string, or a "
    "content block dict)"
)


@dataclass(slots=True)
class RegisteredPrompt:
    definition: Prompt
    function: Callable[..., Any]
    signature: Signature
    arguments_model: type[BaseModel]
    """Converts the string arguments to the parameters' types (built once)."""
    fields: dict[str, FieldInfo]
    """The arguments by the names a client sends (an alias, else the parameter's name):
    the model reads them by those names, so the prompt lists and checks them so too."""
    blank_means_default: frozenset[str]
    """The optional arguments ``""`` is no valid value of (``count: int | None = None``):
    given ``""``, such an argument takes its default. The MCP Inspector, for one, sends
    ``""`` for every field left empty; refusing it would make those arguments
    impossible to leave out there."""

    @classmethod
    def from_function(
        cls,
        function: Callable[..., Any],
        *,
        name: str | None,
        title: str | None,
        description: str | None,
        context_type: type,
        icons: list[Icon] | None = None,
        meta: dict[str, Any] | None = None,
    ) -> RegisteredPrompt:
        signature = read_signature(function, context_type)
        prompt_name = name or function.__name__
        if not _may_be_prompt(signature.returns):
            returns = signature.returns
            shown = "None" if returns is NoneType else type_name(returns)
            raise TypeError(
                f"prompt {prompt_name!r} is annotated to return {shown}, which no prompt "
                f"can return; {_RETURNS} (or leave the return unannotated)"
            )
        arguments_model = _arguments_model(prompt_name, function, signature)
        fields = {
            wire_name(name, field): field for name, field in arguments_model.model_fields.items()
        }
        arguments = [
            PromptArgument(name=arg, description=_described(field), required=field.is_required())
            for arg, field in fields.items()
        ]
        definition = Prompt(
            name=prompt_name,
            title=title,
            description=description if description is not None else inspect.getdoc(function),
            arguments=arguments or None,
            icons=icons,
            meta=meta,
        )
        return cls(
            definition,
            function,
            signature,
            arguments_model,
            fields,
            _blank_means_default(arguments_model, fields),
        )

    async def render(
        self, arguments: dict[str, str], context: Any
    ) -> GetPromptResult | InputRequiredResult:
        fields = self.fields
        missing = [
            arg for arg, field in fields.items() if field.is_required() and arg not in arguments
        ]
        unknown = [arg for arg in arguments if arg not in fields]
        if missing or unknown:
            raise self._misnamed(missing, unknown)
        kwargs = self._converted(
            {
                arg: arguments[arg]
                for arg in fields
                if arg in arguments
                and not (arguments[arg] == "" and arg in self.blank_means_default)
            }
        )
        if self.signature.context_parameter is not None:
            kwargs[self.signature.context_parameter] = context
        value = await call(self.function, kwargs, self.signature.on_loop)
        if isinstance(value, InputRequiredResult):
            return value
        if isinstance(value, GetPromptResult):
            _check_content(self.definition.name, value.messages, several=True)
            return value
        if isinstance(value, list | tuple):
            items = cast(Sequence[Any], value)
            messages = [
                _message(self.definition.name, item, index) for index, item in enumerate(items)
            ]
        else:
            messages = [_message(self.definition.name, value, None)]
        _check_content(self.definition.name, messages, several=isinstance(value, list | tuple))
        return GetPromptResult(description=self.definition.description, messages=messages)

    def _converted(self, given: dict[str, str]) -> dict[str, Any]:
        """The arguments as the parameters' types (defaults filled in), or -32602 naming
        each that does not convert. An argument that fails as text and looks like JSON
        (``{...}``, ``[...]``) is tried again as the JSON value it holds."""
        try:
            parsed = self.arguments_model.model_validate(given)
        except pydantic.ValidationError as exc:
            retry: dict[str, Any] = dict(given)
            for error in exc.errors(include_url=False):
                arg = error["loc"][0] if error["loc"] else None
                text = given.get(arg) if isinstance(arg, str) else None
                if text is not None and text.lstrip()[:1] in ("{", "["):
                    with contextlib.suppress(ValueError):
                        retry[cast(str, arg)] = json.loads(text)
            if retry == given:
                raise self._invalid(exc, given) from None
            try:
                parsed = self.arguments_model.model_validate(retry)
            except pydantic.ValidationError as again:
                raise self._invalid(again, given) from None
        return dict(vars(parsed))

    def _misnamed(self, missing: list[str], unknown: list[str]) -> InvalidParamsError:
        """-32602 for required arguments not given, or arguments the prompt has no
        parameter for: a misspelt optional one would otherwise keep its default without
        a word. An unknown one is named with the arguments there are."""
        name = self.definition.name
        if not unknown:
            return InvalidParamsError(f"Prompt {name!r} needs the argument(s) {missing}.")
        needs = f" needs the argument(s) {missing};" if missing else ":"
        return InvalidParamsError(
            f"Prompt {name!r}{needs} {unknown_arguments(unknown)}. "
            f"{accepted_arguments(self.arguments_model.model_fields)}"
        )

    def _invalid(self, exc: pydantic.ValidationError, given: dict[str, str]) -> InvalidParamsError:
        problems: list[str] = []
        for error in exc.errors(include_url=False):
            arg, *inside = error["loc"] or ("?",)
            text = repr(given.get(str(arg)))
            shown = text if len(text) <= 40 else text[:37] + "..."
            where = f" (at {'.'.join(map(str, inside))})" if inside else ""
            problems.append(f"{arg!r} = {shown}{where}: {error['msg']}")
        return InvalidParamsError(
            f"Invalid params: prompt {self.definition.name!r} cannot use the argument "
            f"{'; '.join(problems)}."
        )


def _arguments_model(
    prompt: str, function: Callable[..., Any], signature: Signature
) -> type[BaseModel]:
    """The model converting the prompt's arguments, or ``TypeError`` naming each
    parameter no text could become. Judged on the whole model first: a parameter read
    alone (``unreadable_parameters``) loses what only a model field means (pydantic warns
    that ``Field(alias=...)`` has no effect there), so only a model that fails is taken
    apart."""
    fields: dict[str, Any] = {
        name: (reading_literal_text(annotation), default)
        for name, (annotation, default) in signature.parameters.items()
    }
    try:
        # Arguments it has no field for never reach it: ``render`` refuses them first.
        model: type[BaseModel] = pydantic.create_model(  # type: ignore[call-overload]
            f"{function.__name__}Arguments", **fields
        )
        model.model_json_schema()
    except pydantic.PydanticUserError:
        unreadable = ", ".join(unreadable_parameters(signature.parameters)) or "its parameters"
        raise TypeError(
            f"prompt {prompt!r}: a client cannot send {unreadable} as a prompt "
            "argument, which is a string; annotate each with str, or a type read from "
            "text (int, float, bool, an Enum, a Literal, a pydantic model or a list read "
            "from JSON text)"
        ) from None
    return model


_PROMPT_RETURNS = (str, PromptMessage, GetPromptResult, InputRequiredResult, dict, *_BLOCKS[:-1])
"""The classes a prompt's value (or an item of its list) may be: a message dict included."""
_AWAITABLES = (collections.abc.Awaitable, collections.abc.Coroutine)


def _may_be_prompt(returns: Any) -> bool:
    """Whether a prompt annotated to return ``returns`` could return anything ``render``
    takes: for a union, one member is enough (``str | None`` works whenever it returns
    the ``str``), so only an annotation that rules every such value out (``-> int``,
    ``-> list[int]``) is refused. What is not judged here (a ``TypeVar``, a typing form
    of a later Python) is let through, to be judged by the value it returns."""
    if returns in (inspect.Signature.empty, Any, NoReturn, Never):
        return True
    if returns is None or returns is NoneType:
        return False
    supertype = getattr(returns, "__supertype__", None)  # a NewType
    if supertype is not None:
        return _may_be_prompt(supertype)
    origin = get_origin(returns)
    arguments = get_args(returns)
    if origin is Annotated:
        return _may_be_prompt(arguments[0])
    if origin in (Union, UnionType):
        return any(_may_be_prompt(member) for member in arguments)
    if origin is Literal:
        return any(isinstance(value, str) for value in arguments)
    if origin in _AWAITABLES:
        return not arguments or _may_be_prompt(arguments[-1])
    kind = origin if origin is not None else returns
    if not isinstance(kind, type):
        return True
    if _may_be_list(kind) and arguments and not _may_be_mapping(kind):
        items = [item for item in arguments if item is not Ellipsis]
        return any(_may_be_prompt(item) and not _is_list(item) for item in items)
    return _may_be_list(kind) or _related(kind, _PROMPT_RETURNS)


def _related(kind: type, classes: tuple[type, ...]) -> bool:
    """Whether a value of class ``kind`` could also be of one of ``classes``: ``kind`` is
    one of them or a subclass (``TextContent``), or a base (``BaseModel``, ``object``,
    ``Sequence``). A class ``issubclass`` cannot judge (a protocol) is let through."""
    try:
        return any(issubclass(kind, cls) or issubclass(cls, kind) for cls in classes)
    except TypeError:
        return True


def _may_be_list(kind: type) -> bool:
    return _related(kind, (list, tuple))


def _may_be_mapping(kind: type) -> bool:
    return _related(kind, (dict,))


def _is_list(item: Any) -> bool:
    """Whether a list's item is annotated as a list itself (no message is one)."""
    kind = get_origin(item) or item
    return isinstance(kind, type) and issubclass(kind, list | tuple)


def _described(field: FieldInfo) -> str | None:
    """An argument's description: the author's, followed by the values allowed where
    the parameter is a ``Literal`` or an ``Enum``, which a host shows beside the field
    (else a person could only learn them from a completion handler or a refusal)."""
    choices = _choices(field.annotation)
    if choices is None:
        return field.description
    allowed = f"One of: {', '.join(choices)}."
    description = (field.description or "").rstrip()
    if not description:
        return allowed
    if not description.endswith((".", "!", "?", ":")):
        description += "."
    return f"{description} {allowed}"


def _choices(annotation: Any) -> list[str] | None:
    """The texts a ``Literal`` or ``Enum`` parameter (or one of those ``| None``)
    accepts, as a client sends them; ``None`` for any other annotation."""
    origin = get_origin(annotation)
    if origin is Annotated:
        return _choices(get_args(annotation)[0])
    if origin in (Union, UnionType):
        members = [arg for arg in get_args(annotation) if arg is not type(None)]
        return _choices(members[0]) if len(members) == 1 else None
    if origin is Literal:
        values: tuple[Any, ...] = get_args(annotation)
    elif isinstance(annotation, type) and issubclass(annotation, Enum):
        values = tuple(member.value for member in annotation)
    else:
        return None
    return [choice_text(value) for value in values]


def _blank_means_default(
    arguments_model: type[BaseModel], fields: dict[str, FieldInfo]
) -> frozenset[str]:
    """The optional arguments (by ``fields``' names) whose parameters refuse ``""``
    (``int | None``, ``bool``, a ``str`` with ``min_length=1``), found once by validating
    ``""`` for each: a ``str`` argument keeps the ``""`` it was given."""
    optional = [arg for arg, field in fields.items() if not field.is_required()]
    try:
        arguments_model.model_validate(dict.fromkeys(optional, ""))
    except pydantic.ValidationError as exc:
        refused = {error["loc"][0] for error in exc.errors() if error["loc"]}
        return frozenset(arg for arg in optional if arg in refused)
    return frozenset()


def _message(prompt: str, item: Any, index: int | None) -> PromptMessage:
    if isinstance(item, PromptMessage):
        return item
    if isinstance(item, str):
        return PromptMessage(role="user", content=TextContent(text=item))
    if isinstance(item, _BLOCKS):
        return PromptMessage(role="user", content=item)
    if isinstance(item, dict):
        return _dict_message(prompt, cast(dict[str, Any], item), index)
    what = "None" if item is None else type(item).__name__
    returned = what if index is None else f"a list whose item {index} is {what}"
    raise TypeError(f"prompt {prompt!r} returned {returned}; {_RETURNS}")


def _dict_message(prompt: str, item: dict[str, Any], index: int | None) -> PromptMessage:
    """A message dict as a ``PromptMessage``, its ``content`` string taken as a text
    block (as a returned ``str`` is): the official SDK accepts such dicts, so code
    moved from it keeps working. A dict that is no message is the prompt's mistake."""
    content = item.get("content")
    data = (
        {**item, "content": {"type": "text", "text": content}} if isinstance(content, str) else item
    )
    try:
        return PromptMessage.model_validate(data)
    except pydantic.ValidationError as exc:
        returned = "a dict" if index is None else f"a list whose item {index} is a dict"
        raise TypeError(
            f"prompt {prompt!r} returned {returned} that is no prompt message "
            f"({listed_problems(exc, 'message')}); {_MESSAGE_DICT}"
        ) from None


def _check_content(prompt: str, messages: Sequence[PromptMessage], *, several: bool) -> None:
    """Refuse a message whose content is of a type MCP does not define: the shared model
    reads it into ``UnknownContent`` (for a client reading a newer server), but a server
    that sends one it built itself sends what no client can show."""
    for index, message in enumerate(messages):
        kind = unknown_content_type([message.content])
        if kind is not None:
            which = f" {index}" if several else ""
            raise TypeError(
                f"prompt {prompt!r} returned a message{which} with content of the unknown "
                f"type {kind!r}; {KNOWN_CONTENT}"
            )
