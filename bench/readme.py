"""bench/README's generated sections: each is rendered from committed results files and written
between its markers by ``python -m bench report``; ``--check`` writes nothing and exits 1 where
the README differs from what the files give (tests/bench/test_readme.py runs it)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import compare_churn, explain, report

BENCH = Path(__file__).resolve().parent
README = BENCH / "README.md"
RESULTS = BENCH / "results"


@dataclass(frozen=True)
class Section:
    """A block of bench/README between ``begin`` and ``end``, rendered from ``sources``."""

    name: str
    begin: str
    end: str
    sources: tuple[str, ...]
    """Files under bench/results the text is rendered from."""
    render: Callable[[list[dict[str, Any]]], str]
    """The text between the markers (without them), from the sources' JSON, in order."""


SECTIONS: tuple[Section, ...] = (
    Section(
        "explain",
        "<!-- explain:begin -->",
        "<!-- explain:end -->",
        ("explain.json", "explain-1000-nodes.json"),
        lambda docs: explain.readme_text(*docs),
    ),
    Section(
        "compare-churn",
        "<!-- compare-churn:begin -->",
        "<!-- compare-churn:end -->",
        ("compare-churn.json",),
        lambda docs: compare_churn.readme_text(docs[0]),
    ),
    Section(
        "workloads",
        "<!-- workloads:begin -->",
        "<!-- workloads:end -->",
        ("latest.json",),
        lambda docs: report.workloads_paragraph(docs[0]),
    ),
    Section(
        "results",
        "<!-- results:start -->",
        "<!-- results:end -->",
        ("latest.json",),
        lambda docs: report.results_section(docs[0]),
    ),
)


class MarkersMissing(ValueError):
    """The README lacks a section's markers (or has them out of order)."""


def rendered(section: Section, results: Path | None = None) -> str:
    folder = RESULTS if results is None else results
    docs = [json.loads((folder / name).read_text()) for name in section.sources]
    return section.render(docs)


def current(text: str, section: Section) -> str:
    """What the README holds between the section's markers."""
    _, found, rest = text.partition(section.begin)
    body, closed, _ = rest.partition(section.end)
    if not found or not closed:
        raise MarkersMissing(f"bench/README.md has no {section.begin} ... {section.end} block")
    return body.strip("\n")


def replace(text: str, section: Section, body: str) -> str:
    current(text, section)  # the markers must be there
    head, _, rest = text.partition(section.begin)
    _, _, tail = rest.partition(section.end)
    return f"{head}{section.begin}\n{body}\n{section.end}{tail}"


def stale(readme: Path | None = None, results: Path | None = None) -> list[str]:
    """The names of the sections whose README text differs from their results files."""
    text = (README if readme is None else readme).read_text()
    return [s.name for s in SECTIONS if current(text, s) != rendered(s, results).strip("\n")]


def write(readme: Path | None = None, results: Path | None = None) -> None:
    path = README if readme is None else readme
    text = path.read_text()
    for section in SECTIONS:
        text = replace(text, section, rendered(section, results))
    path.write_text(text)


def main(check: bool) -> int:
    if check:
        differ = stale()
        for name in differ:
            print(f"bench/README.md: the {name} section differs from its results files;"
                  " run `python -m bench report`")  # fmt: skip
        return 1 if differ else 0
    write()
    for section in SECTIONS:
        print(f"bench/README.md: {section.name} from {', '.join(section.sources)}")
    return 0
