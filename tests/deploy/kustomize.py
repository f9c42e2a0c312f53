"""deploy/kubernetes rendered by the real kustomize (v5, built from its Go module by
tests/deploy/upstream.py), with each overlay's Volcano manifest — a release URL — handed to it
as the same file read from Volcano's published Go module, so no network beyond the module proxy
is needed and nothing of Volcano is copied into the repository.

``render(overlay)`` is what ``kubectl apply -k overlay`` applies; ``components`` adds components
of deploy/kubernetes to an overlay the way an operator would list them (``plain-container``, the
documented variant for Kubernetes before 1.29). tests/e2e's manifests scenario applies the same
renderings to a real API server with a server-side dry run.
"""

from __future__ import annotations

import copy
import functools
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

from tests.deploy.upstream import VOLCANO_RAW, kustomize_binary, volcano_file

Document = dict[str, Any]

Fetch = Callable[[str], Path]
"""Where the renderer finds the local copy of a remote resource."""


Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
"""libyaml's loader where PyYAML has it: Volcano's manifests are 400 KB of CRDs."""


def load_documents(path: Path) -> list[Document]:
    return copy.deepcopy(_load(path.resolve()))


@functools.cache
def _load(path: Path) -> list[Document]:
    return [doc for doc in yaml.load_all(path.read_text(), Loader=Loader) if doc]


def overlay_urls(overlay: Path) -> list[str]:
    """The remote resources (Volcano's release manifest) an overlay names."""
    kustomization = yaml.safe_load((overlay / "kustomization.yaml").read_text())
    return [r for r in kustomization.get("resources", []) if VOLCANO_RAW.match(r)]


def render(
    overlay: Path, fetch: Fetch = volcano_file, components: Sequence[str] = ()
) -> list[Document]:
    """The objects kustomize renders for ``overlay`` (a directory of deploy/kubernetes), with
    ``components`` (names of component directories beside it) added after its own."""
    return copy.deepcopy(_render(overlay.resolve(), fetch, tuple(components)))


@functools.cache
def _render(overlay: Path, fetch: Fetch, components: tuple[str, ...]) -> list[Document]:
    with tempfile.TemporaryDirectory() as scratch:
        tree = Path(scratch) / overlay.parent.name
        shutil.copytree(overlay.parent, tree)
        for kustomization in tree.glob("*/kustomization.yaml"):
            text = kustomization.read_text()
            for index, url in enumerate(overlay_urls(kustomization.parent)):
                local = f"upstream-{index}.yaml"
                shutil.copy(fetch(url), kustomization.parent / local)
                text = text.replace(url, local)
            kustomization.write_text(text)
        target = tree / overlay.name
        if components:
            target = tree / f"{overlay.name}-variant"
            target.mkdir()
            (target / "kustomization.yaml").write_text(
                yaml.safe_dump(
                    {
                        "apiVersion": "kustomize.config.k8s.io/v1beta1",
                        "kind": "Kustomization",
                        "resources": [f"../{overlay.name}"],
                        "components": [f"../{name}" for name in components],
                    }
                )
            )
        result = subprocess.run(
            [str(kustomize_binary()), "build", str(target)], capture_output=True, text=True
        )
        if result.returncode != 0:
            raise RuntimeError(f"kustomize build {overlay.name} {components}: {result.stderr}")
    return [doc for doc in yaml.load_all(result.stdout, Loader=Loader) if doc]
