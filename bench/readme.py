"""bench/README's generated sections: each is rendered from committed results files and written
between its markers by ``python -m bench report``; ``--check`` writes nothing and exits 1 where
the README differs from what the files give (tests/bench/test_readme.py runs it)."""

from __future__ import annotations

import json
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import churn, cluster_decisions, compare_churn, readme_sections, report

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
    sources: tuple[str, ...]
    """Files under bench/results the text is rendered from."""
    render: Callable[..., str]
    """The text between the markers (without them), from the sources in order, one argument
    each: a ``.json`` file's document, any other file's text."""
    document: str = "README"
    """The file the section is in: a key of ``LABELS``, the name of this module's path to it."""
    markers: tuple[str, str] | None = None
    """``begin`` and ``end`` where they are not ``<!-- NAME:begin -->`` and ``<!-- NAME:end -->``."""

    @property
    def begin(self) -> str:
        return self.markers[0] if self.markers else f"<!-- {self.name}:begin -->"

    @property
    def end(self) -> str:
        return self.markers[1] if self.markers else f"<!-- {self.name}:end -->"


SECTIONS: tuple[Section, ...] = (
    Section("compare-churn", ("compare-churn.json",), compare_churn.readme_text),
    Section("churn", ("churn.json",), churn.readme_text),
    Section("workloads", ("latest.json",), report.workloads_paragraph),
    Section("shapes", ("workload-shapes.json",), readme_sections.workload_shapes),
    Section("decoders", ("latest.json",), readme_sections.decoders_table),
    Section("http-split", ("latest.json",), readme_sections.http_split_table),
    Section(
        "shadow-settled",
        ("shadow-settled-hotpath.txt",),
        lambda text: readme_sections.shadow_cost_table("shadow-settled-hotpath.txt", text),
    ),
    Section("soak", ("soak.json",), readme_sections.soak_section),
    Section("cluster-state", ("cluster-state.json",), readme_sections.cluster_state_table),
    Section("shadow-state", ("shadow-state.json",), readme_sections.shadow_state_table),
    Section(
        "snapshot-floor",
        ("snapshot-real-decode.txt",),
        lambda text: readme_sections.snapshot_floor_table("snapshot-real-decode.txt", text),
    ),
    Section(
        "cluster-cost",
        ("cluster.json",),
        readme_sections.cluster_cost_table,
        document="OPERATOR_GUIDE",
    ),
    Section(
        "cluster-verbs",
        ("cluster.json",),
        readme_sections.cluster_verbs_table,
        document="PLUGIN_AUTHOR_GUIDE",
    ),
    Section(
        "results",
        ("latest.json",),
        report.results_section,
        markers=("<!-- results:start -->", "<!-- results:end -->"),
    ),
    Section(
        "cluster-decisions",
        ("cluster.json",),
        cluster_decisions.decisions_block,
        markers=(cluster_decisions.DECISIONS_BEGIN, cluster_decisions.DECISIONS_END),
    ),
)


class MarkersMissing(ValueError):
    """The README lacks a section's markers (or has them out of order)."""


def rendered(section: Section, results: Path | None = None) -> str:
    folder = RESULTS if results is None else results
    docs = [load(folder / name) for name in section.sources]
    return section.render(*docs)


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
