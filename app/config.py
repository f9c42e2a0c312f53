"""The configuration file: Volcano's tiers shape plus the extender-side settings.

```yaml
volcanoVersion: "1.15"       # the Volcano release calling us; selects the wire dialect
managedResources: []         # same meaning as extender.managedResources
maxSnapshotBytes: 536870912  # onSessionOpen bodies (the whole cluster) above this: 413
maxRequestBytes: 10485760    # every other verb's body above this: 413
tiers:                       # same shape as the tiers of volcano-scheduler.conf
- plugins:
  - name: sla
    arguments: {sla-waiting-time: 1h}
    enableJobEnqueued: true
```

Volcano skips an unknown plugin with a log line and silently defaults a mistyped flag; Caldera
refuses both loudly, naming the file, the key path and the problem, because an operator would
rather learn at startup than from a scheduler that quietly ignores a plugin.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from importlib.resources import files
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
)

from app.cluster_state.audit import DEFAULT_MAX_DIVERGENT_SESSIONS
from app.cluster_state.modes import SessionStateMode
from app.cluster_state.modes import problems as session_state_problems
from app.cluster_state.staleness import DEFAULT_MAX_STALENESS, OnStaleState
from app.explain import DEFAULT_ENTRIES, DEFAULT_SESSIONS
from app.plugin_faults import OnError, format_duration, parse_duration
from plugins.api import registry
from plugins.api.arguments import Arguments
from plugins.api.base import Background, Plugin
from plugins.api.extension_points import BY_VERB
from plugins.api.options import FLAG_DEFAULTS
from plugins.api.release import NEWEST_STABLE_VERSION, SUPPORTED_VERSIONS, Release

DEFAULT_MAX_REQUEST_BYTES = 10 * 1024 * 1024
"""Every verb but onSessionOpen: one task, one job, one queue, or one task against the nodes
that passed the predicates. Volcano's own extender reads answers up to 10 MiB."""
DEFAULT_MAX_SNAPSHOT_BYTES = 512 * 1024 * 1024
"""onSessionOpen carries the whole cluster: about 437 MB (417 MiB) for 1,000 nodes and 10,000
pods with the hot-path benchmark's heavy objects (``bench/workloads.py``: 88.4 KB a node, 34.9 KB
a pod), 156 MiB for the plainer ones vc-scheduler marshalled in the cluster run
(``app/commands/sizing.py``). A snapshot refused here switches every
hosted plugin off for that cycle without an error on Volcano's side, so the default errs large;
the memory it may take is the sidecar's limit to size (docs/operator-guide.md, "Size it")."""
EMBEDDED_CONFIG_NAME = "default_config.yaml"


class ConfigError(Exception):
    """A configuration that cannot be served. ``str()`` names the file, key path and problem,
    one line per problem when there are several (``more``: the others, as (path, problem))."""

    def __init__(
        self,
        source: str,
        path: str,
        problem: str,
        more: list[tuple[str, str]] | None = None,
        rest: CalderaConfig | None = None,
    ) -> None:
        self.source = source
        self.path = path
        self.problem = problem
        self.more = list(more or [])
        self.rest = rest
        """The file's configuration without what the problems name, when that much is valid
        (:func:`parse_config`): check-config says its warnings too, so that a typo in one
        plugin's flag does not hide an unread argument in another."""
        lines = [
            f"{source}: {where}: {what}" if where else f"{source}: {what}"
            for where, what in [(path, problem), *self.more]
        ]
        super().__init__("\n".join(lines))

    @classmethod
    def of(
        cls, source: str, problems: list[tuple[str, str]], rest: CalderaConfig | None = None
    ) -> ConfigError:
        """Every problem, in the order of the file (``tiers[2]`` before ``tiers[10]``)."""
        ordered = sorted(problems, key=lambda item: _natural(item[0]))
        (path, problem), *more = ordered
        return cls(source, path, problem, more, rest)


def _natural(path: str) -> list[tuple[int, str]]:
    return [(int(part), "") if part.isdigit() else (-1, part) for part in re.split(r"(\d+)", path)]


class PluginOption(BaseModel):
    """One entry of a tier: a plugin name, its arguments, Volcano's flags, and Caldera's own
    two keys: ``onError`` (``fail`` or ``abstain``: what a fault of the plugin does to the verb,
    by default its class's ``on_error``) and ``timeBudget`` (a duration such as ``"100ms"``:
    how long one call may take, by default ``app.plugin_faults.DEFAULT_TIME_BUDGET``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    arguments: dict[str, Any] = Field(default_factory=dict)
    flags: dict[str, bool] = Field(default_factory=dict)
    """The flags given explicitly in the file (defaults are applied by :meth:`enabled`)."""
    onError: OnError | None = None
    timeBudget: float | None = Field(default=None, gt=0)
    """Seconds (the file says ``"250ms"``; parsed in :func:`_plugin_entry`)."""

    def enabled(self, flag: str) -> bool:
        return self.flags.get(flag, FLAG_DEFAULTS[flag])


class Tier(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    plugins: list[PluginOption] = Field(default_factory=list)
    _positions: tuple[int, ...] | None = PrivateAttr(default=None)
    """Each plugin's index in the file's tier, when entries the file has there were set aside
    (a refused entry, so that the rest are still checked): what :attr:`PluginEntry.where` and
    every problem name, not the index in :attr:`plugins` (issue 47). None: the same."""

    def indexed(self) -> list[tuple[int, PluginOption]]:
        """Each plugin with its index in the file's tier."""
        positions = self._positions or range(len(self.plugins))
        return list(zip(positions, self.plugins, strict=True))


VolcanoVersion = tuple[int, int] | tuple[int, int, int]
"""``(major, minor)`` for a release line, ``(major, minor, patch)`` for one patch release."""


class CalderaConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    volcanoVersion: VolcanoVersion | Literal["auto"] = NEWEST_STABLE_VERSION
    managedResources: list[str] = Field(default_factory=list)
    maxRequestBytes: int = Field(default=DEFAULT_MAX_REQUEST_BYTES, gt=0)
    maxSnapshotBytes: int = Field(default=DEFAULT_MAX_SNAPSHOT_BYTES, gt=0)
    explainSessions: int = Field(default=DEFAULT_SESSIONS, ge=0)
    """Sessions whose decisions ``GET /debug/explain`` can tell (0: record nothing)."""
    explainEntries: int = Field(default=DEFAULT_ENTRIES, ge=0)
    """Entries recorded per session (a job, queue or task, and each node a task was checked
    against); later ones are dropped and counted (app/explain.py)."""
    explainEvents: bool = False
    """A Kubernetes Event on a PodGroup when Caldera's verdict on its job changes
    (app/events.py); needs create and patch on events."""
    explainEventsKubeconfig: str | None = None
    """The cluster the Events go to: a kubeconfig file (default: the pod's service account,
    else $KUBECONFIG or ~/.kube/config, as pdb's ``kubernetes`` source)."""
    sessionState: SessionStateMode = SessionStateMode.SNAPSHOT
    """Where a session's state comes from: Volcano's onSessionOpen body (``snapshot``), the
    body and a comparison with the state derived from the cluster (``compare``), or the
    cluster alone (``cluster``: Volcano without onSessionOpenVerb); ``app/cluster_state/``."""
    sessionStateKubeconfig: str | None = None
    """The cluster watched in compare and cluster mode (default: the pod's service account, else
    $KUBECONFIG or ~/.kube/config, as pdb's ``kubernetes`` source)."""
    sessionStateSchedulerNames: list[str] = Field(default_factory=lambda: ["volcano"])
    """vc-scheduler's ``--scheduler-name`` values: whose pending pods its cache keeps."""
    sessionStateDefaultQueue: str = "default"
    """vc-scheduler's ``--default-queue``: the queue of a PodGroup that names none."""
    sessionStateMaxStaleness: float = Field(default=DEFAULT_MAX_STALENESS, gt=0)
    """Seconds (the file says ``"30s"``) a watch may stay broken before the view is stale
    (app/cluster_state/staleness.py)."""
    onStaleState: OnStaleState = OnStaleState.HOLD
    """What a session opened on a stale view answers (``OnStaleState``)."""
    sessionStateMaxDivergentSessions: int = Field(default=DEFAULT_MAX_DIVERGENT_SESSIONS, ge=0)
    """Sessions in a row whose self-audit found an unexplained difference before the view
    counts as stale (0: the audit only reports; app/cluster_state/audit.py)."""
    tiers: list[Tier] = Field(default_factory=list)

    @field_validator("sessionStateMaxStaleness", mode="before")
    @classmethod
    def _parse_staleness(cls, value: Any) -> Any:
        # A bare number is refused as timeBudget's is (its unit would be a guess); a float is
        # the parsed value itself, as a live reload hands it back.
        return value if isinstance(value, float) else parse_duration(value)

    @field_validator("volcanoVersion", mode="before")
    @classmethod
    def _parse_version(cls, value: Any) -> VolcanoVersion | Literal["auto"]:
        if value == "auto":
            return "auto"
        return parse_volcano_version(value)

    @field_validator("managedResources", mode="before")
    @classmethod
    def _list_of_names(cls, value: Any) -> Any:
        if value is None:
            return []
        if isinstance(value, str):
            raise ValueError("must be a YAML list of resource names (Volcano refuses a string too)")
        return value

    @cached_property
    def release(self) -> Release:
        """The Volcano release calling us, built once."""
        if self.volcanoVersion == "auto":
            return Release.of(NEWEST_STABLE_VERSION)  # until the first onSessionOpen says
        return Release.of(self.volcanoVersion)

    @property
    def infers_release(self) -> bool:
        """``volcanoVersion: auto``: the release is inferred from what Volcano sends."""
        return self.volcanoVersion == "auto"

    def body_limit(self, verb: str) -> int:
        """The largest body accepted for ``verb``: the key its extension point names."""
        limit: int = getattr(self, BY_VERB[verb].body_limit)
        return limit

    def plugin_options(self) -> list[PluginOption]:
        return [option for tier in self.tiers for option in tier.plugins]

    @cached_property
    def entries(self) -> tuple[PluginEntry, ...]:
        """Every tier entry resolved once: its plugin class and parsed ``Arguments``."""
        resolved: list[PluginEntry] = []
        for t, tier in enumerate(self.tiers):
            for i, option in tier.indexed():
                cls = registry.get(option.name)
                if cls is None:
                    raise LookupError(f"plugin {option.name!r} is not installed")
                arguments = Arguments(option.arguments, option.name, option.flags, self.release)
                resolved.append(PluginEntry(t, i, option, cls, arguments))
        return tuple(resolved)


@dataclass(frozen=True, slots=True)
class PluginEntry:
    """One entry of the tiers, resolved: where it stands, its option, class and arguments."""

    tier: int
    index: int
    option: PluginOption
    cls: type[Plugin]
    arguments: Arguments

    @property
    def name(self) -> str:
        return self.option.name

    @property
    def where(self) -> str:
        """The entry's key path in the configuration file."""
        return f"tiers[{self.tier}].plugins[{self.index}]"


_VERSION = re.compile(r"^v?(\d+)\.(\d+)(?:\.(\d+))?(?:-[0-9A-Za-z.]+)?$")


def parse_volcano_version(value: Any) -> VolcanoVersion:
    """``"1.15"`` (the newest patch release of the line) or ``"1.14.1"``/``"v1.14.1"`` (that
    patch release; a pre-release suffix such as ``-alpha.1`` is accepted and ignored)."""
    if isinstance(value, tuple) and len(value) == 2:
        return (int(value[0]), int(value[1]))
    if isinstance(value, tuple) and len(value) == 3:
        return (int(value[0]), int(value[1]), int(value[2]))
    if isinstance(value, float) and repr(value) != "1.1":
        value = repr(value)  # an unquoted 1.15 is unambiguous; 1.1 could be a mangled 1.10
    if isinstance(value, float):
        raise ValueError(
            f'write the version as a quoted string such as "1.10" (YAML read {value!r} as a'
            " number, and 1.10 as a number is 1.1)"
        )
    if not isinstance(value, str):
        raise ValueError(f'must be a string such as "1.15", not {value!r}')
    match = _VERSION.match(value.strip())
    if match is None:
        raise ValueError(
            f'{value!r} is not a Volcano release such as "1.15" or "v1.15.1" (or "auto")'
        )
    line = (int(match[1]), int(match[2]))
    if line not in SUPPORTED_VERSIONS:
        raise ValueError(
            f"Volcano {line[0]}.{line[1]} is not supported: the extender protocol exists"
            " from 1.6, and Caldera speaks 1.6 through 1.16"
        )
    return line if match[3] is None else (*line, int(match[3]))


def _path(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _plugin_entry(raw: Any, where: str, problems: list[tuple[str, str]]) -> dict[str, Any]:
    """Split one raw plugin mapping into name, arguments and flags; every unknown key and
    non-boolean flag is added to ``problems``."""
    if not isinstance(raw, dict):
        problems.append((where, f"must be a mapping with a 'name', not {raw!r}"))
        return {"name": "?", "flags": {}}
    entry: dict[str, Any] = {"flags": {}}
    for key, value in raw.items():
        if key in ("name", "arguments"):
            entry[key] = {} if key == "arguments" and value is None else value
        elif key == "onError":
            if value not in tuple(OnError):
                problems.append((f"{where}.{key}", f"must be fail or abstain, not {value!r}"))
                continue
            entry[key] = value
        elif key == "timeBudget":
            try:
                entry[key] = parse_duration(value)
            except ValueError as exc:
                problems.append((f"{where}.{key}", str(exc)))
        elif key in FLAG_DEFAULTS:
            if not isinstance(value, bool):
                problems.append((f"{where}.{key}", f"must be true or false, not {value!r}"))
                continue
            entry["flags"][key] = value
        else:
            hint = ""
            lowered = {k.lower(): k for k in (*FLAG_DEFAULTS, "onError", "timeBudget")}
            if str(key).lower() in lowered:
                hint = f" (did you mean {lowered[str(key).lower()]!r}?)"
            problems.append((f"{where}.{key}", f"unknown plugin option{hint}"))
    return entry


def parse_config(
    data: Any, source: str, keep: Mapping[str, Any] | None = None, *, salvage: bool = True
) -> CalderaConfig:
    """Validate a decoded YAML document; ``keep`` overrides top-level keys with values that
    must not change (a live reload keeps the running ``volcanoVersion`` and limits). Every
    problem found is reported in one :class:`ConfigError`, with the rest of the file that is
    valid (:attr:`ConfigError.rest`, unless ``salvage`` is off); only a document whose shape is
    unusable stops at that."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(source, "", "the configuration must be a YAML mapping")
    data = {**data, **(keep or {})}
    problems: list[tuple[str, str]] = []
    if not isinstance(data.get("tiers", []), list):
        raise ConfigError(source, "tiers", "must be a list of tiers")
    document, data = data, _shaped(data, problems)
    release_known = True
    try:
        config = CalderaConfig.model_validate(data)
    except ValidationError as exc:
        for err in exc.errors():
            loc = tuple(err["loc"])
            if loc and loc[-1] == "flags":
                loc = loc[:-1]
            message = err["msg"].removeprefix("Value error, ")
            if err["type"] == "extra_forbidden":
                message = "unknown key"
            problems.append((_path(loc), message))
        # Checked on without what pydantic refused: the plugins' own checks still run, and
        # every problem is said at once (a refused maxSnapshotBytes hid an unknown plugin,
        # issue 47).
        refused, positions = without(document, [path for path, _ in problems])
        try:
            config = placed(CalderaConfig.model_validate(_shaped(refused, [])), positions)
        except ValidationError:
            raise ConfigError.of(source, problems) from None
        # A refused volcanoVersion leaves the release unknown: what depends on it is not
        # checked against a release the file did not name.
        release_known = all(path != "volcanoVersion" for path, _ in problems)
    release = config.release
    unshaped = {path for path, _ in problems}  # an entry that is no mapping has no plugin
    for t, tier in enumerate(config.tiers):
        for i, option in tier.indexed():
            where = f"tiers[{t}].plugins[{i}]"
            if where in unshaped:
                continue
            cls = registry.get(option.name)
            if cls is None:
                known = ", ".join(registry.names()) or "none"
                problems.append((f"{where}.name", unknown_plugin(option.name, known)))
                continue
            if release_known:
                problems.extend(_entry_problems(cls, option, where, release))
    installed: list[tuple[str, str, type]] = []
    for t, tier in enumerate(config.tiers):
        for i, option in tier.indexed():
            cls = registry.get(option.name)
            if cls is not None:
                installed.append((f"tiers[{t}].plugins[{i}]", option.name, cls))
    if release_known:
        problems.extend(
            session_state_problems(config.sessionState, release, installed, config.infers_release)
        )
    if problems:
        raise ConfigError.of(
            source, problems, _rest(document, problems, source) if salvage else None
        )
    return config


def _shaped(document: dict[str, Any], problems: list[tuple[str, str]]) -> dict[str, Any]:
    """``document`` with each plugin entry split into name, arguments and flags
    (:func:`_plugin_entry`), for pydantic; what is out of shape is added to ``problems``."""
    tiers = document.get("tiers")
    if tiers is None:
        return document
    shaped: list[dict[str, list[Any]]] = []
    for t, tier in enumerate(tiers):
        if not isinstance(tier, dict):
            problems.append((f"tiers[{t}]", "must be a mapping with 'plugins'"))
            shaped.append({"plugins": []})  # the next tier keeps its index
            continue
        for extra in sorted(set(tier) - {"plugins"}):
            problems.append((f"tiers[{t}].{extra}", "unknown tier key"))
        plugin_list = tier.get("plugins") or []
        if not isinstance(plugin_list, list):
            problems.append((f"tiers[{t}].plugins", "must be a list of plugins"))
            shaped.append({"plugins": []})
            continue
        shaped.append(
            {
                "plugins": [
                    _plugin_entry(p, f"tiers[{t}].plugins[{i}]", problems)
                    for i, p in enumerate(plugin_list)
                ]
            }
        )
    return {**document, "tiers": shaped}


def _rest(
    document: dict[str, Any], problems: list[tuple[str, str]], source: str
) -> CalderaConfig | None:
    """``document`` without what ``problems`` name, when that is a valid configuration."""
    rest, positions = without(document, [path for path, _ in problems])
    try:
        return placed(parse_config(rest, source, salvage=False), positions)
    except ConfigError:
        return None


_SET_ASIDE = object()


def without(document: Any, paths: list[str]) -> tuple[Any, list[list[int] | None]]:
    """A copy of ``document`` (a decoded configuration file) without what each path names (as
    :class:`ConfigError` names them: ``tiers[0].plugins[1].arguments.x``): the key goes, except
    that a plugin entry whose name is at fault (unknown, or not of this release) or that is no
    mapping is set aside whole, the other entries keeping their warnings (issue 47 item 10).
    With, per tier, the file's positions of the entries kept (None: the tier is not a list of
    entries), for :func:`placed`."""
    document = copy.deepcopy(document)
    for where in paths:
        *parents, last = re.findall(r"[^.\[\]]+", where) or [""]
        node: Any = document
        for part in parents:
            key: Any = int(part) if part.isdigit() else part
            try:
                node = node[key]
            except (KeyError, IndexError, TypeError):
                node = None
                break
        if last == "name" and isinstance(node, dict) and parents:
            node[_SET_ASIDE] = True
        elif isinstance(node, dict) and last in node:
            del node[last]
        elif isinstance(node, list) and last.isdigit() and int(last) < len(node):
            node[int(last)] = _SET_ASIDE
    positions: list[list[int] | None] = []
    for tier in (document.get("tiers") if isinstance(document, dict) else None) or []:
        if not (isinstance(tier, dict) and isinstance(tier.get("plugins"), list)):
            positions.append(None)
            continue
        kept = [
            i
            for i, p in enumerate(tier["plugins"])
            if p is not _SET_ASIDE and not (isinstance(p, dict) and p.get(_SET_ASIDE))
        ]
        tier["plugins"] = [tier["plugins"][i] for i in kept]
        positions.append(kept)
    return document, positions


def placed(config: CalderaConfig, positions: list[list[int] | None]) -> CalderaConfig:
    """``config`` whose tier ``t`` holds the entries at ``positions[t]`` of the file's tier
    (None: all of them), some having been set aside before it was validated: every path it
    names is then the file's (:meth:`Tier.indexed`). Before :attr:`CalderaConfig.entries` is
    first read, which it fixes."""
    for tier, kept in zip(config.tiers, positions, strict=True):
        if kept is not None:
            tier._positions = tuple(kept)
    return config


def unknown_plugin(name: str, known: str) -> str:
    """Plugins are discovered once, when the process starts (``plugins.api.registry``): one
    installed into a running server's environment stays unknown to its live reload. One that is
    installed but failed to load (its module raised on import) is said so, with the error:
    telling its author to install it would send them the wrong way (issue 47 item 9)."""
    failed = registry.failure(name)
    if failed is not None:
        return (
            f"plugin {name!r} is installed but failed to load: {failed} (fix the package, then"
            " restart caldera)"
        )
    return (
        f"unknown plugin {name!r} (known plugins: {known}; plugins are discovered when caldera"
        " starts: restart it after installing one)"
    )


def _argument_errors(
    cls: type[Plugin], arguments: Arguments, name: str, where: str
) -> list[tuple[str, str]]:
    """``cls.argument_errors`` as (key path, problem). A plugin's own code: one that raises or
    answers anything but a mapping of argument names to messages is a configuration error that
    names the plugin (issue 47 item 9: a list made ``check-config`` print a traceback)."""
    contract = "expected a dict of argument name to problem (dict[str, str])"
    try:
        errors = cls.argument_errors(arguments)
    except Exception as exc:
        return [(f"{where}.arguments", f"plugin {name!r}: argument_errors raised"
                 f" {type(exc).__name__}: {exc}")]  # fmt: skip
    if not isinstance(errors, Mapping):
        return [(f"{where}.arguments", f"plugin {name!r}: argument_errors returned"
                 f" {type(errors).__name__} {errors!r:.80}; {contract}")]  # fmt: skip
    problems = []
    for key, problem in errors.items():
        if not isinstance(key, str) or not isinstance(problem, str):
            return [(f"{where}.arguments", f"plugin {name!r}: argument_errors returned the"
                     f" entry {key!r:.40}: {problem!r:.40}; {contract}")]  # fmt: skip
        problems.append((f"{where}.arguments.{key}", problem))
    return problems


def _entry_problems(
    cls: type[Plugin], option: PluginOption, where: str, release: Release
) -> list[tuple[str, str]]:
    """What makes one entry of a known plugin unservable on ``release``."""
    problems: list[tuple[str, str]] = []
    arguments = Arguments(option.arguments, option.name, option.flags, release)
    problems.extend(_argument_errors(cls, arguments, option.name, where))
    ported = cls.ported_from
    if ported is not None and not release.has(ported):
        first = ".".join(map(str, max(ported.first)))
        problems.append(
            (
                f"{where}.name",
                f"plugin {option.name!r} follows Volcano's from v{first} ({ported.upstream});"
                f" Volcano {release}'s in-tree plugin decides differently, so Caldera cannot"
                " answer as it would: set volcanoVersion to the release you run, or keep"
                " the plugin in-tree",
            )
        )
    missing = [v for v in cls.required_verbs(release) if not release.has_verb(v)]
    if missing:
        problems.append(
            (
                f"{where}.name",
                f"plugin {option.name!r} needs the {', '.join(missing)} verb(s), which"
                f" Volcano {release} cannot send (its answers would be wrong without them);"
                " set volcanoVersion to the release you run, or remove the plugin",
            )
        )
    return problems


def load_config_text(
    text: str, source: str, keep: Mapping[str, Any] | None = None
) -> CalderaConfig:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ConfigError(source, where, f"not valid YAML: {problem}") from None
    return parse_config(data, source, keep)


def load_config(path: str | Path | None) -> CalderaConfig:
    """Load ``path``, or the embedded default configuration when it is None."""
    return load_config_text(*read_config_text(path))


def read_config_text(path: str | Path | None) -> tuple[str, str]:
    """The text of ``path`` (or of the embedded default when None) and the source to name
    in messages."""
    if path is None:
        return embedded_config_text(), f"<embedded {EMBEDDED_CONFIG_NAME}>"
    source = str(path)
    try:
        return Path(path).read_text(encoding="utf-8"), source
    except (OSError, UnicodeDecodeError) as exc:
        problem = exc.strerror if isinstance(exc, OSError) else None
        raise ConfigError(source, "", f"cannot read the file: {problem or exc}") from None


def embedded_config_text() -> str:
    return files("app").joinpath(EMBEDDED_CONFIG_NAME).read_text(encoding="utf-8")


Backgrounds = dict[tuple[int, int], Background]
"""A configuration's background data sources by tier entry ``(tier, index)``."""


def digest(text: str) -> str:
    """The first 16 hex digits of the SHA-256 of the file's text: enough to tell two
    versions of one ConfigMap apart in a metric label and a log line."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True, slots=True)
class ConfigOrigin:
    """Where the served configuration came from: the file (None for the embedded default or
    a configuration built in code), the source named in messages, the text's digest."""

    source: str
    sha256: str
    path: Path | None = None

    @classmethod
    def of(cls, config: CalderaConfig) -> ConfigOrigin:
        """For a configuration built in code (tests, the benchmark): no file to watch."""
        text = json.dumps(config.model_dump(mode="json"), sort_keys=True)
        return cls("<in memory>", digest(text))


def load_with_origin(path: str | Path | None) -> tuple[CalderaConfig, ConfigOrigin]:
    """Load ``path`` (or the embedded default) and say where it came from, reading the file
    once so that the digest is of the text that was loaded."""
    text, source = read_config_text(path)
    config = load_config_text(text, source)
    return config, ConfigOrigin(source, digest(text), None if path is None else Path(path))


def background_key(config: CalderaConfig, entry: tuple[int, int]) -> str:
    """What makes two tier entries' data sources interchangeable: the plugin, its arguments
    and its flags (a background is built from exactly these)."""
    option = config.tiers[entry[0]].plugins[entry[1]]
    return json.dumps([option.name, option.arguments, option.flags], sort_keys=True, default=str)


def build_backgrounds(
    config: CalderaConfig, reuse: Mapping[str, Background] | None = None
) -> tuple[Backgrounds, list[Background]]:
    """The background data sources ``config`` needs, taking the ones in ``reuse`` (by
    :func:`background_key`) instead of building anew; returns them with the new ones (which
    the caller starts)."""
    backgrounds: Backgrounds = {}
    built: list[Background] = []
    for t, tier in enumerate(config.tiers):
        for i, option in enumerate(tier.plugins):
            cls = registry.get(option.name)
            if cls is None:
                continue
            reused = (reuse or {}).get(background_key(config, (t, i)))
            if reused is not None:
                backgrounds[(t, i)] = reused
                continue
            background = cls.create_background(
                Arguments(
                    option.arguments, plugin=option.name, flags=option.flags, release=config.release
                )
            )
            if background is not None:
                backgrounds[(t, i)] = background
                built.append(background)
    return backgrounds, built


def release_note(config: CalderaConfig) -> str:
    """Which Volcano release the answers follow, and why it matters."""
    release = config.release
    why = (
        "it decides the predicate answer's shape, which verbs exist (jobEnqueued only from"
        " 1.16: before it Caldera accounts admissions when it answers jobEnqueueable) and"
        " per-release plugin behaviour; a mismatch is logged and counted in"
        " caldera_release_mismatch_total"
    )
    if config.infers_release:
        return (
            f"volcanoVersion is auto: Caldera infers the release from the first onSessionOpen"
            f" body and the verbs it receives (until then it answers as {release}); where the"
            f" payload cannot tell two releases apart it follows the older one. A convenience:"
            f" set the release you run, because {why}"
        )
    if "volcanoVersion" not in config.model_fields_set:
        return (
            f"volcanoVersion is not set: assuming Volcano {release}, the newest stable release;"
            f" set it to the release you run, because {why}"
        )
    if not release.is_stable:
        return f"volcanoVersion {release} is an alpha release of Volcano; {why}"
    return f"volcanoVersion {release}: {why}"


def effective_config(config: CalderaConfig, all_flags: bool = False) -> dict[str, Any]:
    """The configuration as served, for ``check-config``: every top-level default spelled out;
    each plugin's arguments as it reads them (``Arguments.effective``: the values in use,
    defaults included, once the plugin has been built, see ``app/config_checks.py``); and the
    ``enableXxx`` flags that differ from Volcano's defaults, or every flag with ``all_flags``."""
    arguments = {(entry.tier, entry.index): entry.arguments for entry in config.entries}
    return {
        "volcanoVersion": "auto" if config.infers_release else config.release.name,
        "managedResources": list(config.managedResources),
        "maxRequestBytes": config.maxRequestBytes,
        "maxSnapshotBytes": config.maxSnapshotBytes,
        "explainSessions": config.explainSessions,
        "explainEntries": config.explainEntries,
        "explainEvents": config.explainEvents,
        "explainEventsKubeconfig": config.explainEventsKubeconfig,
        "sessionState": config.sessionState.value,
        **(
            {
                "sessionStateKubeconfig": config.sessionStateKubeconfig,
                "sessionStateSchedulerNames": list(config.sessionStateSchedulerNames),
                "sessionStateDefaultQueue": config.sessionStateDefaultQueue,
                "sessionStateMaxStaleness": format_duration(config.sessionStateMaxStaleness),
                "onStaleState": config.onStaleState.value,
                "sessionStateMaxDivergentSessions": config.sessionStateMaxDivergentSessions,
            }
            if config.sessionState != SessionStateMode.SNAPSHOT
            else {}
        ),
        "tiers": [
            {
                "plugins": [
                    {
                        "name": option.name,
                        "arguments": arguments[(t, i)].effective()
                        if arguments[(t, i)].read
                        else dict(option.arguments),
                        **{
                            flag: option.enabled(flag)
                            for flag, default in FLAG_DEFAULTS.items()
                            if all_flags or option.enabled(flag) != default
                        },
                        **({"onError": option.onError.value} if option.onError else {}),
                        **(
                            {"timeBudget": format_duration(option.timeBudget)}
                            if option.timeBudget
                            else {}
                        ),
                    }
                    for i, option in enumerate(tier.plugins)
                ]
            }
            for t, tier in enumerate(config.tiers)
        ],
    }
