"""bench/README's generated sections: each is rendered from committed results files and written
between its markers by ``python -m bench report``; ``--check`` writes nothing and exits 1 where
the README differs from what the files give (tests/bench/test_readme.py runs it)."""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import churn, cluster_decisions, compare_churn, explain, readme_sections, report

BENCH = Path(__file__).resolve().parent
README = BENCH / "README.md"
OPERATOR_GUIDE = BENCH.parent / "docs" / "operator-guide.md"
PLUGIN_AUTHOR_GUIDE = BENCH.parent / "docs" / "plugin-author-guide.md"
RESULTS = BENCH / "results"
LABELS = {
    "README": "bench/README.md",
    "OPERATOR_GUIDE": "docs/operator-guide.md",
    "PLUGIN_AUTHOR_GUIDE": "docs/plugin-author-guide.md",
}
"""A section's ``document``: the file it names, as the commands' messages call it."""


@dataclass(frozen=True)
class Section:
    """A block of bench/README between ``begin`` and ``end``, rendered from ``sources``."""

    name: str
    begin: str
    end: str
    sources: tuple[str, ...]
    """Files under bench/results the text is rendered from."""
    render: Callable[[list[Any]], str]
    """The text between the markers (without them), from the sources in order: a ``.json``
    file's document, any other file's text."""
    document: str = "README"
    """The file the section is in: a key of ``LABELS``, the name of this module's path to it."""


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
        "churn",
        "<!-- churn:begin -->",
        "<!-- churn:end -->",
        ("churn.json",),
        lambda docs: churn.readme_text(docs[0]),
    ),
    Section(
        "workloads",
        "<!-- workloads:begin -->",
        "<!-- workloads:end -->",
        ("latest.json",),
        lambda docs: report.workloads_paragraph(docs[0]),
    ),
    Section(
        "shapes",
        "<!-- shapes:begin -->",
        "<!-- shapes:end -->",
        ("workload-shapes.json",),
        lambda docs: readme_sections.workload_shapes(docs[0]),
    ),
    Section(
        "decoders",
        "<!-- decoders:begin -->",
        "<!-- decoders:end -->",
        ("latest.json",),
        lambda docs: readme_sections.decoders_table(docs[0]),
    ),
    Section(
        "http-split",
        "<!-- http-split:begin -->",
        "<!-- http-split:end -->",
        ("latest.json",),
        lambda docs: readme_sections.http_split_table(docs[0]),
    ),
    Section(
        "shadow-settled",
        "<!-- shadow-settled:begin -->",
        "<!-- shadow-settled:end -->",
        ("shadow-settled-hotpath.txt",),
        lambda docs: readme_sections.shadow_cost_table("shadow-settled-hotpath.txt", docs[0]),
    ),
    Section(
        "soak",
        "<!-- soak:begin -->",
        "<!-- soak:end -->",
        ("soak.json",),
        lambda docs: readme_sections.soak_section(docs[0]),
    ),
    Section(
        "targets-notes",
        "<!-- targets-notes:begin -->",
        "<!-- targets-notes:end -->",
        ("latest.json",),
        lambda docs: readme_sections.targets_notes(docs[0]),
    ),
    Section(
        "cluster-state",
        "<!-- cluster-state:begin -->",
        "<!-- cluster-state:end -->",
        ("cluster-state.json", "cluster.json"),
        lambda docs: readme_sections.cluster_state_table(*docs),
    ),
    Section(
        "shadow-state",
        "<!-- shadow-state:begin -->",
        "<!-- shadow-state:end -->",
        ("shadow-state.json",),
        lambda docs: readme_sections.shadow_state_table(docs[0]),
    ),
    Section(
        "snapshot-floor",
        "<!-- snapshot-floor:begin -->",
        "<!-- snapshot-floor:end -->",
        ("snapshot-real-decode.txt",),
        lambda docs: readme_sections.snapshot_floor_table("snapshot-real-decode.txt", docs[0]),
    ),
    Section(
        "cluster-cost",
        "<!-- cluster-cost:begin -->",
        "<!-- cluster-cost:end -->",
        ("cluster.json",),
        lambda docs: readme_sections.cluster_cost_table(docs[0]),
        document="OPERATOR_GUIDE",
    ),
    Section(
        "cluster-verbs",
        "<!-- cluster-verbs:begin -->",
        "<!-- cluster-verbs:end -->",
        ("cluster.json",),
        lambda docs: readme_sections.cluster_verbs_table(docs[0]),
        document="PLUGIN_AUTHOR_GUIDE",
    ),
    Section(
        "results",
        "<!-- results:start -->",
        "<!-- results:end -->",
        ("latest.json",),
        lambda docs: report.results_section(docs[0]),
    ),
    Section(
        "cluster-decisions",
        cluster_decisions.DECISIONS_BEGIN,
        cluster_decisions.DECISIONS_END,
        ("cluster.json",),
        lambda docs: cluster_decisions.decisions_block(docs[0]),
    ),
)


class MarkersMissing(ValueError):
    """The README lacks a section's markers (or has them out of order)."""


def rendered(section: Section, results: Path | None = None) -> str:
    folder = RESULTS if results is None else results
    docs = [load(folder / name) for name in section.sources]
    return section.render(docs)


def load(path: Path) -> Any:
    """A results file's content: the document of a ``.json``, the text of anything else (the
    saved output of a command that prints, such as ``bench.hotpath``)."""
    text = path.read_text()
    return json.loads(text) if path.suffix == ".json" else text


def current(text: str, section: Section) -> str:
    """What the README holds between the section's markers."""
    _, found, rest = text.partition(section.begin)
    body, closed, _ = rest.partition(section.end)
    if not found or not closed:
        where = LABELS[section.document]
        raise MarkersMissing(f"{where} has no {section.begin} ... {section.end} block")
    return body.strip("\n")


def replace(text: str, section: Section, body: str) -> str:
    current(text, section)  # the markers must be there
    head, _, rest = text.partition(section.begin)
    _, _, tail = rest.partition(section.end)
    return f"{head}{section.begin}\n{body}\n{section.end}{tail}"


def document_path(section: Section, readme: Path | None = None) -> Path:
    """Where the section is, read at call time (tests put copies in place of the files);
    ``readme``, when given, stands for bench/README.md."""
    if readme is not None and section.document == "README":
        return readme
    path: Path = globals()[section.document]
    return path


def stale(readme: Path | None = None, results: Path | None = None) -> list[str]:
    """The names of the sections whose text differs from their results files (``readme``: a
    bench/README to read instead of the committed one)."""
    texts: dict[Path, str] = {}
    names = []
    for section in SECTIONS:
        path = document_path(section, readme)
        text = texts.setdefault(path, path.read_text())
        if current(text, section) != rendered(section, results).strip("\n"):
            names.append(section.name)
    return names


def write(
    readme: Path | None = None, results: Path | None = None, only: Collection[str] | None = None
) -> None:
    """Write every section (``only``: the sections of those names) from its results files."""
    texts: dict[Path, str] = {}
    for section in SECTIONS:
        if only is not None and section.name not in only:
            continue
        path = document_path(section, readme)
        text = texts.get(path, path.read_text())
        texts[path] = replace(text, section, rendered(section, results))
    for path, text in texts.items():
        path.write_text(text)


def main(check: bool) -> int:
    if check:
        differ = stale()
        for name in differ:
            print(f"{name}: the section differs from its results files;"
                  " run `python -m bench report`")  # fmt: skip
        return 1 if differ else 0
    write()
    for section in SECTIONS:
        print(f"{LABELS[section.document]}: {section.name} from {', '.join(section.sources)}")
    return 0
