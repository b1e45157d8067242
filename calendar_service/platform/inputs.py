"""Turning untrusted JSON into the public input models, with errors naming every bad field.

Text a stranger sends is refused if it contains NUL (U+0000), wherever it is: in a body's
field (at any depth, key or value), a tool argument, a URL's path id or query parameter, a
settings form. PostgreSQL cannot store NUL in text and SQLite can, so refusing it at the door
(``nul_errors``) keeps the two backends answering alike: 400, naming the field.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

import orjson
from pydantic import BaseModel, ValidationError

from calendar_service.platform.errors import FieldError, ValidationFailed

M = TypeVar("M", bound=BaseModel)

NUL = "\x00"
NUL_MESSAGE = "must not contain NUL characters (U+0000)"

_MESSAGES = {
    "missing": "is required",
    "extra_forbidden": "is not a known field",
    "string_type": "must be a string",
    "bool_type": "must be true or false",
    "int_type": "must be a whole number",
    "none_required": "must be null",
}


def _field_name(model: type[BaseModel], loc: tuple[Any, ...]) -> str:
    if not loc:
        return "body"
    head = loc[0]
    info = model.model_fields.get(str(head))
    name = info.alias if info is not None and info.alias else str(head)
    return _shown(".".join([name, *(str(part) for part in loc[1:])]))


def validation_failed(model: type[BaseModel], exc: ValidationError) -> ValidationFailed:
    errors: list[FieldError] = []
    seen: set[str] = set()
    for err in exc.errors(include_url=False, include_context=False, include_input=False):
        field = _field_name(model, tuple(err["loc"]))
        if field in seen:  # "str | None" reports each branch of the union; once is enough
            continue
        seen.add(field)
        errors.append(FieldError(field, _MESSAGES.get(err["type"], err["msg"])))
    return ValidationFailed(errors)


def _shown(name: str) -> str:
    """A field name fit to print: a NUL in it written as JSON writes it."""
    return name.replace(NUL, "\\u0000")


def _has_nul(value: Any) -> bool:
    """Whether any string in decoded JSON (keys included, at any depth) contains NUL. Without
    recursion: a body may nest as deep as the JSON decoder allows."""
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str:
            if NUL in item:
                return True
        elif kind is dict:
            for key, member in item.items():
                if NUL in key:
                    return True
                stack.append(member)
        elif kind is list:
            stack.extend(item)
    return False


def _may_have_nul(data: Any) -> bool:
    r"""Cheaply: False if no string in decoded JSON has a NUL. orjson writes a NUL as \u0000,
    which a string can only also hold as text (``\\u0000`` in JSON): rarely, and then the
    exact walk decides."""
    try:
        # bytes.find, not ``in`` (which raises and drops a TypeError first, for a bytes needle)
        return orjson.dumps(data).find(b"\\u0000") >= 0
    except orjson.JSONEncodeError:  # nested deeper than orjson encodes, or not JSON data
        return _has_nul(data)


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def nul_errors(values: Mapping[str, Any] | Iterable[tuple[str, Any]]) -> list[FieldError]:
    """A ``FieldError`` for each named value with a NUL in it: in its name, or in a string at
    any depth of it (``recurrence.1``); ``[]`` when there are none."""
    pairs = list(values.items() if isinstance(values, Mapping) else values)
    errors: list[FieldError] = []
    stack: list[tuple[str, Any]] = []
    for name, value in reversed(pairs):  # reversed onto a stack: found in document order
        stack.append((_shown(name), NUL if NUL in name else value))
    while stack:
        path, item = stack.pop()
        kind = type(item)
        if kind is str:
            if NUL in item:
                errors.append(FieldError(path, NUL_MESSAGE))
        elif kind is dict:
            for key, member in reversed(item.items()):
                stack.append((_child(path, _shown(key)), NUL if NUL in key else member))
        elif kind is list:
            for index in range(len(item) - 1, -1, -1):
                stack.append((_child(path, str(index)), item[index]))
    return errors


def check_text(field: str, value: str | None) -> list[FieldError]:
    """``[FieldError]`` if the text ``value`` contains NUL (for the core's own entry points,
    such as the CLI's, which take text without a model)."""
    return [FieldError(field, NUL_MESSAGE)] if value and NUL in value else []


def parse_model(model: type[M], data: Any) -> M:
    """Validate already-decoded JSON against ``model`` (strict types, unknown fields refused,
    no NUL in any string)."""
    if not isinstance(data, dict):
        raise ValidationFailed([FieldError("body", "must be a JSON object")])
    refused = nul_errors(data) if _may_have_nul(data) else []
    try:
        parsed = model.model_validate(data)
    except ValidationError as exc:
        errors = validation_failed(model, exc).errors
        if refused:  # one error per field: the NUL, which is what to fix first
            named = {e["field"].split(".", 1)[0] for e in refused}
            errors = refused + [e for e in errors if e["field"].split(".", 1)[0] not in named]
        raise ValidationFailed(errors) from None
    if refused:
        raise ValidationFailed(refused)
    return parsed


def parse_partial(model: type[M], data: Any) -> tuple[M, list[FieldError]]:
    """Like ``parse_model``, but on type errors returns the model built from the fields that
    were fine (the others ``None``) and the errors, so that the core can check values too and
    the caller hears about every bad field at once."""
    try:
        return parse_model(model, data), []
    except ValidationFailed as exc:
        if not isinstance(data, dict):
            raise
        bad = {e["field"].split(".", 1)[0] for e in exc.errors}
        good: dict[str, Any] = {}
        for name, info in model.model_fields.items():
            alias = info.alias or name
            if alias in bad:
                good[name] = None
            elif alias in data:
                good[name] = data[alias]
        return model.model_construct(**good), list(exc.errors)


DUPLICATE_MESSAGE = "is given more than once"


def parse_json_body(body: bytes) -> Any:
    """Decode a request body: valid JSON (RFC 8259, UTF-8, no lone surrogates, nesting bounded)
    in which no object has a key twice. Decoders keep the last of duplicate keys silently; two
    parties reading the same body could then disagree on what it says, so it is refused."""
    if not body.strip():
        raise ValidationFailed([FieldError("body", "is empty; send a JSON object")])
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise ValidationFailed([FieldError("body", f"is not valid JSON ({exc.msg})")]) from None
    duplicated = _duplicates_of(body, data)
    if duplicated:
        raise ValidationFailed(duplicated)
    return data


def duplicate_keys(body: bytes) -> list[FieldError]:
    """Where the JSON ``body`` has an object with a key twice (``[]`` if nowhere, or if it is
    not valid JSON: its parser will say so). For fronts whose JSON another library decodes."""
    try:
        data = orjson.loads(body)
    except orjson.JSONDecodeError:
        return []
    return _duplicates_of(body, data)


def _duplicates_of(body: bytes, data: Any) -> list[FieldError]:
    r"""``duplicate_keys`` for a body already decoded (by orjson) as ``data``.

    Every ':' outside strings separates one object member, and orjson writes every ':' as is:
    so a body without a duplicate key has as many ':' as its data encoded again, unless a ':'
    in a string was written as an escape (\u003a). Only then, or when the counts differ, is
    the body read again, slowly, to find the duplicates and say where."""
    try:
        suspect = body.count(b":") != orjson.dumps(data).count(b":") or body.find(b"\\u003") >= 0
    except orjson.JSONEncodeError:  # nested deeper than orjson encodes (it decodes deeper)
        suspect = True
    return _duplicate_keys(body) if suspect else []


class _Members(list[tuple[str, Any]]):
    """An object's members in document order, duplicates kept (``json``'s object_pairs_hook)."""


def _duplicate_keys(body: bytes) -> list[FieldError]:
    """Where ``body`` (valid JSON) has an object with a key twice, in document order."""
    try:
        tree = json.loads(body, object_pairs_hook=_Members)
    except RecursionError:  # within orjson's depth limit but beyond the json module's
        return [FieldError("body", "is nested too deeply")]
    errors: list[FieldError] = []
    stack: list[tuple[str, Any]] = [("", tree)]
    while stack:
        path, item = stack.pop()
        if type(item) is _Members:
            seen: set[str] = set()
            reported: set[str] = set()
            for key, _ in item:
                if key in seen and key not in reported:
                    errors.append(FieldError(_child(path, _shown(key)), DUPLICATE_MESSAGE))
                    reported.add(key)
                seen.add(key)
            stack.extend((_child(path, _shown(k)), v) for k, v in reversed(item))
        elif type(item) is list:
            stack.extend((_child(path, str(i)), item[i]) for i in range(len(item) - 1, -1, -1))
    return errors


def parse_flag(field: str, value: Any) -> bool:
    """A yes-or-no option (``dryRun``, ``force``): ``true`` or ``false``, as JSON or in a
    query string (absent or empty: false); anything else is a 400 naming ``field``."""
    if value is None or value == "" or value is False or value == "false":
        return False
    if value is True or value == "true":
        return True
    raise ValidationFailed([FieldError(field, "must be true or false")])
