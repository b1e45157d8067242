"""The core knows nothing about HTTP, MCP, httpx or schedulers; migrations match the models."""

from __future__ import annotations

import ast
from pathlib import Path

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlmodel import SQLModel

from calendar_service.db import Database

CORE = Path(__file__).resolve().parents[2] / "calendar_service"
FRONTS = {"rest", "web", "account", "cli", "app.py"}
FORBIDDEN = (
    "starlette",
    "mcp",
    "httpx",
    "httpx2",
    "apscheduler",
    "uvicorn",
    "typer",
    "jinja2",
    "mcp_tools",
    "webhooks",
)


def _core_files() -> list[Path]:
    files = []
    for path in CORE.rglob("*.py"):
        rel = path.relative_to(CORE)
        if rel.parts[0] in FRONTS:
            continue
        files.append(path)
    return files


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module.split(".")[0])
    return names


def test_the_core_imports_no_web_framework_mcp_http_client_or_scheduler() -> None:
    files = _core_files()
    assert len(files) > 8
    offenders = {
        str(path.relative_to(CORE)): sorted(_imports(path) & set(FORBIDDEN)) for path in files
    }
    assert {name: bad for name, bad in offenders.items() if bad} == {}


def test_the_migrations_produce_exactly_the_models_schema(db: Database) -> None:
    with db.engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": False})
        diff = compare_metadata(context, SQLModel.metadata)
    assert diff == []
