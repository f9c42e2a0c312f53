"""What the running Caldera was built from, for ``caldera_build_info``'s labels.

The version is pyproject's (``app.__version__``). The commit is not in the wheel: the image
build passes it (``docker build --build-arg COMMIT=$(git rev-parse HEAD)``, which the
Dockerfile turns into ``CALDERA_BUILD_COMMIT``); pip records it when it installs from a git URL
(``direct_url.json``); otherwise it is ``unknown``, never a guess.
"""

from __future__ import annotations

import json
import os
from importlib.metadata import PackageNotFoundError, distribution

COMMIT_VARIABLE = "CALDERA_BUILD_COMMIT"
UNKNOWN = "unknown"


def commit() -> str:
    """The source commit of this installation, or ``unknown``."""
    given = os.environ.get(COMMIT_VARIABLE, "").strip()
    if given:
        return given
    try:
        recorded = distribution("caldera").read_text("direct_url.json")
    except PackageNotFoundError:
        return UNKNOWN
    if not recorded:
        return UNKNOWN
    try:
        vcs = json.loads(recorded).get("vcs_info", {})
    except (ValueError, AttributeError):
        return UNKNOWN
    found = vcs.get("commit_id") if isinstance(vcs, dict) else None
    return found if isinstance(found, str) and found else UNKNOWN
