"""Maps that tell the truth: each package's docstring names every module in it and none that is
not there, and no comment or docstring names a file outside the repository."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("calendar_service", "mcp_tools", "webhooks", "migrations")

# The root package's map is the house's: LAYERS in tests/core/test_layering.py, and the
# architecture page in docs/.
UNMAPPED = frozenset({"calendar_service"})

# A line of a package's docstring that starts with a module: ``name``, name.py or name/.
_ENTRY = re.compile(
    r"^\s*(?:- )?(?:``(?P<marked>[a-z_]\w*)(?:\.py)?``|(?P<plain>[a-z_]\w*)(?:\.py|/))[\s:]"
)


def _packages() -> list[Path]:
    return sorted(
        init.parent
        for package in PACKAGES
        for init in (ROOT / package).rglob("__init__.py")
        if init.parent.relative_to(ROOT).as_posix() not in UNMAPPED
    )


def _modules(folder: Path) -> set[str]:
    """The modules and folders of Python modules in ``folder``, by name."""
    files = {p.stem for p in folder.glob("*.py") if p.stem not in {"__init__", "__main__"}}
    folders = {p.name for p in folder.iterdir() if p.is_dir() and any(p.glob("*.py"))}
    return files | folders


def _docstring(folder: Path) -> str:
    init = folder / "__init__.py"
    return ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""


def test_every_package_docstring_names_each_of_its_modules() -> None:
    unnamed = []
    for folder in _packages():
        doc = _docstring(folder)
        for module in sorted(_modules(folder)):
            mark = rf"``{module}(?:\.py)?``|\b{module}\.py\b|\b{module}/"
            if not re.search(mark, doc):
                unnamed.append(f"{folder.relative_to(ROOT)}/__init__.py: {module}")
    assert not unnamed, "the package's docstring does not name these modules:\n" + "\n".join(
        unnamed
    )


def test_no_package_docstring_lists_a_module_that_is_not_there() -> None:
    listed_but_gone = []
    for folder in _packages():
        modules = _modules(folder)
        for line in _docstring(folder).splitlines():
            if (entry := _ENTRY.match(line)) and (entry["marked"] or entry["plain"]) not in modules:
                listed_but_gone.append(f"{folder.relative_to(ROOT)}/__init__.py: {line.strip()}")
    assert not listed_but_gone, "\n".join(listed_but_gone)


def _comments_and_docstrings(path: Path) -> list[str]:
    source = path.read_text(encoding="utf-8")
    texts = [line.partition("#")[2] for line in source.splitlines() if "#" in line]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            texts.append(ast.get_docstring(node) or "")
    return texts


def test_no_comment_or_docstring_names_a_file_outside_the_repository() -> None:
    """A ``*.md`` file named in our code or tests is one of the repository's (from its root, or
    in docs/), and no path climbs out of it."""
    outside = []
    files = [p for package in (*PACKAGES, "tests") for p in (ROOT / package).rglob("*.py")]
    for path in files:
        for text in _comments_and_docstrings(path):
            for name in re.findall(r"[\w./-]*\w\.md\b", text):
                if not ((ROOT / name).is_file() or (ROOT / "docs" / name).is_file()):
                    outside.append(f"{path.relative_to(ROOT)}: {name}")
            if "../" in text:
                outside.append(f"{path.relative_to(ROOT)}: {text.strip()[:80]}")
    assert not outside, "\n".join(outside)


MODULE_LINES_MAX = 800


def test_no_module_is_longer_than_800_lines() -> None:
    """A module a reader takes in whole: a longer one splits along a seam that says what each
    part is (``ical.desired`` and ``ical.importing``: what a file wants, and its writing)."""
    long = [
        f"{path.relative_to(ROOT)}: {count} lines"
        for package in PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if (count := len(path.read_text(encoding="utf-8").splitlines())) > MODULE_LINES_MAX
    ]
    assert not long, f"modules over {MODULE_LINES_MAX} lines:\n" + "\n".join(long)
