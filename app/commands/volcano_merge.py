"""``caldera volcano-config --merge FILE``: the operator's own volcano-scheduler.conf with the
in-tree plugins Caldera hosts handed to one extender entry.

Where the entry goes changes decisions, so the merge follows Volcano's own combination rules
(``pkg/scheduler/framework/session_plugins.go``, v1.15.1) and warns about every layout that
would change an answer:

- The extender entry takes the place of the first hosted plugin, in that plugin's tier. A hosted
  plugin that sat in another tier now votes in that one (a tier that permits a job ends
  Volcano's jobEnqueueable vote; victim lists intersect per tier).
- A hosted plugin whose upstream hooks the extender cannot carry (``in_tree_only``: priority's
  job and task order, sla's JobPipelinedFn, conformance's UnifiedEvictableFn for gangpreempt)
  stays in-tree with the flags of what Caldera now answers turned off; one with nothing left
  in-tree is removed.
- A tier that permits a job ends Volcano's jobEnqueueable vote: an in-tree admission check
  (proportion, capacity) in a later tier than the extender is skipped whenever Caldera permits.
- Preemptable/Reclaimable move on to the next tier when a tier's voters return no victims
  (Volcano issue #2147): an in-tree victim voter in a later tier than the extender can evict what
  Caldera's victim plugins (min-runtime, pdb, ...) protect.
- An in-tree entry of a hosted plugin with a flag off that Caldera's configuration leaves on (or
  the reverse) now decides differently; a plugin listed twice; an extender entry of another URL
  already there (Caldera's own is replaced where it stands, with a note); a verb the configured
  release cannot send.
- Each entry the merge changes leaves a trace comment with its values before (``TRACE``): merging
  the merged conf again starts from the conf as it was, so it prints the same text and the same
  warnings (issue 47 item 6), and an entry whose plugin Caldera no longer hosts comes back.
- A verb of the extender entry that no configured action asks (the ``actions`` column of
  ``plugins/api/extension_points.py``): Caldera's answers to it are never used, so the warning
  names the action to add. Every other warning about a verb holds only when an action asks it:
  without a reclaim action nothing falls through to drf's reclaim vote.

Everything else of the file is kept byte for byte, comments included: the file is parsed only
to find where each plugin entry starts and ends (PyYAML's node marks), and only those lines are
rewritten.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import yaml

from app.config import CalderaConfig
from plugins.api.base import implemented_hooks
from plugins.api.extension_points import ACTIONS, BY_VERB, EXTENSION_POINTS, ExtensionPoint, Verb
from plugins.api.options import FLAG_DEFAULTS
from plugins.api.release import SHARED_RECLAIMABLE_PATH_VERBS, Release

IN_TREE_FLAGS: dict[str, str | None] = {
    "TaskOrderFn": "enableTaskOrder",
    "JobOrderFn": "enableJobOrder",
    "SubJobOrderFn": "enabledSubJobOrder",
    "JobStarvingFn": "enableJobStarving",
    "JobPipelinedFn": "enableJobPipelined",
    "UnifiedEvictableFn": None,
    "VictimTasksFns": "enabledVictim",
}
"""Upstream hooks the extender cannot carry that still run in-tree, and the flag gating each in
``session_plugins.go`` (UnifiedEvictable is called without one)."""

NEEDED_BY_ACTION: dict[str, frozenset[str]] = {
    "UnifiedEvictableFn": frozenset({"gangpreempt", "gangreclaim"}),
    "VictimTasksFns": frozenset({"shuffle"}),
}
"""Hooks only some actions call: keeping a plugin in-tree for them matters only then."""

VICTIM_VOTERS: dict[str, frozenset[str]] = {
    "enablePreemptable": frozenset({"cdp", "conformance", "drf", "gang", "pdb", "priority", "tdm"}),
    "enableReclaimable": frozenset(
        {"capacity", "cdp", "conformance", "drf", "gang", "pdb", "proportion"}
    ),
}
"""The in-tree plugins registering a PreemptableFn / ReclaimableFn in v1.15.1."""

HIERARCHY_ONLY = frozenset({("drf", "enableReclaimable")})
"""(plugin, flag) of VICTIM_VOTERS registered only when the plugin's ``enableHierarchy`` is on."""

ENQUEUE_VOTERS = frozenset({"capacity", "overcommit", "proportion", "resourcequota", "sla"})
"""The in-tree plugins registering a JobEnqueueableFn in v1.15.1 (``Session.JobEnqueueable``
ends the vote after the first tier in which one permits)."""


class MergeError(Exception):
    """A scheduler conf that cannot be merged: not YAML, or not Volcano's shape."""


@dataclass
class Merged:
    text: str
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Entry:
    tier: int
    name: str
    node: yaml.MappingNode | None  # None: the entry is gone, a trace of an earlier merge says so
    values: dict[str, Any]
    trace_line: int | None = None  # the line of that trace


def hosted_flags(config: CalderaConfig, entry_verbs: list[str]) -> dict[str, dict[str, bool]]:
    """Per hosted plugin, the enableXxx flags of the extension points Caldera answers for it
    (on, as Caldera's configuration sets them) or leaves to Volcano (off in Caldera's file)."""
    flags: dict[str, dict[str, bool]] = {}
    for entry in config.entries:
        own = flags.setdefault(entry.name, {})
        for point in EXTENSION_POINTS:
            if point.flag is None or point.hook not in implemented_hooks(entry.cls):
                continue
            served = point.verb in entry_verbs and entry.option.enabled(point.flag)
            own[point.flag] = own.get(point.flag, False) or served
    return flags


def merge(
    conf_text: str, config: CalderaConfig, extender: dict[str, Any], entry_verbs: list[str]
) -> Merged:
    """``conf_text`` with ``extender`` (what ``caldera volcano-config`` prints) in place of the
    in-tree plugins ``config`` hosts.

    Every hosted entry the merge changes leaves a trace line with its original values (``TRACE``),
    so that a merge of a merged conf (the guide runs it again after each change of caldera.yaml)
    works from the conf as it was before Caldera: the same text and the same warnings, and an
    entry whose plugin Caldera no longer hosts comes back as it was."""
    try:
        root = yaml.compose(conf_text)
        data = yaml.safe_load(conf_text)
    except yaml.YAMLError as exc:
        raise MergeError(f"not YAML: {exc}") from None
    if not isinstance(root, yaml.MappingNode) or not isinstance(data, dict):
        raise MergeError("not a volcano-scheduler.conf: expected a mapping with tiers")
    entries = _with_traces(_entries(root), _traces(conf_text, root))
    hosted = hosted_flags(config, entry_verbs)
    result = Merged(conf_text)
    asked = Asked(_actions(data, result), config.release)
    actions = asked.actions
    _warn_unasked_verbs(config, entry_verbs, asked, result)

    url = extender.get("arguments", {}).get("extender.urlPrefix")
    # The verbs the conf's own extender entry already asks: an in-tree flag that is off for one
    # of them was turned off for the extender (an earlier merge, or the shipped conf), not by
    # the operator's choice.
    answered: set[str] = set()
    for entry in entries:
        if entry.name != "extender":
            continue
        arguments = entry.values.get("arguments") or {}
        answered |= {point.verb for point in EXTENSION_POINTS if arguments.get(point.argument)}
        if arguments.get("extender.urlPrefix") == url:
            result.notes.append(
                f"tier {entry.tier + 1} already has Caldera's extender entry ({url}): it is"
                " replaced by the one for this configuration"
            )
        else:
            result.warnings.append(
                f"tier {entry.tier + 1} already has an extender entry"
                f" ({arguments.get('extender.urlPrefix')}): it is replaced by Caldera's (one"
                " scheduler has one extender plugin)"
            )
    names = [e.name for e in entries]
    for name in sorted({n for n in names if names.count(n) > 1 and n in hosted}):
        result.warnings.append(f"{name} is listed more than once: hosted twice, it votes twice")

    targets = [e for e in entries if e.name in hosted or e.name == "extender"]
    if not targets:
        result.notes.append(
            "none of the plugins Caldera hosts is in this conf: the extender entry is added as"
            " a new first tier; move it where its votes belong"
        )
        home = None
    else:
        # A conf merged before keeps the entry where it stands (merging again changes nothing);
        # otherwise it takes the place of the first hosted plugin.
        home = next((e for e in targets if e.name == "extender"), targets[0])

    edits: list[tuple[int, int, str]] = []  # (first line, end line exclusive, new text)
    left: dict[int, int] = {}  # plugin entries each tier keeps
    placed = False
    for entry in entries:
        trace = entry.trace_line  # the line of its trace: an earlier merge changed it
        if entry.name not in hosted and entry.name != "extender":
            if trace is not None:  # Caldera no longer hosts it: the entry comes back as it was
                back = _render(entry.values, _trace_indent(conf_text, entry))
                if entry.node is not None:
                    edits.append((trace, trace + 1, ""))
                    edits.append((*_span(conf_text, entry.node)[1:], back))
                else:
                    edits.append((trace, trace + 1, back))
                result.notes.append(
                    f"{entry.name}: back in tier {entry.tier + 1} as it was, Caldera no longer"
                    " hosts it"
                )
            left[entry.tier] = left.get(entry.tier, 0) + 1
            continue
        indent = _trace_indent(conf_text, entry)
        pieces: list[str] = []
        if entry.name in hosted:
            kept = _kept_in_tree(entry, hosted[entry.name], config, actions, result)
            if trace is None and kept != entry.values:  # an entry left as it was needs none
                pieces.append(f"{indent}{TRACE}{_flow(entry.values)}\n")
            if kept is not None:
                pieces.append(_render(kept, indent))
            voting = asked.flags(f for f, served in hosted[entry.name].items() if served)
            if home is not None and entry.tier != home.tier and voting:
                result.warnings.append(
                    f"{entry.name} was in tier {entry.tier + 1}; through the extender it votes"
                    f" in tier {home.tier + 1} with the extender entry"
                )
            _compare_flags(entry, hosted[entry.name], asked, answered, result)
            if kept is not None:
                left[entry.tier] = left.get(entry.tier, 0) + 1
        if not placed and entry is home:
            pieces.append(_render(extender, indent))
            placed = True
            left[entry.tier] = left.get(entry.tier, 0) + 1
        if entry.node is not None:
            edits.append((*_span(conf_text, entry.node)[1:], "".join(pieces)))
        elif trace is not None:  # only its trace is left: what it gets goes after the trace
            edits.append((trace + 1, trace + 1, "".join(pieces)))

    emptied = {e.tier for e in entries} - set(left)
    edits = _drop_emptied_tiers(conf_text, root, emptied, edits)
    lines = conf_text.splitlines(keepends=True)
    for first, end, text in sorted(edits, key=lambda edit: (edit[0], edit[1]), reverse=True):
        lines[first:end] = [text] if text else []
    text = "".join(lines)
    if home is None:
        text = _prepend_tier(text, root, extender)
        home_tier = 0
    else:
        home_tier = home.tier
    _warn_later_voters(entries, home_tier, hosted, [v for v in entry_verbs if asked(v)], result)
    result.text = text
    yaml.safe_load(text)  # the merged file is YAML (a bug here must not reach a ConfigMap)
    return result


TRACE = "# handed to Caldera by caldera volcano-config --merge: "
"""The line a hosted entry leaves where it was, with its values before the merge (YAML flow
style): a later merge of the merged conf reads it back (``_traces``)."""

_TRACE = re.compile(r"^(?P<indent>[ \t]*)" + re.escape(TRACE) + r"(?P<entry>\{.*\})[ \t]*$")


@dataclass(frozen=True)
class _Trace:
    tier: int
    line: int
    values: dict[str, Any]


def _flow(values: dict[str, Any]) -> str:
    return yaml.safe_dump(values, default_flow_style=True, sort_keys=False, width=10**6).strip()


def _traces(text: str, root: yaml.MappingNode) -> list[_Trace]:
    """The trace lines an earlier merge left, each in the tier whose lines hold it."""
    tiers = next((v for k, v in root.value if getattr(k, "value", None) == "tiers"), None)
    if not isinstance(tiers, yaml.SequenceNode) or not tiers.value:
        return []
    starts = [tier.start_mark.line for tier in tiers.value]
    found = []
    for number, line in enumerate(text.splitlines()):
        match = _TRACE.match(line)
        if match is None or number < starts[0]:
            continue
        try:
            values = yaml.safe_load(match["entry"])
        except yaml.YAMLError:
            continue  # not ours after all: a comment is kept as it is
        if isinstance(values, dict) and isinstance(values.get("name"), str):
            tier = max(t for t, start in enumerate(starts) if start <= number)
            found.append(_Trace(tier, number, values))
    return found


def _with_traces(current: list[_Entry], traces: list[_Trace]) -> list[_Entry]:
    """The conf's entries as they were before any merge: an entry kept in-tree with a trace has
    the trace's values; a trace whose entry the merge removed is an entry without a node."""
    unused = list(traces)
    entries = []
    for entry in current:
        trace = next((t for t in unused if t.tier == entry.tier and t.values["name"] == entry.name
                      and t.line < entry.node.start_mark.line), None)  # type: ignore[union-attr]  # fmt: skip
        if trace is None:
            entries.append(entry)
            continue
        unused.remove(trace)
        entries.append(_Entry(entry.tier, entry.name, entry.node, trace.values, trace.line))
    entries += [_Entry(t.tier, t.values["name"], None, t.values, t.line) for t in unused]
    return sorted(entries, key=_line)


def _line(entry: _Entry) -> int:
    return entry.node.start_mark.line if entry.node is not None else entry.trace_line or 0


def _trace_indent(text: str, entry: _Entry) -> str:
    if entry.node is not None:
        return _span(text, entry.node)[0]
    match = _TRACE.match(text.splitlines()[entry.trace_line or 0])
    return match["indent"] if match else ""


def _actions(data: dict[str, Any], result: Merged) -> tuple[str, ...] | None:
    """The conf's actions in its order; ``None`` when it names none (then every action is
    assumed)."""
    listed = tuple(a.strip() for a in str(data.get("actions") or "").split(",") if a.strip())
    if listed:
        return listed
    result.warnings.append(
        "the conf has no actions: Volcano refuses it (failed to find Action) and keeps its"
        " previous configuration; add its actions (Volcano's default: \"enqueue, allocate,"
        ' backfill"). The checks below assume every action.'
    )
    return None


@dataclass(frozen=True)
class Asked:
    """Whether the conf's actions ask a verb (``actions`` of the extension-point table)."""

    listed: tuple[str, ...] | None
    release: Release

    @property
    def actions(self) -> frozenset[str] | None:
        return None if self.listed is None else frozenset(self.listed)

    def carried(self, verb: str) -> list[ExtensionPoint]:
        """The extension points ``verb`` carries: on releases that post jobEnqueueable and
        queueOverused to the reclaimable verb, those too."""
        names = [verb]
        if verb == Verb.RECLAIMABLE and self.release.shares_reclaimable_path:
            names += SHARED_RECLAIMABLE_PATH_VERBS
        return [BY_VERB[name] for name in names]

    def askers(self, verb: str) -> frozenset[str] | None:
        """The actions that send ``verb``; ``None``: every session."""
        found: set[str] = set()
        for point in self.carried(verb):
            if point.actions is None:
                return None
            found |= point.actions
        return frozenset(found)

    def __call__(self, verb: str) -> bool:
        askers = self.askers(verb)
        return askers is None or self.actions is None or bool(askers & self.actions)

    def flags(self, flags: Iterable[str]) -> bool:
        """Whether an action asks any point one of ``flags`` gates."""
        wanted = set(flags)
        return any(self(p.verb) for p in EXTENSION_POINTS if p.flag in wanted)


def _warn_unasked_verbs(
    config: CalderaConfig, entry_verbs: list[str], asked: Asked, result: Merged
) -> None:
    """A verb of the extender entry that no configured action asks: Caldera's plugins answer it
    and Volcano never sends it."""
    for verb in entry_verbs:
        askers = asked.askers(verb)
        if asked(verb) or askers is None:
            continue
        answering = sorted(
            {
                entry.name
                for entry in config.entries
                for point in asked.carried(verb)
                if point.hook in implemented_hooks(entry.cls)
                and (point.flag is None or entry.option.enabled(point.flag))
            }
        )
        add = _names([a for a in ACTIONS if a in askers], "or")
        result.warnings.append(
            f"{BY_VERB[verb].argument}: no action of this conf ({', '.join(asked.listed or ())})"
            f" asks {verb} (Volcano's {BY_VERB[verb].volcano}), so what"
            f" {_names(answering)} answer{'s' if len(answering) == 1 else ''} there is never"
            f" used: add {add} to actions"
        )


def _names(names: list[str], last: str = "and") -> str:
    if not names:
        return "no plugin"
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} {last} {names[-1]}"


def _drop_emptied_tiers(
    text: str, root: yaml.MappingNode, emptied: set[int], edits: list[tuple[int, int, str]]
) -> list[tuple[int, int, str]]:
    """A tier whose every plugin was handed to Caldera goes whole, its trace lines with it (an
    empty ``plugins:`` would be ``null``)."""
    if not emptied:
        return edits
    tiers = next(v for k, v in root.value if getattr(k, "value", None) == "tiers")
    kept = [
        edit
        for edit in edits
        if not any(
            tiers.value[t].start_mark.line <= edit[0] < _span(text, tiers.value[t])[2]
            for t in emptied
        )
    ]
    for t in emptied:
        _, first, end = _span(text, tiers.value[t])
        kept.append((first, end, ""))
    return kept


def _entries(root: yaml.MappingNode) -> list[_Entry]:
    tiers = next((v for k, v in root.value if getattr(k, "value", None) == "tiers"), None)
    if not isinstance(tiers, yaml.SequenceNode):
        raise MergeError("not a volcano-scheduler.conf: no tiers list")
    found: list[_Entry] = []
    for t, tier in enumerate(tiers.value):
        plugins = (
            next((v for k, v in tier.value if getattr(k, "value", None) == "plugins"), None)
            if isinstance(tier, yaml.MappingNode)
            else None
        )
        if not isinstance(plugins, yaml.SequenceNode):
            raise MergeError(f"tier {t + 1} has no plugins list")
        for item in plugins.value:
            if not isinstance(item, yaml.MappingNode):
                raise MergeError(f"tier {t + 1}: a plugin entry is not a mapping")
            values = yaml.safe_load(yaml.serialize(item))
            if not isinstance(values, dict) or not isinstance(values.get("name"), str):
                raise MergeError(f"tier {t + 1}: a plugin entry has no name")
            found.append(_Entry(t, values["name"], item, values))
    return found


def _span(text: str, node: yaml.Node) -> tuple[str, int, int]:
    """The lines of one block-sequence item (from its ``- `` to the line before the next item)
    and the indentation of its dash."""
    lines = text.splitlines(keepends=True)
    first = node.start_mark.line
    line = lines[first]
    dash = line.rfind("- ", 0, node.start_mark.column)
    if dash < 0:
        raise MergeError(f"line {first + 1}: only block-style plugin lists can be merged")
    # PyYAML ends a block mapping where the next token starts: the next item's dash (or the
    # next tier's), which belongs to what follows.
    end = node.end_mark.line
    if end < len(lines) and lines[end][: node.end_mark.column].strip():
        end += 1
    # Trailing blank or comment lines belong to what follows, not to this entry.
    while end > first + 1 and (lines[end - 1].strip() == "" or lines[end - 1].lstrip()[:1] == "#"):
        end -= 1
    return line[:dash], first, end


def _render(values: dict[str, Any], indent: str) -> str:
    body = yaml.safe_dump([values], sort_keys=False, default_flow_style=False)
    return "".join(indent + line + "\n" for line in body.splitlines())


def _kept_in_tree(
    entry: _Entry,
    flags: dict[str, bool],
    config: CalderaConfig,
    actions: frozenset[str] | None,
    result: Merged,
) -> dict[str, Any] | None:
    cls = next(e.cls for e in config.entries if e.name == entry.name)
    still = [
        hook
        for hook in cls.in_tree_only
        if hook in IN_TREE_FLAGS
        and (hook not in NEEDED_BY_ACTION or actions is None or NEEDED_BY_ACTION[hook] & actions)
        and _gate_open(entry.values, IN_TREE_FLAGS[hook])
    ]
    if not still:
        result.notes.append(f"{entry.name}: removed from tier {entry.tier + 1}, Caldera hosts it")
        return None
    kept = dict(entry.values)
    turned_off = [flag for flag, served in flags.items() if served]
    for flag in turned_off:
        kept[flag] = False
    result.notes.append(
        f"{entry.name}: kept in tier {entry.tier + 1} for {', '.join(still)} (the extender"
        f" cannot carry them), with {', '.join(f'{f}: false' for f in turned_off) or 'no flag'}"
        " for what Caldera answers"
    )
    return kept


def _gate_open(values: dict[str, Any], flag: str | None) -> bool:
    return flag is None or _enabled(values, flag)


def _enabled(values: dict[str, Any], flag: str) -> bool:
    value = values.get(flag, FLAG_DEFAULTS[flag])
    return value is not False


def _compare_flags(
    entry: _Entry, flags: dict[str, bool], asked: Asked, answered: set[str], result: Merged
) -> None:
    """``answered``: the verbs the conf's extender entry asks already. An entry with a trace has
    its values from before any merge; one without (a conf written by hand with the extender's
    entry, as the shipped overlays) has a flag off for a verb that entry asks because the
    extender answers it there."""
    for flag, served in sorted(flags.items()):
        if not asked.flags([flag]):
            continue  # no configured action asks it: on or off, nothing is decided by it
        in_tree = _enabled(entry.values, flag)
        if (
            served
            and not in_tree
            and entry.trace_line is None
            and {p.verb for p in EXTENSION_POINTS if p.flag == flag} <= answered
        ):
            continue
        if in_tree and not served:
            result.warnings.append(
                f"{entry.name}: {flag} is on in-tree but off in Caldera's configuration: the"
                " merged scheduler no longer asks it"
            )
        elif served and not in_tree:
            result.warnings.append(
                f"{entry.name}: {flag} is off in-tree but on in Caldera's configuration: the"
                " merged scheduler asks it where it did not"
            )


FALL_THROUGH = (
    "when that tier returns no victims Volcano asks the next one, so {name} can evict what"
    " Caldera protects (set {flag}: false on it, or move it into tier {home})"
)
LATER_VOTES: tuple[tuple[str, str, frozenset[str], str], ...] = (
    ("enablePreemptable", Verb.PREEMPTABLE, VICTIM_VOTERS["enablePreemptable"], FALL_THROUGH),
    ("enableReclaimable", Verb.RECLAIMABLE, VICTIM_VOTERS["enableReclaimable"], FALL_THROUGH),
    (
        "enableJobEnqueued",
        Verb.JOB_ENQUEUEABLE,
        ENQUEUE_VOTERS,
        "a Permit from Caldera (sla past its waiting time, overcommit with room) ends Volcano's"
        " vote there and {name}'s check is skipped (keep Caldera's admission plugins out of"
        " tier {home}, or move {name} into it)",
    ),
)
"""An in-tree voter in a later tier than the extender's, per verb: (flag, verb, voters, what it
risks). Victim votes fall through to a later tier when a tier returns none (Volcano issue
#2147); a tier that permits a job ends Volcano's jobEnqueueable vote."""


def _warn_later_voters(
    entries: list[_Entry],
    home_tier: int,
    hosted: dict[str, dict[str, bool]],
    entry_verbs: list[str],
    result: Merged,
) -> None:
    """Each in-tree voter in a later tier than the extender's. It changes a decision only where
    the merge moved its turn: when every plugin Caldera answers the verb for sat, with its flag
    on, in the extender's tier of the in-tree conf already, Volcano reached (or skipped) that
    voter in-tree just the same, and the layout is a note. A plugin Caldera answers for that the
    conf did not list there (min-runtime, or one from another tier) makes it a warning."""
    for flag, verb, voters, risk in LATER_VOTES:
        if verb not in entry_verbs:
            continue
        answering = sorted(name for name, flags in hosted.items() if flags.get(flag))
        alike = bool(answering) and all(
            any(
                e.name == name and e.tier == home_tier and _enabled(e.values, flag) for e in entries
            )
            for name in answering
        )
        for entry in entries:
            if not (
                entry.tier > home_tier
                and entry.name in voters
                and entry.name not in hosted
                and _enabled(entry.values, flag)
                and _registers(entry, flag)
            ):
                continue
            turn = (
                f"{entry.name} in tier {entry.tier + 1} votes on {verb} after the extender's"
                f" tier {home_tier + 1}"
            )
            if alike:
                result.notes.append(
                    f"{turn}, as it did after {', '.join(answering)} in-tree: unchanged"
                )
            else:
                risk_text = risk.format(name=entry.name, flag=flag, home=home_tier + 1)
                result.warnings.append(f"{turn}: {risk_text}")


def _registers(entry: _Entry, flag: str) -> bool:
    """Whether the in-tree plugin registers the function ``flag`` gates at all: drf registers its
    ReclaimableFn only with ``enableHierarchy: true`` (hdrf; ``drf.go``, v1.7 to v1.15), so the
    drf of Volcano's default conf never votes on reclaim."""
    if (entry.name, flag) in HIERARCHY_ONLY:
        return entry.values.get("enableHierarchy", FLAG_DEFAULTS["enableHierarchy"]) is True
    return True


def _prepend_tier(text: str, root: yaml.MappingNode, extender: dict[str, Any]) -> str:
    tiers = next(v for k, v in root.value if getattr(k, "value", None) == "tiers")
    first = tiers.value[0] if tiers.value else None
    if first is None:
        raise MergeError("the conf has no tier to put the extender in")
    lines = text.splitlines(keepends=True)
    line = first.start_mark.line
    dash = lines[line].rfind("- ", 0, first.start_mark.column)
    indent = lines[line][:dash]
    tier = yaml.safe_dump([{"plugins": [extender]}], sort_keys=False)
    lines[line:line] = [indent + row + "\n" for row in tier.splitlines()]
    return "".join(lines)
