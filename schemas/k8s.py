"""Typed views of the Kubernetes objects embedded in Volcano's payloads (standard k8s JSON keys).

Every field of the ``core/v1`` Pod and Node that Volcano sends is readable here, in one of two
ways (docs/plugin-author-guide.md, "Field reference", lists them all, generated from these
classes by :mod:`schemas.fieldref`):

- **decoded**: scalars, and the compound fields the built-in plugins read (labels, annotations,
  containers' resources, conditions...), decoded with the body;
- **lazy**: every other compound field (tolerations, affinity, taints, volumes, probes,
  managedFields...), kept as its raw JSON bytes while the body decodes and decoded into its
  typed view (or plain JSON, :data:`schemas.lazy.JSON`) when a plugin reads it
  (:mod:`schemas.lazy`). A snapshot carries thousands of pods whose compound fields no plugin
  reads; kept raw, each costs one small ``msgspec.Raw`` instead of the objects its decode builds.

A key not declared here is skipped without being built (``status.images`` of a node is declared
lazy; nothing Kubernetes sends in a Pod or Node is left undeclared). A new field goes in as lazy
unless a built-in plugin reads it for every object of a snapshot.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, TypeVar

import msgspec
from msgspec import Struct, field

from schemas.lazy import ABSENT, JSON, Lazy

T = TypeVar("T")

ResourceList = dict[str, str]
"""``v1.ResourceList``: resource name to canonical quantity string (``{"cpu": "500m"}``)."""


class OwnerReference(Struct, omit_defaults=True, gc=False):
    apiVersion: str = ""
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool | None = None
    blockOwnerDeletion: bool | None = None


class ObjectMeta(Struct, omit_defaults=True, gc=False):
    name: str = ""
    generateName: str = ""
    namespace: str = ""
    uid: str = ""
    resourceVersion: str = ""
    generation: int = 0
    creationTimestamp: datetime | None = None
    deletionTimestamp: datetime | None = None
    deletionGracePeriodSeconds: int | None = None
    labels: dict[str, str] | None = None
    annotations: dict[str, str] | None = None
    ownerReferencesRaw: msgspec.Raw = field(default_factory=ABSENT.copy, name="ownerReferences")
    finalizersRaw: msgspec.Raw = field(default_factory=ABSENT.copy, name="finalizers")
    managedFieldsRaw: msgspec.Raw = field(default_factory=ABSENT.copy, name="managedFields")

    ownerReferences = Lazy[list[OwnerReference]](list[OwnerReference])
    finalizers = Lazy[list[str]](list[str])
    managedFields = Lazy[list[JSON]](list[Any], "The API server's field ownership entries.")


class ResourceRequirements(Struct, omit_defaults=True, gc=False, kw_only=True):
    limits: ResourceList | None = None
    requests: ResourceList | None = None
    claimsRaw: msgspec.Raw = field(default_factory=ABSENT.copy, name="claims")

    claims = Lazy[list[JSON]](list[Any], "Dynamic resource claims used by the container.")


class ContainerPort(Struct, omit_defaults=True, gc=False):
    name: str = ""
    containerPort: int = 0
    hostPort: int = 0
    hostIP: str = ""
    protocol: str = ""


class Container(Struct, omit_defaults=True, gc=False, kw_only=True):
    """``v1.Container`` (containers, init containers; ephemeral ones are ``PodSpec.ephemeralContainers``)."""

    name: str = ""
    image: str = ""
    commandRaw: msgspec.Raw = field(default_factory=ABSENT.copy, name="command")
    argsRaw: msgspec.Raw = field(default_factory=ABSENT.copy, name="args")
    workingDir: str = ""
    portsRaw: msgspec.Raw = field(default_factory=ABSENT.copy, name="ports")
    envFromRaw: msgspec.Raw = field(default_factory=ABSENT.copy, name="envFrom")
    envRaw: msgspec.Raw = field(default_factory=ABSENT.copy, name="env")
    resources: ResourceRequirements | None = None
    resizePolicyRaw: msgspec.Raw = field(default_factory=ABSENT.copy, name="resizePolicy")
    restartPolicy: str = ""
    """Only on init containers: ``Always`` makes it a sidecar (usage's pod limits)."""
    restartPolicyRulesRaw: msgspec.Raw = field(
        default_factory=ABSENT.copy, name="restartPolicyRules"
    )
    volumeMountsRaw: msgspec.Raw = field(default_factory=ABSENT.copy, name="volumeMounts")
    volumeDevicesRaw: msgspec.Raw = field(default_factory=ABSENT.copy, name="volumeDevices")
    livenessProbeRaw: msgspec.Raw = field(default_factory=ABSENT.copy, name="livenessProbe")
    readinessProbeRaw: msgspec.Raw = field(default_factory=ABSENT.copy, name="readinessProbe")
    startupProbeRaw: msgspec.Raw = field(default_factory=ABSENT.copy, name="startupProbe")
    lifecycleRaw: msgspec.Raw = field(default_factory=ABSENT.copy, name="lifecycle")
    terminationMessagePath: str = ""
    terminationMessagePolicy: str = ""
    imagePullPolicy: str = ""
    securityContextRaw: msgspec.Raw = field(default_factory=ABSENT.copy, name="securityContext")
    stdin: bool = False
    stdinOnce: bool = False
    tty: bool = False

    command = Lazy[list[str]](list[str])
    args = Lazy[list[str]](list[str])
    ports = Lazy[list[ContainerPort]](list[ContainerPort])
    env = Lazy[list[JSON]](list[Any], "``v1.EnvVar`` entries.")
    envFrom = Lazy[list[JSON]](list[Any])
    volumeMounts = Lazy[list[JSON]](list[Any])
    volumeDevices = Lazy[list[JSON]](list[Any])
    livenessProbe = Lazy[JSON](Any)
    readinessProbe = Lazy[JSON](Any)
    startupProbe = Lazy[JSON](Any)
    lifecycle = Lazy[JSON](Any)
    securityContext = Lazy[JSON](Any)
    resizePolicy = Lazy[list[JSON]](list[Any])
    restartPolicyRules = Lazy[list[JSON]](list[Any])


class LabelSelectorRequirement(Struct, omit_defaults=True):
    """``metav1.LabelSelectorRequirement``: ``operator`` is In, NotIn, Exists or DoesNotExist."""

    key: str = ""
    operator: str = ""
    values: list[str] | None = None


class LabelSelector(Struct, omit_defaults=True):
    """``metav1.LabelSelector``: the requirements are ANDed."""

    matchLabels: dict[str, str] | None = None
    matchExpressions: list[LabelSelectorRequirement] | None = None


class PodSchedulingGate(Struct, omit_defaults=True, gc=False):
    name: str = ""


class Toleration(Struct, omit_defaults=True, gc=False):
    """``v1.Toleration``: ``operator`` is ``Equal`` (the default when empty) or ``Exists``; an
    empty ``effect`` matches every effect, an empty ``key`` with ``Exists`` every taint."""

    key: str = ""
    operator: str = ""
    value: str = ""
    effect: str = ""
    tolerationSeconds: int | None = None


class NodeSelectorRequirement(Struct, omit_defaults=True, gc=False):
    """``operator``: In, NotIn, Exists, DoesNotExist, Gt or Lt."""

    key: str = ""
    operator: str = ""
    values: list[str] | None = None


class NodeSelectorTerm(Struct, omit_defaults=True, gc=False):
    """The requirements of a term are ANDed."""

    matchExpressions: list[NodeSelectorRequirement] | None = None
    matchFields: list[NodeSelectorRequirement] | None = None


class NodeSelector(Struct, omit_defaults=True, gc=False):
    """The terms are ORed."""

    nodeSelectorTerms: list[NodeSelectorTerm] | None = None


class PreferredSchedulingTerm(Struct, omit_defaults=True, gc=False):
    weight: int = 0
    preference: NodeSelectorTerm | None = None


class NodeAffinity(Struct, omit_defaults=True, gc=False):
    requiredDuringSchedulingIgnoredDuringExecution: NodeSelector | None = None
    preferredDuringSchedulingIgnoredDuringExecution: list[PreferredSchedulingTerm] | None = None


class PodAffinityTerm(Struct, omit_defaults=True, gc=False):
    labelSelector: LabelSelector | None = None
    namespaces: list[str] | None = None
    topologyKey: str = ""
    namespaceSelector: LabelSelector | None = None
    matchLabelKeys: list[str] | None = None
    mismatchLabelKeys: list[str] | None = None


class WeightedPodAffinityTerm(Struct, omit_defaults=True, gc=False):
    weight: int = 0
    podAffinityTerm: PodAffinityTerm | None = None


class PodAffinity(Struct, omit_defaults=True, gc=False):
    """``v1.PodAffinity`` and ``v1.PodAntiAffinity`` (the same fields)."""

    requiredDuringSchedulingIgnoredDuringExecution: list[PodAffinityTerm] | None = None
    preferredDuringSchedulingIgnoredDuringExecution: list[WeightedPodAffinityTerm] | None = None


class Affinity(Struct, omit_defaults=True, gc=False):
    """``v1.Affinity`` of a pod (a queue's node-group affinity is ``schemas.api.Affinity``)."""

    nodeAffinity: NodeAffinity | None = None
    podAffinity: PodAffinity | None = None
    podAntiAffinity: PodAffinity | None = None


class TopologySpreadConstraint(Struct, omit_defaults=True, gc=False):
    maxSkew: int = 0
    topologyKey: str = ""
    whenUnsatisfiable: str = ""
    labelSelector: LabelSelector | None = None
    minDomains: int | None = None
    nodeAffinityPolicy: str = ""
    nodeTaintsPolicy: str = ""
    matchLabelKeys: list[str] | None = None


class PodSpec(Struct, omit_defaults=True, gc=False, kw_only=True):
    volumesRaw: msgspec.Raw = field(default_factory=ABSENT.copy, name="volumes")
    initContainers: list[Container] | None = None
    containers: list[Container] | None = None
    ephemeralContainersRaw: msgspec.Raw = field(
        default_factory=ABSENT.copy, name="ephemeralContainers"
    )
    restartPolicy: str = ""
    terminationGracePeriodSeconds: int | None = None
    activeDeadlineSeconds: int | None = None
    dnsPolicy: str = ""
    nodeSelectorRaw: msgspec.Raw = field(default_factory=ABSENT.copy, name="nodeSelector")
    serviceAccountName: str = ""
    serviceAccount: str = ""
    automountServiceAccountToken: bool | None = None
    nodeName: str = ""
    hostNetwork: bool = False
    hostPID: bool = False
    hostIPC: bool = False
    shareProcessNamespace: bool | None = None
    securityContextRaw: msgspec.Raw = field(default_factory=ABSENT.copy, name="securityContext")
    imagePullSecretsRaw: msgspec.Raw = field(default_factory=ABSENT.copy, name="imagePullSecrets")
    hostname: str = ""
    subdomain: str = ""
    affinityRaw: msgspec.Raw = field(default_factory=ABSENT.copy, name="affinity")
    schedulerName: str = ""
    tolerationsRaw: msgspec.Raw = field(default_factory=ABSENT.copy, name="tolerations")
    hostAliasesRaw: msgspec.Raw = field(default_factory=ABSENT.copy, name="hostAliases")
    priorityClassName: str = ""
    priority: int | None = None
    """Set by admission from ``priorityClassName``; Volcano's TaskInfo.Priority derives from it."""
    dnsConfigRaw: msgspec.Raw = field(default_factory=ABSENT.copy, name="dnsConfig")
    readinessGatesRaw: msgspec.Raw = field(default_factory=ABSENT.copy, name="readinessGates")
    runtimeClassName: str = ""
    enableServiceLinks: bool | None = None
    preemptionPolicy: str = ""
    overhead: ResourceList | None = None
    topologySpreadConstraintsRaw: msgspec.Raw = field(
        default_factory=ABSENT.copy, name="topologySpreadConstraints"
    )
    setHostnameAsFQDN: bool | None = None
    osRaw: msgspec.Raw = field(default_factory=ABSENT.copy, name="os")
    hostUsers: bool | None = None
    schedulingGates: list[PodSchedulingGate] | None = None
    """Read by overcommit (``api.HasOnlyVolcanoSchedulingGate``)."""
    resourceClaimsRaw: msgspec.Raw = field(default_factory=ABSENT.copy, name="resourceClaims")
    resources: ResourceRequirements | None = None
    """Pod-level resources (``PodLevelResources``); usage reads their limits."""

    nodeSelector = Lazy[dict[str, str]](dict[str, str], "Labels the node must carry, all of them.")
    tolerations = Lazy[list[Toleration]](list[Toleration])
    affinity = Lazy[Affinity](Affinity)
    topologySpreadConstraints = Lazy[list[TopologySpreadConstraint]](list[TopologySpreadConstraint])
    volumes = Lazy[list[JSON]](list[Any])
    ephemeralContainers = Lazy[list[JSON]](list[Any])
    securityContext = Lazy[JSON](Any)
    imagePullSecrets = Lazy[list[JSON]](list[Any])
    hostAliases = Lazy[list[JSON]](list[Any])
    dnsConfig = Lazy[JSON](Any)
    readinessGates = Lazy[list[JSON]](list[Any])
    os = Lazy[JSON](Any)
    resourceClaims = Lazy[list[JSON]](list[Any])


class PodCondition(Struct, omit_defaults=True, gc=False, kw_only=True):
    """``v1.PodCondition``; cdp and min-runtime read ``PodScheduled`` and its ``lastTransitionTime``."""

    type: str = ""
    observedGeneration: int = 0
    status: str = ""
    lastProbeTime: datetime | None = None
    lastTransitionTime: datetime | None = None
    reason: str = ""
    message: str = ""


class ContainerStatus(Struct, omit_defaults=True, gc=False, kw_only=True):
    """``v1.ContainerStatus``: the resources the kubelet applied (in-place resize)."""

    name: str = ""
    stateRaw: msgspec.Raw = field(default_factory=ABSENT.copy, name="state")
    lastStateRaw: msgspec.Raw = field(default_factory=ABSENT.copy, name="lastState")
    ready: bool = False
    restartCount: int = 0
    image: str = ""
    imageID: str = ""
    containerID: str = ""
    started: bool | None = None
    allocatedResourcesRaw: msgspec.Raw = field(
        default_factory=ABSENT.copy, name="allocatedResources"
    )
    resources: ResourceRequirements | None = None
    volumeMountsRaw: msgspec.Raw = field(default_factory=ABSENT.copy, name="volumeMounts")
    userRaw: msgspec.Raw = field(default_factory=ABSENT.copy, name="user")
    allocatedResourcesStatusRaw: msgspec.Raw = field(
        default_factory=ABSENT.copy, name="allocatedResourcesStatus"
    )
    stopSignal: str = ""

    state = Lazy[JSON](Any, "``waiting``, ``running`` or ``terminated``, with its details.")
    lastState = Lazy[JSON](Any)
    allocatedResources = Lazy[ResourceList](ResourceList)
    allocatedResourcesStatus = Lazy[list[JSON]](list[Any])
    volumeMounts = Lazy[list[JSON]](list[Any])
    user = Lazy[JSON](Any)


class PodIP(Struct, omit_defaults=True, gc=False):
    """``v1.PodIP`` / ``v1.HostIP``."""

    ip: str = ""


class PodStatus(Struct, omit_defaults=True, gc=False, kw_only=True):
    observedGeneration: int = 0
    phase: str = ""
    conditions: list[PodCondition] | None = None
    message: str = ""
    reason: str = ""
    nominatedNodeName: str = ""
    hostIP: str = ""
    hostIPsRaw: msgspec.Raw = field(default_factory=ABSENT.copy, name="hostIPs")
    podIP: str = ""
    podIPsRaw: msgspec.Raw = field(default_factory=ABSENT.copy, name="podIPs")
    startTime: datetime | None = None
    """Set by the kubelet when it accepts the pod; min-runtime's fallback start time, usage's
    metrics blind spot."""
    initContainerStatuses: list[ContainerStatus] | None = None
    containerStatuses: list[ContainerStatus] | None = None
    qosClass: str = ""
    ephemeralContainerStatusesRaw: msgspec.Raw = field(
        default_factory=ABSENT.copy, name="ephemeralContainerStatuses"
    )
    resize: str = ""
    resourceClaimStatusesRaw: msgspec.Raw = field(
        default_factory=ABSENT.copy, name="resourceClaimStatuses"
    )
    resourcesRaw: msgspec.Raw = field(default_factory=ABSENT.copy, name="resources")

    hostIPs = Lazy[list[PodIP]](list[PodIP])
    podIPs = Lazy[list[PodIP]](list[PodIP])
    ephemeralContainerStatuses = Lazy[list[ContainerStatus]](list[ContainerStatus])
    resourceClaimStatuses = Lazy[list[JSON]](list[Any])
    resources = Lazy[ResourceRequirements](ResourceRequirements, "Pod-level resources applied.")


class Pod(Struct, omit_defaults=True, gc=False):
    metadata: ObjectMeta | None = None
    spec: PodSpec | None = None
    status: PodStatus | None = None


class Taint(Struct, omit_defaults=True, gc=False):
    """``v1.Taint``: ``effect`` is ``NoSchedule``, ``PreferNoSchedule`` or ``NoExecute``."""

    key: str = ""
    value: str = ""
    effect: str = ""
    timeAdded: datetime | None = None


class NodeSpec(Struct, omit_defaults=True, gc=False):
    """Decoded whole when ``Node.spec`` is read (no built-in plugin reads it)."""

    podCIDR: str = ""
    podCIDRs: list[str] | None = None
    providerID: str = ""
    unschedulable: bool = False
    """``kubectl cordon``: no new pod may be placed on the node."""
    taints: list[Taint] | None = None
    externalID: str = ""
    configSource: JSON = None


class NodeCondition(Struct, omit_defaults=True, gc=False):
    """``type``: Ready, MemoryPressure, DiskPressure, PIDPressure, NetworkUnavailable...;
    ``status``: ``True``, ``False`` or ``Unknown``."""

    type: str = ""
    status: str = ""
    lastHeartbeatTime: datetime | None = None
    lastTransitionTime: datetime | None = None
    reason: str = ""
    message: str = ""


class NodeAddress(Struct, omit_defaults=True, gc=False):
    """``type``: Hostname, InternalIP, ExternalIP, InternalDNS or ExternalDNS."""

    type: str = ""
    address: str = ""


class NodeSystemInfo(Struct, omit_defaults=True, gc=False):
    machineID: str = ""
    systemUUID: str = ""
    bootID: str = ""
    kernelVersion: str = ""
    osImage: str = ""
    containerRuntimeVersion: str = ""
    kubeletVersion: str = ""
    kubeProxyVersion: str = ""
    operatingSystem: str = ""
    architecture: str = ""
    swap: JSON = None


class NodeStatus(Struct, omit_defaults=True, gc=False):
    """Decoded whole when ``Node.status`` is read (no built-in plugin reads it; Volcano's parse
    of capacity and allocatable is ``NodeInfo.Capacity`` and ``NodeInfo.Allocatable``), except
    ``images``, the largest part of a node, decoded only when it is read."""

    phase: str = ""
    capacity: ResourceList | None = None
    allocatable: ResourceList | None = None
    conditions: list[NodeCondition] | None = None
    addresses: list[NodeAddress] | None = None
    nodeInfo: NodeSystemInfo | None = None
    daemonEndpoints: JSON = None
    volumesInUse: list[str] | None = None
    volumesAttached: list[JSON] | None = None
    config: JSON = None
    runtimeHandlers: list[JSON] | None = None
    features: JSON = None
    declaredFeatures: list[str] | None = None
    imagesRaw: msgspec.Raw = field(default_factory=ABSENT.copy, name="images")

    images = Lazy[list[JSON]](list[Any], "``{names, sizeBytes}`` per image on the node.")


class Node(Struct, omit_defaults=True, gc=False):
    """``v1.Node``. Its spec and status are decoded when read: a snapshot's nodes are read for
    their labels (nodegroup) far more often than for anything else."""

    metadata: ObjectMeta | None = None
    specRaw: msgspec.Raw = field(default_factory=ABSENT.copy, name="spec")
    statusRaw: msgspec.Raw = field(default_factory=ABSENT.copy, name="status")

    spec = Lazy[NodeSpec](NodeSpec)
    status = Lazy[NodeStatus](NodeStatus)


class ResourceQuotaStatus(Struct, omit_defaults=True):
    """``v1.ResourceQuotaStatus`` as carried in ``NamespaceInfo.QuotaStatus``."""

    hard: ResourceList | None = None
    used: ResourceList | None = None


class PodDisruptionBudgetSpec(Struct, omit_defaults=True):
    selector: LabelSelector | None = None
    """Absent (null) and ``{}`` are different selectors; Volcano's pdb plugin ignores both."""


class PodDisruptionBudgetStatus(Struct, omit_defaults=True):
    disruptionsAllowed: int = 0
    disruptedPods: dict[str, Any] | None = None
    """Pod name to the time its eviction was processed; only the keys are read, so the values
    are left undecoded (a malformed timestamp must not drop the whole budget)."""


class PodDisruptionBudget(Struct, omit_defaults=True):
    """``policy/v1`` PodDisruptionBudget, as far as Volcano's pdb plugin reads it."""

    metadata: ObjectMeta | None = None
    spec: PodDisruptionBudgetSpec | None = None
    status: PodDisruptionBudgetStatus | None = None


def api_json(obj: Mapping[str, Any]) -> bytes:
    """An object the API server sent (a list item, a watch event's object, as a mapping) as API
    JSON again, for :func:`decode_api_object`. ``metadata.managedFields``, the API server's field
    ownership, is dropped: often the largest part of an object, read by no scheduling rule."""
    metadata = obj.get("metadata")
    if isinstance(metadata, Mapping) and "managedFields" in metadata:
        obj = {**obj, "metadata": {k: v for k, v in metadata.items() if k != "managedFields"}}
    return msgspec.json.encode(obj)


def decode_api_object(obj: Mapping[str, Any], kind: type[T]) -> T:
    """A mapping from the API server decoded into one of these views. Not ``msgspec.convert``:
    the lazy fields are ``msgspec.Raw``, which only a JSON decode fills (``convert`` refuses any
    object that carries one, e.g. every object with ``managedFields``). Raises
    ``msgspec.ValidationError`` for an object that does not fit the view."""
    return msgspec.json.decode(api_json(obj), type=kind)
