"""Reading request bodies: typed request models, one definition that judges a body and documents it.

Each JSON request body is a pydantic model built from the service's settings
(:func:`request_models`: the limits are the running service's), and its
OpenAPI schema is generated from the same model (:func:`request_schemas`),
so what the document states and what the service accepts cannot drift. A
refusal names the field at fault (``history[2].content``, ``items[1].message``)
and says what it must be; the wording is made here from the model's error
(:func:`_refusal`), the field and E-code are the service's contract.

These checks are the JSON shape of a request and the service's limits, and
the library's own reading of a history (:func:`cleo_rules.history.read_history`),
nothing more: what a history item *means* (a user message, a role-tagged
turn) is the library's business. Every refusal is a :class:`BadRequest` (a
400 problem), raised here and nowhere else: an endpoint reads its body
first, so a ``TypeError`` or ``ValueError`` from the work that follows is a
fault of the service (a 500), never blamed on the request.

The limits hold for every form of a history item: ``max_message_chars`` is
the longest message, history string and history item's ``content`` (a string,
or the texts of a list of parts, in all). No string and no field name of a
request may hold a lone surrogate (``"\\ud800"``: JSON allows the escape, but
the text is not Unicode and could be neither answered nor stored): the
request, or the one batch item holding it, is refused with E319 before
anything else is done with it. Every check is one pass over the decoded
body, whose size the service bounds before it is read.
"""

# No ``from __future__ import annotations``: pydantic reads the annotations of the models that
# request_models builds inside a function, so they must be values, not strings.

import json
from functools import lru_cache
from typing import Annotated, Any, Literal, NamedTuple, Optional, TypeVar

from pydantic import (AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, StrictInt, StrictStr,
                      ValidationError, WithJsonSchema, create_model)
from pydantic.json_schema import GenerateJsonSchema, models_json_schema
from pydantic_core import PydanticCustomError
from typing_extensions import TypeAliasType

from ..history import ASSISTANT, USER, HistoryError, read_history
from ..jsonl import json_type, lone_surrogate
from ..kinds import DecisionKind
from .problems import ServiceError
from .routes import REF, ref

__all__ = ["BadRequest", "BatchRequest", "ClassifyRequest", "RegressionRequest", "RequestModels", "TurnRequest",
           "check_unicode", "history_error", "parse_json", "read_batch", "read_classify", "read_regression",
           "read_turn", "request_models", "request_schemas"]

#: the kinds a regression case may expect, as JSON writes them
KINDS = tuple(kind.value for kind in DecisionKind)
#: the roles of a history item the history reader takes as it is when its content is a string
PLAIN_ROLES = (USER, ASSISTANT)


class BadRequest(ServiceError):
    """A request the service refuses as sent: its body, a field or its history (always a 400 problem)."""


def _no_constant(name):
    raise ValueError(f"{name} is not allowed in JSON")


def parse_json(raw: bytes):
    """The JSON document in ``raw``; a 400 ``invalid-json`` problem when it is not one."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadRequest("invalid-json", f"the body is not UTF-8: {exc.reason} at byte {exc.start}") from None
    try:
        return json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise BadRequest("invalid-json", f"the body is not valid JSON: {exc.msg} at line {exc.lineno} "
                                           f"column {exc.colno}") from None
    except (ValueError, RecursionError) as exc:
        raise BadRequest("invalid-json", f"the body is not valid JSON: {exc}") from None


def _bad(field: str, detail: str, **extra) -> BadRequest:
    return BadRequest("invalid-request", detail, field=field or None, **extra)


def _surrogate(what: str, field: str, text: str, at: int) -> BadRequest:
    return _bad(field, f"{what} at {field or 'the top of the body'} holds a lone surrogate (U+{ord(text[at]):04X} at "
                       f"character {at}), which is not valid Unicode", code="E319")


def _where(field: str, loc) -> str:
    """The field at ``loc`` (names and indexes) inside ``field``, as a refusal names it: ``items[2].history[0]``."""
    where = field
    for part in loc:
        where = f"{where}[{part}]" if isinstance(part, int) else (f"{where}.{part}" if where else str(part))
    return where


def check_unicode(value, field: str = "") -> None:
    """A 400 (E319) naming the first string or field name in ``value`` that holds a lone surrogate.

    ``field`` is where ``value`` is in the request (``items[2]``). Walks the
    value without recursion, in document order.
    """
    stack = [(value, field)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, str):
            at = lone_surrogate(item)
            if at is not None:
                raise _surrogate("string", where, item, at)
        elif isinstance(item, dict):
            inner = []
            for key, sub in item.items():
                at = lone_surrogate(key)
                if at is not None:
                    raise _surrogate("field name", where, key, at)
                inner.append((sub, _where(where, (key,))))
            stack.extend(reversed(inner))
        elif isinstance(item, list):
            stack.extend((item[n], _where(where, (n,))) for n in range(len(item) - 1, -1, -1))


# -- the request models -------------------------------------------------------------------------

def _content_chars(content) -> int:
    """How many characters of text a history item's ``content`` holds: a string's, or its parts' texts in all."""
    if isinstance(content, str):
        return len(content)
    if isinstance(content, list):
        total = 0
        for part in content:
            if isinstance(part, str):
                total += len(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                total += len(part["text"])
        return total
    return 0  # not text: the history reader says what is wrong with it


#: the errors the history item's check raises, whose message is the whole predicate
_OWN = ("too_many_chars", "history_item_type")


def _history_item(limit: int):
    """The check of one history item: a string or an object, holding at most ``limit`` characters of text."""

    def check(item):
        if isinstance(item, str):
            if len(item) > limit:
                raise PydanticCustomError("too_many_chars", "is {chars} characters; the limit is {limit}",
                                          {"chars": len(item), "limit": limit})
        elif isinstance(item, dict):
            chars = _content_chars(item.get("content"))
            if chars > limit:  # the same limit as a string item's, whatever the form
                raise PydanticCustomError("too_many_chars", "holds {chars} characters of text; the limit is {limit}",
                                          {"chars": chars, "limit": limit, "at": "content"})
        else:
            raise PydanticCustomError("history_item_type", "must be a string or an object, not {type}",
                                      {"type": json_type(item)})
        return item

    return check


def _integral(value):
    """JSON does not tell 5 from 5.0: a whole float is the integer."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


_R = TypeVar("_R", bound=BaseModel)


class _Request(BaseModel):
    """A request body: nothing but its fields, each of its JSON type (no conversion), none unknown."""

    model_config = ConfigDict(strict=True, extra="forbid", defer_build=True)  # built when first used


# What a reader gets from each request (the types a body's fields are read as); the models that judge a body
# are built from these at the service's limits (_models), so the limits are the running service's.

class ClassifyRequest(_Request):
    message: str
    history: Optional[list] = None


class BatchRequest(_Request):
    items: list


class TurnRequest(_Request):
    message: str
    history: Optional[list] = None
    k: Optional[int] = None


class RegressionRequest(_Request):
    message: str
    history: Optional[list] = None
    expect: str
    write: bool = False


class RequestModels(NamedTuple):
    """The request models at one set of limits, each a subclass of the request it judges."""

    ClassifyRequest: type[ClassifyRequest]
    BatchRequest: type[BatchRequest]
    TurnRequest: type[TurnRequest]
    RegressionRequest: type[RegressionRequest]


def _history_types(limit: int, max_history: int):
    """The history item and the history, as types the document names (``HistoryItem``, ``History``)."""
    text = {"type": "string", "maxLength": limit}
    # named type aliases at the service's limits: pydantic gives each a component of its name (a static checker
    # takes a type alias only at module scope)
    HistoryItem = TypeAliasType(  # pyright: ignore[reportGeneralTypeIssues]
        "HistoryItem", Annotated[Any, AfterValidator(_history_item(limit)), WithJsonSchema({
        "description": "An earlier turn: a string is a user message; an object is a role-tagged turn "
                       "{\"role\": \"user\" | \"assistant\", \"content\": str} (OpenAI and LangChain chat "
                       "convention), whose contents the classifier checks.",
        "oneOf": [
            {**text, "description": "an earlier user message"},
            {"type": "object",
             "description": f"a role-tagged turn; its content holds at most {limit} characters of text (a string, "
                            f"or the texts of a list of parts in all); the classifier checks its members",
             "properties": {"content": {"not": {"type": "string", "minLength": limit + 1}}},
             "examples": [{"role": "assistant", "content": "Hadley Commercial is the cheaper of the two."}]},
        ]})])
    History = TypeAliasType("History", Annotated[  # pyright: ignore[reportGeneralTypeIssues]
        Optional[Annotated[list[HistoryItem], Field(max_length=max_history)]],  # pyright: ignore
        Field(description="Earlier turns, oldest first; null or absent means none.")])
    return History


@lru_cache(maxsize=16)
def _models(max_message_chars: int, max_history: int, max_batch: int, max_k: int, default_k: int) -> RequestModels:
    message = (Annotated[StrictStr, Field(max_length=max_message_chars, description="The user's message, as typed.")],
               ...)
    history = (_history_types(max_message_chars, max_history), None)

    def model(base: type[_R], **fields) -> type[_R]:
        return create_model(base.__name__, __base__=base, __module__=__name__, **fields)

    return RequestModels(
        ClassifyRequest=model(ClassifyRequest, message=message, history=history),
        # each item is judged on its own (read_batch, then read_classify), so a bad one fails alone
        BatchRequest=model(BatchRequest, items=(Annotated[list[Any], Field(
            max_length=max_batch, json_schema_extra={"items": ref("ClassifyRequest")},
            description="Each item is read as a ClassifyRequest; a bad item gets an error object in its place, the "
                        "others are answered.")], ...)),
        TurnRequest=model(TurnRequest, message=message, history=history, k=(Annotated[
            Optional[Annotated[StrictInt, Field(ge=1, le=max_k)]], BeforeValidator(_integral),
            Field(description=f"Results to ask for (default {default_k}).")], None)),
        RegressionRequest=model(RegressionRequest, message=message, history=history, expect=(Annotated[
            Literal[KINDS], Field(description="The kind the pack must give the message.")], ...),  # pyright: ignore
            write=(Annotated[StrictBool, Field(
                description="Append the case to the regressions file (needs --writable-corpus).")], False)),
    )


def request_models(settings) -> RequestModels:
    """The request models at the limits of ``settings``, built once per set of limits."""
    return _models(settings.max_message_chars, settings.max_history, settings.max_batch, settings.max_k,
                   settings.default_k)


class _Components(GenerateJsonSchema):
    """JSON Schema as the OpenAPI document writes it: no generated titles."""

    def field_title_should_be_set(self, schema) -> bool:
        return False

    def model_schema(self, schema):
        generated = super().model_schema(schema)
        generated.pop("title", None)
        return generated


def request_schemas(settings, *names: str) -> dict:
    """The OpenAPI component schemas of the request models ``names`` (default: all) and of what they name
    (``History``, ``HistoryItem``), generated from the models at the limits of ``settings``."""
    models = request_models(settings)
    chosen = [getattr(models, name) for name in (names or RequestModels._fields)]
    _, generated = models_json_schema([(model, "validation") for model in chosen], ref_template=REF + "{model}",
                                      schema_generator=_Components)
    return generated["$defs"]


# -- refusals -----------------------------------------------------------------------------------

#: the order refusals are told in when a body has more than one fault: its shape, an unknown field, the rest
_FIRST = {"model_type": 0, "model_attributes_type": 0, "extra_forbidden": 1}
#: what a refusal says after the field's name, by the model's error type ({type} and {length} are the value's,
#: the other fields the error's context)
_SAYS = {
    "model_type": "must be a JSON object, not {type}",
    "model_attributes_type": "must be a JSON object, not {type}",
    "string_type": "must be a string, not {type}",
    "string_too_long": "is {length} characters; the limit is {max_length}",
    "list_type": "must be an array, not {type}",
    "too_long": "has {length} items; the limit is {max_length}",
    "int_type": "must be an integer, not {type}",
    "greater_than_equal": "must be at least {ge}, not {value}",
    "less_than_equal": "must be at most {le}, not {value}",
    "literal_error": "must be one of {expected}",
    "bool_type": "must be true or false",
}


def _refusal(exc: ValidationError, model: type[BaseModel], field: str) -> BadRequest:
    """The first fault of ``exc`` as a 400 naming its field."""
    errors = exc.errors(include_url=False)
    error = min(errors, key=lambda e: _FIRST.get(e["type"], 2))  # min keeps document order among equals
    kind, loc, value, ctx = error["type"], error["loc"], error.get("input"), error.get("ctx") or {}
    where = _where(field, loc)
    if kind == "extra_forbidden":
        taken = ", ".join(model.model_fields)
        detail = f"unknown field {loc[-1]!r}; {_where(field, loc[:-1]) or 'the body'} takes {taken}"
    elif kind == "missing":
        about = model.model_fields[str(loc[0])].description or ""
        detail = f"{loc[-1]} is required: {about[:1].lower()}{about[1:]}"
    elif kind in _SAYS:
        length = len(value) if isinstance(value, (str, list)) else None
        detail = f"{where or 'the body'} " + _SAYS[kind].format_map({**ctx, "type": json_type(value),
                                                                     "length": length, "value": value})
    else:  # the history item's own checks (their message made with their context), or a fault with no wording here
        where = f"{where}.{ctx['at']}" if "at" in ctx else where
        detail = f"{where or 'the body'} {error['msg']}" if kind in _OWN else f"{where or 'the body'}: {error['msg']}"
    return BadRequest("invalid-request", detail, field=where or None)


def _read(model: type[_R], body, field: str = "") -> _R:
    try:
        return model.model_validate(body)
    except ValidationError as exc:
        raise _refusal(exc, model, field) from None


def _history(history, field: str) -> list:
    """A history the model accepted, read as the classifier will read it: one it refuses is the request's fault."""
    if not history:
        return []
    plain = all(isinstance(item, str) or (type(item.get("content")) is str and item.get("role") in PLAIN_ROLES)
                for item in history)
    if not plain:
        try:
            read_history(history)
        except (TypeError, ValueError) as exc:
            raise history_error(exc, field) from None
    return history


def read_classify(body, settings, field: str = "") -> tuple[str, list]:
    """``(message, history)`` from a classify request (or one batch item at ``field``)."""
    check_unicode(body, field)
    request = _read(request_models(settings).ClassifyRequest, body, field)
    return request.message, _history(request.history, field)


def read_turn(body, settings) -> tuple[str, list, int]:
    """``(message, history, k)`` from a turn request."""
    check_unicode(body)
    request = _read(request_models(settings).TurnRequest, body)
    return request.message, _history(request.history, ""), settings.default_k if request.k is None else request.k


def read_batch(body, settings) -> list:
    """The ``items`` of a classify batch (each one still to be read by :func:`read_classify`, which judges
    its strings: an item holding a lone surrogate fails alone)."""
    if isinstance(body, dict):
        check_unicode({key: None for key in body})  # the field names here; each item's own are its own
        if not isinstance(body.get("items"), list):
            check_unicode(body)
    return _read(request_models(settings).BatchRequest, body).items


def read_regression(body, settings) -> tuple[str, list, str, bool]:
    """``(message, history, expect, write)`` from a request to save a turn as a regression case."""
    check_unicode(body)
    request = _read(request_models(settings).RegressionRequest, body)
    return request.message, _history(request.history, ""), request.expect, request.write


def history_error(exc: Exception, field: str = "") -> BadRequest:
    """The history reader's ``TypeError``/``ValueError`` about a history, as a 400 naming the field.

    The field is the item a :class:`~cleo_rules.history.HistoryError` is
    about (``history[2]``), else the whole ``history``; the detail is the
    library's own message.
    """
    loc = ("history", exc.index) if isinstance(exc, HistoryError) else ("history",)
    return BadRequest("invalid-history", str(exc), field=_where(field, loc))
