"""The walk-through's collector (tests/shipped/walkthrough.py), without the wheel: every
``caldera`` command the documents show is collected (issue 47 item 12: a piped command, one
behind a path and, with a narrower prefix pattern, seven behind ``kubectl exec`` were never
run, and nothing failed)."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest

from tests.shipped import walkthrough
from tests.shipped.walkthrough import DocumentedCommand, documented_commands, invocations


def collected(commands: list[DocumentedCommand]) -> Counter[str]:
    return Counter(f"{c.where.split(':')[0]}: caldera {c.subcommand}" for c in commands)


def test_every_caldera_invocation_of_the_documents_is_collected() -> None:
    """As many commands collected, per document and subcommand, as ``caldera <subcommand>``
    occurs in the documents' shell blocks: a command the collector drops fails here."""
    assert collected(documented_commands()) == Counter(invocations())
    lines = [c.line for c in documented_commands()]
    # the three the issue found uncollected
    assert sum("| caldera volcano-config" in line for line in lines) >= 2
    assert any(line.startswith("venv/bin/caldera check-plugin") for line in lines)


def test_the_readme_runs_the_installed_caldera_outside_development() -> None:
    """Issue 47: after ``pip install .`` the README's curl block said ``uv run caldera explain``,
    which builds the development environment instead of running the installed command; only
    the Development section's commands are a contributor's, run through uv."""
    readme = walkthrough.ROOT / "README.md"
    text = readme.read_text()
    development = text.count("\n", 0, text.index("## Development")) + 1  # its heading's line
    through_uv = [
        c.where
        for c in documented_commands([readme])
        if c.line.startswith("uv run ") and int(c.where.rsplit(":", 1)[1]) < development
    ]
    assert through_uv == []


@pytest.mark.parametrize(
    ("name", "pattern"),
    [
        pytest.param("without the kubectl exec prefix",
                     r"^(?:\$ |pip install \. && |uv run |[\w./-]+/(?=caldera ))", id="kubectl"),
        pytest.param("without a path before caldera", r"^(?:\$ |pip install \. && |uv run |"
                     r"kubectl \S.*? -- )", id="path"),
    ],
)  # fmt: skip
def test_a_narrower_prefix_pattern_is_caught(
    monkeypatch: pytest.MonkeyPatch, name: str, pattern: str
) -> None:
    """The issue's experiment: narrowing the collector dropped commands and the suite still
    passed. The count above now tells."""
    monkeypatch.setattr(walkthrough, "WHERE", re.compile(pattern))
    assert collected(documented_commands()) != Counter(invocations()), name


DOCUMENT = """\
# A guide

```sh
$ caldera check-config /tmp/caldera.yaml   # a comment with caldera serve in it
uv run caldera openapi > openapi/openapi.json
kubectl -n ns exec deploy/x -c caldera -- caldera explain team-a/j --port 8090
kubectl -n ns get configmap volcano-scheduler-configmap -o jsonpath='{.data}' \\
  | caldera volcano-config --merge - > volcano-scheduler.conf
venv/bin/caldera check-plugin gpu-model --config caldera.yaml
kubectl -n ns logs deploy/x -c caldera | head
```

```sh
caldera volcano-config
```

<!-- prints -->
```yaml
- name: extender
```
"""


@pytest.mark.parametrize(
    ("name", "line", "argv", "stdout_to", "stdin_from", "prints"),
    [
        pytest.param("a prompt and a trailing comment", 4,
                     ("check-config", "/tmp/caldera.yaml"), None, None, (), id="prompt"),
        pytest.param("uv run and a redirect", 5, ("openapi",), "openapi/openapi.json", None, (),
                     id="uv run"),
        pytest.param("inside the container", 6, ("explain", "team-a/j", "--port", "8090"), None,
                     None, (), id="kubectl exec"),
        pytest.param("a pipeline over a continuation line", 7,
                     ("volcano-config", "--merge", "-"), "volcano-scheduler.conf",
                     "kubectl -n ns get configmap volcano-scheduler-configmap -o"
                     " jsonpath='{.data}'", (), id="piped"),
        pytest.param("a path before caldera", 9,
                     ("check-plugin", "gpu-model", "--config", "caldera.yaml"), None, None, (),
                     id="venv path"),
        pytest.param("an output block marked after the command's block", 14,
                     ("volcano-config",), None, None, ("- name: extender",), id="prints"),
    ],
)  # fmt: skip
def test_the_collector_reads_each_form_a_document_writes(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    line: int,
    argv: tuple[str, ...],
    stdout_to: str | None,
    stdin_from: str | None,
    prints: tuple[str, ...],
) -> None:
    document = tmp_path / "guide.md"
    document.write_text(DOCUMENT)
    monkeypatch.setattr(walkthrough, "ROOT", tmp_path)  # where commands are named from
    commands = {int(c.where.rsplit(":", 1)[1]): c for c in documented_commands([document])}
    # kubectl logs -c caldera is not a caldera command; the count agrees
    assert len(commands) == len(invocations([document])) == 6, commands
    command = commands[line]
    assert (command.argv, command.stdout_to, command.stdin_from, command.prints) == (
        argv, stdout_to, stdin_from, prints,
    ), name  # fmt: skip
