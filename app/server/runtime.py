"""What the app runs on, as one typed object: :class:`Runtime` builds the pieces a configuration
needs (metrics, sessions, the extender, the decision record and its Events, the live reload,
the optional session state and shadow), starts and stops them for the app's lifespan
(``create_app``, app/server/main.py), switches to a reloaded configuration at a session boundary,
and is what the operator routes (``/readyz``, ``/metrics``, ``/debug/*``) read through
:func:`runtime_of`, instead of untyped ``app.state`` attributes.

The parts that a live reload replaces (``config``, ``sessions``, ``backgrounds``) are swapped
together by :meth:`Runtime.publish`, between sessions; a route reading them on the health
listener's thread (app/server/listeners.py) sees either the old three or the new three, since each
read goes through the one ``served`` reference.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass

from fastapi import Request

from app import __version__
from app.cluster_state import multi_scheduler
from app.cluster_state.audit import SelfAudit
from app.cluster_state.cluster_mode import ClusterSessionState
from app.cluster_state.compare_mode import SessionStateComparison
from app.cluster_state.derive import Settings
from app.cluster_state.modes import SessionStateMode
from app.config import Backgrounds, CalderaConfig, build_backgrounds
from app.events import KubeEventSink, PodGroupEvents
from app.explain import DecisionRecord
from app.extender import Extender
from app.metrics import Metrics
from app.plugin_faults import PluginFaults
from app.server.config_watch import ConfigWatch, Served
from app.server.features import EVENTS, POLL_SECONDS, RECORD, Features
from app.server.options import ServeOptions
from app.server.record import Recorder, RecordError
from app.server.snapshot_health import SnapshotHealth
from app.session import SessionManager, SessionNumbers
from app.shadow.service import Shadow
from plugins.api.base import Background, utc_now

logger = logging.getLogger("caldera")

SessionState = SessionStateComparison | ClusterSessionState
"""``sessionState: compare`` or ``cluster``: the cluster state Caldera watches itself."""


@dataclass(frozen=True, slots=True)
class Serving:
    """The configuration being served, its sessions and its plugins' background data
    sources, keyed ``tiers[t].plugins[i]:<name>`` as ``/readyz`` shows them."""

    config: CalderaConfig
    sessions: SessionManager
    backgrounds: Mapping[str, Background]


class Runtime:
    """Everything ``create_app`` serves ``options.config`` with. Building it builds the plugins
    (a constructor that raises fails here, before anything is started) and every observer of
    the decisions and sessions, once (metrics, the decision record, Events, the recorder, the
    live reload, the shadow); :meth:`start` and :meth:`stop` bracket the app's lifespan.
    ``options.record`` (``serve --record``) builds the recorder, closed at :meth:`stop`;
    ``options.origin`` names where the configuration was read from, watched every
    ``config_watch_seconds`` when it is a file (0: not watched); ``options.shadow`` names a
    shadow configuration evaluated on the same requests off the hot path
    (app/shadow/service.py)."""

    served: Serving
    """What is served now (:meth:`publish`)."""

    def __init__(self, options: ServeOptions) -> None:
        config = options.config
        self.metrics = metrics = Metrics()
        self.origin = origin = options.origin
        self.features = Features(metrics.feature_degraded)
        self.recorder = recorder = self.recorder_for(options)
        self.clock = clock = recorder.clock if recorder is not None else utc_now
        backgrounds, _ = build_backgrounds(config)
        self.started_with: Backgrounds = backgrounds
        """The data sources :meth:`start` starts (a live reload starts its own)."""
        self.record = DecisionRecord(config.explainSessions, config.explainEntries)
        self.event_sink = KubeEventSink(config.explainEventsKubeconfig)
        self.events = PodGroupEvents(self.event_sink, clock=clock) if config.explainEvents else None
        if self.events is not None:
            self.features.enabled(EVENTS)
            self.events.health = functools.partial(feature_health, self.features, EVENTS)
        self.faults = PluginFaults(metrics, clock)
        self.session_numbers = SessionNumbers()
        """Shared by every configuration's sessions: numbered for the process's life."""
        sessions = self.sessions_for(config, backgrounds)
        self.extender = extender = Extender(config, sessions, metrics)
        self.session_state = extender.session_state = session_state_for(config, metrics)
        self.config_watch = watch = ConfigWatch(
            origin,
            Served(config, origin.sha256, clock(), backgrounds),
            self.switch,
            session_open=lambda: extender.sessions.current is not None,
            metrics=metrics,
            interval=options.config_watch_seconds,
            clock=clock,
        )
        extender.listeners.add(watch)
        metrics.set_build_info("auto" if config.infers_release else config.release.name)
        metrics.config_info.labels(origin.source, origin.sha256).set(1)
        metrics.config_loaded.set(time.time())
        self.snapshot = SnapshotHealth(clock, metrics.snapshot_taken.set)
        self.publish(config, sessions, backgrounds)
        self.shadow: Shadow | None = None
        """``serve --shadow FILE``: the shadow configuration and its findings
        (app/shadow/service.py)."""
        if options.shadow is not None:
            self.shadow = Shadow(
                options.shadow,
                metrics.registry,
                options.shadow_max_queued_bytes,
                live_path=origin.path,
                clock=clock,
                live_sources=lambda: (watch.served.config, watch.served.backgrounds),
                cluster=config.sessionState == SessionStateMode.CLUSTER,
            )
        self._started: list[Background] = []
        self._looking: asyncio.Task[None] | None = None

    # --- what a configuration is served with ---------------------------------------------------

    def recorder_for(self, options: ServeOptions) -> Recorder | None:
        """``serve --record``'s recorder, telling :attr:`features` when writing fails. A
        directory it cannot use is a degraded feature, not a refusal to start: a debug feature
        must not keep the scheduler from starting (a native sidecar that exits holds
        vc-scheduler back), so Caldera serves without it, loudly (app/server/features.py)."""
        if options.record is None:
            return None
        try:
            recorder = Recorder(
                options.record,
                options.record_max_bytes,
                on_failure=functools.partial(self.features.failed, RECORD),
            )
        except RecordError as exc:
            self.features.failed(RECORD, str(exc), "nothing is recorded")
            return None
        self.features.enabled(RECORD)
        return recorder

    def sessions_for(self, config: CalderaConfig, backgrounds: Backgrounds) -> SessionManager:
        """``config``'s sessions, telling the decision stream's subscribers of this runtime."""
        return SessionManager(
            config, self.metrics, backgrounds, clock=self.clock, record=self.record,
            events=self.events, faults=self.faults, numbers=self.session_numbers,
        )  # fmt: skip

    def switch(self, new: CalderaConfig, new_backgrounds: Backgrounds) -> None:
        """Answer from ``new`` from now on (the live reload's ``Switch``): called between
        sessions only."""
        previous = self.extender.sessions
        sessions = self.sessions_for(new, new_backgrounds)
        sessions.set_release(previous.release)  # an inferred release (auto) carries over
        previous.close()
        self.extender.reconfigure(new, sessions)
        self.publish(new, sessions, new_backgrounds)

    def publish(
        self, config: CalderaConfig, sessions: SessionManager, backgrounds: Backgrounds
    ) -> None:
        """Serve ``config`` from now on, as the operator routes see it."""
        self.served = Serving(
            config,
            sessions,
            {
                f"tiers[{t}].plugins[{i}]:{config.tiers[t].plugins[i].name}": bg
                for (t, i), bg in backgrounds.items()
            },
        )
        # sessionState cluster: Volcano posts no snapshot, and a cycle that calls nothing but
        # onSessionClose opens no session, so no session is expected every period.
        expected = self.extender.snapshot_bound and config.sessionState != SessionStateMode.CLUSTER
        self.metrics.snapshot_expected.set(1 if expected else 0)

    @property
    def config(self) -> CalderaConfig:
        return self.served.config

    @property
    def sessions(self) -> SessionManager:
        return self.served.sessions

    @property
    def backgrounds(self) -> Mapping[str, Background]:
        return self.served.backgrounds

    # --- the lifespan --------------------------------------------------------------------------

    async def start(self) -> None:
        """Start the data sources, the Events, the watched cluster state and the live reload.
        A start that raises leaves what it started to :meth:`stop`."""
        for background in self.started_with.values():
            await background.start()
            self._started.append(background)
        origin, watch = self.origin, self.config_watch
        config = watch.started_with
        logger.info(
            "caldera %s serving Volcano %s%s with plugins: %s; configuration %s (sha256 %s%s)",
            __version__,
            config.release.name,
            release_caveat(config),
            ", ".join(o.name for o in config.plugin_options()) or "none",
            origin.source,
            origin.sha256,
            f", checked for changes every {watch.interval:g} s" if watch.watching else "",
        )
        if self.events is not None:
            problem = self.event_sink.problem()
            if problem is not None:
                self.features.failed(EVENTS, problem, "no PodGroup Event is sent")
            await self.events.start()
        if self.session_state is not None:
            await self.session_state.start()
        watch.start()
        self._looking = asyncio.create_task(self.watch_backgrounds(), name="features")

    async def stop(self) -> None:
        """Stop what :meth:`start` started (also after a start that raised), the data sources
        of the configuration served by then, the recorder and the shadow."""
        if self._looking is not None:
            self._looking.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._looking
        watch = self.config_watch
        await watch.stop()
        if self.session_state is not None:
            await self.session_state.stop()
        if self.events is not None:
            await self.events.stop()  # stops the data sources a live reload retired or staged
        # The served configuration's: the ones started here, unless a reload replaced it.
        in_use = (
            self._started
            if watch.served.backgrounds is self.started_with
            else list(watch.served.backgrounds.values())
        )
        for background in reversed(in_use):
            try:
                await background.stop()
            except Exception:
                logger.exception("stopping a plugin background failed")
        if self.recorder is not None:
            self.recorder.close()
        if self.shadow is not None:
            self.shadow.stop()

    async def watch_backgrounds(self) -> None:
        """Look at the plugins' data sources every second: one that cannot sync is a degraded
        feature (an ERROR once, the gauge, ``/readyz``), whichever configuration is served."""
        while True:
            self.features.check_backgrounds(self.backgrounds)
            await asyncio.sleep(POLL_SECONDS)


def session_state_for(config: CalderaConfig, metrics: Metrics) -> SessionState | None:
    """The cluster state ``sessionState`` asks Caldera to watch, if any."""
    watched = Settings(
        config.sessionStateSchedulerNames,
        config.sessionStateDefaultQueue,
        multi_scheduler.from_env(os.environ),  # refused before (config_checks) when it raises
    )
    staleness = config.sessionStateMaxStaleness

    def watch_error(collection: str, kind: str) -> None:
        metrics.session_state_watch_errors.labels(collection, kind).inc()

    state: SessionState
    if config.sessionState == SessionStateMode.COMPARE:
        state = SessionStateComparison(
            watched,
            config.sessionStateKubeconfig,
            count=lambda kind, n: metrics.session_state_differences.labels(kind).inc(n),
            count_in_flight=lambda kind, n: metrics.session_state_differences_in_flight.labels(
                kind
            ).inc(n),
            outcome=lambda outcome: metrics.session_state_sessions.labels(outcome).inc(),
            max_staleness=staleness,
            on_error=watch_error,
        )
    elif config.sessionState == SessionStateMode.CLUSTER:
        audit = SelfAudit(
            max_divergent_sessions=config.sessionStateMaxDivergentSessions,
            count=lambda kind, why, n: metrics.session_state_audit_differences.labels(
                kind, why
            ).inc(n),
        )
        state = ClusterSessionState(
            watched, config.sessionStateKubeconfig, metrics.session_state_derive.observe,
            max_staleness=staleness, on_error=watch_error, audit=audit,
        )  # fmt: skip
    else:
        return None
    # Read at each scrape: the gauge is right whether or not a session asks meanwhile.
    metrics.session_state_stale.set_function(lambda: 1.0 if state.staleness.stale() else 0.0)
    return state


def feature_health(features: Features, feature: str, problem: str | None) -> None:
    """A feature's latest outcome: a failure (``problem``) or a success."""
    if problem is None:
        features.recovered(feature)
    else:
        features.failed(feature, problem)


def release_caveat(config: CalderaConfig) -> str:
    """What the start banner adds after "serving Volcano X": nothing when ``volcanoVersion``
    names a stable release, else one short clause (``check-config`` prints the long why)."""
    if config.infers_release:
        return " (volcanoVersion auto: inferred from the first onSessionOpen)"
    if "volcanoVersion" not in config.model_fields_set:
        return " (volcanoVersion is not set: set it to the release you run)"
    if not config.release.is_stable:
        return " (an alpha release)"
    return ""


def runtime_of(request: Request) -> Runtime:
    """The runtime of the app serving ``request`` (``CalderaApp.runtime``, app/server/main.py)."""
    runtime: Runtime = request.app.runtime
    return runtime
