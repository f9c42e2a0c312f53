"""deploy/kubernetes: render the overlay, then check what Volcano and the kubelet will see
against the code — the extender entry against `caldera volcano-config` for the same
configuration, the probe paths against the app's routes, the port against vc-scheduler's own.

The rendering is tests/deploy/kustomize.py's, and the real kustomize (built from its Go module)
must agree with it; tests/e2e's manifests scenario applies the rendering to a real API server
with a server-side dry run.
The overlay's Volcano manifest is a URL at the release tag; the test reads the same file from
the published Go module of that release (`go mod download`), so nothing of Volcano is copied
into the repository and the test needs no network beyond the module proxy."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.cli import main
from app.config import load_config
from app.main import create_app
from tests.deploy.kustomize import Document, load_documents, render
from tests.deploy.upstream import kustomize_binary, volcano_file

ROOT = Path(__file__).resolve().parents[2]
KUBERNETES = ROOT / "deploy" / "kubernetes"
OVERLAY = KUBERNETES / "volcano-v1.15.1"
VC_SCHEDULER_PORTS = {8080, 11251}
"""vc-scheduler's --listen-address (metrics) and --healthz-address defaults in v1.15.1
(cmd/scheduler/app/options/options.go); the sidecar shares the pod's network namespace."""


SCHEDULER_OBJECTS = [
    ("ServiceAccount", "volcano-scheduler"),
    ("ConfigMap", "volcano-scheduler-configmap"),
    ("ClusterRole", "volcano-scheduler"),
    ("ClusterRoleBinding", "volcano-scheduler-role"),
    ("Service", "volcano-scheduler-service"),
    ("Deployment", "volcano-scheduler"),
]
CALDERA_OBJECTS = [
    ("ConfigMap", "caldera-config"),
    ("ClusterRole", "caldera-pdb-reader"),
    ("ClusterRoleBinding", "caldera-pdb-reader"),
]


def overlay_urls() -> list[str]:
    kustomization = yaml.safe_load((OVERLAY / "kustomization.yaml").read_text())
    return [r for r in kustomization["resources"] if r.startswith("https://")]


@pytest.fixture(scope="module")
def documents() -> list[Document]:
    return render(OVERLAY, volcano_file)


def find(documents: list[Document], kind: str, name: str) -> Document:
    [document] = [d for d in documents if d["kind"] == kind and d["metadata"]["name"] == name] or [
        None
    ]
    assert document is not None, f"no {kind} {name} in the rendered overlay"
    return document


def container(deployment: Document, name: str) -> Document:
    """A container of the pod by name, an app container or an init container (a native sidecar)."""
    spec = deployment["spec"]["template"]["spec"]
    every = [*spec.get("initContainers", []), *spec["containers"]]
    [found] = [c for c in every if c["name"] == name]
    return found


def caldera_args(deployment: Document) -> dict[str, str]:
    args = container(deployment, "caldera")["args"]
    assert args[0] == "serve"
    return dict(zip(args[1::2], args[2::2], strict=True))


def extender_entry(documents: list[Document]) -> tuple[dict[str, Any], dict[str, Any]]:
    conf = yaml.safe_load(
        find(documents, "ConfigMap", "volcano-scheduler-configmap")["data"][
            "volcano-scheduler.conf"
        ]
    )
    entries = [p for tier in conf["tiers"] for p in tier["plugins"] if p["name"] == "extender"]
    assert len(entries) == 1, "exactly one extender entry"
    return conf, entries[0]


def caldera_config_file(documents: list[Document], tmp_path: Path) -> Path:
    path = tmp_path / "caldera.yaml"
    path.write_text(find(documents, "ConfigMap", "caldera-config")["data"]["caldera.yaml"])
    return path


def test_every_document_parses_with_the_expected_kinds_and_names(
    documents: list[Document],
) -> None:
    rendered = [(d["kind"], d["metadata"]["name"]) for d in documents]
    assert len(rendered) == len(set(rendered)), "no object twice"
    for wanted in SCHEDULER_OBJECTS + CALDERA_OBJECTS:
        assert wanted in rendered, f"{wanted} missing from the rendered overlay"
    for document in documents:
        ours = (
            document["kind"],
            document["metadata"]["name"],
        ) in SCHEDULER_OBJECTS + CALDERA_OBJECTS
        if ours and not document["kind"].startswith("Cluster"):
            assert document["metadata"]["namespace"] == "volcano-system"


def test_sidecar_sits_beside_the_unchanged_scheduler(documents: list[Document]) -> None:
    deployment = find(documents, "Deployment", "volcano-scheduler")
    [url] = overlay_urls()
    upstream = next(
        d
        for d in load_documents(volcano_file(url))
        if d["kind"] == "Deployment" and d["metadata"]["name"] == "volcano-scheduler"
    )
    scheduler = container(deployment, "volcano-scheduler")
    assert scheduler == upstream["spec"]["template"]["spec"]["containers"][0]
    pod = deployment["spec"]["template"]
    names = [c["name"] for c in pod["spec"]["containers"]]
    assert names == ["volcano-scheduler"]
    assert [c["name"] for c in pod["spec"]["initContainers"]] == ["caldera"]
    assert pod["metadata"]["annotations"]["kubectl.kubernetes.io/default-container"] == (
        "volcano-scheduler"
    )
    # the scheduler reads its configuration from the ConfigMap the conf patch changes
    [mount] = [m for m in scheduler["volumeMounts"] if m["mountPath"] == "/volcano.scheduler"]
    [volume] = [v for v in pod["spec"]["volumes"] if v["name"] == mount["name"]]
    assert volume["configMap"]["name"] == "volcano-scheduler-configmap"
    assert "--scheduler-conf=/volcano.scheduler/volcano-scheduler.conf" in scheduler["args"]


def test_caldera_port_probes_and_config_mount(documents: list[Document]) -> None:
    deployment = find(documents, "Deployment", "volcano-scheduler")
    caldera = container(deployment, "caldera")
    args = caldera_args(deployment)
    port, health_port = int(args["--port"]), int(args["--health-port"])
    assert not {port, health_port} & VC_SCHEDULER_PORTS
    assert args["--host"] == "127.0.0.1", "the verbs stay on the pod's loopback"
    assert args["--health-host"] == "0.0.0.0", "the kubelet probes the pod IP, not loopback"
    [named] = caldera["ports"]
    assert named["containerPort"] == health_port, "only the health listener is a container port"
    served = set(create_app(load_config(None)).openapi()["paths"])
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        get = caldera[probe]["httpGet"]
        assert get["path"] == path and path in served
        assert get["port"] in (named["name"], health_port)
    config_path = Path(args["--config"])
    [mount] = [m for m in caldera["volumeMounts"] if m["mountPath"] == str(config_path.parent)]
    assert mount["readOnly"] is True
    [volume] = [
        v for v in deployment["spec"]["template"]["spec"]["volumes"] if v["name"] == mount["name"]
    ]
    config_map = find(documents, "ConfigMap", volume["configMap"]["name"])
    assert config_path.name in config_map["data"]


def test_caldera_runs_non_root_read_only_with_requests_within_limits(
    documents: list[Document],
) -> None:
    caldera = container(find(documents, "Deployment", "volcano-scheduler"), "caldera")
    context = caldera["securityContext"]
    assert context["runAsNonRoot"] is True and context["readOnlyRootFilesystem"] is True
    assert context["allowPrivilegeEscalation"] is False
    assert context["capabilities"] == {"drop": ["ALL"]}
    dockerfile_user = re.search(r"^USER (\d+)", (ROOT / "Dockerfile").read_text(), re.M)
    assert dockerfile_user and context["runAsUser"] == int(dockerfile_user[1])
    resources = caldera["resources"]
    assert quantity(resources["requests"]["cpu"]) <= quantity(resources["limits"]["cpu"]) <= 1, (
        "one event loop cannot use more than one core"
    )
    assert quantity(resources["requests"]["memory"]) <= quantity(resources["limits"]["memory"])
    assert caldera["image"] == "caldera:0.1.0"


def test_the_memory_limit_holds_the_largest_snapshot_the_config_accepts(
    documents: list[Document], tmp_path: Path
) -> None:
    """A snapshot Caldera accepts but cannot hold is an OOM kill, and while the sidecar
    restarts Volcano schedules without it: the limit must cover 60 MiB idle plus 1.5 x the
    largest snapshot (a fresh server's first one grows RSS by 1.47 x the body, bench/README)."""
    caldera = container(find(documents, "Deployment", "volcano-scheduler"), "caldera")
    config_map = find(documents, "ConfigMap", "caldera-config")
    path = tmp_path / "caldera.yaml"
    path.write_text(config_map["data"]["caldera.yaml"])
    snapshot = load_config(str(path)).maxSnapshotBytes
    assert quantity(caldera["resources"]["limits"]["memory"]) >= 60 * 2**20 + 1.5 * snapshot


def quantity(text: str) -> float:
    units = {"m": 1e-3, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30}
    for suffix, factor in units.items():
        if text.endswith(suffix):
            return float(text[: -len(suffix)]) * factor
    return float(text)


def test_rbac_grants_the_pod_list_and_watch_on_pdbs_and_nothing_more(
    documents: list[Document],
) -> None:
    role = find(documents, "ClusterRole", "caldera-pdb-reader")
    assert role["rules"] == [
        {"apiGroups": ["policy"], "resources": ["poddisruptionbudgets"], "verbs": ["list", "watch"]}
    ]
    binding = find(documents, "ClusterRoleBinding", "caldera-pdb-reader")
    assert binding["roleRef"]["name"] == "caldera-pdb-reader"
    pod = find(documents, "Deployment", "volcano-scheduler")["spec"]["template"]["spec"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": pod["serviceAccount"], "namespace": "volcano-system"}
    ]


def test_caldera_configuration_is_valid_and_uses_the_kubernetes_pdb_source(
    documents: list[Document], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = caldera_config_file(documents, tmp_path)
    assert main(["check-config", str(path)]) == 0
    config = load_config(str(path))
    assert config.release.name == "1.15", "the overlay installs Volcano v1.15.1"
    [pdb] = [o for o in config.plugin_options() if o.name == "pdb"]
    assert pdb.arguments.get("source") == "kubernetes"


def test_extender_entry_is_what_volcano_config_prints(
    documents: list[Document], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, entry = extender_entry(documents)
    port = caldera_args(find(documents, "Deployment", "volcano-scheduler"))["--port"]
    url = f"http://127.0.0.1:{port}"
    assert entry["arguments"]["extender.urlPrefix"] == url
    path = caldera_config_file(documents, tmp_path)
    timeout = entry["arguments"]["extender.httpTimeout"]
    assert (
        main(["volcano-config", "--config", str(path), "--url", url, "--http-timeout", timeout])
        == 0
    )
    [printed] = yaml.safe_load(capsys.readouterr().out)
    assert entry == printed


def test_the_hosted_plugins_left_volcanos_tiers_and_victim_actions_run(
    documents: list[Document], tmp_path: Path
) -> None:
    conf, _ = extender_entry(documents)
    config = load_config(str(caldera_config_file(documents, tmp_path)))
    in_tree = {p["name"]: p for tier in conf["tiers"] for p in tier["plugins"]}
    for option in config.plugin_options():
        if option.name == "priority":  # stays in-tree for job and task ordering
            assert in_tree["priority"]["enablePreemptable"] is False
        else:
            assert option.name not in in_tree, f"{option.name} is hosted by Caldera now"
    actions = {a.strip() for a in conf["actions"].split(",")}
    assert {"preempt", "reclaim"} <= actions
    first_tier = [p["name"] for p in conf["tiers"][0]["plugins"]]
    assert first_tier[-1] == "extender", "victim voters share the first tier, extender last"


def test_kustomize_renders_the_same(documents: list[Document], tmp_path: Path) -> None:
    """The real kustomize (built from its Go module, tests/deploy/upstream.py) renders the
    overlay exactly as tests/deploy/kustomize.py does, so every check above holds for what
    `kubectl apply -k` applies."""
    # kustomize would fetch the URL; give it the same file locally instead.
    local = tmp_path / "kubernetes"
    shutil.copytree(KUBERNETES, local)
    overlay = local / OVERLAY.name
    text = (overlay / "kustomization.yaml").read_text()
    for index, url in enumerate(overlay_urls()):
        name = f"upstream-{index}.yaml"
        shutil.copy(volcano_file(url), overlay / name)
        text = text.replace(url, name)
    (overlay / "kustomization.yaml").write_text(text)
    result = subprocess.run(
        [str(kustomize_binary()), "build", str(overlay)], capture_output=True, text=True, check=True
    )
    rendered = [d for d in yaml.safe_load_all(result.stdout) if d]

    def key(d: Document) -> tuple[str, str]:
        return d["kind"], d["metadata"]["name"]

    assert sorted(rendered, key=key) == sorted(documents, key=key)


def test_caldera_is_a_native_sidecar_that_gates_the_scheduler_start(
    documents: list[Document],
) -> None:
    """Issue 27 item 2: an init container with restartPolicy Always (Kubernetes 1.29+) starts
    before vc-scheduler and must pass its startupProbe on /readyz (the health listener) first,
    so the scheduler's first session finds Caldera answering."""
    pod = find(documents, "Deployment", "volcano-scheduler")["spec"]["template"]["spec"]
    [caldera] = pod["initContainers"]
    assert caldera["name"] == "caldera" and caldera["restartPolicy"] == "Always"
    startup = caldera["startupProbe"]["httpGet"]
    assert startup["path"] == "/readyz"
    ports = {p["name"]: p["containerPort"] for p in caldera["ports"]}
    health = int(caldera_args(find(documents, "Deployment", "volcano-scheduler"))["--health-port"])
    assert ports.get(startup["port"], startup["port"]) == health
    assert (
        caldera["startupProbe"]["failureThreshold"] * caldera["startupProbe"]["periodSeconds"] >= 60
    )
