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


def renamed(node: Any, names: dict[str, str]) -> Any:
    """``node`` with its references to the schemas ``names`` renames made to the new names
    (the document names objects as the API does: "Calendar", not the model's
    "CalendarPublic")."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(SCHEMA.format("")):
            name = ref.removeprefix(SCHEMA.format(""))
            return {**node, "$ref": SCHEMA.format(names.get(name, name))}
        return {key: renamed(value, names) for key, value in node.items()}
    if isinstance(node, list):
        return [renamed(value, names) for value in node]
    return node


def ref_headers(*names: str) -> dict[str, Any]:
    return {name: {"$ref": HEADER.format(name)} for name in names}


def json_content(schema: str, **extra: Any) -> dict[str, Any]:
    """A JSON body of the component schema ``schema`` (``extra``: its examples)."""
    return {"application/json": {"schema": {"$ref": SCHEMA.format(schema)}, **extra}}
