"""The floor: decode the same request bytes in-process (no HTTP) into the smallest typed
structures that hold what plugins read, and produce the same fixed answer.

Three libraries are measured on every body; the fastest is the floor for that verb:

* ``msgspec``: narrow ``msgspec.Struct`` types (unknown keys are skipped by the decoder);
* ``pydantic``: the same narrow shape as ``BaseModel`` with ``model_validate_json``;
* ``orjson``: ``orjson.loads`` into plain dicts/lists (untyped, every key materialised).

The narrow shapes follow the fields listed in the protocol reference (§4.10, §4.2-§4.6):
resources, identity, status, priorities, labels/annotations, tolerations, affinity, taints,
PodGroup spec/status, queue spec/status. ``TaskStatusIndex`` and ``SubJobs`` (copies of
``Tasks``) are skipped, as a plugin can derive them.
"""

from __future__ import annotations

import functools
import gc
import statistics
import time
import types
import typing
from collections.abc import Callable
from typing import Any

import msgspec
import orjson
import pydantic

# ------------------------------------------------------------------------------ msgspec shapes


class MResource(msgspec.Struct, gc=False):
    MilliCPU: float = 0
    Memory: float = 0
    ScalarResources: dict[str, float] | None = None
    MaxTaskNum: int = 0


class MOwnerRef(msgspec.Struct, gc=False):
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool | None = None


class MObjectMeta(msgspec.Struct, gc=False):
    name: str = ""
    namespace: str = ""
    uid: str = ""
    creationTimestamp: str | None = None
    deletionTimestamp: str | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    ownerReferences: list[MOwnerRef] | None = None


class MResources(msgspec.Struct, gc=False):
    limits: dict[str, str] | None = None
    requests: dict[str, str] | None = None


class MContainer(msgspec.Struct, gc=False):
    name: str = ""
    resources: MResources | None = None
    restartPolicy: str | None = None


class MToleration(msgspec.Struct, gc=False):
    key: str = ""
    operator: str = ""
    value: str = ""
    effect: str = ""
    tolerationSeconds: int | None = None


class MPodSpec(msgspec.Struct, gc=False):
    containers: list[MContainer] | None = None
    initContainers: list[MContainer] | None = None
    overhead: dict[str, str] | None = None
    nodeName: str = ""
    nodeSelector: dict[str, str] | None = None
    affinity: dict[str, Any] | None = None
    tolerations: list[MToleration] | None = None
    schedulerName: str = ""
    priorityClassName: str = ""
    priority: int | None = None
    preemptionPolicy: str | None = None


class MPodStatus(msgspec.Struct, gc=False):
    phase: str = ""
    nominatedNodeName: str = ""


class MPod(msgspec.Struct, gc=False):
    metadata: MObjectMeta | None = None
    spec: MPodSpec | None = None
    status: MPodStatus | None = None


class MTask(msgspec.Struct, gc=False):
    UID: str = ""
    Job: str = ""
    Name: str = ""
    Namespace: str = ""
    TaskRole: str = ""
    Resreq: MResource | None = None
    InitResreq: MResource | None = None
    NodeName: str = ""
    Status: int = 0
    Priority: int = 0
    Preemptable: bool = False
    BestEffort: bool = False
    RevocableZone: str = ""
    Pod: MPod | None = None


class MTaint(msgspec.Struct, gc=False):
    key: str = ""
    value: str = ""
    effect: str = ""


class MNodeSpec(msgspec.Struct, gc=False):
    unschedulable: bool = False
    taints: list[MTaint] | None = None


class MNodeStatus(msgspec.Struct, gc=False):
    allocatable: dict[str, str] | None = None
    capacity: dict[str, str] | None = None


class MNode(msgspec.Struct, gc=False):
    metadata: MObjectMeta | None = None
    spec: MNodeSpec | None = None
    status: MNodeStatus | None = None


class MNodeState(msgspec.Struct, gc=False):
    Phase: int = 0
    Reason: str = ""


class MNodeInfo(msgspec.Struct, gc=False):
    Name: str = ""
    Node: MNode | None = None
    State: MNodeState | None = None
    Releasing: MResource | None = None
    Pipelined: MResource | None = None
    Idle: MResource | None = None
    Used: MResource | None = None
    Allocatable: MResource | None = None
    Capacity: MResource | None = None
    Tasks: dict[str, MTask] | None = None
    RevocableZone: str = ""


class MPodGroupSpec(msgspec.Struct, gc=False):
    minMember: int = 0
    minTaskMember: dict[str, int] | None = None
    queue: str = ""
    priorityClassName: str = ""
    minResources: dict[str, str] | None = None


class MPodGroupStatus(msgspec.Struct, gc=False):
    phase: str = ""
    running: int = 0
    succeeded: int = 0
    failed: int = 0


class MPodGroup(msgspec.Struct, gc=False):
    metadata: MObjectMeta | None = None
    spec: MPodGroupSpec | None = None
    status: MPodGroupStatus | None = None


class MBudget(msgspec.Struct, gc=False):
    MinAvailable: str = ""
    MaxUnavailable: str = ""


class MJobInfo(msgspec.Struct, gc=False):
    UID: str = ""
    PgUID: str = ""
    Name: str = ""
    Namespace: str = ""
    Queue: str = ""
    Priority: int = 0
    MinAvailable: int = 0
    WaitingTime: int | None = None
    Tasks: dict[str, MTask] | None = None
    TaskMinAvailable: dict[str, int] | None = None
    TaskMinAvailableTotal: int = 0
    Allocated: MResource | None = None
    TotalRequest: MResource | None = None
    CreationTimestamp: str | None = None
    PodGroup: MPodGroup | None = None
    Preemptable: bool = False
    RevocableZone: str = ""
    Budget: MBudget | None = None


class MQueueSpec(msgspec.Struct, gc=False):
    weight: int = 0
    capability: dict[str, str] | None = None
    deserved: dict[str, str] | None = None
    reclaimable: bool | None = None
    parent: str = ""
    priority: int = 0


class MQueueStatus(msgspec.Struct, gc=False):
    state: str = ""
    allocated: dict[str, str] | None = None


class MQueue(msgspec.Struct, gc=False):
    metadata: MObjectMeta | None = None
    spec: MQueueSpec | None = None
    status: MQueueStatus | None = None


class MQueueInfo(msgspec.Struct, gc=False):
    UID: str = ""
    Name: str = ""
    Weight: int = 0
    Hierarchy: str = ""
    Weights: str = ""
    Queue: MQueue | None = None


class MQuota(msgspec.Struct, gc=False):
    hard: dict[str, str] | None = None
    used: dict[str, str] | None = None


class MNamespaceInfo(msgspec.Struct, gc=False):
    Name: str = ""
    QuotaStatus: dict[str, MQuota] | None = None


class MOpen(msgspec.Struct, gc=False):
    Jobs: dict[str, MJobInfo] | None = None
    Nodes: dict[str, MNodeInfo] | None = None
    Queues: dict[str, MQueueInfo] | None = None
    NamespaceInfo: dict[str, MNamespaceInfo] | None = None


class MPredicate(msgspec.Struct, gc=False):
    task: MTask
    node: MNodeInfo


class MPrioritize(msgspec.Struct, gc=False):
    task: MTask
    nodes: list[MNodeInfo] | None


class MEvict(msgspec.Struct, gc=False):
    evictor: MTask
    evictees: list[msgspec.Raw] | None  # kept raw: victims are echoed verbatim


class MJob(msgspec.Struct, gc=False):
    job: MJobInfo


class MTaskReq(msgspec.Struct, gc=False):
    task: MTask


class MEmpty(msgspec.Struct, gc=False):
    pass


M_TYPES: dict[str, type] = {
    "onSessionOpen": MOpen,
    "onSessionClose": MEmpty,
    "predicate": MPredicate,
    "prioritize": MPrioritize,
    "preemptable": MEvict,
    "reclaimable": MEvict,
    "jobEnqueueable": MJob,
    "jobReady": MJob,
    "allocate": MTaskReq,
}
_M_DECODERS = {verb: msgspec.json.Decoder(t) for verb, t in M_TYPES.items()}
_ENC = msgspec.json.Encoder()

# ----------------------------------------------------------------------------- pydantic shapes


@functools.cache
def pydantic_model(struct: type[msgspec.Struct]) -> type[pydantic.BaseModel]:
    """The same narrow shape as a pydantic model: the Struct's fields, types and defaults, its
    nested Structs as models in turn, unknown keys ignored; a ``msgspec.Raw`` becomes ``Any``
    (pydantic has no raw passthrough: its victims would be re-encoded)."""
    fields: dict[str, Any] = {}
    for field in msgspec.structs.fields(struct):
        default = ... if field.required else field.default
        fields[field.name] = (_pydantic_type(field.type), default)
    name = "P" + struct.__name__.removeprefix("M")
    config = pydantic.ConfigDict(extra="ignore")
    return pydantic.create_model(name, __config__=config, **fields)


def _pydantic_type(hint: Any) -> Any:
    if hint is msgspec.Raw:
        return Any
    if isinstance(hint, type) and issubclass(hint, msgspec.Struct):
        return pydantic_model(hint)
    args = typing.get_args(hint)
    if not args:
        return hint
    converted = tuple(_pydantic_type(arg) for arg in args)
    origin = typing.get_origin(hint)
    if origin in (types.UnionType, typing.Union):
        return typing.Union[converted]  # noqa: UP007 (a tuple of types, built at run time)
    return origin[converted]


P_TYPES: dict[str, type[pydantic.BaseModel]] = {
    verb: pydantic_model(struct) for verb, struct in M_TYPES.items()
}

# ------------------------------------------------------------------------------------ handlers

FIXED = {
    "onSessionOpen": b"{}",
    "onSessionClose": b"{}",
    "predicate": b'{"status":"","code":0}',
    "preemptable": b'{"status":0,"victims":[]}',
    "reclaimable": b'{"status":0,"victims":[]}',
    "jobEnqueueable": b'{"status":1}',
    "jobReady": b'{"status":true}',
    "allocate": b'{"errorMessage":""}',
}


def _decoder(lib: str, verb: str) -> Callable[[bytes], Any]:
    if lib == "msgspec":
        return _M_DECODERS[verb].decode
    if lib == "pydantic":
        return P_TYPES[verb].model_validate_json
    if lib == "orjson":
        return orjson.loads
    raise ValueError(lib)


def _candidate_names(request: Any) -> list[str]:
    if isinstance(request, dict):  # orjson: plain dicts
        return [n["Name"] for n in request.get("nodes") or ()]
    return [n.Name for n in request.nodes or ()]


def handler(lib: str, verb: str) -> Callable[[bytes], bytes]:
    """decode ``body`` with ``lib`` and build the fixed answer (prioritize: a 0 per node)."""
    decode = _decoder(lib, verb)
    if verb == "prioritize":

        def scores(body: bytes) -> bytes:
            names = _candidate_names(decode(body))
            return _ENC.encode({"nodeScore": dict.fromkeys(names, 0), "errorMessage": ""})

        return scores
    fixed = FIXED[verb]

    def answer(body: bytes) -> bytes:
        decode(body)
        return fixed

    return answer


LIBS = ("msgspec", "pydantic", "orjson")


def measure(
    lib: str, verb: str, body: bytes, *, requests: int, max_seconds: float, warmup: int = 2
) -> dict[str, Any]:
    """Time ``requests`` calls (bounded by ``max_seconds``); one result per call, in µs.

    The garbage collector runs as it would in a server; each timed call includes freeing
    the previous call's objects, which is part of the cost."""
    h = handler(lib, verb)
    out = h(body)
    orjson.loads(out)  # a valid answer
    for _ in range(warmup):
        h(body)
    lat: list[float] = []
    gc.collect()
    deadline = time.perf_counter() + max_seconds
    t0 = time.perf_counter()
    for _ in range(requests):
        s = time.perf_counter_ns()
        r = h(body)
        del r
        lat.append((time.perf_counter_ns() - s) / 1e3)
        if time.perf_counter() > deadline:
            break
    elapsed = time.perf_counter() - t0
    return {
        "lib": lib,
        "verb": verb,
        "requests": len(lat),
        "elapsed_seconds": elapsed,
        "latencies_us": lat,
        "p50_us": statistics.median(lat),
        "body_bytes": len(body),
    }
