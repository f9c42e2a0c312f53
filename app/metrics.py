"""Prometheus metrics, on a registry owned by the app (one per ``create_app``), and what the
running Caldera was built from, for ``caldera_build_info``'s labels (:func:`commit`)."""

from __future__ import annotations

import json
import os
import platform
from bisect import bisect_left
from collections.abc import Iterator, Sequence
from importlib.metadata import PackageNotFoundError, distribution

import prometheus_client
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, HistogramMetricFamily
from prometheus_client.gc_collector import GCCollector
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector

from app import __version__

# No ``<name>_created`` series beside every counter and histogram: each doubles the series a
# scrape returns, and the start time they carry is process_start_time_seconds already.
# Process-wide, as prometheus_client keeps it; set before any metric below is created.
prometheus_client.disable_created_metrics()  # type: ignore[no-untyped-call]

COMMIT_VARIABLE = "CALDERA_BUILD_COMMIT"
UNKNOWN = "unknown"


def commit() -> str:
    """The source commit of this installation, or ``unknown``, never a guess.

    The version is pyproject's (``app.__version__``). The commit is not in the wheel: the image
    build passes it (``docker build --build-arg COMMIT=$(git rev-parse HEAD)``, which the
    Dockerfile turns into ``CALDERA_BUILD_COMMIT``); pip records it when it installs from a git
    URL (``direct_url.json``)."""
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


DURATION_BUCKETS = (
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
    0.1, 0.25, 0.5, 1.0, 2.0,
)  # fmt: skip
"""100 µs to 2 s: a predicate should take well under a millisecond, an onSessionOpen of a big
cluster a few hundred."""

BYTES_BUCKETS = tuple(float(2**k) for k in range(8, 31, 2))  # 256 B … 1 GiB

BUFFER_OUTCOMES = ("reused", "refit", "held", "first")
"""What happened to each large body's buffer (``caldera_body_buffers_total{outcome}``;
app/server/buffers.py keeps the buffer):

- ``reused``: received into the kept buffer (the saving app/server/buffers.py exists for);
- ``refit``: the kept buffer was free but too far from the new size: freed, a fresh one kept;
- ``held``: the kept buffer was still referenced (a body being answered or recorded, a
  ``msgspec.Raw``): a fresh buffer, not kept. Steadily rising, it means reuse has stopped —
  something holds bodies longer than a request (a new plugin keeping a ``Raw``, a slow
  recorder) and every large body pays its page faults again;
- ``first``: no buffer kept yet (the first large body since the start)."""


class Tally:
    """A labelled counter kept as plain numbers and read by Prometheus at scrape time.

    For what the framework counts per plugin answer (every plugin, every predicate node, every
    eviction question: thousands of times a cycle): ``inc`` is one dict update, 0.1 µs, where
    a ``Counter`` child's ``inc`` takes its lock (0.34 µs) after a ``labels()`` lookup.
    Everything runs on the event loop, /metrics included, so nothing else writes meanwhile;
    ``collect`` reads a copy all the same. Exposed as a ``Counter`` is: ``<name>_total``."""

    def __init__(
        self, name: str, documentation: str, labelnames: Sequence[str], registry: CollectorRegistry
    ) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        self.counts: dict[tuple[str, ...], float] = {}
        registry.register(self)

    def inc(self, labels: tuple[str, ...], amount: float = 1) -> None:
        counts = self.counts
        counts[labels] = counts.get(labels, 0) + amount

    def _family(self) -> CounterMetricFamily:
        return CounterMetricFamily(self.name, self.documentation, labels=self.labelnames)

    def describe(self) -> list[CounterMetricFamily]:
        return [self._family()]

    def collect(self) -> Iterator[CounterMetricFamily]:
        family = self._family()
        for labels, value in self.counts.copy().items():
            family.add_metric(labels, value)
        yield family


PLUGIN_CALL_BUCKETS = (
    0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
    0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5,
)  # fmt: skip
"""10 µs to 2.5 s: a hook call takes microseconds; the default time budget is 100 ms."""


class TallyHistogram:
    """A labelled histogram kept as plain numbers, read by Prometheus at scrape time: for what
    is observed per plugin call. ``observe`` is a bisect and two list updates (about 0.2 µs)
    where a ``Histogram`` child takes a lock per bucket after a ``labels()`` lookup. Written on
    the event loop only; ``collect`` (which may run on the health listener's thread) copies
    each row, a list copy the GIL keeps whole."""

    def __init__(
        self,
        name: str,
        documentation: str,
        labelnames: Sequence[str],
        buckets: Sequence[float],
        registry: CollectorRegistry,
    ) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = tuple(labelnames)
        self.bounds = tuple(buckets)
        self.rows: dict[tuple[str, ...], list[float]] = {}
        """Per labels: a count per bucket (the last one +Inf), then the sum."""
        registry.register(self)

    def observe(self, labels: tuple[str, ...], value: float) -> None:
        row = self.rows.get(labels)
        if row is None:
            row = self.rows[labels] = [0.0] * (len(self.bounds) + 2)
        row[bisect_left(self.bounds, value)] += 1
        row[-1] += value

    def _family(self) -> HistogramMetricFamily:
        return HistogramMetricFamily(self.name, self.documentation, labels=self.labelnames)

    def describe(self) -> list[HistogramMetricFamily]:
        return [self._family()]

    def collect(self) -> Iterator[HistogramMetricFamily]:
        family = self._family()
        for labels, row in list(self.rows.items()):
            counts = row[:]
            cumulative, buckets = 0.0, []
            for bound, count in zip((*self.bounds, float("inf")), counts[:-1], strict=True):
                cumulative += count
                buckets.append((_bound(bound), cumulative))
            family.add_metric(list(labels), buckets, counts[-1])
        yield family


def _bound(bound: float) -> str:
    return "+Inf" if bound == float("inf") else repr(bound)


class Metrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        r = self.registry
        # The process's own facts on Caldera's registry (the default registry is not served):
        # RSS and CPU (process_*) for the sizing advice, collections (python_gc_*), python_info.
        ProcessCollector(registry=r)
        GCCollector(registry=r)
        PlatformCollector(registry=r)
        self.build_info = Gauge(
            "caldera_build_info",
            "Always 1: the running Caldera's version, source commit (unknown when the build"
            " did not say), Python and configured volcanoVersion (a release, or auto), as"
            " labels.",
            ["version", "commit", "python", "volcanoVersion"],
            registry=r,
        )
        self.request_duration = Histogram(
            "caldera_request_duration_seconds",
            "Time to answer one extender call, from first body byte to response, per verb.",
            ["verb"],
            buckets=DURATION_BUCKETS,
            registry=r,
        )
        self.after_answer_duration = Histogram(
            "caldera_after_answer_seconds",
            "Work done after the answer was sent, per verb: onSessionOpen's snapshot decoded"
            " and its session built, onSessionClose's snapshot released. Volcano does not"
            " wait for it; its next call waits until it is done.",
            ["verb"],
            buckets=DURATION_BUCKETS,
            registry=r,
        )
        self.request_bytes = Histogram(
            "caldera_request_body_bytes",
            "Size of request bodies per verb.",
            ["verb"],
            buckets=BYTES_BUCKETS,
            registry=r,
        )
        self.responses = Counter(
            "caldera_responses_total",
            "Responses per verb and HTTP code.",
            ["verb", "code"],
            registry=r,
        )
        self.decisions = Tally(
            "caldera_plugin_decisions_total",
            "Answers of each hosted plugin per verb and outcome.",
            ["plugin", "verb", "outcome"],
            registry=r,
        )
        self.rejections = Tally(
            "caldera_rejections_total",
            "Rejections by the hosted plugin that made them, per verb and reason code: a"
            " jobEnqueueable Reject, a predicate failure (its status: unschedulable,"
            " unschedulable_and_unresolvable, error), a job not ready, a queue overused, an"
            " evictee vetoed. Reason codes are a fixed vocabulary per plugin (see"
            " GET /debug/explain for the job, task and numbers).",
            ["plugin", "verb", "reason"],
            registry=r,
        )
        self.plugin_errors = Counter(
            "caldera_plugin_errors_total",
            "Faults of hosted plugins, per plugin, verb and kind: raised (an exception),"
            " wrong_type (an answer outside the hook's declared type, or a victim it was not"
            " given), over_budget (a call longer than the entry's timeBudget), build (its"
            " constructor raised; verb onSessionOpen, as does a raising on_session_open). The"
            " entry's onError says what followed a hook's fault.",
            ["plugin", "verb", "kind"],
            registry=r,
        )
        self.plugin_call_duration = TallyHistogram(
            "caldera_plugin_call_duration_seconds",
            "Time of one hook call of a hosted plugin, per plugin and verb (compare with the"
            " entry's timeBudget, 100 ms by default).",
            ["plugin", "verb"],
            PLUGIN_CALL_BUCKETS,
            registry=r,
        )
        self.bodies_refused = Counter(
            "caldera_request_bodies_refused_total",
            "Requests refused before decoding, per verb and reason (too_large, bad_request).",
            ["verb", "reason"],
            registry=r,
        )
        self.clamped = Counter(
            "caldera_resource_clamped_total",
            "Times a plugin's resource accounting would have gone negative and was floored at"
            " zero (an event whose matching half Caldera never saw), per plugin and resource.",
            ["plugin", "resource"],
            registry=r,
        )
        self.release_mismatch = Counter(
            "caldera_release_mismatch_total",
            "Evidence that the calling Volcano release is not the configured volcanoVersion,"
            " per signal (a verb it cannot send, a payload shape or field of another release).",
            ["signal"],
            registry=r,
        )
        self.sessionless = Counter(
            "caldera_verbs_without_session_total",
            "Verbs answered with no open session (snapshot-bound plugins abstained).",
            ["verb"],
            registry=r,
        )
        self.identifier_roster_differences = Counter(
            "caldera_identifiers_roster_differences_total",
            "Identifiers mode: objects in Volcano's session roster that Caldera's view lacks"
            " (side=volcano), or in Caldera's view but not the roster (side=caldera), per"
            " section (jobs, nodes, queues).",
            ["section", "side"],
            registry=r,
        )
        self.identifier_unknown_objects = Counter(
            "caldera_identifiers_unknown_objects_total",
            "Identifiers mode: nodes or evictees a call named that the session does not hold"
            " (left out of the answer).",
            ["verb"],
            registry=r,
        )
        self.session_age = Gauge(
            "caldera_session_age_seconds",
            "Age of the open session (0 when none is open).",
            registry=r,
        )
        self.snapshot_size = Gauge(
            "caldera_snapshot_objects",
            "Objects in the open session's snapshot, by kind.",
            ["kind"],
            registry=r,
        )
        self.body_buffer = Gauge(
            "caldera_body_buffer_bytes",
            "Size of the buffer kept for the next large request body (32 MiB or more; 0 when"
            " none is kept): part of the RSS between scheduling cycles.",
            registry=r,
        )
        self.snapshot_expected = Gauge(
            "caldera_snapshot_expected",
            "1 when a configured plugin reads the onSessionOpen snapshot, so Volcano is expected"
            " to open a session every scheduling period; 0 when none does (no onSessionOpen verb)"
            " or with sessionState cluster (no snapshot: a session opens at a cycle's first call).",
            registry=r,
        )
        self.snapshot_taken = Gauge(
            "caldera_snapshot_taken",
            "1 when the last onSessionOpen snapshot was taken (or none has come yet); 0 when it"
            " was refused, failed or abandoned: Volcano then schedules without Caldera's"
            " plugins until a snapshot is taken again.",
            registry=r,
        )
        self.snapshot_taken.set(1)
        self.body_buffers = Counter(
            "caldera_body_buffers_total",
            "Large request bodies (32 MiB or more) by what happened to the kept buffer: reused,"
            " refit (freed for a size too far off), held (still in use: a fresh buffer; rising"
            " steadily, reuse has stopped), first.",
            ["outcome"],
            registry=r,
        )
        for outcome in BUFFER_OUTCOMES:
            self.body_buffers.labels(outcome)
        self.config_info = Gauge(
            "caldera_config_info",
            "Always 1: the configuration being served, as labels: its source (a file, or the"
            " embedded default) and the first 16 hex digits of its SHA-256.",
            ["source", "sha256"],
            registry=r,
        )
        self.config_loaded = Gauge(
            "caldera_config_loaded_timestamp_seconds",
            "When the configuration being served was loaded (at start, or applied by a live"
            " reload at a session boundary), in Unix seconds.",
            registry=r,
        )
        self.config_reloads = Counter(
            "caldera_config_reloads_total",
            "Changed configuration files seen by the live reload, by outcome: applied (at a"
            " session boundary), rejected (did not validate, a plugin could not be built, a"
            " data source did not sync, or the first session with it failed to open: the"
            " running configuration stays).",
            ["outcome"],
            registry=r,
        )
        for outcome in ("applied", "rejected"):
            self.config_reloads.labels(outcome)
        self.config_rejected = Gauge(
            "caldera_config_rejected",
            "1 while the configuration file holds a change that was rejected (the running"
            " configuration is older than the file: /readyz says why); 0 otherwise.",
            registry=r,
        )
        self.config_restart_required = Gauge(
            "caldera_config_restart_required",
            "1 while the configuration file changes a key that only a restart applies"
            " (volcanoVersion, maxRequestBytes, maxSnapshotBytes); 0 otherwise.",
            registry=r,
        )
        self.feature_degraded = Gauge(
            "caldera_feature_degraded",
            "1 while an optional feature does not work and Caldera serves without it (record,"
            " explainEvents, a plugin's data source such as pdb's budgets; /readyz says why);"
            " 0 while it works. docs/operator-guide.md, 'Optional features'.",
            ["feature"],
            registry=r,
        )
        self.sessions_opened = Counter(
            "caldera_sessions_opened_total", "Sessions opened (onSessionOpen calls).", registry=r
        )
        self.session_state_differences = Counter(
            "caldera_session_state_differences",
            "sessionState compare: differences between Volcano's snapshot and the state"
            " derived from the cluster, per kind (<section>.<field>, <section>.missing,"
            " <section>.extra).",
            ["kind"],
            registry=r,
        )
        self.session_state_differences_in_flight = Counter(
            "caldera_session_state_differences_in_flight",
            "sessionState compare: those of the differences, per kind, that are in flight: an"
            " object they derive from was at another version on each side, or on one side only"
            " (it changed between Volcano's snapshot and Caldera's freeze).",
            ["kind"],
            registry=r,
        )
        self.session_state_sessions = Counter(
            "caldera_session_state_sessions",
            "sessionState compare: sessions by what became of their comparison (compared;"
            " busy: the previous one still ran; not_synced: the watch has not listed yet;"
            " failed).",
            ["outcome"],
            registry=r,
        )
        self.session_state_stale = Gauge(
            "caldera_session_state_stale",
            "sessionState compare or cluster: 1 while a watch of the cluster has been broken"
            " (its list, watch or probe failing) longer than sessionStateMaxStaleness; cluster"
            " mode then answers as onStaleState says.",
            registry=r,
        )
        self.session_state_watch_errors = Counter(
            "caldera_session_state_watch_errors",
            "sessionState compare or cluster: failures of a watch of the cluster, per collection"
            " and kind (connect, stream, unauthorized, forbidden, not_found, gone, throttled,"
            " server_error, client_error, config, other).",
            ["collection", "kind"],
            registry=r,
        )
        self.session_state_audit_differences = Counter(
            "caldera_session_state_audit_differences",
            "sessionState cluster: differences the self-audit found between the objects"
            " Volcano's calls carry and the session's derived state, per kind and explanation"
            " (no; in_flight: an object changed between the two views; in_session: a placement"
            " Volcano reported this session touched it).",
            ["kind", "explained"],
            registry=r,
        )
        self.session_state_derive = Histogram(
            "caldera_session_state_derive_seconds",
            "sessionState cluster: time to derive a session's state from the watched objects,"
            " at the session's first call (that call waits for it).",
            buckets=DURATION_BUCKETS,
            registry=r,
        )
        self.background_ready = Gauge(
            "caldera_plugin_background_ready",
            "1 when a plugin's background data source is synced (e.g. pdb's watch).",
            ["plugin"],
            registry=r,
        )
        self.background_value = Gauge(
            "caldera_plugin_background",
            "Numbers a plugin's background data source reports, by key.",
            ["plugin", "key"],
            registry=r,
        )

    def set_build_info(self, volcano_version: str) -> None:
        """``caldera_build_info`` for a process serving ``volcano_version`` (the configured
        value: it only changes with a restart)."""
        self.build_info.clear()
        self.build_info.labels(
            __version__, commit(), platform.python_version(), volcano_version
        ).set(1)
