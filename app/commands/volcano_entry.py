"""What Caldera's extender entry in volcano-scheduler.conf says: the verbs its configuration
needs Volcano to send, the URL Volcano reaches it at, and the body limits to say beside it.
``caldera volcano-config`` prints the entry (``app/commands/cli.py``) and ``--merge`` puts it into
an operator's conf (``app/commands/volcano_merge.py``)."""

from __future__ import annotations

from typing import Any

from app import shared_path
from app.cluster_state import modes
from app.cluster_state.modes import SessionStateMode
from app.commands import sizing
from app.config import CalderaConfig
from app.metrics import Metrics
from app.server.settings import Settings
from app.session import SessionManager
from plugins.api.extension_points import BY_VERB, VERBS, Rule, Verb
from schemas.requests import OnSessionOpenRequest


def needed_verbs(config: CalderaConfig) -> tuple[list[str], list[str]]:
    """The verbs the configured plugins answer, and notes on those this release cannot send.

    Asks the objects the server uses: a session opened on an empty snapshot, whose framework
    knows which plugins take part in each verb for this release and these flags."""
    release = config.release
    framework = SessionManager(config, Metrics()).open(OnSessionOpenRequest()).framework
    wanted = {verb for verb, names in framework.active_plugins().items() if names}
    for entry in config.entries:
        wanted.update(entry.cls.required_verbs(release))
        if entry.cls.needs_snapshot:
            wanted.update((Verb.ON_SESSION_OPEN, Verb.ON_SESSION_CLOSE))
    if config.sessionState == SessionStateMode.COMPARE:  # the snapshot, and Volcano's placements
        wanted.update((Verb.ON_SESSION_OPEN, Verb.ON_SESSION_CLOSE, Verb.ALLOCATE, Verb.DEALLOCATE))
    if config.sessionState == SessionStateMode.CLUSTER:  # the session's end, Volcano's placements
        wanted.update((Verb.ON_SESSION_CLOSE, Verb.ALLOCATE, Verb.DEALLOCATE))
        wanted.discard(Verb.ON_SESSION_OPEN)
    notes: list[str] = []
    verbs: list[str] = []
    for verb in VERBS:
        if verb not in wanted:
            continue
        if verb == Verb.JOB_ENQUEUED and not release.admission_follows_vote:
            notes.append(
                f"Volcano {release} has no jobEnqueued verb: Caldera accounts an admission"
                " when it answers jobEnqueueable"
            )
        elif not release.has_verb(verb):
            notes.append(f"Volcano {release} cannot send {verb}; that part stays unused")
        else:
            verbs.append(verb)
    verbs, folded = shared_path.fold_verbs(release, verbs)
    return verbs, notes + folded


def volcano_url(settings: Settings) -> str:
    """Where Volcano reaches the Caldera these settings serve: a wildcard listen address is
    reached on loopback (the sidecar shares the scheduler's network namespace)."""
    host = "127.0.0.1" if settings.host in ("0.0.0.0", "::", "") else settings.host
    host = f"[{host}]" if ":" in host else host
    return f"http://{host}:{settings.port}"


IDENTIFIERS_NOTE = (
    "extender.bodies and extender.batchPredicateVerb are read by Volcano built with"
    " protocol/volcano-identifiers's patch (docs/proposals/extender-identifiers.md); it asks"
    " Caldera's GET /capabilities and falls back to today's bodies when they do not match."
    " Stock Volcano ignores both and, for onSessionOpenVerb, marshals its whole snapshot"
)


def identifiers_refusal(config: CalderaConfig) -> str | None:
    """Why ``--bodies identifiers`` cannot be printed for ``config``, or None."""
    if config.sessionState != SessionStateMode.CLUSTER:
        return (
            "--bodies identifiers needs sessionState: cluster (Caldera then holds the objects"
            f" the identifiers name); this configuration has sessionState {config.sessionState}"
        )
    return None


def volcano_entry(
    config: CalderaConfig, url: str, timeout: str, ignorable: bool, bodies: str = "objects"
) -> tuple[dict[str, Any], list[str]]:
    """The extender entry and its notes. ``bodies="identifiers"`` (cluster mode only): the
    identifiers protocol's arguments, and onSessionOpen for the session's roster."""
    verbs, notes = needed_verbs(config)
    if bodies == "identifiers":
        verbs = [v for v in VERBS if v in verbs or v == Verb.ON_SESSION_OPEN]
    arguments: dict[str, Any] = {"extender.urlPrefix": url, "extender.httpTimeout": timeout}
    for verb in verbs:
        arguments[BY_VERB[verb].argument] = str(verb)  # a plain str: yaml.safe_dump takes no enum
    if bodies == "identifiers":
        arguments["extender.bodies"] = "identifiers"
        if Verb.PREDICATE in verbs:
            arguments["extender.batchPredicateVerb"] = "batchPredicate"
        notes.append(IDENTIFIERS_NOTE)
    if config.managedResources:
        if config.release.has_managed_resources:
            arguments["extender.managedResources"] = list(config.managedResources)
        else:
            notes.append(
                f"Volcano {config.release} has no extender.managedResources; Caldera"
                " still applies the filter to what it receives"
            )
    arguments["extender.ignorable"] = ignorable
    return {"name": "extender", "arguments": arguments}, notes


def body_limits_note(config: CalderaConfig, verbs: list[str], sized: bool = False) -> str:
    """The body limits Caldera applies to ``verbs``, said next to the extender entry: Volcano
    knows nothing of them, and a snapshot over its limit switches Caldera off. ``sized``: the
    command was given the cluster's size (``--nodes``, ``--pods``), so the sizing lines that
    follow say whether the snapshot fits, rather than asking for the size (issue 47 item 10)."""
    limits = "; ".join(
        f"{setting} = {config.body_limit(group[0])} ({sizing.mib(config.body_limit(group[0]))})"
        f" for {', '.join(group)}"
        for setting, group in _verbs_by_limit(verbs).items()
    )
    text = f"Caldera accepts request bodies up to {limits or 'no verb'}."
    if any(BY_VERB[verb].rule is Rule.OPEN for verb in verbs):
        text += (
            " A larger snapshot is refused with 413 and Volcano runs that cycle without"
            " Caldera's plugins: "
            + (
                "the sizing below says whether yours fits."
                if sized
                else "size it with --nodes N --pods P."
            )
        )
    return text


def _verbs_by_limit(verbs: list[str]) -> dict[str, list[str]]:
    grouped: dict[str, list[str]] = {}
    for verb in verbs:
        grouped.setdefault(BY_VERB[verb].body_limit, []).append(verb)
    return grouped


def sizing_mode_lines(
    config: CalderaConfig, cluster: sizing.Cluster, schedule_period_seconds: float
) -> list[str]:
    """The ``sessionState`` to run at this size and the sidecar's memory for it
    (:func:`app.commands.sizing.mode_lines`), knowing whether this configuration can run
    cluster mode (the reasons ``check-config`` would give)."""
    refusals = [
        problem
        for _, problem in modes.problems(
            SessionStateMode.CLUSTER,
            config.release,
            [(entry.where, entry.name, entry.cls) for entry in config.entries],
            config.infers_release,
        )
    ]
    return sizing.mode_lines(
        cluster, schedule_period_seconds, config.sessionState, refusals, config.maxSnapshotBytes
    )
