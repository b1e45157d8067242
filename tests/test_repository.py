"""The repository stands alone: a fresh clone has everything its docs, comments and scripts
point at. No tracked file names a file outside it (the working notes and contracts kept beside
the repository while it was written are not in a clone), and every relative link in the
Markdown resolves to a file in the repository."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# What only exists beside the repository: its folder, and the documents kept there.
_OUTSIDE = re.compile(
    r"\.\./shared\b|\bshared/(?:reference|notes|seed|hooks)\b|\b(?:SPEC|STYLE)\.md\b"
)
# A Markdown link or image to a relative target: [text](target) or [text](<target>).
_LINK = re.compile(r"\]\(<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\)")


def _tracked_text_files() -> dict[str, str]:
    names = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split("\0")
    texts = {}
    for name in filter(None, names):
        path = ROOT / name
        if path == Path(__file__) or not path.is_file():
            continue
        data = path.read_bytes()
        if b"\0" in data[:4096]:
            continue  # a binary file (an image)
        texts[name] = data.decode("utf-8", errors="replace")
    return texts


def test_no_tracked_file_points_outside_the_repository() -> None:
    texts = _tracked_text_files()
    assert "README.md" in texts and "pyproject.toml" in texts
    found = [
        f"{name}:{number}: {line.strip()[:100]}"
        for name, text in texts.items()
        for number, line in enumerate(text.splitlines(), 1)
        if _OUTSIDE.search(line)
    ]
    assert found == []


def test_every_relative_markdown_link_leads_to_a_file_in_the_repository() -> None:
    broken = []
    for name, text in _tracked_text_files().items():
        if not name.endswith(".md"):
            continue
        for target in _LINK.findall(text):
            if re.match(r"[a-z][a-z0-9+.-]*:", target, re.I) or target.startswith("#"):
                continue  # an absolute URL (https:, mailto:) or a heading of the same page
            path = target.split("#", 1)[0]
            resolved = ((ROOT / name).parent / path).resolve()
            if not resolved.is_relative_to(ROOT) or not resolved.exists():
                broken.append(f"{name}: {target}")
    assert broken == []
