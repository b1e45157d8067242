"""The error tree: the drawing in ``errors``' docstring is the class tree, codes and statuses."""

from __future__ import annotations

import inspect
import re

from calendar_service.platform import errors
from calendar_service.platform.errors import CalendarError

_BRANCH = re.compile(r"^(?P<indent>[ │]*)(?:├── |└── )(?P<name>\w+)\s*(?P<rest>.*)$")


def _drawn_tree() -> dict[str, tuple[str | None, str]]:
    """Each class the docstring draws: its drawn parent, and what its line says after the name."""
    lines = (errors.__doc__ or "").splitlines()
    root = next(i for i, line in enumerate(lines) if line.strip() == "CalendarError")
    drawn: dict[str, tuple[str | None, str]] = {"CalendarError": (None, "")}
    parents = ["CalendarError"]
    for line in lines[root + 1 :]:
        if not line.strip():
            break
        branch = _BRANCH.match(line.removeprefix("    "))
        assert branch, f"not a branch of the tree: {line!r}"
        depth = len(branch["indent"]) // 4
        del parents[depth + 1 :]
        drawn[branch["name"]] = (parents[depth], branch["rest"])
        parents.append(branch["name"])
    return drawn


def test_the_drawn_error_tree_is_the_class_tree() -> None:
    classes = {
        name: cls
        for name, cls in inspect.getmembers(errors, inspect.isclass)
        if issubclass(cls, CalendarError) and cls.__module__ == errors.__name__
    }
    drawn = _drawn_tree()
    assert sorted(set(classes) - set(drawn)) == [], "draw these in errors.py's tree"
    assert sorted(set(drawn) - set(classes)) == [], "errors.py's tree draws these: no such class"
    for name, (parent, rest) in drawn.items():
        cls = classes[name]
        assert parent == (None if cls is CalendarError else cls.__bases__[0].__name__), name
        status, _, said = rest.partition(" ")
        if status.isdigit():
            assert int(status) == cls.status, name
            rest = said.strip()
        code = rest.split(" ")[0].rstrip(",")
        if re.fullmatch(r"[a-z_]+", code):
            assert code == cls.code, name
