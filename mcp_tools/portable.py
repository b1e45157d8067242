"""Tool schemas every model provider takes, and small enough to read on every turn.

A schema published in ``tools/list`` is handed by the client to a model provider as a function
declaration: OpenAI's function calling (strict mode included) and Gemini's function declarations
each take a subset of JSON Schema, and reject or silently drop the rest. ``portable`` rewrites a
schema into the subset both take (docs/mcp.md, "The schema subset"):

- ``type`` a single string; a nullable value as ``anyOf: [{type: X}, {type: "null"}]`` (never a
  ``type`` array, which Gemini's single-``type`` dialect cannot read);
- only the keywords in ``KEYWORDS``: no ``format``, ``pattern``, ``default``, ``examples``,
  ``title``, ``minLength``/``maxLength``, ``$ref``/``$defs``; ``const`` becomes a one-value
  ``enum``.

What the dropped keywords said is checked by the core on every call (a bad date, a too-long
title), and refused with a message that says what to send (``mcp_tools.errors``).
"""

from __future__ import annotations

from typing import Any

KEYWORDS = frozenset(
    {
        "type",
        "description",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "anyOf",
        "minimum",
        "maximum",
        "minItems",
        "maxItems",
    }
)
"""The JSON Schema keywords a published tool schema may use."""

TYPES = frozenset({"string", "integer", "number", "boolean", "object", "array", "null"})


def portable(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` in the portable subset, ``$ref`` inlined from its ``$defs``."""
    defs = schema.get("$defs", {})
    out = _node(schema, defs)
    assert isinstance(out, dict)
    return out


def nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """A value that may also be null, as both dialects read it."""
    description = schema.get("description")
    branch = {k: v for k, v in schema.items() if k != "description"}
    out: dict[str, Any] = {"anyOf": [branch, {"type": "null"}]}
    if description:
        out["description"] = description
    return out


def _node(node: Any, defs: dict[str, Any]) -> Any:
    if isinstance(node, list):
        return [_node(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        node = {
            **defs[ref.removeprefix("#/$defs/")],
            **{k: v for k, v in node.items() if k != "$ref"},
        }
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "const":
            out["enum"] = [value]
        elif key == "properties":
            out[key] = {name: _node(prop, defs) for name, prop in value.items()}
        elif key == "additionalProperties":
            if value is False:  # True is JSON Schema's default; a schema there is not portable
                out[key] = False
        elif key in KEYWORDS:
            out[key] = _node(value, defs)
    kind = out.get("type")
    if isinstance(kind, list):
        del out["type"]
        branches = [{"type": t} for t in kind]
        rest = {k: out.pop(k) for k in list(out) if k not in ("description",)}
        first = next(b for b in branches if b["type"] != "null")
        first.update(rest)
        out["anyOf"] = branches
    if "anyOf" in out and len(out["anyOf"]) == 1:
        out.update(out.pop("anyOf")[0])
    return out


def violations(schema: Any, path: str = "") -> list[str]:
    """Where ``schema`` leaves the portable subset (empty: nowhere)."""
    found: list[str] = []
    if isinstance(schema, list):
        for i, item in enumerate(schema):
            found += violations(item, f"{path}[{i}]")
        return found
    if not isinstance(schema, dict):
        return found
    for key, value in schema.items():
        where = f"{path}.{key}" if path else key
        if key not in KEYWORDS:
            found.append(f"{where}: keyword {key!r} is not in the portable subset")
        elif key == "type" and not (isinstance(value, str) and value in TYPES):
            found.append(f"{where}: type must be one of {sorted(TYPES)}, not {value!r}")
        elif key == "additionalProperties" and value is not False:
            found.append(f"{where}: only additionalProperties: false is portable")
        elif key == "properties":
            for name, prop in value.items():
                found += violations(prop, f"{where}.{name}")
        elif key in ("items", "anyOf"):
            found += violations(value, where)
    return found
