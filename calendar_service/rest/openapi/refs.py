"""What the operations share: references to the components (``$ref``), the headers every
answer carries, a JSON body of a named schema, the sentence on the key's budget."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel

from calendar_service.operations.catalog import Operation
from calendar_service.rest import parameters as query_parameters

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


def model_schemas(
    models: Iterable[tuple[type[BaseModel], Literal["validation", "serialization"]]],
    names: dict[str, str],
) -> dict[str, Any]:
    """The schemas of ``models`` (each as it is read or as it is written) and of the models
    they hold, without pydantic's titles, named as ``names`` renames them."""
    out: dict[str, Any] = {}
    for model, mode in models:
        schema = model.model_json_schema(
            by_alias=True, ref_template=SCHEMA.replace("{}", "{model}"), mode=mode
        )
        for name, inner in schema.pop("$defs", {}).items():
            out[names.get(name, name)] = _untitled(inner)
        out[names.get(model.__name__, model.__name__)] = _untitled(schema)
    return renamed(out, names)


def _untitled(schema: dict[str, Any]) -> dict[str, Any]:
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    return schema


def named_by(parameter: str, **methods: Any) -> dict[str, Any]:
    """The path item of a path that names ``parameter`` (a component), with ``methods``'
    operations."""
    return {"parameters": [{"$ref": PARAMETER.format(parameter)}], **methods}


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


@dataclass(frozen=True, slots=True)
class Tag:
    """A tag of the document (``doc``: its entry in ``tags``) and the operations filed under
    it."""

    name: str
    description: str = ""

    @property
    def doc(self) -> dict[str, str]:
        return {"name": self.name, "description": self.description}

    def operation(
        self,
        served: Operation,
        summary: str,
        description: str,
        responses: dict[str, Any],
        *,
        before: tuple[dict[str, Any], ...] = (),
        body: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The operation of the catalog's ``served``: its id the catalog's name, its parameters
        ``before`` (a header's) and the query parameters ``rest/parameters.py`` lists for it."""
        parameters = [*before, *query_parameters.refs(served.name)]
        return operation(
            served.name,
            self.name,
            summary,
            description,
            responses,
            parameters=parameters,
            body=body,
        )


def link(operation_id: str, description: str, **parameters: str) -> dict[str, Any]:
    """An OpenAPI link of an answer: the operation it leads to, with ``parameters`` taken
    from the answer (``$response.body#/id``)."""
    return {"operationId": operation_id, "description": description, "parameters": parameters}


def next_page(operation_id: str, description: str) -> dict[str, Any]:
    """The link from a page of a list to the next (``nextPageToken``)."""
    return link(operation_id, description, pageToken="$response.body#/nextPageToken")


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
