"""Reading request bodies: JSON shape and limits, with the field at fault named.

These checks are the JSON shape of a request and the service's limits, and
the library's own reading of a history (:func:`cleo_rules.history.read_history`),
nothing more: what a history item *means* (a user message, a role-tagged
turn) is the library's business. The rules here are the ones the OpenAPI
document states (the request schemas beside each endpoint's registration in
:mod:`cleo_rules.serve.endpoints`).

Every refusal is a :class:`BadRequest` (a 400 problem), raised here and
nowhere else: an endpoint reads its body first, so a ``TypeError`` or
``ValueError`` from the work that follows is a fault of the service (a 500),
never blamed on the request.

The limits hold for every form of a history item: ``max_message_chars`` is
the longest message, history string and history item's ``content`` (a string,
or the texts of a list of parts, in all). No string and no field name of a
request may hold a lone surrogate (``"\\ud800"``: JSON allows the escape, but
the text is not Unicode and could be neither answered nor stored): the
request, or the one batch item holding it, is refused with E319 before
anything else is done with it.
"""

from __future__ import annotations

import json

from ..history import ASSISTANT, USER, HistoryError, read_history
from ..jsonl import json_type, lone_surrogate
from ..kinds import DecisionKind
from .problems import ServiceError

__all__ = ["BadRequest", "check_unicode", "history_error", "parse_json", "read_batch", "read_classify",
           "read_regression", "read_turn"]

KINDS = tuple(DecisionKind)
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
                inner.append((sub, f"{where}.{key}" if where else key))
            stack.extend(reversed(inner))
        elif isinstance(item, list):
            stack.extend((item[n], f"{where}[{n}]") for n in range(len(item) - 1, -1, -1))


def _object(body, field: str, allowed: tuple[str, ...]) -> dict:
    if not isinstance(body, dict):
        raise _bad(field, f"{field or 'the body'} must be a JSON object, not {json_type(body)}")
    for key in body:
        if key not in allowed:
            where = f"{field}.{key}" if field else key
            raise _bad(where, f"unknown field {key!r}; {field or 'the body'} takes {', '.join(allowed)}")
    return body


def _message(body: dict, field: str, max_chars: int) -> str:
    where = f"{field}.message" if field else "message"
    if "message" not in body:
        raise _bad(where, "message is required: the user's message, a string")
    message = body["message"]
    if not isinstance(message, str):
        raise _bad(where, f"message must be a string, not {json_type(message)}")
    if len(message) > max_chars:
        raise _bad(where, f"message is {len(message)} characters; the limit is {max_chars}")
    return message


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
    return 0  # not text: the classifier says what is wrong with it


def _history(body: dict, field: str, max_items: int, max_chars: int) -> list:
    where = f"{field}.history" if field else "history"
    history = body.get("history")
    if history is None:
        return []
    if not isinstance(history, list):
        raise _bad(where, f"history must be an array of earlier messages, oldest first, not {json_type(history)}")
    if len(history) > max_items:
        raise _bad(where, f"history has {len(history)} items; the limit is {max_items}")
    plain = True  # every item a string or {"role": "user" | "assistant", "content": str}: nothing to refuse
    for n, item in enumerate(history):
        if isinstance(item, str):
            if len(item) > max_chars:
                raise _bad(f"{where}[{n}]", f"history[{n}] is {len(item)} characters; the limit is {max_chars}")
        elif isinstance(item, dict):
            content = item.get("content")
            chars = _content_chars(content)
            if chars > max_chars:  # the same limit as a string item's, whatever the form
                raise _bad(f"{where}[{n}].content", f"history[{n}].content holds {chars} characters of text; the "
                                                    f"limit is {max_chars}")
            plain = plain and type(content) is str and item.get("role") in PLAIN_ROLES
        else:
            raise _bad(f"{where}[{n}]", f"history[{n}] must be a string or an object, not {json_type(item)}")
    if not plain:  # what the classifier will read: a history it refuses is the request's fault
        try:
            read_history(history)
        except (TypeError, ValueError) as exc:
            raise history_error(exc, field) from None
    return history


def read_classify(body, settings, field: str = "") -> tuple[str, list]:
    """``(message, history)`` from a classify request (or one batch item at ``field``)."""
    check_unicode(body, field)
    body = _object(body, field, ("message", "history"))
    return _message(body, field, settings.max_message_chars), _history(body, field, settings.max_history,
                                                                       settings.max_message_chars)


def read_turn(body, settings) -> tuple[str, list, int]:
    """``(message, history, k)`` from a turn request."""
    check_unicode(body)
    body = _object(body, "", ("message", "history", "k"))
    message = _message(body, "", settings.max_message_chars)
    history = _history(body, "", settings.max_history, settings.max_message_chars)
    k = body.get("k")
    if k is None:
        k = settings.default_k
    elif isinstance(k, float) and k.is_integer():
        k = int(k)  # JSON does not tell 5 from 5.0
    if not isinstance(k, int) or isinstance(k, bool):
        raise _bad("k", f"k must be an integer from 1 to {settings.max_k}, not {json_type(body.get('k'))}")
    if not 1 <= k <= settings.max_k:
        raise _bad("k", f"k must be an integer from 1 to {settings.max_k}, not {k}")
    return message, history, k


def read_batch(body, settings) -> list:
    """The ``items`` of a classify batch (each one still to be read by :func:`read_classify`, which judges
    its strings: an item holding a lone surrogate fails alone)."""
    if isinstance(body, dict):
        check_unicode({key: None for key in body})  # the field names here; each item's own are its own
        if not isinstance(body.get("items"), list):
            check_unicode(body)
    body = _object(body, "", ("items",))
    if "items" not in body:
        raise _bad("items", "items is required: an array of {\"message\", \"history\"} objects")
    items = body["items"]
    if not isinstance(items, list):
        raise _bad("items", f"items must be an array, not {json_type(items)}")
    if len(items) > settings.max_batch:
        raise _bad("items", f"items has {len(items)} entries; the limit is {settings.max_batch}")
    return items


def history_error(exc: Exception, field: str = "") -> BadRequest:
    """The history reader's ``TypeError``/``ValueError`` about a history, as a 400 naming the field.

    The field is the item a :class:`~cleo_rules.history.HistoryError` is
    about (``history[2]``), else the whole ``history``; the detail is the
    library's own message.
    """
    where = f"history[{exc.index}]" if isinstance(exc, HistoryError) else "history"
    return BadRequest("invalid-history", str(exc), field=f"{field}.{where}" if field else where)


def read_regression(body, settings) -> tuple[str, list, str, bool]:
    """``(message, history, expect, write)`` from a request to save a turn as a regression case."""
    check_unicode(body)
    if not isinstance(body, dict):
        raise _bad("", "the body must be a JSON object with message, history and expect")
    _object(body, "", ("message", "history", "expect", "write"))
    message, history = read_classify({k: body[k] for k in ("message", "history") if k in body}, settings)
    expect = body.get("expect")
    if not isinstance(expect, str) or expect not in KINDS:
        raise _bad("expect", f"expect must be one of {', '.join(KINDS)}")
    write = body.get("write", False)
    if not isinstance(write, bool):
        raise _bad("write", "write must be true or false")
    return message, history, expect, write
