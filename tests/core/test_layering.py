"""The layers of the house, checked on every module; and the migrations match the models.

Arrows point one way: the assembly (``app``, the CLI) → the fronts (REST, the settings pages,
MCP, webhooks) → the HTTP plumbing the web fronts share → the core. The core imports no web
framework, MCP, HTTP client, scheduler or template engine, and nothing of ours but the core;
fronts do not import each other. Every module of our packages belongs to exactly one layer
(``_layer``): a new module is checked from its first commit, and one that fits no layer fails
the test instead of being skipped.
"""

from __future__ import annotations

import ast
from pathlib import Path

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlmodel import SQLModel

from calendar_service.db import Database

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("calendar_service", "mcp_tools", "webhooks")

# Third-party packages that only the outer layers may use.
FRAMEWORKS = frozenset(
    {
        "starlette",
        "mcp",
        "mcp_types",
        "httpx",
        "httpx2",
        "apscheduler",
        "uvicorn",
        "typer",
        "jinja2",
    }
)

# What each layer may import of ours (its own layer always), and which frameworks.
ALLOWED: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "core": (frozenset(), frozenset()),
    "plumbing": (frozenset({"core"}), frozenset({"starlette"})),
    "rest": (frozenset({"core", "plumbing"}), frozenset({"starlette"})),
    "account": (frozenset({"core", "plumbing"}), frozenset({"starlette", "jinja2"})),
    "mcp": (
        frozenset({"core", "plumbing"}),
        frozenset({"starlette", "mcp", "mcp_types", "httpx", "httpx2"}),
    ),
    "webhooks": (frozenset({"core"}), frozenset({"httpx", "apscheduler"})),
    "cli": (frozenset({"core", "webhooks", "mcp", "app"}), FRAMEWORKS),
    "app": (frozenset({"core", "plumbing", "rest", "account", "mcp", "webhooks"}), FRAMEWORKS),
}

# calendar_service's fronts and assembly, by their first path part; the rest of it is core.
_CALENDAR_SERVICE_OUTER = {
    "asgi": "plumbing",
    "rest": "rest",
    "account": "account",
    "cli": "cli",
    "app.py": "app",
}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _layer(module: str) -> str:
    """The layer of one of our modules (dotted name), or ``""`` for a module of no package
    of ours."""
    package, _, rest = module.partition(".")
    if package == "mcp_tools":
        return "mcp"
    if package == "webhooks":
        return "webhooks"
    if package != "calendar_service":
        return ""
    first = rest.split(".")[0] if rest else ""
    outer = _CALENDAR_SERVICE_OUTER.get(first) or _CALENDAR_SERVICE_OUTER.get(first + ".py")
    return outer or "core"


def _our_files() -> list[Path]:
    return sorted(path for package in PACKAGES for path in (ROOT / package).rglob("*.py"))


def _imports(source: str, module: str, *, is_package: bool) -> set[str]:
    """Every module ``source`` (the text of ``module``) imports, at any depth of the file,
    relative imports resolved."""
    package = module if is_package else module.rpartition(".")[0]
    tree = ast.parse(source)
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def _offences(source: str, module: str, *, is_package: bool = False) -> list[str]:
    layer = _layer(module)
    ours, frameworks = ALLOWED[layer]
    found = []
    for name in sorted(_imports(source, module, is_package=is_package)):
        top = name.split(".")[0]
        if top in FRAMEWORKS and top not in frameworks:
            found.append(f"{name} (a {layer} module may not use {top})")
        target = _layer(name)
        if target and target != layer and target not in ours:
            found.append(f"{name} (the {layer} layer may not import the {target} layer)")
    return found


def test_every_module_of_ours_belongs_to_a_layer_with_rules() -> None:
    files = _our_files()
    assert len(files) > 40
    layers = {_layer(_module_name(path)) for path in files}
    assert layers == set(ALLOWED)


def test_no_module_imports_across_the_layers_rules() -> None:
    offenders = {}
    for path in _our_files():
        source = path.read_text(encoding="utf-8")
        module = _module_name(path)
        if found := _offences(source, module, is_package=path.name == "__init__.py"):
            offenders[str(path.relative_to(ROOT))] = found
    assert offenders == {}


def test_the_layer_check_sees_imports_inside_functions_and_relative_ones() -> None:
    """The check itself: a core module with a forbidden import hidden in a function, and one
    importing a front relatively, are both caught."""
    planted = "def f():\n    import starlette\n    from .rest import routes\n    return routes\n"
    found = _offences(planted, "calendar_service.planted")
    assert found == [
        "calendar_service.rest (the core layer may not import the rest layer)",
        "calendar_service.rest.routes (the core layer may not import the rest layer)",
        "starlette (a core module may not use starlette)",
    ]


def test_the_migrations_produce_exactly_the_models_schema(db: Database) -> None:
    with db.engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": False})
        diff = compare_metadata(context, SQLModel.metadata)
    assert diff == []
