"""The layers of the house, named module by module and checked on every import; and the
migrations match the models.

Arrows point one way: the assembly (``cli/``: the command and the ASGI app it serves) → the
fronts (REST, CalDAV, the settings pages, MCP, webhooks and the scheduled jobs) → the HTTP
plumbing the web fronts share → the core → the migrations. ``LAYERS`` says where everything
of ours lives, every folder once (and a module one by one where a folder mixes layers: only
``calendar_service/``'s ``__init__.py``). A module or folder that no
layer names fails with a message saying where to name it, and so does a name that is no
longer there.

The core imports no web framework, HTTP client or server, MCP, scheduler, command-line
or template engine: of third-party packages, only the libraries ``LIBRARIES`` names for it.
``FRAMEWORKS`` lists those the fronts choose from, and is kept complete against the
packages installed with the service and its test and bench extras. The migrations import
only the standard library, Alembic and SQLAlchemy (live code can never change an old
migration). No module imports one that imports it back, not even inside a function or for
type checking only, and no package one that imports it back, directly or around a circle.
The core's packages stand on floors (``CORE_FLOORS``): each imports only lower ones.
"""

from __future__ import annotations

import ast
import importlib.metadata
import re
import sys
from pathlib import Path
from typing import Any

from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from packaging.requirements import Requirement
from sqlmodel import SQLModel

from calendar_service.platform.db import Database

ROOT = Path(__file__).resolve().parents[2]
HERE = "tests/core/test_layering.py"
PACKAGES = ("calendar_service", "mcp_tools", "webhooks", "migrations")

# Every module and folder of ours, by layer, as paths from the repository's root. A module
# belongs to the layer that names it or, outside ``calendar_service/`` itself, the one that
# names its folder; a folder nested in another is named on its own.
LAYERS: dict[str, frozenset[str]] = {
    "core": frozenset(
        {
            "calendar_service/__init__.py",
            "calendar_service/platform/",
            "calendar_service/platform/db/",
            "calendar_service/platform/models/",
            "calendar_service/access/",
            "calendar_service/journal/",
            "calendar_service/calendar/",
            "calendar_service/calendar/events/",
            "calendar_service/calendar/recurrence/",
            "calendar_service/governance/",
            "calendar_service/interop/",
            "calendar_service/interop/ical/",
            "calendar_service/interop/caldav/",
            "calendar_service/delivery/",
            "calendar_service/delivery/triggers/",
            "calendar_service/delivery/mail/",
            "calendar_service/operations/",
        }
    ),
    "migrations": frozenset({"migrations/", "migrations/versions/"}),
    "plumbing": frozenset({"calendar_service/asgi/"}),
    "rest": frozenset({"calendar_service/rest/", "calendar_service/rest/openapi/"}),
    "dav": frozenset({"calendar_service/dav/"}),
    "account": frozenset({"calendar_service/account/"}),
    "mcp": frozenset({"mcp_tools/"}),
    "webhooks": frozenset({"webhooks/"}),
    "cli": frozenset({"calendar_service/cli/"}),
}

# The core's packages by floor, lowest first: a package imports only packages on lower
# floors (two on the same floor never import each other). docs/architecture.md draws them.
CORE_FLOORS = {
    "platform": 1,
    "access": 2,
    "journal": 3,
    "calendar": 4,
    "governance": 5,
    "interop": 6,
    "delivery": 7,
    "operations": 8,
}

# Folders whose modules are named one by one (they hold more than one layer).
MIXED = frozenset({"calendar_service/"})

# Third-party packages that make a web service, a command or a scheduled process: HTTP and
# ASGI frameworks, servers and clients and the protocol and async layers under them, MCP,
# the command line, template engines, the scheduler, the browser driver. Each layer below
# names those it may use. Kept complete by
# ``test_every_installed_web_or_async_package_is_a_framework_or_said_not_to_be``.
FRAMEWORKS = frozenset(
    {
        "starlette",
        "sse_starlette",
        "multipart",
        "python_multipart",
        "mcp",
        "mcp_types",
        "httpx",
        "httpx2",
        "httpcore",
        "httpcore2",
        "h11",
        "httptools",
        "requests",
        "urllib3",
        "uvicorn",
        "uvloop",
        "watchfiles",
        "websockets",
        "werkzeug",
        "anyio",
        "sniffio",
        "trio",
        "apscheduler",
        "typer",
        "click",
        "jinja2",
        "markupsafe",
        "mako",
        "playwright",
        # The test and bench extras': HTTP clients and their HTTP/2, HTTP/3 and TLS layers
        # (the CalDAV client's niquests), servers (SMTP, a CalDAV server to compare with), an
        # API tester, the async test plugin, the browser tests' accessibility checker.
        "niquests",
        "urllib3_future",
        "jh2",
        "qh3",
        "wassima",
        "aiosmtpd",
        "radicale",
        "schemathesis",
        "pytest_asyncio",
        "axe_playwright_python",
        # Not installed, named all the same: the usual other web frameworks, servers and HTTP
        # clients, refused to the core and the fronts before any dependency brings one in.
        "aiohttp",
        "fastapi",
        "flask",
        "django",
        "tornado",
        "sanic",
        "quart",
        "falcon",
        "hypercorn",
        "gunicorn",
        "daphne",
        "twisted",
        "treq",
        "httplib2",
        "pycurl",
        "grpc",
        # xandikos (a CalDAV server the connected-calendar tests start) and what it serves
        # with: aiohttp's parts, and dulwich (its Git storage speaks HTTP too).
        "xandikos",
        "aiosignal",
        "yarl",
        "propcache",
        "dulwich",
    }
)

# Installed with the service and classified as web or async (or needing such a package) by
# their own metadata, but no framework: what each is for.
NOT_FRAMEWORKS = {
    "alembic": "schema migrations (it renders new migration files with Mako)",
    "sqlmodel": "the tables and models (its metadata says HTTP for FastAPI's sake)",
    "dotenv": "reads .env files for the MCP SDK's settings",
    "pydantic_settings": "the MCP SDK's settings, read from the environment",
    "openapi_spec_validator": "the tests' check of the OpenAPI document (it can fetch $refs)",
    "openapi_schema_validator": "the tests' check of the OpenAPI document's schemas",
    "pyinstrument": "the benchmarks' profiler (it profiles async code too)",
}

# The only third-party packages the core and the migrations may import, beyond the standard
# library.
LIBRARIES: dict[str, frozenset[str]] = {
    "core": frozenset(
        {
            "alembic",
            "argon2",
            "cryptography",
            "dateutil",
            "email_validator",
            "icalendar",
            "idna",
            "orjson",
            "pydantic",
            "regex",
            "sqlalchemy",
            "sqlmodel",
        }
    ),
    "migrations": frozenset({"alembic", "sqlalchemy"}),
}

# The standard library's own HTTP: no more the core's business than httpx.
STDLIB_HTTP = frozenset(
    {"http.client", "http.server", "urllib.request", "wsgiref", "socketserver", "xmlrpc"}
)

# XML, parsed or written, is the CalDAV front's (``dav/``): the core deals in resources and
# their properties as plain values (``interop/caldav/names.py``). defusedxml and lxml are
# third-party, which ``LIBRARIES`` refuses the core already.
STDLIB_XML = frozenset({"xml", "pyexpat"})

# What each layer may import of ours (its own layer always), and which frameworks.
ALLOWED: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "migrations": (frozenset(), frozenset()),
    "core": (frozenset({"migrations"}), frozenset()),
    "plumbing": (frozenset({"core"}), frozenset({"starlette"})),
    "rest": (frozenset({"core", "plumbing"}), frozenset({"starlette"})),
    "dav": (frozenset({"core", "plumbing"}), frozenset({"starlette"})),
    "account": (frozenset({"core", "plumbing"}), frozenset({"starlette", "jinja2", "anyio"})),
    "mcp": (
        frozenset({"core", "plumbing"}),
        frozenset({"starlette", "mcp", "mcp_types", "httpx", "httpx2", "anyio"}),
    ),
    "webhooks": (
        frozenset({"core"}),
        frozenset({"httpx", "httpcore", "httptools", "sniffio", "apscheduler"}),
    ),
    "cli": (
        frozenset({"core", "plumbing", "rest", "dav", "account", "mcp", "webhooks"}),
        FRAMEWORKS,
    ),
}


def _our_files() -> list[str]:
    return sorted(
        path.relative_to(ROOT).as_posix()
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
    )


def _layer(path: str) -> str | None:
    """The layer of one of our files (``calendar_service/platform/errors.py``) or folders
    (``webhooks/``), or None when no layer names it."""
    for layer, names in LAYERS.items():
        if path in names:
            return layer
    folder = path.rstrip("/").rpartition("/")[0] + "/"
    if path.endswith("/") or folder in MIXED:
        return None
    return next((layer for layer, names in LAYERS.items() if folder in names), None)


def _file_of(module: str) -> str | None:
    """The file or folder of ours that importing the dotted ``module`` (or a name in it)
    reaches, or None for a module that is not ours."""
    parts = module.split(".")
    if parts[0] not in PACKAGES:
        return None
    while parts:
        base = "/".join(parts)
        if (ROOT / f"{base}.py").is_file():
            return f"{base}.py"
        if (ROOT / base / "__init__.py").is_file():
            return f"{base}/__init__.py"
        if (ROOT / base).is_dir():
            return f"{base}/"
        parts.pop()
    return None


def _from_base(node: ast.ImportFrom, package: str) -> str:
    """The module a ``from … import`` statement imports from, resolved when relative."""
    base = node.module or ""
    if node.level:
        anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
        base = ".".join([*anchor, base] if base else anchor)
    return base


def _imports(source: str, module: str, *, is_package: bool) -> set[str]:
    """Every module ``source`` (the text of ``module``) imports, at any depth of the file,
    relative imports resolved."""
    package = module if is_package else module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _from_base(node, package)
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def _imported_files(path: str) -> set[str]:
    """The modules of ours that the file ``path`` imports, anywhere in it: for
    ``from package import name``, the module ``name`` when it is one, else the package."""
    module = _module_name(path)
    package = module if path.endswith("/__init__.py") else module.rpartition(".")[0]
    names: set[str] = set()
    for node in ast.walk(ast.parse((ROOT / path).read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _from_base(node, package)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    files = {_file_of(name) for name in names}
    return {f for f in files if f and f != path and f.endswith(".py")}


def _module_name(path: str) -> str:
    parts = path.removesuffix(".py").split("/")
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _offences(source: str, module: str, layer: str, *, is_package: bool = False) -> list[str]:
    ours, frameworks = ALLOWED[layer]
    libraries = LIBRARIES.get(layer)
    found = []
    for name in sorted(_imports(source, module, is_package=is_package)):
        top = name.split(".")[0]
        if top in FRAMEWORKS and top not in frameworks:
            found.append(f"{name} (a {layer} module may not use {top})")
        elif libraries is not None and any(
            name == http or name.startswith(f"{http}.") for http in STDLIB_HTTP
        ):
            found.append(f"{name} (a {layer} module does no HTTP)")
        elif libraries is not None and layer == "core" and top in STDLIB_XML:
            found.append(f"{name} (the core reads and writes no XML: the CalDAV front does)")
        elif (
            libraries is not None
            and top not in PACKAGES
            and top not in sys.stdlib_module_names
            and top not in libraries
            and top not in FRAMEWORKS
        ):
            found.append(
                f"{name} (a {layer} module imports no third-party package but "
                f"{', '.join(sorted(libraries))}; see LIBRARIES in {HERE})"
            )
        file = _file_of(name)
        target = _layer(file) if file else None
        if target and target != layer and target not in ours:
            found.append(f"{name} (the {layer} layer may not import the {target} layer)")
    return found


def test_every_module_and_folder_of_ours_is_named_in_a_layer() -> None:
    unnamed: set[str] = set()
    for path in _our_files():
        if _layer(path) is not None:
            continue
        folder = path.rpartition("/")[0] + "/"
        unnamed.add(
            f"{path}: a module of {folder} that no layer names"
            if folder in MIXED
            else f"{folder}: a folder that no layer names"
        )
    assert not unnamed, (
        "These have no layer; name each in one of LAYERS in "
        f"{HERE}, after checking what it imports:\n" + "\n".join(sorted(unnamed))
    )


def test_every_name_in_the_layers_is_there_and_every_layer_has_rules() -> None:
    files = _our_files()
    gone = {
        name
        for names in LAYERS.values()
        for name in names
        if not any(path == name or path.startswith(name) for path in files)
    }
    assert gone == set()
    assert set(LAYERS) == set(ALLOWED)


def test_no_module_imports_across_the_layers_rules() -> None:
    offences: list[str] = []
    for path in _our_files():
        layer = _layer(path)
        if layer is None:
            continue  # reported by the test above
        source = (ROOT / path).read_text(encoding="utf-8")
        is_package = path.endswith("/__init__.py")
        found = _offences(source, _module_name(path), layer, is_package=is_package)
        offences.extend(f"{path} imports {offence}" for offence in found)
    assert not offences, "\n".join(offences)


def test_no_module_of_ours_imports_one_that_imports_it_back() -> None:
    """Not at the top, not inside a function, not for type checking only: arrows point one
    way inside a layer too."""
    graph = {path: _imported_files(path) for path in _our_files()}
    reach = {path: _reached(graph, path) for path in graph}
    cycles = {
        " ⇄ ".join(sorted({path} | {p for p in reach[path] if path in reach[p]}))
        for path in graph
        if path in reach[path]
    }
    assert not cycles, "These import each other:\n" + "\n".join(sorted(cycles))


def _package_of(path: str) -> str:
    """The top-level package a file of ours is in: a folder directly under
    ``calendar_service/`` (``calendar_service/calendar/``), a module there on its own
    (``calendar_service/__init__.py``), or ``mcp_tools/``, ``webhooks/``, ``migrations/``."""
    parts = path.split("/")
    if parts[0] == "calendar_service" and len(parts) > 2:
        return f"calendar_service/{parts[1]}/"
    if parts[0] == "calendar_service":
        return path
    return f"{parts[0]}/"


def test_no_package_imports_one_that_imports_it_back() -> None:
    """Between the top-level packages (``calendar_service``'s folders, ``mcp_tools``,
    ``webhooks``, ``migrations``), directly or around a circle: every import counts, inside
    functions too."""
    graph: dict[str, set[str]] = {}
    for path in _our_files():
        package = _package_of(path)
        graph.setdefault(package, set())
        for target in _imported_files(path):
            if _package_of(target) != package:
                graph[package].add(_package_of(target))
    for targets in list(graph.values()):
        for target in targets:
            graph.setdefault(target, set())
    reach = {package: _reached(graph, package) for package in graph}
    loops = {
        " ⇄ ".join(sorted({package} | {p for p in reach[package] if package in reach[p]}))
        for package in graph
        if package in reach[package]
    }
    assert not loops, "These packages import each other:\n" + "\n".join(sorted(loops))


def test_every_core_folder_has_a_floor() -> None:
    named = {
        name.split("/")[1] for name in LAYERS["core"] if name.endswith("/") and name.count("/") == 2
    }
    assert named == set(CORE_FLOORS), f"name each core folder in CORE_FLOORS in {HERE}"


def test_the_core_tests_mirror_the_core() -> None:
    """``tests/core/`` has a folder for each core package, and each of its folders is one of
    the core's (``tests/core/delivery/triggers/`` tests ``calendar_service/delivery/triggers/``
    directly); the fronts' tests stay under the fronts' folders."""
    tests = ROOT / "tests" / "core"
    folders = {p.parent.relative_to(tests).as_posix() for p in tests.rglob("*/__init__.py")}
    missing = sorted(set(CORE_FLOORS) - folders)
    strays = sorted(f for f in folders if not (ROOT / "calendar_service" / f).is_dir())
    assert not missing, f"no tests/core/ folder for the core packages {missing}"
    assert not strays, f"tests/core/ folders that mirror no core package: {strays}"


def test_each_core_package_imports_only_the_floors_below_it() -> None:
    upward = []
    for path in _our_files():
        parts = path.split("/")
        if parts[0] != "calendar_service" or len(parts) < 3 or parts[1] not in CORE_FLOORS:
            continue
        floor = CORE_FLOORS[parts[1]]
        for target in sorted(_imported_files(path)):
            there = target.split("/")
            if len(there) < 3 or there[1] not in CORE_FLOORS or there[1] == parts[1]:
                continue
            if CORE_FLOORS[there[1]] >= floor:
                upward.append(
                    f"{path} (floor {floor}, {parts[1]}) imports {target} "
                    f"(floor {CORE_FLOORS[there[1]]}, {there[1]})"
                )
    assert not upward, "A core package imports only lower floors:\n" + "\n".join(upward)


def _reached(graph: dict[str, set[str]], start: str) -> set[str]:
    """Every file that ``start`` imports, directly or through others."""
    reached: set[str] = set()
    todo = list(graph[start])
    while todo:
        path = todo.pop()
        if path not in reached:
            reached.add(path)
            todo.extend(graph[path])
    return reached


def test_the_layer_check_sees_imports_inside_functions_and_relative_ones() -> None:
    """The check itself: a core module with a forbidden import hidden in a function, and one
    importing a front relatively, are both caught."""
    planted = "def f():\n    import starlette\n    from .rest import routes\n    return routes\n"
    found = _offences(planted, "calendar_service.planted", "core")
    assert found == [
        "calendar_service.rest (the core layer may not import the rest layer)",
        "calendar_service.rest.routes (the core layer may not import the rest layer)",
        "starlette (a core module may not use starlette)",
    ]


def test_the_core_may_use_no_library_it_does_not_name_nor_the_standard_librarys_http() -> None:
    planted = "import requests_oauthlib\nimport urllib.request\nimport zoneinfo\n"
    assert _offences(planted, "calendar_service.planted", "core") == [
        "requests_oauthlib (a core module imports no third-party package but alembic, argon2, "
        "cryptography, "
        "dateutil, email_validator, icalendar, idna, orjson, pydantic, regex, "
        f"sqlalchemy, sqlmodel; see LIBRARIES in {HERE})",
        "urllib.request (a core module does no HTTP)",
    ]


def test_the_core_imports_no_xml_library() -> None:
    planted = "from xml.etree.ElementTree import Element\nimport defusedxml\nimport lxml.etree\n"
    assert _offences(planted, "calendar_service.interop.caldav.planted", "core") == [
        "defusedxml (a core module imports no third-party package but alembic, argon2, "
        "cryptography, dateutil, email_validator, icalendar, idna, orjson, pydantic, regex, "
        f"sqlalchemy, sqlmodel; see LIBRARIES in {HERE})",
        "lxml.etree (a core module imports no third-party package but alembic, argon2, "
        "cryptography, dateutil, email_validator, icalendar, idna, orjson, pydantic, regex, "
        f"sqlalchemy, sqlmodel; see LIBRARIES in {HERE})",
        "xml.etree.ElementTree (the core reads and writes no XML: the CalDAV front does)",
        "xml.etree.ElementTree.Element (the core reads and writes no XML: the CalDAV front does)",
    ]


def test_a_migration_imports_nothing_of_the_live_code() -> None:
    planted = "import sqlmodel\nfrom calendar_service.platform.models import UTCDateTime\n"
    assert _offences(planted, "migrations.versions.0099_planted", "migrations") == [
        "calendar_service.platform.models (the migrations layer may not import the core layer)",
        "calendar_service.platform.models.UTCDateTime "
        "(the migrations layer may not import the core layer)",
        "sqlmodel (a migrations module imports no third-party package but alembic, sqlalchemy; "
        f"see LIBRARIES in {HERE})",
    ]


def test_a_new_folder_or_core_module_has_no_layer_until_named() -> None:
    assert _layer("calendar_service/reports/__init__.py") is None
    assert _layer("calendar_service/calendar/events/drafts/__init__.py") is None
    assert _layer("calendar_service/reports.py") is None
    assert _layer("calendar_service/calendar/events/drafts.py") == "core"
    assert _layer("webhooks/retry.py") == "webhooks"


def test_the_top_level_is_packages_only_about_a_dozen() -> None:
    """``calendar_service/`` lists its packages (the core's domains and the fronts) and no
    loose module: what a newcomer sees first is the map."""
    top = ROOT / "calendar_service"
    entries = sorted(p.name for p in top.iterdir() if p.name != "__pycache__")
    packages = [e for e in entries if (top / e / "__init__.py").is_file()]
    loose = sorted(set(entries) - set(packages) - {"__init__.py", "py.typed"})
    assert loose == [], f"loose entries at calendar_service/'s top: {loose}"
    assert len(packages) <= 13, packages


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _shipped_distributions() -> dict[str, set[str]]:
    """The distributions installed with the service and its ``test`` and ``bench`` extras
    (their dependencies, theirs, and so on, extras included where asked for), each with the
    distributions it needs: a front could import any of them."""
    needs: dict[str, set[str]] = {}
    todo: list[tuple[str, frozenset[str]]] = [("calendar-service", frozenset({"test", "bench"}))]
    seen: set[tuple[str, frozenset[str]]] = set()
    while todo:
        name, extras = todo.pop()
        if (name, extras) in seen:
            continue
        seen.add((name, extras))
        for line in importlib.metadata.distribution(name).requires or []:
            requirement = Requirement(line)
            marker = requirement.marker
            if marker and not any(marker.evaluate({"extra": e}) for e in {"", *extras}):
                continue
            needed = _normalized(requirement.name)
            needs.setdefault(_normalized(name), set()).add(needed)
            todo.append((needed, frozenset(requirement.extras)))
    return needs


WEB_CLASSIFIERS = (
    "Topic :: Internet :: WWW/HTTP",
    "Environment :: Web Environment",
    "Framework :: AsyncIO",
    "Framework :: AnyIO",
    "Framework :: Trio",
)


def test_every_installed_web_or_async_package_is_a_framework_or_said_not_to_be() -> None:
    """A distribution installed with the service that its metadata calls web, HTTP or async,
    or that needs one that is, provides only modules ``FRAMEWORKS`` or ``NOT_FRAMEWORKS``
    name: a new dependency's web layer cannot slip into the core unnoticed."""
    needs = _shipped_distributions()
    shipped = set(needs) | {d for ds in needs.values() for d in ds}
    shipped.discard("calendar-service")

    def classified_web(name: str) -> bool:
        classifiers = importlib.metadata.distribution(name).metadata.get_all("Classifier")
        return any(c.startswith(WEB_CLASSIFIERS) for c in classifiers or [])

    web = {name for name in shipped if classified_web(name)}
    grew = True
    while grew:
        more = {name for name in shipped - web if needs.get(name, set()) & web}
        web |= more
        grew = bool(more)
    modules: dict[str, set[str]] = {}
    for module, distributions in importlib.metadata.packages_distributions().items():
        for distribution in distributions:
            modules.setdefault(_normalized(distribution), set()).add(module)
    assert {"starlette", "httpcore", "anyio", "uvicorn", "mcp"} <= web
    unknown = {
        f"{module} (from {name})"
        for name in web
        for module in modules.get(name, set())
        if module not in FRAMEWORKS and module not in NOT_FRAMEWORKS and not module.startswith("_")
    }
    assert unknown == set(), f"add these to FRAMEWORKS or NOT_FRAMEWORKS in {HERE}"


def _in_the_models(name: str | None, type_: str, parent_names: Any) -> bool:
    """Everything but the search index (migration 0017), which no model describes: an FTS5
    table and its shadow tables on SQLite, an index on an expression on PostgreSQL."""
    return not (name or "").startswith(("events_search", "ix_events_search"))


def test_the_migrations_produce_exactly_the_models_schema(db: Database) -> None:
    with db.engine.connect() as conn:
        opts = {"compare_type": False, "include_name": _in_the_models}
        context = MigrationContext.configure(conn, opts=opts)
        diff = compare_metadata(context, SQLModel.metadata)
    assert diff == []
