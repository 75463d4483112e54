"""Every reference to the documentation resolves inside the repository.

Links between the Markdown pages (and from the README) must name an existing file and,
with a ``#fragment``, an existing heading of it; a ``docs/<page>.md#anchor`` cited in a
docstring or comment of the code or the tests must too. Nothing may cite the design
notes and specs that live outside the repository.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = REPO / "docs"
PAGES = sorted(DOCS.glob("*.md"))
CODE_DIRS = ("domain", "application", "infrastructure", "tests", "bench", "agentlog")
LINK = re.compile(r"\]\(([^)\s]+)\)")
CODE_REFERENCE = re.compile(r"docs/([\w.-]+\.md)(#[\w-]+)?")
OUTSIDE = re.compile(r"spec/[\w-]+\.md|design\.md|session-core\.md|persistence-query")


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to -."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


@cache
def anchors(page: Path) -> frozenset[str]:
    headings = re.findall(r"^#+ (.+)$", page.read_text(encoding="utf-8"), re.M)
    return frozenset(slug(heading) for heading in headings)


def code_files() -> list[Path]:
    files: list[Path] = []
    for directory in CODE_DIRS:
        files += (REPO / directory).rglob("*.py")
    return sorted(path for path in files if "__pycache__" not in path.parts)


def check(target: Path, fragment: str | None, where: str) -> None:
    assert target.exists(), f"{where}: {target.relative_to(REPO)} does not exist"
    if fragment and target.suffix == ".md":
        assert fragment in anchors(target), f"{where}: no heading #{fragment}"


@pytest.mark.parametrize(
    "page",
    [*PAGES, REPO / "README.md", REPO / "bench" / "README.md"],
    ids=lambda p: p.name,
)
def test_links_of_a_page_resolve(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    for link in LINK.findall(text):
        if re.match(r"[a-z]+:", link):
            continue  # an external URL
        path, _, fragment = link.partition("#")
        target = page if not path else (page.parent / path).resolve()
        check(target, fragment or None, f"{page.name} -> {link}")


def test_docstring_references_resolve() -> None:
    cited = 0
    for path in code_files():
        text = path.read_text(encoding="utf-8")
        for name, fragment in CODE_REFERENCE.findall(text):
            where = f"{path.relative_to(REPO)} cites docs/{name}{fragment}"
            check(DOCS / name, fragment.removeprefix("#") or None, where)
            cited += 1
    assert cited > 50  # the code cites the docs; this test reads the citations


def test_nothing_cites_documents_outside_the_repository() -> None:
    offenders = [
        f"{path.relative_to(REPO)}: {match}"
        for path in [*code_files(), REPO / "README.md", *PAGES]
        if path != Path(__file__).resolve()
        for match in OUTSIDE.findall(path.read_text(encoding="utf-8"))
    ]
    assert offenders == []


def test_the_index_lists_every_page() -> None:
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    listed = set(LINK.findall(index))
    missing = [page.name for page in PAGES if page.name != "README.md"]
    assert [name for name in missing if name not in listed] == []
