"""Deterministic, realistic Volcano extender request bodies (HEAD payload shape).

Everything is built from ``random.Random(seed)`` so two runs produce byte-identical bodies.
Objects follow Go's ``encoding/json`` output: struct fields in declaration order, map keys
sorted, integral floats without ``.0``, compact separators, no trailing newline. Strings avoid
``<``, ``>`` and ``&`` (which Go would escape as ``\\u003c`` ...).

Sizes, as asked in the brief and the protocol reference (§6):
  * a Volcano pod is about 6 KiB (managedFields, env, probes, status) and a DaemonSet pod ~4.5 KiB;
  * a TaskInfo adds ~1 KiB around its pod;
  * a Node is about 20 KiB with 50 ``status.images``; a NodeInfo adds ~6 KiB (ImageStates, Resources);
  * a JobInfo carries each task 4x (Tasks, TaskStatusIndex, SubJobs[*].Tasks/TaskStatusIndex).

Each TaskInfo / NodeInfo is serialized once and spliced into bigger bodies as
``orjson.Fragment``, so a 375 MiB onSessionOpen body takes seconds, not minutes, to build.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import orjson

Fragment = orjson.Fragment

GI = 1024**3
MI = 1024**2

STATUS_PENDING = 1
STATUS_ALLOCATED = 2
STATUS_RUNNING = 32

IMAGES = [
    "nvcr.io/nvidia/pytorch",
    "nvcr.io/nvidia/tritonserver",
    "docker.io/library/python",
    "registry.k8s.io/kube-proxy",
    "quay.io/prometheus/node-exporter",
    "docker.io/calico/node",
    "docker.io/calico/cni",
    "registry.k8s.io/pause",
    "ghcr.io/example/trainer",
    "ghcr.io/example/data-loader",
    "docker.io/bitnami/spark",
    "docker.io/rayproject/ray",
    "nvcr.io/nvidia/k8s-device-plugin",
    "nvcr.io/nvidia/gpu-operator",
    "registry.k8s.io/coredns/coredns",
    "docker.io/fluent/fluent-bit",
    "quay.io/jetstack/cert-manager-controller",
    "docker.io/volcanosh/vc-scheduler",
    "docker.io/volcanosh/vc-controller-manager",
    "docker.io/kubeflow/training-operator",
]


def gomap(d: dict[str, Any]) -> dict[str, Any]:
    """A Go map: keys sorted by their string form."""
    return {k: d[k] for k in sorted(d)}


def uid(rng: random.Random) -> str:
    b = rng.getrandbits(128).to_bytes(16, "big")
    h = b.hex()
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-8{h[17:20]}-{h[20:32]}"


def ts(sec: int) -> str:
    """metav1.Time for 2026-08-01 plus ``sec`` seconds."""
    day, rem = divmod(sec, 86400)
    h, rem = divmod(rem, 3600)
    m, s = divmod(rem, 60)
    return f"2026-08-{1 + day % 28:02d}T{h:02d}:{m:02d}:{s:02d}Z"


def resource(
    cpu_m: int, mem: int, scalars: dict[str, int] | None, max_task: int = 0
) -> dict[str, Any]:
    return {
        "MilliCPU": cpu_m,
        "Memory": mem,
        "ScalarResources": gomap(scalars) if scalars is not None else None,
        "MaxTaskNum": max_task,
    }


def digest(rng: random.Random) -> str:
    return "sha256:" + hashlib.sha256(rng.getrandbits(64).to_bytes(8, "big")).hexdigest()


def managed(
    manager: str,
    time: str,
    fields: dict[str, Any],
    *,
    status: bool = False,
    api_version: str = "v1",
) -> dict[str, Any]:
    """A ``metadata.managedFields`` entry: ``manager``'s update at ``time`` of ``fields``
    (``status``: through the status subresource)."""
    entry = {
        "manager": manager,
        "operation": "Update",
        "apiVersion": api_version,
        "time": time,
        "fieldsType": "FieldsV1",
    }
    if status:
        entry["subresource"] = "status"
    entry["fieldsV1"] = fields
    return entry


def owner(api_version: str, kind: str, name: str, owner_uid: str) -> list[dict[str, Any]]:
    """``metadata.ownerReferences``: the one controller ``kind`` ``name`` owning the object."""
    return [
        {
            "apiVersion": api_version,
            "kind": kind,
            "name": name,
            "uid": owner_uid,
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]


# --------------------------------------------------------------------------------------- pods


@dataclass
class PodSpec:
    name: str
    namespace: str
    uid: str
    job: str  # podgroup name, "" for non-Volcano pods
    role: str
    cpu: int  # cores
    mem_gi: int
    gpu: int
    node: str  # "" when pending
    priority: int
    created: int
    daemon: bool = False


def _managed_fields_volcano(p: PodSpec) -> list[dict[str, Any]]:
    spec_fields = {
        "f:containers": {
            f'k:{{"name":"{p.role}"}}': {
                ".": {},
                "f:command": {},
                "f:env": {},
                "f:image": {},
                "f:imagePullPolicy": {},
                "f:name": {},
                "f:ports": {
                    ".": {},
                    'k:{"containerPort":23456,"protocol":"TCP"}': {
                        ".": {},
                        "f:containerPort": {},
                        "f:name": {},
                        "f:protocol": {},
                    },
                },
                "f:readinessProbe": {},
                "f:resources": {
                    ".": {},
                    "f:limits": {".": {}, "f:cpu": {}, "f:memory": {}, "f:nvidia.com/gpu": {}},
                    "f:requests": {".": {}, "f:cpu": {}, "f:memory": {}, "f:nvidia.com/gpu": {}},
                },
                "f:terminationMessagePath": {},
                "f:terminationMessagePolicy": {},
                "f:volumeMounts": {
                    ".": {},
                    'k:{"mountPath":"/data"}': {".": {}, "f:mountPath": {}, "f:name": {}},
                    'k:{"mountPath":"/dev/shm"}': {".": {}, "f:mountPath": {}, "f:name": {}},
                },
            }
        },
        "f:dnsPolicy": {},
        "f:enableServiceLinks": {},
        "f:priorityClassName": {},
        "f:restartPolicy": {},
        "f:schedulerName": {},
        "f:securityContext": {},
        "f:terminationGracePeriodSeconds": {},
        "f:volumes": {
            ".": {},
            'k:{"name":"data"}': {
                ".": {},
                "f:name": {},
                "f:persistentVolumeClaim": {".": {}, "f:claimName": {}},
            },
            'k:{"name":"dshm"}': {".": {}, "f:emptyDir": {".": {}, "f:medium": {}}, "f:name": {}},
        },
    }
    out = [
        managed(
            "vc-controller-manager",
            ts(p.created),
            {
                "f:metadata": {
                    "f:annotations": {
                        ".": {},
                        "f:scheduling.k8s.io/group-name": {},
                        "f:volcano.sh/job-name": {},
                        "f:volcano.sh/job-version": {},
                        "f:volcano.sh/queue-name": {},
                        "f:volcano.sh/task-spec": {},
                        "f:volcano.sh/template-uid": {},
                    },
                    "f:labels": {
                        ".": {},
                        "f:volcano.sh/job-name": {},
                        "f:volcano.sh/job-namespace": {},
                        "f:volcano.sh/queue-name": {},
                        "f:volcano.sh/task-index": {},
                        "f:volcano.sh/task-spec": {},
                    },
                    "f:ownerReferences": {".": {}, f'k:{{"uid":"{p.uid[:8]}-job"}}': {}},
                },
                "f:spec": spec_fields,
            },
        )
    ]
    if p.node:
        out.append(
            managed(
                "kubelet",
                ts(p.created + 25),
                {
                    "f:status": {
                        "f:conditions": {
                            k: {
                                ".": {},
                                "f:lastProbeTime": {},
                                "f:lastTransitionTime": {},
                                "f:status": {},
                                "f:type": {},
                            }
                            for k in ('k:{"type":"ContainersReady"}', 'k:{"type":"Ready"}')
                        },
                        "f:containerStatuses": {},
                        "f:hostIP": {},
                        "f:hostIPs": {},
                        "f:phase": {},
                        "f:podIP": {},
                        "f:podIPs": {".": {}, 'k:{"ip":"10.244.0.0"}': {".": {}, "f:ip": {}}},
                        "f:startTime": {},
                    }
                },
                status=True,
            )
        )
    return out


def make_pod(p: PodSpec, rng: random.Random) -> dict[str, Any]:
    if p.daemon:
        return make_daemon_pod(p, rng)
    labels = gomap(
        {
            "volcano.sh/job-name": p.job,
            "volcano.sh/job-namespace": p.namespace,
            "volcano.sh/queue-name": "q-" + p.namespace,
            "volcano.sh/task-index": p.name.rsplit("-", 1)[-1],
            "volcano.sh/task-spec": p.role,
        }
    )
    annotations = gomap(
        {
            "scheduling.k8s.io/group-name": p.job,
            "volcano.sh/job-name": p.job,
            "volcano.sh/job-version": "0",
            "volcano.sh/queue-name": "q-" + p.namespace,
            "volcano.sh/task-spec": p.role,
            "volcano.sh/template-uid": f"{p.job}-{p.role}",
        }
    )
    requests = gomap(
        {
            "cpu": str(p.cpu),
            "memory": f"{p.mem_gi}Gi",
            **({"nvidia.com/gpu": str(p.gpu)} if p.gpu else {}),
        }
    )
    env = [
        {"name": n, "value": v}
        for n, v in (
            ("VC_TASK_INDEX", labels["volcano.sh/task-index"]),
            ("VC_WORKER_NUM", "4"),
            ("MASTER_ADDR", f"{p.job}-master-0.{p.job}"),
            ("MASTER_PORT", "23456"),
            ("WORLD_SIZE", "4"),
            ("NCCL_DEBUG", "WARN"),
            ("OMP_NUM_THREADS", str(p.cpu)),
        )
    ]
    spec: dict[str, Any] = {
        "volumes": [
            {"name": "data", "persistentVolumeClaim": {"claimName": f"{p.job}-data"}},
            {"name": "dshm", "emptyDir": {"medium": "Memory"}},
            {
                "name": f"kube-api-access-{p.uid[:5]}",
                "projected": {
                    "sources": [
                        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                        {
                            "configMap": {
                                "name": "kube-root-ca.crt",
                                "items": [{"key": "ca.crt", "path": "ca.crt"}],
                            }
                        },
                        {
                            "downwardAPI": {
                                "items": [
                                    {
                                        "path": "namespace",
                                        "fieldRef": {
                                            "apiVersion": "v1",
                                            "fieldPath": "metadata.namespace",
                                        },
                                    }
                                ]
                            }
                        },
                    ],
                    "defaultMode": 420,
                },
            },
        ],
        "containers": [
            {
                "name": p.role,
                "image": f"ghcr.io/example/trainer:v2.{rng.randrange(10)}.{rng.randrange(30)}",
                "command": ["torchrun", "/workspace/train.py", "--config=/data/config.yaml"],
                "ports": [{"name": "dist", "containerPort": 23456, "protocol": "TCP"}],
                "env": env,
                "resources": {"limits": requests, "requests": requests},
                "volumeMounts": [
                    {"name": "data", "mountPath": "/data"},
                    {"name": "dshm", "mountPath": "/dev/shm"},
                    {
                        "name": f"kube-api-access-{p.uid[:5]}",
                        "readOnly": True,
                        "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                    },
                ],
                "readinessProbe": {
                    "tcpSocket": {"port": 23456},
                    "timeoutSeconds": 1,
                    "periodSeconds": 10,
                    "successThreshold": 1,
                    "failureThreshold": 3,
                },
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File",
                "imagePullPolicy": "IfNotPresent",
            }
        ],
        "restartPolicy": "OnFailure",
        "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst",
        "serviceAccountName": "default",
        "serviceAccount": "default",
    }
    if p.node:
        spec["nodeName"] = p.node
    spec.update(
        {
            "securityContext": {},
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {
                                        "key": "nvidia.com/gpu.product",
                                        "operator": "In",
                                        "values": ["NVIDIA-H100-80GB-HBM3", "NVIDIA-H200"],
                                    }
                                ]
                            }
                        ]
                    }
                }
            },
            "schedulerName": "volcano",
            "tolerations": [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
                {
                    "key": "node.kubernetes.io/unreachable",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                },
                {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
            ],
            "priorityClassName": "high" if p.priority >= 1000 else "normal",
            "priority": p.priority,
            "enableServiceLinks": True,
            "preemptionPolicy": "PreemptLowerPriority",
        }
    )
    if p.node:
        start = p.created + 5
        status: dict[str, Any] = {
            "phase": "Running",
            "conditions": [
                {
                    "type": t,
                    "status": "True",
                    "lastProbeTime": None,
                    "lastTransitionTime": ts(start + d),
                }
                for t, d in (
                    ("PodReadyToStartContainers", 10),
                    ("Initialized", 1),
                    ("Ready", 20),
                    ("ContainersReady", 20),
                    ("PodScheduled", 0),
                )
            ],
            "hostIP": f"10.0.{rng.randrange(256)}.{rng.randrange(256)}",
            "hostIPs": [{"ip": "10.0.0.1"}],
            "podIP": f"10.244.{rng.randrange(256)}.{rng.randrange(256)}",
            "podIPs": [{"ip": "10.244.0.1"}],
            "startTime": ts(start),
            "containerStatuses": [
                {
                    "name": p.role,
                    "state": {"running": {"startedAt": ts(start + 12)}},
                    "lastState": {},
                    "ready": True,
                    "restartCount": 0,
                    "image": spec["containers"][0]["image"],
                    "imageID": "ghcr.io/example/trainer@" + digest(rng),
                    "containerID": "containerd://" + hashlib.sha256(p.uid.encode()).hexdigest(),
                    "started": True,
                }
            ],
            "qosClass": "Guaranteed",
        }
    else:
        status = {
            "phase": "Pending",
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "lastProbeTime": None,
                    "lastTransitionTime": ts(p.created + 1),
                    "reason": "Unschedulable",
                    "message": "0/100 nodes are unavailable: 100 Insufficient nvidia.com/gpu.",
                }
            ],
            "qosClass": "Guaranteed",
        }
    return {
        "metadata": {
            "name": p.name,
            "generateName": f"{p.job}-{p.role}-",
            "namespace": p.namespace,
            "uid": p.uid,
            "resourceVersion": str(100000 + rng.randrange(900000)),
            "creationTimestamp": ts(p.created),
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": owner("batch.volcano.sh/v1alpha1", "Job", p.job, p.uid[:8] + "-job"),
            "managedFields": _managed_fields_volcano(p),
        },
        "spec": spec,
        "status": status,
    }


def make_daemon_pod(p: PodSpec, rng: random.Random) -> dict[str, Any]:
    app = p.role
    req = {"cpu": f"{p.cpu * 100}m", "memory": "128Mi"}
    start = p.created + 3
    return {
        "metadata": {
            "name": p.name,
            "generateName": f"{app}-",
            "namespace": p.namespace,
            "uid": p.uid,
            "resourceVersion": str(100000 + rng.randrange(900000)),
            "creationTimestamp": ts(p.created),
            "labels": gomap(
                {
                    "app.kubernetes.io/name": app,
                    "controller-revision-hash": "6d9c7b5f4",
                    "pod-template-generation": "3",
                }
            ),
            "annotations": {"kubectl.kubernetes.io/restartedAt": "2026-07-15T08:00:00Z"},
            "ownerReferences": owner("apps/v1", "DaemonSet", app, p.uid[:8] + "-ds"),
            "managedFields": [
                managed(
                    "kube-controller-manager",
                    ts(p.created),
                    {
                        "f:metadata": {
                            "f:generateName": {},
                            "f:labels": {
                                ".": {},
                                "f:app.kubernetes.io/name": {},
                                "f:controller-revision-hash": {},
                                "f:pod-template-generation": {},
                            },
                            "f:ownerReferences": {".": {}, f'k:{{"uid":"{p.uid[:8]}-ds"}}': {}},
                        },
                        "f:spec": {
                            "f:affinity": {
                                ".": {},
                                "f:nodeAffinity": {
                                    ".": {},
                                    "f:requiredDuringSchedulingIgnoredDuringExecution": {},
                                },
                            },
                            "f:containers": {
                                f'k:{{"name":"{app}"}}': {
                                    ".": {},
                                    "f:image": {},
                                    "f:name": {},
                                    "f:resources": {},
                                }
                            },
                            "f:dnsPolicy": {},
                            "f:hostNetwork": {},
                            "f:priorityClassName": {},
                            "f:tolerations": {},
                        },
                    },
                ),
                managed(
                    "kubelet",
                    ts(start + 10),
                    {
                        "f:status": {
                            "f:conditions": {".": {}},
                            "f:containerStatuses": {},
                            "f:hostIP": {},
                            "f:phase": {},
                            "f:podIP": {},
                            "f:startTime": {},
                        }
                    },
                    status=True,
                ),
            ],
        },
        "spec": {
            "volumes": [
                {"name": "host-root", "hostPath": {"path": "/", "type": ""}},
                {
                    "name": f"kube-api-access-{p.uid[:5]}",
                    "projected": {
                        "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}
                        ],
                        "defaultMode": 420,
                    },
                },
            ],
            "containers": [
                {
                    "name": app,
                    "image": f"quay.io/example/{app}:v1.{rng.randrange(20)}.0",
                    "args": ["--path.rootfs=/host", "--web.listen-address=0.0.0.0:9100"],
                    "resources": {"limits": req, "requests": req},
                    "volumeMounts": [{"name": "host-root", "readOnly": True, "mountPath": "/host"}],
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File",
                    "imagePullPolicy": "IfNotPresent",
                }
            ],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "serviceAccountName": app,
            "serviceAccount": app,
            "nodeName": p.node,
            "hostNetwork": True,
            "securityContext": {},
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchFields": [
                                    {"key": "metadata.name", "operator": "In", "values": [p.node]}
                                ]
                            }
                        ]
                    }
                }
            },
            "schedulerName": "default-scheduler",
            "tolerations": [{"operator": "Exists"}]
            + [
                {"key": f"node.kubernetes.io/{k}", "operator": "Exists", "effect": e}
                for k, e in (
                    ("not-ready", "NoExecute"),
                    ("unreachable", "NoExecute"),
                    ("disk-pressure", "NoSchedule"),
                    ("memory-pressure", "NoSchedule"),
                    ("pid-pressure", "NoSchedule"),
                    ("unschedulable", "NoSchedule"),
                )
            ],
            "priorityClassName": "system-node-critical",
            "priority": 2000001000,
            "enableServiceLinks": True,
            "preemptionPolicy": "PreemptLowerPriority",
        },
        "status": {
            "phase": "Running",
            "conditions": [
                {
                    "type": t,
                    "status": "True",
                    "lastProbeTime": None,
                    "lastTransitionTime": ts(start),
                }
                for t in (
                    "PodReadyToStartContainers",
                    "Initialized",
                    "Ready",
                    "ContainersReady",
                    "PodScheduled",
                )
            ],
            "hostIP": "10.0.0.1",
            "hostIPs": [{"ip": "10.0.0.1"}],
            "podIP": "10.0.0.1",
            "podIPs": [{"ip": "10.0.0.1"}],
            "startTime": ts(start),
            "containerStatuses": [
                {
                    "name": app,
                    "state": {"running": {"startedAt": ts(start + 2)}},
                    "lastState": {},
                    "ready": True,
                    "restartCount": 0,
                    "image": f"quay.io/example/{app}:v1",
                    "imageID": f"quay.io/example/{app}@" + digest(rng),
                    "containerID": "containerd://" + hashlib.sha256(p.uid.encode()).hexdigest(),
                    "started": True,
                }
            ],
            "qosClass": "Guaranteed",
        },
    }


def make_task(p: PodSpec, pod: dict[str, Any]) -> dict[str, Any]:
    """api.TaskInfo (HEAD field order) around ``pod``: running on ``p.node``, else pending."""
    scalars = {"pods": 1}
    if p.daemon:
        req = resource(p.cpu * 100, 128 * MI, scalars)
    else:
        if p.gpu:
            scalars["nvidia.com/gpu"] = p.gpu * 1000
        req = resource(p.cpu * 1000, p.mem_gi * GI, scalars)
    annotations = pod["metadata"].get("annotations")
    return {
        "UID": p.uid,
        "Job": f"{p.namespace}/{p.job}" if p.job else "",
        "Name": p.name,
        "Namespace": p.namespace,
        "TaskRole": p.role if not p.daemon else "",
        "Resreq": req,
        "InitResreq": req,
        "DRAResreq": None,
        "ResourceClaimKeys": None,
        "ResourceClaimDRAResreq": None,
        "NodeName": p.node,
        "EvictionOccurred": False,
        "JobAllocatedHyperNode": "",
        "Status": STATUS_RUNNING if p.node else STATUS_PENDING,
        "LastTransaction": None,
        "Priority": p.priority,
        "VolumeReady": False,
        "Preemptable": p.priority < 1000,
        "BestEffort": False,
        "HasRestartableInitContainer": False,
        "SchGated": False,
        "RevocableZone": "",
        "NumaInfo": {"Policy": "", "ResMap": {}},
        "Pod": pod,
        "PodAnnotations": dict(annotations) if annotations else None,
        "CustomBindErrHandlerSucceeded": False,
    }


# -------------------------------------------------------------------------------------- nodes


def make_node(name: str, idx: int, rng: random.Random) -> tuple[dict[str, Any], dict[str, Any]]:
    """Returns (v1.Node, ImageStates)."""
    gpu_product = "NVIDIA-H100-80GB-HBM3" if idx % 2 else "NVIDIA-H200"
    labels = gomap(
        {
            "beta.kubernetes.io/arch": "amd64",
            "beta.kubernetes.io/os": "linux",
            "feature.node.kubernetes.io/cpu-model.family": "6",
            "feature.node.kubernetes.io/cpu-model.id": "143",
            "feature.node.kubernetes.io/cpu-model.vendor_id": "Intel",
            "feature.node.kubernetes.io/kernel-version.major": "6",
            "feature.node.kubernetes.io/pci-10de.present": "true",
            "kubernetes.io/arch": "amd64",
            "kubernetes.io/hostname": name,
            "kubernetes.io/os": "linux",
            "node.kubernetes.io/instance-type": "p5.48xlarge",
            "nvidia.com/cuda.driver.major": "560",
            "nvidia.com/cuda.runtime.major": "12",
            "nvidia.com/gpu.count": "8",
            "nvidia.com/gpu.memory": "81559",
            "nvidia.com/gpu.product": gpu_product,
            "nvidia.com/gpu.present": "true",
            "topology.kubernetes.io/region": "eu-west-1",
            "topology.kubernetes.io/zone": f"eu-west-1{'abc'[idx % 3]}",
            "volcano.sh/nodegroup-name": f"group-{idx % 4}",
        }
    )
    annotations = gomap(
        {
            "csi.volume.kubernetes.io/nodeid": f'{{"ebs.csi.aws.com":"i-{rng.getrandbits(60):015x}"}}',
            "node.alpha.kubernetes.io/ttl": "0",
            "nfd.node.kubernetes.io/feature-labels": "cpu-model.family,cpu-model.id,cpu-model.vendor_id,kernel-version.major,pci-10de.present",
            "nvidia.com/gpu-driver-upgrade-enabled": "true",
            "projectcalico.org/IPv4Address": f"10.0.{idx // 256}.{idx % 256}/16",
            "volumes.kubernetes.io/controller-managed-attach-detach": "true",
        }
    )
    images = []
    image_states: dict[str, Any] = {}
    for i in range(50):
        repo = IMAGES[i % len(IMAGES)]
        tag = f"v{1 + i // len(IMAGES)}.{(idx + i) % 7}.{i % 5}"
        names = [f"{repo}@{digest(rng)}", f"{repo}:{tag}"]
        if i % 2 == 0:  # the same image pulled through the registry mirror
            names.insert(0, f"mirror.internal.example.com/{repo.split('/', 1)[1]}@{digest(rng)}")
        size = 30 * MI + rng.randrange(9 * GI)
        images.append({"names": names, "sizeBytes": size})
        for n in names:
            image_states[n] = {"Size": size, "NumNodes": 1 + rng.randrange(100), "Nodes": None}
    cap = gomap(
        {
            "cpu": "192",
            "ephemeral-storage": "3750Gi",
            "hugepages-1Gi": "0",
            "hugepages-2Mi": "0",
            "memory": "2048Gi",
            "nvidia.com/gpu": "8",
            "pods": "110",
        }
    )
    alloc = dict(cap, cpu="191450m", memory="2000Gi", **{"ephemeral-storage": "3500Gi"})
    conds = [
        {
            "type": t,
            "status": "False",
            "lastHeartbeatTime": ts(86400 + idx),
            "lastTransitionTime": ts(0),
            "reason": r,
            "message": m,
        }
        for t, r, m in (
            (
                "MemoryPressure",
                "KubeletHasSufficientMemory",
                "kubelet has sufficient memory available",
            ),
            ("DiskPressure", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
            ("PIDPressure", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
        )
    ] + [
        {
            "type": "Ready",
            "status": "True",
            "lastHeartbeatTime": ts(86400 + idx),
            "lastTransitionTime": ts(60),
            "reason": "KubeletReady",
            "message": "kubelet is posting ready status",
        }
    ]
    node = {
        "metadata": {
            "name": name,
            "uid": uid(rng),
            "resourceVersion": str(1000000 + rng.randrange(9000000)),
            "creationTimestamp": ts(0),
            "labels": labels,
            "annotations": annotations,
            "managedFields": [
                managed(
                    "kubelet",
                    ts(0),
                    {
                        "f:metadata": {
                            "f:annotations": {
                                ".": {},
                                "f:volumes.kubernetes.io/controller-managed-attach-detach": {},
                            },
                            "f:labels": {
                                ".": {},
                                **{
                                    f"f:{k}": {}
                                    for k in labels
                                    if k.startswith(("beta.", "kubernetes.io"))
                                },
                            },
                        }
                    },
                ),
                managed(
                    "kube-controller-manager",
                    ts(60),
                    {
                        "f:metadata": {"f:annotations": {"f:node.alpha.kubernetes.io/ttl": {}}},
                        "f:spec": {
                            "f:podCIDR": {},
                            "f:podCIDRs": {".": {}, f'v:"10.244.{idx % 256}.0/24"': {}},
                        },
                    },
                ),
                managed(
                    "nfd-master",
                    ts(120),
                    {
                        "f:metadata": {
                            "f:annotations": {"f:nfd.node.kubernetes.io/feature-labels": {}},
                            "f:labels": {
                                **{
                                    f"f:{k}": {}
                                    for k in labels
                                    if k.startswith(("feature.", "nvidia."))
                                }
                            },
                        }
                    },
                ),
                managed(
                    "kubelet",
                    ts(86400 + idx),
                    {
                        "f:status": {
                            "f:allocatable": {f"f:{k}": {} for k in alloc},
                            "f:capacity": {f"f:{k}": {} for k in cap},
                            "f:conditions": {
                                f'k:{{"type":"{c["type"]}"}}': {"f:lastHeartbeatTime": {}}
                                for c in conds
                            },
                            "f:images": {},
                            "f:nodeInfo": {"f:bootID": {}},
                        }
                    },
                    status=True,
                ),
            ],
        },
        "spec": {
            "podCIDR": f"10.244.{idx % 256}.0/24",
            "podCIDRs": [f"10.244.{idx % 256}.0/24"],
            "providerID": f"aws:///eu-west-1a/i-{rng.getrandbits(60):015x}",
            "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
        },
        "status": {
            "capacity": cap,
            "allocatable": gomap(alloc),
            "conditions": conds,
            "addresses": [
                {"type": "InternalIP", "address": f"10.0.{idx // 256}.{idx % 256}"},
                {"type": "Hostname", "address": name},
            ],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
            "nodeInfo": {
                "machineID": rng.getrandbits(128).to_bytes(16, "big").hex(),
                "systemUUID": uid(rng),
                "bootID": uid(rng),
                "kernelVersion": "6.8.0-1021-aws",
                "osImage": "Ubuntu 24.04.2 LTS",
                "containerRuntimeVersion": "containerd://2.0.4",
                "kubeletVersion": "v1.33.2",
                "kubeProxyVersion": "",
                "operatingSystem": "linux",
                "architecture": "amd64",
            },
            "images": images,
            "volumesInUse": [
                f"kubernetes.io/csi/ebs.csi.aws.com^vol-{rng.getrandbits(68):017x}"
                for _ in range(8)
            ],
            "volumesAttached": [
                {
                    "name": f"kubernetes.io/csi/ebs.csi.aws.com^vol-{rng.getrandbits(68):017x}",
                    "devicePath": "",
                }
                for _ in range(8)
            ],
            "runtimeHandlers": [
                {
                    "name": "nvidia",
                    "features": {"recursiveReadOnlyMounts": True, "userNamespaces": True},
                },
                {
                    "name": "runc",
                    "features": {"recursiveReadOnlyMounts": True, "userNamespaces": True},
                },
            ],
            "features": {"supplementalGroupsPolicy": True},
        },
    }
    return node, gomap(image_states)


NODE_ALLOC = dict(cpu_m=191450, mem=2000 * GI, gpu=8, pods=110, eph=3500 * GI)


def node_resource(
    cpu_m: int, mem: int, eph: int, gpu: int, pods: int, max_task: int
) -> dict[str, Any]:
    """A node's api.Resource: its scalars are ephemeral storage (in milli-units, as Volcano keeps
    every scalar), both hugepages sizes (none), GPUs (milli) and pods."""
    scalars = {
        "ephemeral-storage": eph * 1000,
        "hugepages-1Gi": 0,
        "hugepages-2Mi": 0,
        "nvidia.com/gpu": gpu * 1000,
        "pods": pods,
    }
    return resource(cpu_m, mem, scalars, max_task)


def make_nodeinfo(
    name: str,
    node: dict[str, Any],
    image_states: dict[str, Any],
    tasks: dict[str, Any],
    used: tuple[int, int, int, int],
    generation: int,
    resource_usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """api.NodeInfo. ``tasks`` maps "ns/name" to TaskInfo (dict or Fragment).
    ``resource_usage``: ``NodeInfo.ResourceUsage``; None gives Go's zero value (no metrics)."""
    ucpu, umem, ugpu, upods = used
    a = NODE_ALLOC
    alloc = node_resource(a["cpu_m"], a["mem"], a["eph"], a["gpu"], a["pods"], a["pods"])
    cap = node_resource(192000, 2048 * GI, 3750 * GI, 8, 110, 110)
    idle = node_resource(
        a["cpu_m"] - ucpu, a["mem"] - umem, a["eph"], a["gpu"] - ugpu, a["pods"] - upods, a["pods"]
    )
    used_r = resource(ucpu, umem, {"nvidia.com/gpu": ugpu * 1000, "pods": upods})
    zero = resource(0, 0, None)
    return {
        "Name": name,
        "Node": node,
        "State": {"Phase": 1, "Reason": ""},
        "Releasing": zero,
        "Pipelined": zero,
        "Idle": idle,
        "Used": used_r,
        "Allocatable": alloc,
        "Capacity": cap,
        "ResourceUsage": resource_usage
        or {"MetricsTime": "0001-01-01T00:00:00Z", "CPUUsageAvg": {}, "MEMUsageAvg": {}},
        "Tasks": gomap(tasks),
        "NumaInfo": None,
        "UnassignedNumaPods": None,
        "NumaSchedulerInfo": None,
        "RevocableZone": "",
        "Others": {},
        "OversubscriptionNode": False,
        "OfflineJobEvicting": False,
        "OversubscriptionResource": zero,
        "ImageStates": image_states,
        "Generation": generation,
        "BindGeneration": 0,
    }


# ------------------------------------------------------------------------------------ cluster


@dataclass
class Job:
    namespace: str
    name: str
    uid: str
    queue: str
    priority: int
    pods: list[PodSpec] = field(default_factory=list)
    tasks: dict[str, bytes] = field(default_factory=dict)  # uid -> TaskInfo JSON


@dataclass
class Cluster:
    nodes: dict[str, bytes]  # name -> NodeInfo JSON
    node_names: list[str]
    jobs: list[Job]
    job_bytes: dict[str, bytes]  # "ns/name" -> JobInfo JSON
    queues: dict[str, Any]
    namespaces: dict[str, Any]
    pending: list[
        tuple[Job, PodSpec, bytes, bytes]
    ]  # (job, pod, pending TaskInfo, allocated TaskInfo)
    node_task_bytes: dict[str, list[bytes]]


NAMESPACES = [
    "team-a",
    "team-b",
    "team-c",
    "team-d",
    "ml-research",
    "ml-prod",
    "analytics",
    "batch",
]
DAEMONS = [
    "node-exporter",
    "calico-node",
    "kube-proxy",
    "fluent-bit",
    "nvidia-device-plugin",
    "nvidia-dcgm-exporter",
    "ebs-csi-node",
    "nfd-worker",
    "gpu-feature-discovery",
    "cilium-agent",
]


def make_jobinfo(job: Job, pg_annotations: dict[str, str] | None = None) -> bytes:
    """api.JobInfo; ``pg_annotations`` are added to the PodGroup's annotations."""
    tasks = {p.uid: Fragment(job.tasks[p.uid]) for p in job.pods}
    by_status: dict[str, dict[str, Any]] = {}
    for p in job.pods:
        st = str(STATUS_RUNNING if p.node else STATUS_PENDING)
        by_status.setdefault(st, {})[p.uid] = tasks[p.uid]
    tsi = gomap({k: gomap(v) for k, v in by_status.items()})
    tasks = gomap(tasks)
    jid = f"{job.namespace}/{job.name}"
    n = len(job.pods)
    roles: dict[str, int] = {}
    for p in job.pods:
        roles[p.role] = roles.get(p.role, 0) + 1
    cpu = sum(p.cpu for p in job.pods) * 1000
    mem = sum(p.mem_gi for p in job.pods) * GI
    gpu = sum(p.gpu for p in job.pods) * 1000
    run = [p for p in job.pods if p.node]
    allocated = resource(
        sum(p.cpu for p in run) * 1000,
        sum(p.mem_gi for p in run) * GI,
        {"nvidia.com/gpu": sum(p.gpu for p in run) * 1000, "pods": len(run)},
    )
    created = job.pods[0].created - 1
    sub = {
        "GID": jid,
        "UID": jid,
        "Job": jid,
        "MinAvailable": n,
        "Priority": job.priority,
        "MatchIndex": 0,
        "Tasks": tasks,
        "TaskStatusIndex": tsi,
        "AllocatedHyperNode": "",
        "NominatedHyperNode": "",
        "NetworkTopology": None,
    }
    pg_phase = "Running" if len(run) >= n else ("Inqueue" if run else "Pending")
    pg = {
        "metadata": {
            "name": job.name,
            "namespace": job.namespace,
            "uid": job.uid,
            "resourceVersion": str(5000 + n),
            "generation": 2,
            "creationTimestamp": ts(created),
            "annotations": gomap(
                {"scheduling.k8s.io/group-name": job.name, **(pg_annotations or {})}
            ),
            "ownerReferences": owner(
                "batch.volcano.sh/v1alpha1", "Job", job.name, job.uid[:8] + "-job"
            ),
            "managedFields": [
                managed(
                    "vc-controller-manager",
                    ts(created),
                    {
                        "f:metadata": {"f:ownerReferences": {}},
                        "f:spec": {
                            "f:minMember": {},
                            "f:minResources": {},
                            "f:minTaskMember": {},
                            "f:queue": {},
                        },
                    },
                    api_version="scheduling.volcano.sh/v1beta1",
                )
            ],
        },
        "spec": {
            "minMember": n,
            "minTaskMember": gomap(roles),
            "queue": job.queue,
            "priorityClassName": "high" if job.priority >= 1000 else "normal",
            "minResources": gomap(
                {
                    "cpu": str(cpu // 1000),
                    "memory": f"{mem // GI}Gi",
                    **({"nvidia.com/gpu": str(gpu // 1000)} if gpu else {}),
                }
            ),
        },
        "status": {
            "phase": pg_phase,
            "conditions": [
                {
                    "type": "Scheduled",
                    "status": "True",
                    "transitionID": uid(random.Random(job.uid)),
                    "lastTransitionTime": ts(created + 5),
                    "reason": "tasks in gang are ready to be scheduled",
                    "message": "",
                }
            ]
            if run
            else [],
            **({"running": len(run)} if run else {}),
        },
        "Version": "v1beta1",
    }
    info = {
        "UID": jid,
        "PgUID": job.uid,
        "Name": job.name,
        "Namespace": job.namespace,
        "Queue": job.queue,
        "Priority": job.priority,
        "MinAvailable": n,
        "WaitingTime": None,
        "JobFitErrors": "",
        "NodesFitErrors": {},
        "AllocatedHyperNode": "",
        "NetworkTopology": None,
        "SubJobs": {jid: sub},
        "TaskToSubJob": gomap({p.uid: jid for p in job.pods}),
        "MinSubJobs": {},
        "TaskStatusIndex": tsi,
        "Tasks": tasks,
        "TaskMinAvailable": gomap(roles),
        "TaskMinAvailableTotal": n,
        "Allocated": allocated,
        "TotalRequest": resource(cpu, mem, {"nvidia.com/gpu": gpu, "pods": n}),
        "CreationTimestamp": ts(created),
        "PodGroup": pg,
        "ScheduleStartTimestamp": None,
        "Preemptable": job.priority < 1000,
        "RevocableZone": "",
        "Budget": {"MinAvailable": "", "MaxUnavailable": ""},
    }
    return orjson.dumps(info)


def make_cluster(
    n_nodes: int,
    n_pods: int,
    *,
    running_frac: float = 0.75,
    daemons_per_node: int = 10,
    seed: int = 5,
    metrics_time: str | None = None,
) -> Cluster:
    """``metrics_time``: when set, every node carries ``ResourceUsage`` sampled then, with the
    load of :func:`node_load` (else Go's zero value: no metrics)."""
    rng = random.Random(seed)
    node_names = [f"node-{i:04d}" for i in range(n_nodes)]
    # Jobs of 1..16 tasks (mean ~10), each task 4-16 cores, 1-2 GPUs.
    jobs: list[Job] = []
    made = 0
    t = 0
    while made < n_pods:
        size = min(rng.choice([1, 2, 4, 8, 8, 16, 16, 16]), n_pods - made)
        ns = NAMESPACES[len(jobs) % len(NAMESPACES)]
        name = f"job-{len(jobs):05d}"
        job = Job(ns, name, uid(rng), "q-" + ns, rng.choice([100, 500, 1000, 2000]))
        role = "worker"
        cpu = rng.choice([4, 8, 16])
        mem = cpu * 8
        gpu = rng.choice([0, 1, 2])
        for k in range(size):
            t += 1
            job.pods.append(
                PodSpec(
                    f"{name}-{role}-{k}",
                    ns,
                    uid(rng),
                    name,
                    role,
                    cpu,
                    mem,
                    gpu,
                    "",
                    job.priority,
                    t,
                )
            )
        jobs.append(job)
        made += size
    # Running jobs are placed round-robin over the nodes; the rest are pending.
    n_running = int(n_pods * running_frac)
    node_tasks: dict[str, dict[str, bytes]] = {n: {} for n in node_names}
    used = {n: [0, 0, 0, 0] for n in node_names}
    placed = 0
    slot = 0
    pending: list[tuple[Job, PodSpec, bytes, bytes]] = []
    for job in jobs:
        for p in job.pods:
            if placed < n_running:
                p.node = node_names[slot % n_nodes]
                slot += 1
                placed += 1
            pod = make_pod(p, rng)
            tb = orjson.dumps(make_task(p, pod))
            job.tasks[p.uid] = tb
            if p.node:
                node_tasks[p.node][f"{p.namespace}/{p.name}"] = tb
                u = used[p.node]
                u[0] += p.cpu * 1000
                u[1] += p.mem_gi * GI
                u[2] += p.gpu
                u[3] += 1
            else:
                pending.append((job, p, tb, b""))
    # DaemonSet pods: one task per node per daemon, not part of any job.
    for n in node_names:
        for d in DAEMONS[:daemons_per_node]:
            t += 1
            p = PodSpec(
                f"{d}-{uid(rng)[:5]}",
                "kube-system",
                uid(rng),
                "",
                d,
                1,
                0,
                0,
                n,
                2000001000,
                t,
                daemon=True,
            )
            tb = orjson.dumps(make_task(p, make_pod(p, rng)))
            node_tasks[n][f"{p.namespace}/{p.name}"] = tb
            u = used[n]
            u[0] += 100
            u[1] += 128 * MI
            u[3] += 1
    nodes: dict[str, bytes] = {}
    for ni, n in enumerate(node_names):
        node, images = make_node(n, ni, rng)
        tasks = {k: Fragment(v) for k, v in node_tasks[n].items()}
        usage = None if metrics_time is None else resource_usage(metrics_time, *node_load(ni))
        nodes[n] = orjson.dumps(
            make_nodeinfo(n, node, images, tasks, tuple(used[n]), 1000 + ni, usage)  # type: ignore[arg-type]
        )
    job_bytes = {f"{j.namespace}/{j.name}": make_jobinfo(j) for j in jobs}
    # The allocated form of each pending task (Statement.Allocate: status 2, NodeName set).
    pend2 = []
    for i, (job, p, tb, _) in enumerate(pending):
        task = orjson.loads(tb)
        target = node_names[i % n_nodes]
        task["Status"] = STATUS_ALLOCATED
        task["NodeName"] = target
        task["Pod"]["spec"]["nodeName"] = target
        pend2.append((job, p, tb, orjson.dumps(task)))
    queues = {}
    for ns in NAMESPACES:
        q = "q-" + ns
        queues[q] = {
            "UID": q,
            "Name": q,
            "Weight": 1,
            "Weights": "",
            "Hierarchy": "",
            "Queue": {
                "metadata": {
                    "name": q,
                    "uid": uid(rng),
                    "resourceVersion": "99",
                    "generation": 1,
                    "creationTimestamp": ts(0),
                },
                "spec": {
                    "weight": 1,
                    "capability": {"cpu": "2000", "nvidia.com/gpu": "256"},
                    "reclaimable": True,
                    "guarantee": {},
                    "deserved": {"cpu": "1000", "nvidia.com/gpu": "128"},
                },
                "status": {
                    "state": "Open",
                    "pending": 1,
                    "running": 1,
                    "inqueue": 1,
                    "reservation": {},
                    "allocated": {
                        "cpu": "100",
                        "memory": "800Gi",
                        "nvidia.com/gpu": "16",
                        "pods": "10",
                    },
                },
            },
        }
    namespaces = {
        ns: {
            "Name": ns,
            "QuotaStatus": {
                f"{ns}-quota": {
                    "hard": {"requests.cpu": "4000", "requests.nvidia.com/gpu": "512"},
                    "used": {"requests.cpu": "100", "requests.nvidia.com/gpu": "16"},
                }
            },
        }
        for ns in NAMESPACES
    }
    return Cluster(
        nodes,
        node_names,
        jobs,
        job_bytes,
        gomap(queues),
        gomap(namespaces),
        pend2,
        {n: list(v.values()) for n, v in node_tasks.items()},
    )


# ----------------------------------------------------------------------------- request bodies


def session_open_body(c: Cluster) -> bytes:
    return orjson.dumps(
        {
            "Jobs": gomap({k: Fragment(v) for k, v in c.job_bytes.items()}),
            "Nodes": gomap({k: Fragment(v) for k, v in c.nodes.items()}),
            "Queues": c.queues,
            "NamespaceInfo": c.namespaces,
            "RevocableNodes": {},
            "NodeList": None,
        }
    )


def predicate_body(task: bytes, node: bytes) -> bytes:
    return b'{"task":' + task + b',"node":' + node + b"}"


def prioritize_body(task: bytes, nodes: list[bytes]) -> bytes:
    return b'{"task":' + task + b',"nodes":[' + b",".join(nodes) + b"]}"


def evict_body(evictor: bytes, evictees: list[bytes]) -> bytes:
    return b'{"evictor":' + evictor + b',"evictees":[' + b",".join(evictees) + b"]}"


def job_body(job: bytes) -> bytes:
    return b'{"job":' + job + b"}"


def task_body(task: bytes) -> bytes:
    return b'{"task":' + task + b"}"


# ------------------------------------------------------------------------ data plugins read
#
# What the node, eviction and enqueue plugins read, added to the same deterministic cluster:
# fresh ResourceUsage on every node (usage), a node-group affinity on every queue (nodegroup),
# min-runtime settings on the queues and a recent start on some PodGroups (min-runtime), a
# task-topology affinity on every PodGroup (task-topology), PodDisruptionBudgets over the jobs'
# pod labels (pdb, file source), and evictees that conformance and cdp protect. The times that
# plugins compare with their clock are relative to ``now``, the run's start, so the bodies are
# byte-identical for one ``now``.

GROUPS = ("group-0", "group-1", "group-2", "group-3")
"""The values of the node label ``volcano.sh/nodegroup-name`` (node ``i`` is in ``i % 4``)."""
LAST_START = "kai.scheduler/last-start-timestamp"
TOPOLOGY_AFFINITY = "volcano.sh/task-topology-affinity"
COOLDOWN = "volcano.sh/cooldown-time"
METRICS_AGE = timedelta(seconds=30)
"""How old the metrics sample is at ``now``. Under usage's 5-minute rule that leaves 4.5
minutes, less than a full run: the bench re-times the samples (:func:`retime_metrics`) before
each Caldera configuration's turn."""


def go_time(moment: datetime) -> str:
    """metav1.Time / time.Time as Go marshals a whole-second UTC time."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def node_load(idx: int) -> tuple[float, float]:
    """CPU and memory load (percent, the 10-minute average) of node ``idx``: spread over
    15-94.75% CPU, so about one node in six is above usage's default 80% threshold."""
    return 15 + (idx * 29) % 80 + (idx % 4) * 0.25, 20 + (idx * 17) % 60 + 0.5


def resource_usage(metrics_time: str, cpu: float, mem: float) -> dict[str, Any]:
    """api.NodeUsage (MetricsTime, CPUUsageAvg, MEMUsageAvg by period)."""
    return {"MetricsTime": metrics_time, "CPUUsageAvg": {"10m": cpu}, "MEMUsageAvg": {"10m": mem}}


def queue_affinity(ns_index: int) -> dict[str, Any]:
    """Queue ``spec.affinity`` of the ``ns_index``-th namespace's queue: groups ``i - 1`` and
    ``i`` required (the first also preferred), group ``i + 1`` anti-required; the fourth group is
    neither, so nodegroup rejects half the nodes and scores the rest 150 or 100."""
    g = [GROUPS[(ns_index - 1 + k) % len(GROUPS)] for k in range(3)]
    return {
        "nodeGroupAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [g[0], g[1]],
            "preferredDuringSchedulingIgnoredDuringExecution": [g[0]],
        },
        "nodeGroupAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [g[2]]},
    }


def allowed_groups(queue: str) -> tuple[str, ...]:
    """The groups :func:`queue_affinity` lets ``queue``'s tasks onto."""
    aff = queue_affinity(NAMESPACES.index(queue.removeprefix("q-")))["nodeGroupAffinity"]
    return tuple(aff["requiredDuringSchedulingIgnoredDuringExecution"])


def recently_started(job_index: int) -> bool:
    """min-runtime: every fifth job (from the third) restarted 10 minutes before ``now``."""
    return job_index % 5 == 2


def pdb_blocked(job_index: int) -> bool:
    """pdb: every fifth job (from the second) has no disruption left; the others have one."""
    return job_index % 5 == 1


def decorate(c: Cluster, now: datetime) -> Cluster:
    """Add the queue and PodGroup data of the plugins above to ``c`` (in place)."""
    for i, ns in enumerate(NAMESPACES):
        q = c.queues["q-" + ns]["Queue"]
        q["metadata"]["annotations"] = {"preempt-min-runtime": "2h", "reclaim-min-runtime": "2h"}
        spec = q["spec"]
        # QueueSpec field order: weight, capability, reclaimable, extendClusters, guarantee,
        # affinity, type, parent, deserved.
        q["spec"] = {
            **{k: spec[k] for k in ("weight", "capability", "reclaimable", "guarantee")},
            "affinity": queue_affinity(i),
            "deserved": spec["deserved"],
        }
    restarted = go_time(now - timedelta(minutes=10))
    for k, job in enumerate(c.jobs):
        ann = {TOPOLOGY_AFFINITY: job.pods[0].role}  # self-affinity: a job's workers together
        if recently_started(k):
            ann[LAST_START] = restarted
        c.job_bytes[f"{job.namespace}/{job.name}"] = make_jobinfo(job, ann)
    return c


def plugin_cluster(n_nodes: int, n_pods: int, now: datetime, **kw: Any) -> Cluster:
    """:func:`make_cluster` with fresh metrics (sampled 30 s before ``now``) and
    :func:`decorate`'s data."""
    c = make_cluster(n_nodes, n_pods, metrics_time=go_time(now - METRICS_AGE), **kw)
    return decorate(c, now)


def plugin_predicate_cluster(now: datetime, pods_on_node: int = 30, seed: int = 7) -> Cluster:
    """One node carrying ``pods_on_node`` pods (2/3 Volcano, 1/3 DaemonSet) plus pending tasks,
    with the plugins' data."""
    daemons = pods_on_node // 3
    vol = pods_on_node - daemons
    return plugin_cluster(
        1, vol + 8, now, running_frac=vol / (vol + 8), daemons_per_node=daemons, seed=seed
    )


def node_task(c: Cluster, node: str | None = None) -> tuple[Job, PodSpec, bytes]:
    """The first pending GPU task (else the first pending task) whose queue's affinity lets it
    onto ``node`` (any node when None): the task predicate and prioritize are asked about."""
    group = None
    if node is not None:
        group = GROUPS[c.node_names.index(node) % len(GROUPS)]
    fits = [
        (job, p, tb)
        for job, p, tb, _ in c.pending
        if group is None or group in allowed_groups(job.queue)
    ]
    if not fits:
        raise ValueError(f"no pending task may go to node {node}")
    return next((f for f in fits if f[1].gpu), fits[0])


def predicate_probes(task: bytes, node: bytes) -> dict[str, bytes]:
    """Bodies each of whose answers must be a rejection by one node plugin (the same task and
    node with one thing changed), keyed by the reason the plugin gives."""
    n = orjson.loads(node)
    labels = n["Node"]["metadata"]["labels"]
    t = orjson.loads(task)
    job_queue = "q-" + t["Namespace"]
    outside = next(g for g in GROUPS if g not in allowed_groups(job_queue))
    other_group = {**n, "Node": {**n["Node"], "metadata": {**n["Node"]["metadata"],
                   "labels": gomap({**labels, "volcano.sh/nodegroup-name": outside})}}}  # fmt: skip
    usage = n["ResourceUsage"]
    hot = {**n, "ResourceUsage": {**usage, "CPUUsageAvg": {"10m": 95.5}}}
    # proportional: a CPU-only task leaving the node fewer cores than its idle GPUs keep
    idle = dict(n["Idle"])
    idle["ScalarResources"] = {**idle["ScalarResources"], "nvidia.com/gpu": 8000}
    all_idle = {**n, "Idle": idle}
    cpu_only = dict(t)
    scalars = {
        k: v for k, v in (t["Resreq"]["ScalarResources"] or {}).items() if k != "nvidia.com/gpu"
    }
    cpu_only["Resreq"] = {**t["Resreq"], "MilliCPU": max(1000, idle["MilliCPU"] - 1000),
                          "ScalarResources": scalars}  # fmt: skip
    return {
        "node does not satisfy the node group affinity": predicate_body(
            task, orjson.dumps(other_group)
        ),
        "the CPU load of the node exceeds the upper limit.": predicate_body(
            task, orjson.dumps(hot)
        ),
        "proportional of resource nvidia.com/gpu check failed": predicate_body(
            orjson.dumps(cpu_only), orjson.dumps(all_idle)
        ),
    }


@dataclass
class EvictCase:
    evictor: bytes
    evictees: list[bytes]
    protected: dict[str, int]  # by plugin: how many evictees it alone would keep


def evict_case(c: Cluster, n: int, now: datetime) -> EvictCase:
    """An evictor (a pending task of the highest-priority job) and ``n`` running evictees, one
    per running job in turn, so every plugin has some to protect: priority those of jobs at the
    evictor's priority or above, pdb those of :func:`pdb_blocked` jobs, min-runtime those of
    :func:`recently_started` jobs; of the others, every sixth from the second is made
    system-cluster-critical (conformance) and every sixth from the fifth was scheduled 2 minutes
    before ``now`` with a 1-hour cooldown (cdp). The protections outlast ``now`` by about an
    hour (min-runtime's 2 hours from a start 10 minutes before ``now``), longer than a run."""
    job_index = {id(j): k for k, j in enumerate(c.jobs)}
    top = max(c.pending, key=lambda x: x[0].priority)
    evictor_job, _, evictor, _ = top
    running = [j for j in c.jobs if any(p.node for p in j.pods)]
    queues = [[p for p in j.pods if p.node] for j in running]
    picked: list[tuple[Job, PodSpec]] = []
    depth = 0
    while len(picked) < n and depth < max(len(q) for q in queues):
        picked += [(j, q[depth]) for j, q in zip(running, queues, strict=True) if depth < len(q)]
        depth += 1
    picked = picked[:n]
    out: list[bytes] = []
    protected = {k: 0 for k in ("priority", "pdb", "min-runtime", "conformance", "cdp")}
    for k, (job, p) in enumerate(picked):
        tb = job.tasks[p.uid]
        idx = job_index[id(job)]
        if job.priority >= evictor_job.priority:  # same job: equal task priorities
            protected["priority"] += 1
        elif pdb_blocked(idx):
            protected["pdb"] += 1
        elif recently_started(idx):
            protected["min-runtime"] += 1
        elif k % 6 == 1:
            t = orjson.loads(tb)
            t["Pod"]["spec"]["priorityClassName"] = "system-cluster-critical"
            tb = orjson.dumps(t)
            protected["conformance"] += 1
        elif k % 6 == 4:
            t = orjson.loads(tb)
            meta = t["Pod"]["metadata"]
            meta["annotations"] = gomap({**meta["annotations"], COOLDOWN: "1h"})
            t["PodAnnotations"] = meta["annotations"]
            for cond in t["Pod"]["status"]["conditions"]:
                if cond["type"] == "PodScheduled":
                    cond["lastTransitionTime"] = go_time(now - timedelta(minutes=2))
            tb = orjson.dumps(t)
            protected["cdp"] += 1
        out.append(tb)
    return EvictCase(evictor, out, protected)


def pdb_objects(c: Cluster) -> list[dict[str, Any]]:
    """One policy/v1 PodDisruptionBudget per running job, selecting its pods by
    ``volcano.sh/job-name``; :func:`pdb_blocked` jobs have no disruption left, the others one."""
    out = []
    for k, job in enumerate(c.jobs):
        run = [p for p in job.pods if p.node]
        if not run:
            continue
        allowed = 0 if pdb_blocked(k) else 1
        out.append(
            {
                "apiVersion": "policy/v1",
                "kind": "PodDisruptionBudget",
                "metadata": {"name": f"{job.name}-pdb", "namespace": job.namespace},
                "spec": {
                    "maxUnavailable": allowed,
                    "selector": {"matchLabels": {"volcano.sh/job-name": job.name}},
                },
                "status": {
                    "currentHealthy": len(run),
                    "desiredHealthy": len(run) - allowed,
                    "disruptionsAllowed": allowed,
                    "expectedPods": len(run),
                    "observedGeneration": 1,
                },
            }
        )
    return out


def enqueue_job(c: Cluster) -> tuple[bytes, bytes]:
    """jobEnqueueable: the last job with no running task (its PodGroup Pending), and the same
    job asking for more CPU than its namespace's quota allows (resourcequota rejects it)."""
    job = next(j for j in reversed(c.jobs) if not any(p.node for p in j.pods))
    jb = c.job_bytes[f"{job.namespace}/{job.name}"]
    big = orjson.loads(jb)
    big["PodGroup"]["spec"]["minResources"] = {
        **big["PodGroup"]["spec"]["minResources"],
        "cpu": "100000",
    }
    return job_body(jb), job_body(orjson.dumps(big))


def metrics_marker(metrics_time: str) -> bytes:
    return b'"MetricsTime":"' + metrics_time.encode() + b'"'


def retime_metrics(data: bytes, old: str, new: str) -> bytes:
    """``data`` with every metrics sample taken at ``old`` moved to ``new`` (same length)."""
    if len(old) != len(new):
        raise ValueError(f"times of different lengths: {old!r}, {new!r}")
    return data.replace(metrics_marker(old), metrics_marker(new))
