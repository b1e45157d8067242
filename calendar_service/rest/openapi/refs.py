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


def operation(
    operation_id: str,
    tag: str,
    summary: str,
    description: str,
    responses: dict[str, Any],
    *,
    parameters: list[Any] | None = None,
    body: dict[str, Any] | None = None,
    security: list[Any] | None = None,
) -> dict[str, Any]:
    """One operation of a path, its keys in the document's order (``security``: only where
    it differs from the document's, ``[]`` for a public one)."""
    out: dict[str, Any] = {"operationId": operation_id, "tags": [tag]}
    if security is not None:
        out["security"] = security
    out["summary"] = summary
    out["description"] = description
    if parameters is not None:
        out["parameters"] = parameters
    if body is not None:
        out["requestBody"] = body
    out["responses"] = responses
    return out


def link(operation_id: str, description: str, **parameters: str) -> dict[str, Any]:
    """An OpenAPI link of an answer: the operation it leads to, with ``parameters`` taken
    from the answer (``$response.body#/id``)."""
    return {"operationId": operation_id, "description": description, "parameters": parameters}


def answer(
    description: str,
    content: dict[str, Any] | None = None,
    *,
    headers: tuple[str, ...] = OK_HEADERS,
    **links: Any,
) -> dict[str, Any]:
    """A successful answer with ``headers`` (by default those of every one), its ``content``
    and the OpenAPI ``links`` to the operations it leads to."""
    out: dict[str, Any] = {"description": description, "headers": ref_headers(*headers)}
    if content is not None:
        out["content"] = content
    if links:
        out["links"] = links
    return out
