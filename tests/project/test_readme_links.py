"""Every link inside the project's Markdown resolves: an in-page `](#anchor)` to a heading of the page (GitHub's
slugs), a relative link to a file that exists, and `](file.md#anchor)` to a heading of that file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from helpers import ROOT

PAGES = [ROOT / "README.md", ROOT / "SECURITY.md", ROOT / "CHANGELOG.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: its text as rendered, lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"`([^`]*)`", r"\1", heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def prose(path: Path) -> list[str]:
    """The lines of a page outside fenced code blocks."""
    out, fenced = [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if not fenced:
            out.append(line)
    return out


def headings(path: Path) -> list[str]:
    return [m.group(2) for line in prose(path) if (m := re.match(r"(#{1,6}) +(.+?) *#*$", line))]


def anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for heading in headings(path):
        base = slug(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def test_slugs_are_githubs():
    assert slug("Install") == "install"
    assert slug("The store in PostgreSQL") == "the-store-in-postgresql"
    assert slug("For conversation designers: changing rules") == "for-conversation-designers-changing-rules"
    assert slug("`cleo-rules check` in CI") == "cleo-rules-check-in-ci"
    assert slug("One turn end to end") == "one-turn-end-to-end"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_heading_is_one_heading(page):
    """A heading run into the next (`## Install## Install`) renders as one odd heading and breaks its links."""
    for heading in headings(page):
        assert not re.search(r"#{2,} ?\S", heading), heading


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_every_link_resolves(page):
    checked = 0
    for line in prose(page):
        for target in LINK.findall(line):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ...
                continue
            file, _, anchor = target.partition("#")
            where = (page.parent / file).resolve() if file else page
            assert where.exists(), f"{page.name}: {target}: no such file"
            if anchor and where.suffix == ".md":
                assert anchor in anchors(where), f"{page.name}: {target}: no such heading in {where.name}"
            checked += 1
    if page.name == "README.md":
        assert checked > 10 and "install" in anchors(page)


def test_the_readme_links_to_install_and_the_heading_is_there():
    readme = ROOT / "README.md"
    assert "](#install)" in readme.read_text(encoding="utf-8")
    assert "Install" in headings(readme)
