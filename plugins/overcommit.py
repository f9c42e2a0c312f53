"""``overcommit``: admit a job only while the cluster, scaled by a factor, can hold every
in-queue job's minimum resources.

Follows ``pkg/scheduler/plugins/overcommit/overcommit.go`` of volcano-sh/volcano at ed72c7c81
(master, 2026-08-20; the file is identical at v1.15.1 and v1.13.0), with the helpers it calls:
``plugins/util/util.go`` (``GetInqueueResource``, ``CalculateAllocatedTaskNum``,
``FormatResourceNames``), ``api/job_info.go`` (``GetMinResources``, ``DeductSchGatedResources``)
and ``api/resource_info.go`` (``LessEqualWithDimensionAndResourcesName``); those are ported in
:mod:`plugins.support.resources`.

At session open: ``idle = total * factor - sum(node.Used)`` (never clamped) and ``inqueue`` = the
minimum resources of every Inqueue PodGroup, plus what every Running PodGroup whose allocated
task count reaches ``minMember`` still reserves, both less the job's scheduling-gated tasks.
``job_enqueueable`` checks ``inqueue + need <= idle`` in the dimensions the job asks for;
``job_enqueued`` adds the admitted job to ``inqueue``, which makes the decisions of one session
cumulative. A new session starts from the snapshot again.

Release differences followed through ``ssn.release``:

- ``GetInqueueResource`` units (Volcano #5391, 7110813b1, v1.16.0-alpha.0; backported to
  release-1.15 as e945225f3 in v1.15.1 and to release-1.14 as f3f05e2a6 in v1.14.3). Before it a
  Running job's scalar reservation (GPUs…) was the quantity's whole-unit ``Value()`` compared with
  milli-unit allocations, and ``pods`` reserved nothing. ``volcanoVersion: "1.14"`` or
  ``"1.15"`` means the newest patch release of the line (milli-units); name the patch
  (``"1.14.1"``, ``"1.15.0"``) to get the old units of v1.14.0–v1.14.2 and v1.15.0. ≤ 1.13 has
  the old units.
- ``HasOnlyVolcanoSchedulingGate`` (v1.15.0+): a task whose only scheduling gate is
  ``scheduling.volcano.sh/queue-allocation-gate`` is not deducted as gated; before 1.15 every
  gated task is.

Releases before v1.10 (plain ``LessEqual`` on every dimension, no gated-task deduction) are not
modelled.

Enqueue accounting before Volcano 1.16: the extender has no ``jobEnqueued`` verb there, so the
framework calls :meth:`OvercommitPlugin.job_enqueued` right after Caldera answers
``jobEnqueueable`` with anything but Reject. Within Caldera's tiers that is what the in-tree
plugin of those releases sees (its ``JobEnqueuedFn`` runs after a non-Reject session vote). What
remains different is outside Caldera's view: a Reject from an in-tree plugin voting after the
extender leaves the job Pending while Caldera has counted it, and a Permit in an earlier Volcano
tier enqueues a job Caldera never hears of. From 1.16 Volcano sends ``jobEnqueued`` exactly when
it enqueues, and the accounting is exact.

What the extender cannot carry (``in_tree_only``): the PodGroup event (type Normal, reason
``Unschedulable``, message ``resource in cluster is overused: overused cpu, …``) recorded on a
Reject. Caldera logs the same message at info level instead.
"""

from __future__ import annotations

import logging
from typing import ClassVar, Literal

from plugins.api import (
    OVERCOMMIT_SCALAR_MILLI_UNITS,
    QUEUE_ALLOCATION_GATE_NOT_GATED,
    Arguments,
    Background,
    Explained,
    Plugin,
    Reason,
    Session,
    Upstream,
    Vote,
    register,
)
from plugins.support.resources import (
    add_in_place,
    calculate_allocated_task_num,
    clone,
    deduct_sch_gated,
    get_inqueue_resource,
    get_min_resources,
    less_equal_with_dimension_and_names,
    multi_in_place,
    sub_without_assert_in_place,
)
from plugins.support.units import format_resource
from schemas.api import JobInfo, Resource

logger = logging.getLogger("caldera.plugins.overcommit")

OVERCOMMIT_FACTOR = "overcommit-factor"
DEFAULT_OVERCOMMIT_FACTOR = 1.2

PHASE_INQUEUE = "Inqueue"
PHASE_RUNNING = "Running"


def parse_overcommit_factor(arguments: Arguments) -> float:
    """``overcommit-factor`` via ``GetFloat64``; below 1.0 falls back to the default 1.2, not 1.0."""
    factor = arguments.get_float64(OVERCOMMIT_FACTOR, DEFAULT_OVERCOMMIT_FACTOR)
    if factor < 1.0:
        arguments.warn(
            f"Invalid input {factor:f} for overcommit-factor, reason: overcommit-factor cannot"
            f" be less than 1, using default value: {DEFAULT_OVERCOMMIT_FACTOR:f}.",
            OVERCOMMIT_FACTOR,
        )
        factor = DEFAULT_OVERCOMMIT_FACTOR
        arguments.use(OVERCOMMIT_FACTOR, factor)
    return factor


def format_resource_names(prefix: str, verb: str, names: list[str]) -> str:
    """``util.FormatResourceNames``: ``prefix: verb a, verb b`` (just ``prefix`` when empty)."""
    if not names:
        return prefix
    return f"{prefix}: " + ", ".join(f"{verb} {name}" for name in names)


@register
class OvercommitPlugin(Plugin):
    name: ClassVar[str] = "overcommit"
    on_error: ClassVar[Literal["fail", "abstain"]] = "fail"
    """Its Reject bounds admission: abstaining would admit jobs past the overcommit factor."""
    upstream = Upstream(
        repository="volcano-sh/volcano",
        files=(
            "pkg/scheduler/plugins/overcommit/overcommit.go",
            "pkg/scheduler/plugins/util/util.go",
        ),
        commit="ed72c7c81",
        releases="v1.6.0 and later, per-release differences by ssn.release",
    )
    needs_snapshot: ClassVar[bool] = True
    in_tree_only: ClassVar[tuple[str, ...]] = (
        "RecordPodGroupEvent (Unschedulable, 'resource in cluster is overused…'): logged instead",
    )

    def __init__(self, arguments: Arguments, background: Background | None = None) -> None:
        super().__init__(arguments, background)
        self.overcommit_factor = parse_overcommit_factor(arguments)
        self.total_resource = Resource()
        self.idle_resource = Resource()
        self.inqueue_resource = Resource()
        self.used_resource = Resource()
        self._exclude_queue_allocation_gate = True

    def on_session_open(self, ssn: Session) -> None:
        self._exclude_queue_allocation_gate = ssn.release.has(QUEUE_ALLOCATION_GATE_NOT_GATED)
        milli_scalars = ssn.release.has(OVERCOMMIT_SCALAR_MILLI_UNITS)

        self.total_resource = clone(ssn.total_resource)
        used = Resource()
        for node in ssn.nodes.values():
            add_in_place(used, node.Used)
        self.used_resource = used
        self.idle_resource = sub_without_assert_in_place(
            multi_in_place(clone(self.total_resource), self.overcommit_factor), clone(used)
        )

        self.inqueue_resource = Resource()
        for job in ssn.jobs.values():
            pg = job.PodGroup
            if pg is None or pg.spec.min_resources is None:
                continue
            if pg.status.phase == PHASE_INQUEUE:
                # Gated tasks are deducted so that they do not block other jobs.
                add_in_place(self.inqueue_resource, self._deduct(job, get_min_resources(job)))
            elif (
                pg.status.phase == PHASE_RUNNING
                and calculate_allocated_task_num(job) >= pg.spec.min_member
            ):
                # A Running job below minMember (e.g. a finished Spark driver) reserves nothing.
                reserved = get_inqueue_resource(job, job.Allocated, milli_scalars)
                add_in_place(self.inqueue_resource, self._deduct(job, reserved))

    def _deduct(self, job: JobInfo, res: Resource) -> Resource:
        return deduct_sch_gated(job, res, self._exclude_queue_allocation_gate)

    def job_enqueueable(self, job: JobInfo) -> Vote | Explained[Vote]:
        pg = job.PodGroup
        if pg is None or pg.spec.min_resources is None:
            logger.debug(
                "Job <%s/%s> is bestEffort, permit to be inqueue.", job.Namespace, job.Name
            )
            return Vote.PERMIT
        # The need is NOT reduced by gated tasks here, unlike what job_enqueued adds (upstream).
        need = get_min_resources(job)
        total = add_in_place(clone(self.inqueue_resource), need)
        fits, failed = less_equal_with_dimension_and_names(total, self.idle_resource, need)
        if fits:
            return Vote.PERMIT
        # Debug, as upstream's klog.V(4) line: its PodGroup Event is explainEvents'
        # (deduplicated); at info a job held for an hour wrote a line every cycle.
        logger.debug(
            "PodGroup %s/%s: Normal Unschedulable: %s",
            job.Namespace,
            job.Name,
            format_resource_names("resource in cluster is overused", "overused", failed),
        )
        return Explained(Vote.REJECT, self._why(need, failed))

    def _why(self, need: Resource, failed: list[str]) -> Reason:
        """The numbers behind a Reject, in the dimensions that did not fit: taken now (inqueue
        grows as the session admits jobs), written when read."""
        inqueue, idle = clone(self.inqueue_resource), self.idle_resource
        total, used, factor = self.total_resource, self.used_resource, self.overcommit_factor
        return Reason(
            "insufficient-idle",
            lambda: (
                f"needs {format_resource(need, failed)} with"
                f" {format_resource(inqueue, failed)} already admitted,"
                f" {format_resource(idle, failed)} idle ({format_resource(total, failed)}"
                f" x {factor:g} less {format_resource(used, failed)} in use)"
            ),
        )

    def job_enqueued(self, job: JobInfo) -> None:
        pg = job.PodGroup
        if pg is None or pg.spec.min_resources is None:
            return
        add_in_place(self.inqueue_resource, self._deduct(job, get_min_resources(job)))
