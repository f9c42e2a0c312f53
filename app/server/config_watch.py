"""Live configuration: a changed configuration file takes over at the next session boundary.

Volcano reloads its own ``volcano-scheduler.conf`` when the file changes; an operator editing
Caldera's ConfigMap expects the same without restarting the scheduler pod. Kubernetes updates
a mounted ConfigMap by swapping a ``..data`` symlink, so a watch on the file's inode would see
nothing: the file is read whole every ``interval`` seconds and compared by its SHA-256
(a configuration is a few kilobytes; the kubelet itself takes up to a minute to update it).

A changed file goes through everything ``caldera serve`` does at start: it is validated and its
plugins are built and opened on an empty snapshot (a file that does not validate, or whose
plugins cannot be built, is rejected and the running configuration stays, logged once per
content, shown in ``/readyz`` and ``caldera_config_rejected``), its warnings are logged, and the
plugins' background data sources it needs are started and must sync (within
``SYNC_TIMEOUT_SECONDS``, else it is rejected too) while the running configuration still
answers. Then it waits for the next session boundary: the next onSessionOpen, or at once when
no session is open, because a session keeps the plugins it opened with (Volcano's cycle asks
every verb of one session of the same plugins). A switch that raises, or whose first session
fails to open on the real snapshot, goes back to the configuration served before it (that
onSessionOpen is answered by it, not with a 500) and the change is rejected the same way.
Data sources the new configuration no longer
uses are stopped after the switch; an unchanged plugin entry keeps its data source (pdb's
watch stays warm).

``volcanoVersion``, ``maxRequestBytes`` and ``maxSnapshotBytes`` need a restart: the first
decides which URL paths exist, the limits are read by the connection layer for each request
before the app sees it, and the ``explain*`` keys size the decision record and its Events,
which outlive a switch. A file that changes them is applied with the running values kept, and
``/readyz``, the log and ``caldera_config_restart_required`` say which keys wait for a restart.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from app.config import (
    Backgrounds,
    CalderaConfig,
    ConfigError,
    ConfigOrigin,
    background_key,
    build_backgrounds,
    digest,
    load_config_text,
)
from app.config_checks import build_problems, log_problems
from app.errors import PluginFailure
from app.metrics import Metrics
from app.session_events import Opened, SessionListener
from plugins.api.base import Background, utc_now

logger = logging.getLogger("caldera.config")

RESTART_ONLY = (
    "volcanoVersion", "maxRequestBytes", "maxSnapshotBytes", "explainSessions", "explainEntries",
    "explainEvents", "explainEventsKubeconfig", "sessionState", "sessionStateKubeconfig",
    "sessionStateSchedulerNames", "sessionStateDefaultQueue", "sessionStateMaxStaleness",
    "sessionStateMaxDivergentSessions",
)  # fmt: skip
"""Top-level keys a live reload cannot change (see the module docstring)."""
DEFAULT_INTERVAL_SECONDS = 2.0
SYNC_TIMEOUT_SECONDS = 60.0
"""How long a new configuration's data sources (pdb's watch) may take to sync before the
change is rejected and the running configuration stays."""


@dataclass(slots=True)
class Staged:
    """A validated configuration waiting for the next session boundary."""

    config: CalderaConfig
    sha256: str
    backgrounds: Backgrounds
    started: list[Background]
    restart_required: list[str]


@dataclass(slots=True)
class Rejected:
    sha256: str
    at: datetime
    error: str


@dataclass(slots=True)
class Served:
    """The configuration being answered from."""

    config: CalderaConfig
    sha256: str
    loaded_at: datetime
    backgrounds: Backgrounds
    restart_required: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Unproven:
    """A switch whose configuration has not opened a session yet: what to go back to."""

    previous: Served
    staged: Staged
    retiring: list[Background]
    """The previous configuration's data sources the switch retired (kept on going back)."""


def with_discovery_hint(error: str) -> str:
    """A live reload naming a plugin that is not installed: plugins are found once, at start
    (a package installed since then is not seen until Caldera restarts)."""
    if "unknown plugin '" not in error or DISCOVERY_HINT in error:
        return error
    return f"{error} ({DISCOVERY_HINT})"


DISCOVERY_HINT = "plugins are discovered when caldera starts; restart after installing one"

Switch = Callable[[CalderaConfig, Backgrounds], None]
"""Makes the app answer from a configuration and its data sources (``Runtime.switch``, app/server/runtime.py)."""


class ConfigWatch(SessionListener):
    """Watches one configuration file and switches the app to each valid change."""

    def __init__(
        self,
        origin: ConfigOrigin,
        served: Served,
        switch: Switch,
        session_open: Callable[[], bool],
        metrics: Metrics,
        interval: float = DEFAULT_INTERVAL_SECONDS,
        clock: Callable[[], datetime] = utc_now,
        sync_timeout: float = SYNC_TIMEOUT_SECONDS,
    ) -> None:
        """``served`` is the configuration the app starts with, read from ``origin``;
        ``session_open()`` says whether a session is open now (else a change applies at once)."""
        self.origin = origin
        self.served = served
        self.switch = switch
        self.session_open = session_open
        self.metrics = metrics
        self.interval = interval
        self.clock = clock
        self.sync_timeout = sync_timeout
        self.started_with = served.config
        self.staged: Staged | None = None
        self.rejected: Rejected | None = None
        self.seen = served.sha256
        """The digest of the last file content acted on (served, staged or rejected)."""
        self.retired: list[Background] = []
        """Data sources the served configuration no longer uses, to stop."""
        self.unproven: Unproven | None = None
        """The last switch, until its configuration has opened a session."""
        self._task: asyncio.Task[None] | None = None

    # --- the loop -----------------------------------------------------------------------------

    @property
    def watching(self) -> bool:
        return self.origin.path is not None and self.interval > 0

    def start(self) -> None:
        if self.watching:
            self._task = asyncio.get_running_loop().create_task(self._run(), name="config-watch")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
        self._drop_staged()
        await self.stop_retired()

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            try:
                await self.check()
            except asyncio.CancelledError:
                raise
            except Exception:  # never let the watch die: the next tick tries again
                logger.exception("checking the configuration file %s failed", self.origin.source)

    async def check(self) -> None:
        """One look at the file: stage (or reject) a changed content, stop retired data
        sources, and apply the staged configuration when no session is open."""
        await self.stop_retired()
        assert self.origin.path is not None
        try:
            text = self.origin.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            self.seen = "unreadable"
            problem = exc.strerror if isinstance(exc, OSError) else None
            self._reject("unreadable", f"cannot read the file: {problem or exc}")
            return
        sha = digest(text)
        if sha == self.seen:
            pass
        elif sha == self.served.sha256:  # back to the served content: nothing to change
            self.seen = sha
            self._drop_staged()
            if self.rejected is not None:
                self.rejected = None
                self.metrics.config_rejected.set(0)
                logger.info("%s is back to the configuration being served", self.origin.source)
        else:
            self.seen = sha
            await self._take(text, sha)
        if self.staged is not None and not self.session_open():
            self.boundary()
        await self.stop_retired()

    async def _take(self, text: str, sha: str) -> None:
        source = self.origin.source
        try:
            candidate = load_config_text(text, source)
            restart = [k for k in RESTART_ONLY if _differs(candidate, self.started_with, k)]
            if restart:
                candidate = load_config_text(
                    text, source, keep={k: _raw(self.started_with, k) for k in restart}
                )
        except ConfigError as exc:
            self._reject(sha, with_discovery_hint(str(exc)))
            return
        broken = build_problems(candidate)
        if broken:
            self._reject(sha, str(ConfigError.of(source, broken)))
            return
        self._drop_staged()  # superseded before a session boundary came
        reuse = {
            background_key(self.served.config, entry): background
            for entry, background in self.served.backgrounds.items()
        }
        backgrounds, started = build_backgrounds(candidate, reuse)
        problem = await self._start(started)
        if problem is not None:
            self.retired.extend(started)
            await self.stop_retired()
            self._reject(sha, problem)
            return
        log_problems(candidate, logger)
        if restart:
            logger.warning(
                "%s: the change to %s takes effect only when Caldera restarts; the running"
                " value%s kept, the rest of the change applies",
                source,
                ", ".join(restart),
                " is" if len(restart) == 1 else "s are",
            )
        self.rejected = None
        self.metrics.config_rejected.set(0)
        self.staged = Staged(candidate, sha, backgrounds, started, restart)
        logger.info(
            "%s changed (sha256 %s): valid, applies at the next session boundary", source, sha
        )

    async def _start(self, started: list[Background]) -> str | None:
        """Start the new data sources and wait until they are synced; a problem, or None."""
        try:
            for background in started:
                await background.start()
            deadline = time.monotonic() + self.sync_timeout
            while not all(background.ready() for background in started):
                if time.monotonic() >= deadline:
                    pending = [
                        background.describe() for background in started if not background.ready()
                    ]
                    return (
                        f"a plugin's data source did not sync within {self.sync_timeout:g} s:"
                        f" {pending}"
                    )
                await asyncio.sleep(0.1)
        except asyncio.CancelledError:
            self.retired.extend(started)
            raise
        except Exception as exc:
            return f"starting a plugin's data source failed: {exc}"
        return None

    def _drop_staged(self) -> None:
        if self.staged is not None:
            self.retired.extend(self.staged.started)
            self.staged = None

    def _reject(self, sha: str, error: str) -> None:
        if self.rejected is not None and self.rejected.sha256 == sha:
            return  # said once per content
        self.rejected = Rejected(sha, self.clock(), error)
        self.metrics.config_reloads.labels("rejected").inc()
        self.metrics.config_rejected.set(1)
        logger.error(
            "the changed configuration is rejected, Caldera goes on serving the one loaded at"
            " %s (sha256 %s): %s",
            self.served.loaded_at.isoformat(),
            self.served.sha256,
            error,
        )

    # --- the switch ---------------------------------------------------------------------------

    # --- what it hears of the sessions (app/session_events.py) ---------------------------------

    def boundary(self) -> None:
        """Switch to the staged configuration, if any, before the next session opens. A
        switch that raises (a plugin of the staged configuration cannot be built after all) is
        a rejection: the running configuration stays, and so do its data sources."""
        staged, self.staged = self.staged, None
        if staged is None:
            return
        previous = self.served
        in_use = {id(b) for b in staged.backgrounds.values()}
        retiring = [b for b in previous.backgrounds.values() if id(b) not in in_use]
        try:
            self.switch(staged.config, staged.backgrounds)
        except Exception as exc:
            self.retired.extend(staged.started)
            self._reject(staged.sha256, f"switching to it failed: {type(exc).__name__}: {exc}")
            return
        self.retired.extend(retiring)
        self.served = Served(
            staged.config, staged.sha256, self.clock(), staged.backgrounds, staged.restart_required
        )
        self.unproven = Unproven(previous, staged, retiring)
        self._published(staged.sha256, staged.restart_required)
        self.metrics.config_reloads.labels("applied").inc()
        logger.info(
            "configuration sha256 %s applied from %s: plugins %s",
            staged.sha256,
            self.origin.source,
            ", ".join(o.name for o in staged.config.plugin_options()) or "none",
        )

    def opened(self, session: Opened) -> None:
        """The served configuration opened a session: it is proven, nothing to go back to."""
        self.unproven = None

    def open_failed(self, failure: PluginFailure) -> bool:
        """The first session of a configuration just switched to failed to open (a plugin
        raised on this snapshot): go back to the configuration served before it and reject
        this one, so the caller opens the session again with the running configuration and
        the cycle is answered. False when there is nothing to go back to (the failure is then
        the running configuration's own, answered as the error it is)."""
        unproven, self.unproven = self.unproven, None
        if unproven is None:
            return False
        previous, staged = unproven.previous, unproven.staged
        kept = {id(b) for b in unproven.retiring}
        self.retired = [b for b in self.retired if id(b) not in kept]
        in_use = {id(b) for b in previous.backgrounds.values()}
        self.retired.extend(b for b in staged.started if id(b) not in in_use)
        self.switch(previous.config, previous.backgrounds)
        self.served = previous
        self._published(previous.sha256, previous.restart_required)
        self.seen = staged.sha256
        self._reject(
            staged.sha256,
            f"its first session failed to open ({failure}); that session was answered by the"
            " configuration served before it",
        )
        return True

    def _published(self, sha256: str, restart_required: list[str]) -> None:
        self.metrics.config_info.clear()
        self.metrics.config_info.labels(self.origin.source, sha256).set(1)
        self.metrics.config_loaded.set(time.time())
        self.metrics.config_restart_required.set(1 if restart_required else 0)

    async def stop_retired(self) -> None:
        retired, self.retired = self.retired, []
        for background in retired:
            try:
                await background.stop()
            except Exception:
                logger.exception("stopping a retired plugin data source failed")

    def describe(self) -> dict[str, Any]:
        """``/readyz``'s ``config`` object."""
        body: dict[str, Any] = {
            "source": self.origin.source,
            "sha256": self.served.sha256,
            "loadedAt": self.served.loaded_at.isoformat(),
            "watching": self.watching,
        }
        if self.served.restart_required:
            body["restartRequired"] = list(self.served.restart_required)
        if self.staged is not None:
            body["pending"] = {"sha256": self.staged.sha256, "appliesAt": "next onSessionOpen"}
        if self.rejected is not None:
            body["rejected"] = {
                "sha256": self.rejected.sha256,
                "at": self.rejected.at.isoformat(),
                "error": self.rejected.error,
            }
        return body


def _raw(config: CalderaConfig, key: str) -> Any:
    value = getattr(config, key)
    return ".".join(map(str, value)) if isinstance(value, tuple) else value


def _differs(new: CalderaConfig, running: CalderaConfig, key: str) -> bool:
    return bool(getattr(new, key) != getattr(running, key))
