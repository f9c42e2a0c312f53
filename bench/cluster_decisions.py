"""The cluster benchmark's decisions (bench/cluster.py runs, this module judges): where Caldera's
runs decided otherwise than in-tree ones, which differences stand after the reruns, and the
decision line bench/README carries (rendered by ``python -m bench report`` from
bench/results/cluster.json, bench/readme.py). No import of the runner, so the README renderer can
use it without an import cycle."""

from __future__ import annotations

from typing import Any

from bench.cluster_schedulers import ROWS

GROUPS = ("job", "node", "evict")
# The schedulers through which Caldera hosts the plugins, each compared with in-tree: on
# Volcano's snapshot, and deriving the session's state from the cluster (sessionState: cluster,
# issue 36), and the same on the patched Volcano calling with identifiers (issue 51:
# protocol/volcano-identifiers). Each: its name beside in-tree's and the neutral server's
# figures, and the words a difference names it by (bench/cluster_schedulers.py's rows).
HOSTED = {row.name: row.hosted for row in ROWS if row.hosted}

# The neutral servers, each in the place of the hosted scheduler whose protocol cost it measures
# (the same merged conf, every call answered at once): on Volcano's snapshot, with no snapshot
# (cluster mode's conf: the calls Volcano still makes, marshalled and posted), and on the
# patched Volcano with identifiers (neutral-names: the identifiers protocol's floor).
NEUTRAL = {row.name: (row.floor_of, row.neutral_words) for row in ROWS if row.floor_of}

Case = tuple[int, int, str]  # nodes, pods, group


def compare_decisions(runs: list[dict[str, Any]]) -> list[str]:
    """Every decision difference, whatever its case (see ``differences_by_case``)."""
    return [line for lines in differences_by_case(runs).values() for line in lines]


# The node group's placement facts (tests/e2e/scale_node_test.go computes them from the final
# pod -> node bindings): the plugin deciding each, and what it counts.
PLACEMENT_FACTS = {
    "podsOutsideNodeGroups": ("nodegroup", "pods outside their queue's node groups"),
    "spreadWithinNodeGroup": (
        "resource-strategy-fit",
        "largest difference in pods between two nodes of a spread queue's node group",
    ),
    "affinityJobsSplit": ("task-topology", "task-topology affinity jobs split over nodes"),
}
# What a Caldera without the plugin (``--mutant``) must be caught on: the plugin's group and the
# words of the difference its own decision makes.
MUTANT_FACTS = {
    **{plugin: ("node", words) for plugin, words in PLACEMENT_FACTS.values()},
    "pdb": ("evict", "that a PodDisruptionBudget protects"),
}
NO_CONTROL = "no control"  # the words of a fact in-tree shares with the neutral server


def differences_by_case(runs: list[dict[str, Any]]) -> dict[Case, list[str]]:
    """Where Caldera's run decided otherwise than the in-tree run of the same size and group.
    Volcano's node choice among equal scores is random, and so is its victim choice among equal
    candidates, so aggregates are compared: for the job and node groups which jobs got all their
    pods and how many pods each queue got; for the evict group how many preemptors were bound
    and how many pods were evicted, and neither run may evict a pod its PDB protects (the
    neutral server protects nothing by design: its evictions of protected pods show what the
    protection saves). The node group's placement facts (``PLACEMENT_FACTS``) do not depend on
    Volcano's random choices: Caldera must equal in-tree on each, and in-tree must differ from
    the neutral server on each, or the fact proves nothing (``NO_CONTROL``). Over repeated runs
    of the plan (``--repeat``) each run is judged against the in-tree run of its own round, and
    a case's differences are those of any round."""
    differences: dict[Case, list[str]] = {}
    for these in rounds(runs):
        for case, lines in _differences_in_one_round(these).items():
            mine = differences.setdefault(case, [])
            mine += [line for line in lines if line not in mine]
    return {case: lines for case, lines in differences.items() if lines}


def rounds(runs: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The runs of each run of the plan (``bench cluster --repeat``: each marked with its
    ``round``; a single run's are not marked), in order."""
    by_round: dict[int, list[dict[str, Any]]] = {}
    for run in runs:
        by_round.setdefault(run.get("round", 1), []).append(run)
    return [by_round[number] for number in sorted(by_round)]


def _differences_in_one_round(runs: list[dict[str, Any]]) -> dict[Case, list[str]]:
    differences: dict[Case, list[str]] = {}
    by_key = {(r["nodes"], r["group"], r["scheduler"]): r for r in runs}
    for (nodes, group, scheduler), run in by_key.items():
        case_differences = differences.setdefault((nodes, run["pods"], group), [])
        if group == "evict" and scheduler not in NEUTRAL and run.get("protectedEvicted"):
            case_differences.append(
                f"{nodes} nodes, evict, {scheduler}: {run['protectedEvicted']} pods evicted"
                " that a PodDisruptionBudget protects"
            )
        intree = by_key.get((nodes, group, "intree"))
        if scheduler in NEUTRAL and intree is not None:
            case_differences += no_control(nodes, group, intree, run)
        if scheduler not in HOSTED or intree is None:
            continue
        via = HOSTED[scheduler][1]
        if group == "evict":
            for key in ("bound", "evicted"):
                if run[key] != intree[key]:
                    case_differences.append(
                        f"{nodes} nodes, evict: {key} {run[key]} {via}, {intree[key]} in-tree"
                    )
            continue
        if run["boundPerQueue"] != intree["boundPerQueue"]:
            case_differences.append(
                f"{nodes} nodes, {group}: pods per queue {run['boundPerQueue']} {via},"
                f" {intree['boundPerQueue']} in-tree"
            )
        ours, theirs = set(run["boundJobs"] or []), set(intree["boundJobs"] or [])
        if ours != theirs:
            case_differences.append(
                f"{nodes} nodes, {group}: {len(ours - theirs)} jobs bound only {via},"
                f" {len(theirs - ours)} only in-tree (e.g. {sorted(ours ^ theirs)[:3]})"
            )
        case_differences += placement_differences(nodes, group, intree, run, via)
    return {case: lines for case, lines in differences.items() if lines}


def placement_differences(
    nodes: int,
    group: str,
    intree: dict[str, Any],
    caldera: dict[str, Any],
    via: str = HOSTED["caldera"][1],
) -> list[str]:
    """The placement facts on which a hosted run differs from the in-tree one (a run of a
    version before the facts carries none: nothing to compare)."""
    ours, theirs = caldera.get("placement") or {}, intree.get("placement") or {}
    return [
        f"{nodes} nodes, {group}: {words} ({plugin}) {ours[key]} {via}, {theirs[key]} in-tree"
        for key, (plugin, words) in PLACEMENT_FACTS.items()
        if key in ours and key in theirs and ours[key] != theirs[key]
    ]


def no_control(
    nodes: int, group: str, intree: dict[str, Any], neutral: dict[str, Any]
) -> list[str]:
    """The placement facts in-tree shares with the neutral server, which answers nothing: such
    a fact would not tell a Caldera that answers nothing from a right one. And in the job group,
    where the neutral server rejects the jobs of the namespace in-tree's quota holds
    (``neutralHeld``; a run before it did carries none), a neutral run that bound otherwise than
    in-tree: it did not hold what in-tree held, so Volcano examined other pending jobs through
    it and its cycle is not the protocol's cost for the same decisions. In the evict group, a
    neutral run that evicted no PDB-protected pod: the neutral server grants every evictee, so
    only its evicting protected pods shows that the workload puts protected pods in the way and
    that in-tree's and Caldera's sparing them is the protection's doing (as each placement fact
    must differ from the neutral server's)."""
    ours, theirs = intree.get("placement") or {}, neutral.get("placement") or {}
    held = []
    which = NEUTRAL[neutral["scheduler"]][1]
    if group == "evict" and not neutral.get("protectedEvicted"):
        held.append(
            f"{nodes} nodes, evict: {which} evicted {neutral.get('evicted', 0)} pods, none of them"
            f" PDB-protected: {NO_CONTROL}, sparing protected pods proves nothing"
        )
    if neutral.get("neutralHeld") and neutral["bound"] != intree["bound"]:
        held.append(
            f"{nodes} nodes, {group}: {which} holding {neutral['neutralHeld']} bound"
            f" {neutral['bound']} pods, in-tree {intree['bound']} ({neutral.get('neutralRejected', 0)}"
            f" jobEnqueueable calls rejected): {NO_CONTROL} for the cycle"
        )
    return held + [
        f"{nodes} nodes, {group}: {words} ({plugin}) {ours[key]} in-tree and through"
        f" {which} alike: {NO_CONTROL}, the fact proves nothing"
        for key, (plugin, words) in PLACEMENT_FACTS.items()
        if key in ours and key in theirs and ours[key] == theirs[key]
    ]


# bench/README's decision line, inside the cluster block: `python -m bench report` renders it
# from bench/results/cluster.json alone (bench/readme.py), and `--check` keeps the two equal.
DECISIONS_BEGIN, DECISIONS_END = (
    "<!-- cluster-decisions:begin -->",
    "<!-- cluster-decisions:end -->",
)


def decisions_block(document: dict[str, Any]) -> str:
    """The decision line of a results document, the differences settled by the rules of this
    version (``settle_differences``), and what each rerun made of a first run's difference."""
    settled = {**document}
    settle_differences(settled)
    differences = settled["decision_differences"]
    verdict = (
        "differ from in-tree: " + "; ".join(differences) + "."
        if differences
        else "identical to in-tree in everything compared" + forgiven_text(settled) + "."
    )
    return f"Decisions: {verdict} Compared: {compared_text(document['runs'])}" + "".join(
        f"\n- {line}" for line in rerun_lines(settled)
    )


def differing_rounds(runs: list[dict[str, Any]]) -> list[tuple[int, dict[Case, list[str]]]]:
    """The rounds of the plan whose first runs differed: each one's number and its differences
    by case."""
    out = []
    for these in rounds(runs):
        found = _differences_in_one_round(these)
        if found:
            out.append((these[0].get("round", 1), found))
    return out


LABELS = {"intree": "in-tree", **{s: name for s, (name, _) in HOSTED.items()}}
"""The compared schedulers by the names the decision line gives them."""


def _compared_runs(these: list[dict[str, Any]], case: Case) -> list[dict[str, Any]]:
    mine = {
        r["scheduler"]: r
        for r in these
        if (r["nodes"], r["pods"], r["group"]) == case and r["scheduler"] in LABELS
    }
    return [mine[s] for s in LABELS if s in mine]


def _and(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"


def forgiven_text(document: dict[str, Any]) -> str:
    """When no difference stands but first runs differed: how many rounds of the plan differed,
    in what, and what the reruns decided, from the document alone. In the evict group a run
    short of a preemptor that evicted exactly as many pods as it bound left no freed room
    unused (each preemptor fits only by evicting one pod): the pending one's room went to
    another preemptor, or was never freed; where in-tree itself was short, the difference is not
    one Caldera's answers made (bench/README.md says how Volcano strands a preemptor so)."""
    runs = document["runs"]
    differing = differing_rounds(runs)
    if not differing:
        return ""
    by_round = {these[0].get("round", 1): these for these in rounds(runs)}
    parts: list[str] = []
    short: dict[str, list[int]] = {}
    left: list[str] = []  # what the short runs left behind, where TestScale recorded it
    evicted_none = True
    for number, cases in differing:
        for case, lines in sorted(cases.items()):
            nodes, pods, group = case
            where = f"round {number}: " if len(by_round) > 1 else ""
            compared = _compared_runs(by_round[number], case)
            if group != "evict" or not compared:
                parts.append(where + "; ".join(lines))
                continue
            preemptors = compared[0].get("preemptors", 0)
            parts.append(
                f"{where}{nodes} / {pods} evict, preemptors bound "
                + ", ".join(f"{LABELS[r['scheduler']]} {r['bound']}" for r in compared)
                + f" of {preemptors}"
            )
            for r in compared:
                if r["bound"] < preemptors:
                    short.setdefault(LABELS[r["scheduler"]], []).append(number)
                    evicted_none = evicted_none and r.get("evicted") == r["bound"]
                    if "pendingPreemptors" in r or "terminating" in r:
                        left.append(leftovers(r, where))
    rounds_text = (
        f"the first runs of {len(differing)} of {len(by_round)} rounds of the plan differed"
        if len(by_round) > 1
        else "the first runs differed"
    )
    text = f", after reruns: {rounds_text} ({'; '.join(parts)})"
    if short:
        who = ", ".join(
            f"{name} in round{'s' if len(numbers) > 1 else ''} {_and([str(n) for n in numbers])}"
            if len(by_round) > 1
            else name
            for name, numbers in short.items()
        )
        text += f"; Volcano left a preemptor pending ({who})"
        if evicted_none:
            text += (
                ", each such run having evicted exactly as many pods as it bound: no freed room"
                " left unused"
            )
        if "in-tree" in short:
            text += "; in-tree among them, so not a difference Caldera's answers made"
        if left:
            text += f" ({'; '.join(left)})"
    reruns = reruns_of(document)
    if reruns:
        hosted = [s for s in reruns[-1].get("schedulers", ["caldera"]) if s in HOSTED]
        modes = " in either mode" if len(hosted) > 1 else ""
        verdicts = [again for agains in rerun_outcomes(document).values() for again in agains]
        clean = all(again == [] for again in verdicts)
        text += (
            f"; {len(reruns)} reruns, in-tree and through Caldera{modes},"
            f" {'decided identically' if clean else 'as below'}"
        )
    return text


def leftovers(run: dict[str, Any], where: str) -> str:
    """What a run short of a preemptor left (tests/e2e/scale_evict_test.go): the preemptors
    pending with the node each was nominated to, the pods still terminating, and the fill's pods
    not yet Running when the preemptors came. A pending preemptor with a pod terminating on its
    nominated node waits on the harness's fake kubelet; one with none waits on Volcano
    (volcano-sh/volcano#5131: tests/e2e/scale_evict_test.go's evictLeftovers)."""
    pending = run.get("pendingPreemptors") or []
    terminating = run.get("terminating") or []
    return (
        f"{where}{LABELS[run['scheduler']]} left {_and(pending) if pending else 'no preemptor'}"
        f" pending, {len(terminating)} pod{'' if len(terminating) == 1 else 's'} terminating"
        + (f" ({_and(terminating)})" if terminating else "")
        + f", {run.get('fillNotRunning', 0)} fill pods not Running when the preemptors came"
    )


def compared_text(runs: list[dict[str, Any]]) -> str:
    """What the first runs compared, per group at the sizes it ran: the figures, and for the
    placement facts and the PDB the values that make them proof (in-tree, Caldera, neutral), of
    the first run of the plan."""
    by_key = {(r["nodes"], r["group"], r["scheduler"]): r for r in (rounds(runs) or [[]])[0]}
    parts = []
    for group in GROUPS:
        cases = sorted(
            (nodes, run["pods"])
            for (nodes, g, scheduler), run in by_key.items()
            if g == group and scheduler in HOSTED and (nodes, g, "intree") in by_key
        )
        if not cases:
            continue
        cases = sorted(set(cases))
        sizes = ", ".join(f"{n} / {p}" for n, p in cases)
        if group == "evict":
            neutral = [
                str(by_key[(n, group, "neutral")].get("protectedEvicted", 0))
                for n, _ in cases
                if (n, group, "neutral") in by_key
            ]
            later = [
                f"{r.get('protectedEvicted', 0)} in round {r['round']}"
                for these in rounds(runs)[1:]
                for r in these
                if r["group"] == group and r["scheduler"] == "neutral"
            ]
            if neutral and later:
                neutral = [f"{neutral[0]} in round 1", *later]
            modes = " (either mode)" if (cases[0][0], group, "caldera-cluster") in by_key else ""
            parts.append(
                f"evict ({sizes}): preemptors bound, pods evicted, no PDB-protected pod evicted"
                f" in-tree or through Caldera{modes}"
                + (f" (through the neutral server: {', '.join(neutral)})" if neutral else "")
                + "; not which jobs keep all their pods (Volcano's choice among equal victims)"
            )
            continue
        text = f"{group} ({sizes}): jobs bound, pods per queue"
        if group == "node":
            text += ", " + placement_text(by_key, cases)
        parts.append(text)
    return "; ".join(parts) + "."


def placement_text(by_key: dict[tuple[int, str, str], dict[str, Any]], cases: list[Any]) -> str:
    facts = []
    for nodes, _ in cases:
        intree = by_key[(nodes, "node", "intree")].get("placement") or {}
        hosted = {
            name: (by_key.get((nodes, "node", scheduler)) or {}).get("placement") or {}
            for scheduler, (name, _) in HOSTED.items()
        }
        neutral = (by_key.get((nodes, "node", "neutral")) or {}).get("placement") or {}
        for key, (plugin, words) in PLACEMENT_FACTS.items():
            figures = "".join(
                f", {name} {facts_[key]}" for name, facts_ in hosted.items() if key in facts_
            )
            if key not in intree or not figures:
                continue
            against = f", neutral {neutral[key]}" if key in neutral else ""
            facts.append(f"{words} ({plugin}) in-tree {intree[key]}{figures}{against}")
    if not facts:
        return "no placement fact (the run predates them: tests/e2e/scale_node_test.go)"
    return "placement: " + ", ".join(facts)


# A difference other than a protection violation is forgiven only by this many clean reruns.
RERUNS = 2
PROTECTION = "that a PodDisruptionBudget protects"  # the words of a protection violation's line


def protection_violations(lines: list[str]) -> list[str]:
    """The lines no rerun forgives: a protected pod evicted, and a placement fact without its
    control (a rerun runs in-tree and Caldera only, so it could not show the control again)."""
    return [line for line in lines if PROTECTION in line or NO_CONTROL in line]


def reruns_of(document: dict[str, Any]) -> list[dict[str, Any]]:
    """The reruns in order (none in a ``--report`` of a document without them)."""
    reruns: list[dict[str, Any]] = document.get("reruns", [])
    return reruns


def rerun_outcomes(document: dict[str, Any]) -> dict[Case, list[list[str] | None]]:
    """For every case run again: each rerun's differences (empty: it decided identically), or
    None when that rerun did not measure the case in-tree and through Caldera (in every mode
    the rerun ran) both."""
    outcomes: dict[Case, list[list[str] | None]] = {}
    for rerun in reruns_of(document):
        again = differences_by_case(rerun["runs"])
        ran = {(r["nodes"], r["pods"], r["group"], r["scheduler"]) for r in rerun["runs"]}
        for nodes, pods, group in rerun["cases"]:
            # Every scheduler the rerun was to measure: in-tree and Caldera in each mode it ran.
            wanted = ["intree", *(s for s in rerun.get("schedulers", ["caldera"]) if s in HOSTED)]
            both = all((nodes, pods, group, s) in ran for s in wanted)
            case = (nodes, pods, group)
            outcomes.setdefault(case, []).append(again.get(case, []) if both else None)
    return outcomes


def settle_differences(document: dict[str, Any]) -> None:
    """Which differences stand (issue 37). Volcano itself is not deterministic (it has left the
    last preemptor pending for 25 s in-tree while every other run bound it), so a case whose
    first runs differ is run again, in-tree and through Caldera, and its difference is forgiven
    only when ``RERUNS`` reruns all decided identically (a bug that shows in a run with
    probability p was caught with probability p² when one clean rerun forgave it; now with
    p·(1-(1-p)²)). A protection violation (a pod its
    PodDisruptionBudget protects, evicted through Caldera or in-tree) is never forgiven: it
    counts at once, in any run, first or rerun. Every run stays in the document."""
    outcomes = rerun_outcomes(document)
    first = differences_by_case(document["runs"])
    standing: list[str] = []
    for case, lines in first.items():
        standing += protection_violations(lines)
        others = [line for line in lines if line not in protection_violations(lines)]
        clean = outcomes.get(case, [])
        forgiven = len(clean) >= RERUNS and all(again == [] for again in clean)
        if others and not forgiven:
            repeated = [
                line
                for again in clean
                if again
                for line in again
                if line not in protection_violations(again)
            ]
            standing += repeated or others
    for rerun in reruns_of(document):
        for lines in differences_by_case(rerun["runs"]).values():
            standing += [line for line in protection_violations(lines) if line not in standing]
    document["decision_differences"] = standing


def rerun_lines(document: dict[str, Any]) -> list[str]:
    """What the first runs differed in and what each rerun made of it."""
    first = differences_by_case(document["runs"])
    verdicts = {None: "did not measure it", False: "decided identically", True: "differed again"}
    return [
        f"first runs differed ({'; '.join(first.get(case, []))}); "
        + ", ".join(
            f"rerun {i} " + verdicts[None if again is None else bool(again)]
            for i, again in enumerate(agains, 1)
        )
        for case, agains in rerun_outcomes(document).items()
    ]
