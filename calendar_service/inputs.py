"""Turning untrusted JSON into the public input models, with errors naming every bad field.

Text a stranger sends is refused if it contains NUL (U+0000), wherever it is: in a body's
field (at any depth, key or value), a tool argument, a URL's path id or query parameter, a
settings form. PostgreSQL cannot store NUL in text and SQLite can, so refusing it at the door
(``nul_errors``) keeps the two backends answering alike: 400, naming the field.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

import orjson
from pydantic import BaseModel, ValidationError

from calendar_service.errors import FieldError, ValidationFailed

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
    kind = type(value)
    if kind is str:
        return NUL in value
    if kind is dict:
        return any(NUL in k or _has_nul(v) for k, v in value.items())
    if kind is list:
        return any(_has_nul(v) for v in value)
    return False


def nul_errors(values: Mapping[str, Any] | Iterable[tuple[str, Any]]) -> list[FieldError]:
    """A ``FieldError`` for each named value with a NUL in it (in its name, or in a string at
    any depth of it: ``recurrence.1``); ``[]`` when there are none, which is almost always and
    costs one scan of each string."""
    pairs = values.items() if isinstance(values, Mapping) else values
    errors: list[FieldError] = []
    for name, value in pairs:
        if NUL in name:
            errors.append(FieldError(_shown(name), NUL_MESSAGE))
        elif _has_nul(value):
            if isinstance(value, dict):
                errors.extend(
                    FieldError(f"{name}.{e['field']}", e["message"]) for e in nul_errors(value)
                )
            elif isinstance(value, list):
                errors.extend(
                    FieldError(f"{name}.{e['field']}", e["message"])
                    for e in nul_errors((str(i), v) for i, v in enumerate(value))
                )
            else:
                errors.append(FieldError(name, NUL_MESSAGE))
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
    refused = nul_errors(data) if _has_nul(data) else []
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


def parse_json_body(body: bytes) -> Any:
    if not body.strip():
        raise ValidationFailed([FieldError("body", "is empty; send a JSON object")])
    try:
        return orjson.loads(body)
    except orjson.JSONDecodeError as exc:
        raise ValidationFailed([FieldError("body", f"is not valid JSON ({exc.msg})")]) from None
