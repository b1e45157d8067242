"""The wire format every public shape shares: camelCase JSON, and strict input.

``Wire`` is the base of what the service answers, ``Input`` of what it reads (strict types,
unknown fields refused); ``INPUT_TIME`` is the JSON Schema of an input date-time.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel
from pydantic.json_schema import JsonDict

from calendar_service.platform.schema_patterns import TOOL_DATE_OR_DATE_TIME_PATTERN


class Wire(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)


class Input(Wire):
    # Strict types: "true" is not a boolean and 5 is not a title. Unknown fields are refused
    # so that a typo such as "startAt" is an error rather than a silently ignored value.
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, strict=True, extra="forbid"
    )


# What an input date-time may be (a date, a time with or without an offset): JSON Schema's
# ``format: date-time`` would refuse the dates and local times the core accepts and the
# descriptions invite (see ``schema_patterns``).
INPUT_TIME: JsonDict = {"pattern": TOOL_DATE_OR_DATE_TIME_PATTERN}
