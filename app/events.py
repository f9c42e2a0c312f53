"""Kubernetes Events on a PodGroup when Caldera's verdict on its job changes (``explainEvents``).

Off by default. When on, the framework tells :class:`PodGroupEvents` how each jobEnqueueable
vote ended; a job that Caldera's plugins start rejecting gets a Warning ``CalderaRejected``
("overcommit: needs 40 CPU with …", the deciding plugin and its reason), a change of that
reason another, and a job rejected before and no longer rejected a Normal ``CalderaAdmitted``.
A verdict that stays the same emits nothing, so a job waiting for hours is one Event, not one
a second.

What kube-scheduler's recorder does (client-go ``tools/record``'s ``EventCorrelator``), done
the same way, since operators read both side by side: an Event identical to one sent within
the last ten minutes (same object, type, reason and message) is the same Event with its
``count`` and ``lastTimestamp`` raised (a PATCH), not a new one; and each PodGroup has a token
bucket of 25 Events refilled one per five minutes, beyond which Events are dropped (counted).

Sending never holds a verb up: the vote puts the Event in a bounded queue (1,000; a full queue
drops and counts) and a background task sends it through the same Kubernetes client the pdb
plugin uses (lightkube, ``plugins/pdb/kube.py``'s connection configuration: the service
account in a pod, or ``explainEventsKubeconfig``). The service account needs ``create`` and
``patch`` on ``events`` (deploy/kubernetes/base/rbac.yaml). A failed send is logged once per
kind of failure and counted; Events are best effort, as kube-scheduler's are.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from plugins.api.base import Vote
from plugins.api.reasons import Reason
from schemas.api import JobInfo

logger = logging.getLogger("caldera.events")

COMPONENT = "caldera"
REJECTED, ADMITTED = "CalderaRejected", "CalderaAdmitted"
DEDUPE_SECONDS = 600.0
"""client-go's ``maxLruCacheEntries`` window for a repeated Event (``defaultAggregateIntervalInSeconds``)."""
BURST, REFILL_SECONDS = 25, 300.0
"""client-go's ``defaultSpamBurst`` and ``defaultSpamQPS`` (1/300): per object."""
QUEUE = 1000
JOBS_REMEMBERED = 20_000
"""Jobs whose last verdict is remembered (the oldest forgotten first)."""


class EventSink(Protocol):
    """Where Events go: the API server (:class:`KubeEventSink`) or a test's list."""

    async def create(self, event: dict[str, Any]) -> None: ...

    async def patch(self, namespace: str, name: str, patch: dict[str, Any]) -> None: ...

    async def close(self) -> None: ...


@dataclass(slots=True)
class _Sent:
    name: str
    count: int
    first: str
    at: float


@dataclass(slots=True)
class _Bucket:
    tokens: float
    at: float


@dataclass(slots=True)
class EventStats:
    sent: int = 0
    aggregated: int = 0
    rate_limited: int = 0
    queue_full: int = 0
    failed: int = 0
    last_error: str | None = None
    errors_logged: set[str] = field(default_factory=set)


def _rfc3339(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class PodGroupEvents:
    """Turns verdict changes into Events and sends them in the background."""

    def __init__(
        self,
        sink: EventSink,
        clock: Callable[[], datetime] = lambda: datetime.now(UTC),
        monotonic: Callable[[], float] = time.monotonic,
        instance: str | None = None,
    ) -> None:
        self.sink = sink
        self.clock = clock
        self.monotonic = monotonic
        self.instance = instance or os.environ.get("HOSTNAME", "caldera")
        self.stats = EventStats()
        self._last: OrderedDict[str, tuple[str, ...]] = OrderedDict()
        self._sent: dict[tuple[str, str, str, str], _Sent] = {}
        self._buckets: dict[str, _Bucket] = {}
        self._queue: asyncio.Queue[tuple[JobInfo, str, str, str, Reason | str]] = asyncio.Queue(
            QUEUE
        )
        self._task: asyncio.Task[None] | None = None
        self.health: Callable[[str | None], None] | None = None
        """Told each send's outcome: the error, or None when the API server took the Event
        (``app/server/features.py``: Events failing is a degraded feature, loudly)."""

    # --- from the framework (synchronous, on the verb's path) --------------------------------

    def job_verdict(self, job: JobInfo, vote: Vote, plugin: str, reason: Reason | None) -> None:
        """How the jobEnqueueable vote on ``job`` ended; ``plugin`` and ``reason`` are the
        rejecting plugin's when ``vote`` is Reject."""
        pg = job.PodGroup
        if pg is None:
            return
        key = f"{job.Namespace}/{job.Name}"
        if vote == Vote.REJECT:
            signature: tuple[str, ...] = (REJECTED, plugin, reason.code if reason else "")
        else:
            signature = (ADMITTED,)
        previous = self._last.get(key)
        self._last[key] = signature
        self._last.move_to_end(key)
        while len(self._last) > JOBS_REMEMBERED:
            self._last.popitem(last=False)
        if previous == signature or (previous is None and signature[0] == ADMITTED):
            return  # unchanged, or a job Caldera never held back
        if signature[0] == REJECTED:
            # The reason's text is written by the background task, off the verb's path.
            why: Reason | str = reason if reason is not None else "rejects it (jobEnqueueable)"
            queued = (job, "Warning", REJECTED, f"{plugin}: ", why)
        else:
            queued = (
                job,
                "Normal",
                ADMITTED,
                "",
                "no plugin hosted by Caldera rejects it any more",
            )
        try:
            self._queue.put_nowait(queued)
        except asyncio.QueueFull:
            self.stats.queue_full += 1

    # --- the background task --------------------------------------------------------------------

    async def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name="podgroup-events")

    async def stop(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        await self.sink.close()

    async def drain(self) -> None:
        """Wait until every queued Event has been handled (tests)."""
        await self._queue.join()

    async def _run(self) -> None:
        while True:
            job, kind, reason, prefix, why = await self._queue.get()
            try:
                text = why.message if isinstance(why, Reason) else why
                if await self._send(job, kind, reason, prefix + text) and self.health:
                    self.health(None)
            except Exception as exc:  # best effort: never let the task die
                self._failed(exc)
            finally:
                self._queue.task_done()

    def _allowed(self, uid: str, now: float) -> bool:
        bucket = self._buckets.get(uid)
        if bucket is None:
            bucket = self._buckets[uid] = _Bucket(float(BURST), now)
        bucket.tokens = min(float(BURST), bucket.tokens + (now - bucket.at) / REFILL_SECONDS)
        bucket.at = now
        if bucket.tokens < 1:
            return False
        bucket.tokens -= 1
        return True

    async def _send(self, job: JobInfo, kind: str, reason: str, message: str) -> bool:
        """Send (or aggregate) one Event; False when the rate limit dropped it."""
        pg = job.PodGroup
        assert pg is not None
        meta = pg.metadata
        name, namespace = meta.name or job.Name, meta.namespace or job.Namespace
        uid = meta.uid or job.PgUID or f"{namespace}/{name}"
        now, moment = self.monotonic(), self.clock()
        key = (uid, kind, reason, message)
        for stale in [k for k, s in self._sent.items() if now - s.at > DEDUPE_SECONDS]:
            del self._sent[stale]
        if not self._allowed(uid, now):
            self.stats.rate_limited += 1
            return False
        sent = self._sent.get(key)
        stamp = _rfc3339(moment)
        if sent is not None:
            sent.count += 1
            sent.at = now
            await self.sink.patch(
                namespace, sent.name, {"count": sent.count, "lastTimestamp": stamp}
            )
            self.stats.aggregated += 1
            return True
        event_name = f"{name}.{time.time_ns():x}"
        await self.sink.create({
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": event_name, "namespace": namespace},
            "involvedObject": {
                "apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
                "name": name, "namespace": namespace, "uid": uid,
            },
            "reason": reason,
            "message": message[:1024],
            "type": kind,
            "count": 1,
            "firstTimestamp": stamp,
            "lastTimestamp": stamp,
            "source": {"component": COMPONENT},
            "reportingComponent": COMPONENT,
            "reportingInstance": self.instance,
        })  # fmt: skip
        self._sent[key] = _Sent(event_name, 1, stamp, now)
        self.stats.sent += 1
        return True

    def _failed(self, exc: Exception) -> None:
        self.stats.failed += 1
        text = f"{type(exc).__name__}: {exc}"
        self.stats.last_error = text
        kind = type(exc).__name__
        if self.health is not None:
            self.health(text)  # an ERROR once, by app/server/features.py, rather than this warning
            return
        if kind not in self.stats.errors_logged:
            self.stats.errors_logged.add(kind)
            logger.warning("PodGroup event not sent (logged once per kind of error): %s", text)

    def describe(self) -> dict[str, Any]:
        s = self.stats
        return {
            "sent": s.sent, "aggregated": s.aggregated, "rateLimited": s.rate_limited,
            "queueFull": s.queue_full, "failed": s.failed, "lastError": s.last_error,
        }  # fmt: skip


class KubeEventSink:
    """Events to the API server through lightkube, as pdb's source connects."""

    def __init__(self, kubeconfig: str | None = None) -> None:
        self.kubeconfig = kubeconfig
        self._client: Any = None

    def _connect(self) -> Any:
        if self._client is None:
            from plugins.pdb.kube import connect, named_or_default_config

            self._client = connect(named_or_default_config(self.kubeconfig), 10.0)
        return self._client

    async def create(self, event: dict[str, Any]) -> None:
        from lightkube.resources.core_v1 import Event

        await self._connect().create(Event.from_dict(event))

    async def patch(self, namespace: str, name: str, patch: dict[str, Any]) -> None:
        from lightkube.resources.core_v1 import Event

        await self._connect().patch(Event, name, patch, namespace=namespace)

    def problem(self) -> str | None:
        """Why no Event could be sent at all (no kubeconfig, not in a cluster), or None: asked
        at start so the failure is said then, not at the first Event."""
        from plugins.pdb.kube import KubeconfigError, named_or_default_config

        try:
            named_or_default_config(self.kubeconfig).release()
        except KubeconfigError as exc:
            return str(exc)
        return None

    async def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.close()
