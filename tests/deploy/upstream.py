"""Volcano's own files at a release tag, read from the published Go module of that release.

The Kubernetes overlay installs Volcano's manifest by its release URL; the tests read the same
file from ``volcano.sh/volcano@<tag>`` as the Go module proxy serves it, so nothing of Volcano
is copied into this repository and no network beyond the module proxy is needed.
"""

from __future__ import annotations

import fcntl
import functools
import json
import os
import re
import subprocess
from pathlib import Path

VOLCANO_RAW = re.compile(r"^https://raw\.githubusercontent\.com/volcano-sh/volcano/(v[\d.]+)/(.+)$")


@functools.cache
def volcano_file(url: str) -> Path:
    """The file a volcano-sh/volcano raw URL names, from the published module of that tag."""
    match = VOLCANO_RAW.match(url)
    if match is None:
        raise ValueError(f"not a volcano-sh/volcano release file URL: {url}")
    tag, path = match.groups()
    downloaded = subprocess.run(
        ["go", "mod", "download", "-json", f"volcano.sh/volcano@{tag}"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "GOFLAGS": "-mod=mod"},
    )
    return Path(json.loads(downloaded.stdout)["Dir"]) / path


KUSTOMIZE = "sigs.k8s.io/kustomize/kustomize/v5@v5.8.0"
"""kustomize, built from its published Go module (v5.8.0 builds with this machine's Go; the
api module it needs, v0.21.0, is served)."""


def go_installed(package: str, target: Path, *build_flags: str) -> Path:
    """The binary ``go install`` builds from ``package`` (``path@version``) into ``target``,
    built once. A lock beside it keeps the test workers (pytest-xdist) from building it twice
    or running one another's half-copied binary: ``go install`` copies into GOBIN in place
    when the build cache is on another file system."""
    elements = package.rpartition("@")[0].split("/")
    if re.fullmatch(r"v\d+", elements[-1]):  # a major version suffix names no binary
        elements.pop()
    binary = target / elements[-1]
    target.mkdir(parents=True, exist_ok=True)
    with (target / ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not binary.exists():
            subprocess.run(
                ["go", "install", *build_flags, package],
                env={**os.environ, "GOBIN": str(target), "GOFLAGS": "-mod=mod"},
                check=True,
                capture_output=True,
            )
    return binary


@functools.cache
def kustomize_binary() -> Path:
    """The kustomize binary, built once into tests/deploy/.bin/kustomize-<version> (a new pin
    gets a new directory; Go's build cache makes a rebuild a link step)."""
    target = Path(__file__).resolve().parent / ".bin" / f"kustomize-{KUSTOMIZE.rpartition('@')[2]}"
    return go_installed(KUSTOMIZE, target)
