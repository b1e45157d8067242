"""What the operations share: references to the components (``$ref``), the headers every
answer carries, a JSON body of a named schema, the sentence on the key's budget."""

from __future__ import annotations

from typing import Any

SCHEMA = "#/components/schemas/{}"
RESPONSE = "#/components/responses/{}"
HEADER = "#/components/headers/{}"
PARAMETER = "#/components/parameters/{}"

# The end of every operation's description, and what a write operation's says before it.
RATE_DOC = (
    " Every call spends one request of the key's budget and is recorded in the key's call history."
)
WRITE_NOTE = " Needs a key with `calendar:write`."

# The headers of every successful answer, as ``headers.headers`` declares them.
OK_HEADERS = (
    "Request-Id",
    "RateLimit-Policy",
    "RateLimit-Limit",
    "RateLimit-Remaining",
    "RateLimit-Reset",
    "Cache-Control",
)


def ref_headers(*names: str) -> dict[str, Any]:
    return {name: {"$ref": HEADER.format(name)} for name in names}


def json_content(schema: str, **extra: Any) -> dict[str, Any]:
    """A JSON body of the component schema ``schema`` (``extra``: its examples)."""
    return {"application/json": {"schema": {"$ref": SCHEMA.format(schema)}, **extra}}
