#!/usr/bin/env python3
"""CI's slow tier: which of its steps must run on this checkout.

`.ci/run` runs every proof of the fast tier on every stop. A step of the slow tier proves
something that only some paths can change (an older Volcano release's dialect, a mutation
test's power to catch a broken answer), so it runs when the content of those paths differs from
the content it last passed on, as recorded in `.ci/slow-tier-passed`, and is otherwise reported
with the commit it passed at. The record is content, not history: a fingerprint of the tracked
blobs under the step's paths (`git ls-tree`), so a clean clone, a rebase or a merge that leaves
those paths as they were needs no rerun, and any change to them (or an uncommitted edit) does.

    python3 .ci/tiers.py due STEP          exit 0: run it (says why); exit 1: leave it out (says why)
    python3 .ci/tiers.py record STEP SECS  append this content's line to .ci/slow-tier-passed
    python3 .ci/tiers.py list              the table

CALDERA_CI_TIER=full makes every step due; =fast makes none due (each one says it was left out);
=slow is auto for these steps, and .ci/run then runs only the slow tier (catching it up alone).
Plain Python (no third-party module): `.ci/run` calls it before any environment is synced.
"""

from __future__ import annotations

import datetime
import hashlib
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

RECORD = Path(__file__).resolve().parent / "slow-tier-passed"

ANSWERS = (
    "plugins",
    "schemas",
    "tests/conformance/suite",
    "app/contract.py",
    "app/config.py",
    "app/config_checks.py",
    "app/decisions.py",
    "app/errors.py",
    "app/extender.py",
    "app/framework.py",
    "app/outcome.py",
    "app/plugin_faults.py",
    "app/release_watch.py",
    "app/session.py",
    "app/session_events.py",
    "app/wire.py",
    "app/server/routes/verbs.py",
    "pyproject.toml",
    "uv.lock",
)
"""What decides the answers the differential suite compares: the plugins, the payload schemas,
the core that hosts them (tiers, sessions, the extension-point table, faults), the verb routes,
the dependencies, and the suite itself. The fast tier runs the suite against Volcano v1.14.1
through the whole server on every stop; what an older release adds is its dialect, which lives
here."""


@dataclass(frozen=True)
class Step:
    proves: str
    paths: tuple[str, ...]


STEPS: dict[str, Step] = {
    "differential-1.10": Step(
        "Caldera answers as Volcano v1.10.0's in-tree plugins do (its predicate dialect)",
        (*ANSWERS, "tests/conformance/volcano-1.10"),
    ),
    "differential-1.8": Step(
        "Caldera answers as Volcano v1.8.2's in-tree plugins do (its predicate dialect)",
        (*ANSWERS, "tests/conformance/volcano-1.8"),
    ),
    "mutations-1.14": Step(
        "the v1.14.1 differential suite catches each plugin verb answered wrongly",
        (*ANSWERS, "tests/conformance/volcano-1.14"),
    ),
    "mutations-1.10": Step(
        "the v1.10.0 differential suite catches each plugin verb answered wrongly",
        (*ANSWERS, "tests/conformance/volcano-1.10"),
    ),
    "mutations-1.8": Step(
        "the v1.8.2 differential suite catches each plugin verb answered wrongly",
        (*ANSWERS, "tests/conformance/volcano-1.8"),
    ),
    "differential-identifiers": Step(
        "the v1.14.1 differential scenarios decide as in-tree with Volcano's extender patched by "
        "protocol/volcano-identifiers calling Caldera in sessionState cluster with identifiers "
        "(every call one, predicates batched)",
        (
            *ANSWERS,
            "tests/conformance/volcano-1.14",
            "tests/conformance/identifiers.sh",
            "app/identifiers.py",
            "app/cluster_state",
            "app/server/routes/capabilities.py",
            "protocol/volcano-identifiers",
        ),
    ),
    "cluster-smoke-mutants": Step(
        "the cluster smoke fails when nodegroup, resource-strategy-fit, task-topology or pdb "
        "is missing from Caldera's conf",
        (
            "bench/cluster.py",
            "bench/cluster_decisions.py",
            "bench/configs.py",
            "tests/e2e",  # TestScale and the harness it shares with every e2e test
            "plugins/api",
            "plugins/support",
            "plugins/nodegroup.py",
            "plugins/resource_strategy_fit.py",
            "plugins/task_topology.py",
            "plugins/pdb",
        ),
    ),
    "churn-smoke": Step(
        "compare mode finds no difference that is not in flight while pods run and finish "
        "(10 nodes, 100 pods), and in-tree and cluster mode start jobs",
        (
            "app/cluster_state",
            "app/extender.py",
            "app/session.py",
            "app/session_events.py",
            "schemas",
            "bench/churn.py",
            "bench/compare_churn.py",
            "tests/e2e",  # TestChurn and the harness it shares with every e2e test
        ),
    ),
    "e2e-identifiers": Step(
        "protocol/volcano-identifiers's patch passes its Go tests (upstream's beside its own), and "
        "vc-scheduler built with it, calling Caldera in "
        "sessionState cluster with identifiers (the batched predicate, victims as UIDs), makes "
        "the same decisions end to end as stock vc-scheduler (admission, placement-nodegroup, "
        "preemption), and no call fell back to objects",
        (
            "app/identifiers.py",
            "app/cluster_state",
            "schemas/identifiers.py",
            "app/extender.py",
            "app/server/routes/capabilities.py",
            "app/commands/volcano_entry.py",
            "protocol/volcano-identifiers",
            "tests/e2e",  # TestE2EIdentifiers and the harness it shares with every e2e test
        ),
    ),
}
"""The slow tier, one row per step: its id (as .ci/run names it), what it proves, and the paths
whose change reruns it."""


def git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], capture_output=True, text=True, check=True, cwd=RECORD.parent.parent
    ).stdout


def fingerprint(step: Step) -> str | None:
    """The tracked content under the step's paths at HEAD, or None when the working tree has
    changes there (uncommitted content has no fingerprint: the step runs)."""
    if git("status", "--porcelain", "--", *step.paths).strip():
        return None
    listing = git("ls-tree", "-r", "HEAD", "--", *step.paths)
    if not listing.strip():
        raise SystemExit(f"no tracked file under the paths of a slow step: {step.paths}")
    return hashlib.sha256(listing.encode()).hexdigest()[:16]


def recorded(step_id: str) -> dict[str, str]:
    """The step's record lines, fingerprint -> the rest of the line."""
    found: dict[str, str] = {}
    if RECORD.exists():
        for line in RECORD.read_text().splitlines():
            fields = line.split()
            if len(fields) >= 3 and not line.startswith("#") and fields[0] == step_id:
                found[fields[1]] = " ".join(fields[2:])
    return found


def due(step_id: str) -> int:
    tier = os.environ.get("CALDERA_CI_TIER", "auto")
    if tier not in ("auto", "full", "fast", "slow"):
        raise SystemExit(f"CALDERA_CI_TIER must be auto, full, fast or slow, not {tier!r}")
    step = STEPS.get(step_id)
    if step is None:  # a step of the fast tier
        if tier == "slow":
            print(f"fast tier, {step_id}: left out (CALDERA_CI_TIER=slow)")
            return 1
        return 0
    if tier == "full":
        print(f"slow tier, {step_id}: runs (CALDERA_CI_TIER=full)")
        return 0
    if tier == "fast":
        print(f"slow tier, {step_id}: LEFT OUT (CALDERA_CI_TIER=fast); it proves {step.proves}")
        return 1
    mark = fingerprint(step)
    if mark is None:
        print(f"slow tier, {step_id}: runs (uncommitted changes under its paths)")
        return 0
    passed = recorded(step_id).get(mark)
    if passed is None:
        print(f"slow tier, {step_id}: runs (its paths changed since it last passed)")
        return 0
    print(
        f"slow tier, {step_id}: not run, it passed on this very content ({passed}; "
        f"fingerprint {mark} of {len(step.paths)} paths); CALDERA_CI_TIER=full runs it"
    )
    return 1


def record(step_id: str, seconds: str) -> int:
    if step_id not in STEPS:  # a step of the fast tier: it runs every time, nothing to record
        return 0
    mark = fingerprint(STEPS[step_id])
    if mark is None:
        print(f"slow tier, {step_id}: passed on uncommitted content, not recorded")
        return 0
    commit = git("rev-parse", "--short=12", "HEAD").strip()
    day = datetime.datetime.now(datetime.UTC).date().isoformat()
    line = f"{step_id} {mark} commit {commit} {day} {int(seconds)}s"
    if mark not in recorded(step_id):
        with RECORD.open("a") as out:
            out.write(line + "\n")
    print(f"slow tier, {step_id}: passed, recorded in .ci/slow-tier-passed: {line}")
    return 0


def main(argv: list[str]) -> int:
    match argv:
        case ["due", step_id]:
            return due(step_id)
        case ["record", step_id, seconds] if seconds.isdigit():
            return record(step_id, seconds)
        case ["list"]:
            for step_id, step in STEPS.items():
                print(f"{step_id}: {step.proves}\n    reruns on: {' '.join(step.paths)}")
            return 0
    print(__doc__.split("\n\n")[2], file=sys.stderr)
    print(f"steps: {', '.join(STEPS)}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
