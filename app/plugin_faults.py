"""A plugin's faults and what they cost the others: the failure policy (``onError``) and the
time budget (``timeBudget``) of each tiers entry.

A fault of a hook is one of three kinds: the hook ``raised``, answered a ``wrong_type``
(app/contract.py), or ran ``over_budget``. What follows is the plugin's policy, ``onError`` in
its tiers entry (its class's :attr:`~plugins.api.base.Plugin.on_error` when the entry does not
say):

- ``fail``: the verb is answered with an error naming the plugin and the verb (HTTP 500), and
  Volcano applies ``extender.ignorable`` — what Caldera did for every fault before.
- ``abstain``: only that plugin's answer is dropped for that call; the other plugins' answers
  stand, combined as if it had not taken part.

Dropping an answer is not neutral for every verb: under the eviction rule a plugin that does not
answer takes no part in the intersection, so the pods only it protected become victims. A
protective plugin (pdb, min-runtime, priority, …) therefore fails rather than abstains; the
table of built-in defaults and why is in docs/plugin-author-guide.md, "When a plugin fails".

A plugin that cannot open a session is counted too, under the verb ``onSessionOpen``: its
constructor raised (``build``) or its ``on_session_open`` did (``raised``). No policy applies
there (there is no answer to drop): no session is opened with that configuration
(app/session.py).

Every fault is counted in ``caldera_plugin_errors_total{plugin,verb,kind}``, logged once per
(plugin, verb, kind) and then at most once a minute with the count since, recorded in the
session's decision record (``caldera explain`` says what happened to the answer) and shown per
plugin in ``/readyz`` (count, last fault) without making the pod unready.

The time budget: a hook that runs longer than its entry's ``timeBudget`` (default
:data:`DEFAULT_TIME_BUDGET`) is an ``over_budget`` fault whose answer is still used; after
:data:`OVERRUNS_BEFORE_POLICY` calls in a row over budget, the plugin's policy applies to each
of its calls for the rest of the session (``abstain``: it is not asked, its answer is dropped;
``fail``: the verb fails), so one slow plugin cannot keep every verb past Volcano's timeout.
The budget never stops a hook that is running (Python cannot preempt it safely): the verbs are
answered one at a time, so the calls queued behind a slow one wait for it, and the calls that
bench a plugin have already waited (docs/plugin-author-guide.md, "A budget is not a timeout").
Where no session is open (Volcano's extender entry without session verbs, or calls between
sessions) nothing would end that, so the plugin is benched for :data:`BENCHED_WITHOUT_SESSION`
seconds instead and then asked again on probation: one more call over budget benches it again.
onSessionClose is never benched: a plugin is always told its session ended.
"""

from __future__ import annotations

import enum
import logging
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from app.metrics import Metrics
from plugins.api.base import OnError as OnError  # defined with Plugin.on_error; re-exported
from plugins.api.base import utc_now

logger = logging.getLogger("caldera.plugins")

DEFAULT_TIME_BUDGET = 0.1
"""Seconds one hook call may take: a tenth of Volcano's ``extender.httpTimeout`` (1 s by
default, covering the whole call: sending the body, every hosted plugin, the answer). Ten
plugins at their budget still answer within the timeout; a predicate hook normally takes a few
microseconds, a prioritize hook over 100 nodes well under a millisecond (bench/README.md)."""
OVERRUNS_BEFORE_POLICY = 3
"""Calls in a row over budget after which the plugin's ``onError`` applies for the session."""
BENCHED_WITHOUT_SESSION = 10.0
"""Seconds a plugin over budget is not asked when no session is open to end its benching: ten of
Volcano's default 1 s scheduling periods, so a plugin that stays slow costs one slow call per
ten seconds (the probation call), and one that recovers is back within them."""
LOG_INTERVAL = 60.0
"""Seconds between log lines of the same (plugin, verb, kind) after its first."""


class FaultKind(enum.StrEnum):
    """The ``kind`` label of ``caldera_plugin_errors_total``."""

    RAISED = "raised"
    WRONG_TYPE = "wrong_type"
    OVER_BUDGET = "over_budget"
    BUILD = "build"
    """Its constructor raised, as a session was opened or a configuration switched to."""


class Contract(Exception):
    """The cause of a fault that raised nothing: a wrong type, or a call over budget."""


@dataclass(frozen=True, slots=True)
class Fault:
    plugin: str
    verb: str
    kind: FaultKind
    detail: str
    """What went wrong: the exception, what was returned and expected, the time taken."""
    policy: OnError
    dropped: bool
    """Whether the answer was dropped (False: used, or the verb failed)."""
    failed: bool
    """Whether the verb was answered with an error."""
    at: datetime
    outcome: str = ""
    """What followed, when no onError decided it (a plugin that could not open a session)."""

    def consequence(self) -> str:
        if self.outcome:
            return self.outcome
        if self.failed:
            return f"the verb was answered with an error (onError: {self.policy})"
        if self.dropped:
            return f"its answer was dropped (onError: {self.policy})"
        return "its answer was used"

    def line(self) -> str:
        """One sentence for the log and ``caldera explain``."""
        return (
            f"plugin {self.plugin} failed in {self.verb} ({self.kind}: {self.detail}):"
            f" {self.consequence()}"
        )

    def describe(self) -> dict[str, Any]:
        return {
            "verb": self.verb,
            "kind": str(self.kind),
            "error": self.detail,
            "onError": str(self.policy),
            "consequence": self.consequence(),
            "at": self.at.isoformat(),
        }


@dataclass(slots=True)
class _Logged:
    last: float
    suppressed: int = 0


@dataclass(slots=True)
class _Health:
    count: int
    last: Fault


class PluginFaults:
    """Every plugin's faults, for the life of the server (kept across sessions and reloads).

    Written on the verbs' event loop and read by ``/readyz`` and ``/metrics``, which may run on
    the health listener's own thread (app/server/listeners.py): a lock keeps the readers' copy
    whole.
    """

    def __init__(
        self,
        metrics: Metrics,
        clock: Callable[[], datetime] = utc_now,
        monotonic: Callable[[], float] = time.monotonic,
        log_interval: float = LOG_INTERVAL,
    ) -> None:
        self.metrics = metrics
        self.clock = clock
        self.monotonic = monotonic
        self.log_interval = log_interval
        self._logged: dict[tuple[str, str, FaultKind], _Logged] = {}
        self._health: dict[str, _Health] = {}
        self._lock = threading.Lock()

    def record(self, fault: Fault, cause: BaseException | None = None) -> None:
        """Count, log (rate-limited) and keep ``fault``."""
        self.metrics.plugin_errors.labels(fault.plugin, fault.verb, str(fault.kind)).inc()
        with self._lock:
            health = self._health.get(fault.plugin)
            if health is None:
                self._health[fault.plugin] = _Health(1, fault)
            else:
                health.count += 1
                health.last = fault
        self._log(fault, cause)

    def _log(self, fault: Fault, cause: BaseException | None) -> None:
        key = (fault.plugin, fault.verb, fault.kind)
        now = self.monotonic()
        logged = self._logged.get(key)
        if logged is None:
            self._logged[key] = _Logged(now)
            logger.error(
                "%s (logged once per plugin, verb and kind, then at most every %g s)",
                fault.line(),
                self.log_interval,
                exc_info=cause if fault.kind in (FaultKind.RAISED, FaultKind.BUILD) else None,
            )
            return
        if now - logged.last < self.log_interval:
            logged.suppressed += 1
            return
        logger.error("%s (%d more like it since last logged)", fault.line(), logged.suppressed)
        logged.last, logged.suppressed = now, 0

    def describe(self) -> dict[str, Any]:
        """For ``/readyz``: per plugin, its faults since start and the last one."""
        with self._lock:
            return {
                plugin: {"count": health.count, "last": health.last.describe()}
                for plugin, health in sorted(self._health.items())
            }


_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(us|µs|ms|s|m)$")
_UNIT = {"us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0}


def parse_duration(value: object) -> float:
    """``"250ms"``, ``"1s"``, ``"1.5s"`` (Go's ``time.ParseDuration`` units, one of them) as
    seconds; ValueError otherwise (a bare number is refused: its unit would be a guess)."""
    match = _DURATION.match(value.strip()) if isinstance(value, str) else None
    if match is None:
        raise ValueError(f'must be a duration such as "100ms" or "1s", not {value!r}')
    seconds = float(match[1]) * _UNIT[match[2]]
    if seconds <= 0:
        raise ValueError(f"must be more than zero, not {value!r}")
    return seconds


def format_duration(seconds: float) -> str:
    return f"{seconds * 1e3:g}ms" if seconds < 1 else f"{seconds:g}s"
