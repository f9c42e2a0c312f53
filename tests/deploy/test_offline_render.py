"""The operator guide's recipe for rendering an overlay without internet access (issue 34: the
overlays fetch Volcano's manifest at render time), run as written by bash. ``curl`` is a stub
that hands over the same file from Volcano's published Go module (tests/deploy/upstream.py;
it fails for any other URL), ``kubectl kustomize`` the kustomize binary the other deploy tests
build, so the recipe's own commands and the repository's files are what is tested."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import yaml

from tests.deploy.kustomize import Loader, overlay_urls, render
from tests.deploy.upstream import kustomize_binary, volcano_file

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "operator-guide.md"


def recipe() -> tuple[str, Path]:
    """The shell block of "Render without internet access" and the overlay it vendors."""
    text = GUIDE.read_text()
    section = text[text.index("### Render without internet access") :]
    section = section[: section.index("\n#")]
    [block] = re.findall(r"```sh\n(.*?)```", section, re.S)
    overlay = re.search(r"^overlay=(\S+)$", block, re.M)
    assert overlay, "the recipe names its overlay first"
    return block, ROOT / overlay[1]


def stub(bin_dir: Path, name: str, script: str) -> None:
    path = bin_dir / name
    path.write_text("#!/bin/sh\n" + script)
    path.chmod(0o755)


def test_the_vendoring_recipe_renders_the_same_objects_offline(tmp_path: Path) -> None:
    block, overlay = recipe()
    [url] = overlay_urls(overlay)
    work = tmp_path / "work"
    shutil.copytree(ROOT / "deploy", work / "deploy")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    # curl -fsSL -o FILE URL: only the overlay's own URL, from the module cache
    stub(bin_dir, "curl", f'[ "$1 $2 $4" = "-fsSL -o {url}" ] || exit 22\n'
                          f'cp "{volcano_file(url)}" "$3"\n')  # fmt: skip
    stub(
        bin_dir,
        "kubectl",
        f'[ "$1" = kustomize ] || exit 1\nexec "{kustomize_binary()}" build "$2"\n',
    )
    result = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block],
        cwd=work,
        env={**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"},
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    vendored = work / overlay.relative_to(ROOT)
    assert not re.search(r"https?://", (vendored / "kustomization.yaml").read_text())
    assert (vendored / "volcano-development.yaml").read_bytes() == volcano_file(url).read_bytes()
    rendered = [
        d for d in yaml.load_all((work / "caldera-volcano.yaml").read_text(), Loader=Loader) if d
    ]
    assert rendered == render(overlay)
