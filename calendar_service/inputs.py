"""Turning untrusted JSON into the public input models, with errors naming every bad field."""

from __future__ import annotations

from typing import Any, TypeVar

import orjson
from pydantic import BaseModel, ValidationError

from calendar_service.errors import FieldError, ValidationFailed

M = TypeVar("M", bound=BaseModel)

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
    return ".".join([name, *(str(part) for part in loc[1:])])


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


def parse_model(model: type[M], data: Any) -> M:
    """Validate already-decoded JSON against ``model`` (strict types, unknown fields refused)."""
    if not isinstance(data, dict):
        raise ValidationFailed([FieldError("body", "must be a JSON object")])
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise validation_failed(model, exc) from None


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
