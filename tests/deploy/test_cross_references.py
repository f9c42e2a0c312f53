"""Every place that sends the reader to a heading by name (``README, "Security"``,
``docs/operator-guide.md, "Start order"``) names a heading that exists in that document, and
every Markdown link to ``#anchor`` resolves: a renamed section cannot leave a dead pointer."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = {
    "README": ROOT / "README.md",
    "operator-guide.md": ROOT / "docs" / "operator-guide.md",
    "operator guide": ROOT / "docs" / "operator-guide.md",
    "plugin-author-guide.md": ROOT / "docs" / "plugin-author-guide.md",
    "plugin-author guide": ROOT / "docs" / "plugin-author-guide.md",
    "new-volcano-release.md": ROOT / "docs" / "new-volcano-release.md",
    "bench/README.md": ROOT / "bench" / "README.md",
    "tests/conformance/README.md": ROOT / "tests" / "conformance" / "README.md",
}
REFERENCE = re.compile(
    r"(README(?:\.md)?(?:'s)?|(?:docs/)?operator-guide\.md|operator guide|"
    r"(?:docs/)?plugin-author-guide\.md|plugin-author guide|(?:docs/)?new-volcano-release\.md|"
    r"bench/README\.md|tests/conformance/README\.md)[,:]? \"([A-Z][^\"]{2,80})\""
)
SOURCES = [
    path
    for pattern in ("**/*.py", "**/*.md", "**/*.yaml", "**/*.go", "**/*.sh", "Dockerfile")
    for path in ROOT.glob(pattern)
    if not any(
        part.startswith(".") or part == "node_modules" for part in path.relative_to(ROOT).parts
    )
]


def headings(document: Path) -> list[str]:
    """The ``#`` headings, and the bold run-in ones that open a paragraph or a list item
    (``**What is validated.** Only ...``)."""
    text = re.sub(r"```.*?```", "", document.read_text(), flags=re.S)
    found = [m[1].strip() for m in re.finditer(r"^#+\s+(.*)$", text, re.M)]
    found += [m[1].rstrip(".:") for m in re.finditer(r"^(?:- )?\*\*(.+?)\*\*", text, re.M)]
    return found


def anchor(heading: str) -> str:
    """GitHub's anchor of a heading."""
    return re.sub(r"[^\w\- ]", "", heading.lower()).replace(" ", "-")


def document_of(name: str, source: Path) -> Path:
    name = name.removesuffix("'s").removeprefix("docs/")
    if name == "README.md" and source.parent != ROOT:
        local = source.parent / "README.md"
        if local.exists() and source.name != "README.md":
            return local
    return DOCUMENTS.get(name, DOCUMENTS["README"] if name.startswith("README") else ROOT / name)


def references() -> list[tuple[str, Path, str]]:
    found = []
    for source in SOURCES:
        for match in REFERENCE.finditer(source.read_text(errors="replace")):
            # A name wrapped over two comment lines ("In the container\n#     image").
            heading = re.sub(r"\s*\n\s*(?:#|//)?\s*", " ", match[2])
            found.append((str(source.relative_to(ROOT)), document_of(match[1], source), heading))
    return found


@pytest.mark.parametrize(("source", "document", "heading"), references())
def test_a_heading_named_in_words_exists(source: str, document: Path, heading: str) -> None:
    titles = headings(document)
    # "Sizing" names "## 2. Sizing"; a heading may carry a number or code after the words.
    assert any(heading in re.sub(r"^\d+[a-z]?\.\s+", "", title) for title in titles), (
        f'{source} names {document.relative_to(ROOT)} "{heading}", which has no such'
        f" heading: {titles}"
    )


def test_every_anchor_link_resolves() -> None:
    broken = []
    for source in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        text = re.sub(r"```.*?```", "", source.read_text(), flags=re.S)
        for target, fragment in re.findall(r"\]\(([^)\s#]*)#([^)\s]+)\)", text):
            document = (source.parent / target).resolve() if target else source
            if fragment not in {anchor(h) for h in headings(document)}:
                broken.append(f"{source.name}: ({target}#{fragment})")
    assert not broken
