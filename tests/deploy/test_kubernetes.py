"""deploy/kubernetes: render every overlay (one per Volcano release, and each native-sidecar one
also with the plain-container component, the documented variant for Kubernetes before 1.29),
then check what Volcano and the kubelet will see against the code — the extender entry against
`caldera volcano-config` for the same configuration, the scheduler conf against the release's own
default, the probe paths against the app's routes, the port against vc-scheduler's own.

The rendering is the real kustomize's (tests/deploy/kustomize.py, built from its Go module);
tests/e2e's manifests scenario applies the same renderings to a real API server with a
server-side dry run. An overlay's Volcano manifest is a URL at the release tag; the test reads
the same file from the published Go module of that release (`go mod download`), so nothing of
Volcano is copied into the repository and the test needs no network beyond the module proxy."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.commands.cli import main
from app.config import load_config
from app.server.main import create_app
from app.server.options import ServeOptions
from tests.deploy.kustomize import Document, load_documents, overlay_urls, render
from tests.deploy.upstream import volcano_file

ROOT = Path(__file__).resolve().parents[2]
KUBERNETES = ROOT / "deploy" / "kubernetes"
OVERLAY = KUBERNETES / "volcano-v1.15.1"
"""The overlay the README and the operator guide walk through."""
PLAIN = "plain-container"
"""The component that makes Caldera an ordinary container (no native sidecars before 1.29)."""
LAST_KUBERNETES = {
    "1.7": (1, 28),
    "1.8": (1, 28),
    "1.10": (1, 30),
    "1.14": (1, 34),
    "1.15": (1, 35),
}
"""The newest Kubernetes each release supports, from the compatibility tables of Volcano's
READMEs (v1.10.0's for 1.7 and 1.8, v1.15.1's for the others)."""


def release_of(overlay: Path) -> str:
    """volcano-v1.15.1 -> 1.15, the volcanoVersion that overlay must configure."""
    match = re.fullmatch(r"volcano-v(\d+)\.(\d+)\.\d+", overlay.name)
    assert match, overlay
    return f"{match[1]}.{match[2]}"


OVERLAYS = sorted(
    KUBERNETES.glob("volcano-v*"), key=lambda o: tuple(map(int, release_of(o).split(".")))
)


def own_components(overlay: Path) -> list[str]:
    kustomization = yaml.safe_load((overlay / "kustomization.yaml").read_text())
    return [Path(c).name for c in kustomization.get("components", [])]


@dataclass(frozen=True)
class Variant:
    overlay: Path
    components: tuple[str, ...] = ()

    @property
    def release(self) -> str:
        return release_of(self.overlay)

    @property
    def plain(self) -> bool:
        return PLAIN in self.components or PLAIN in own_components(self.overlay)

    def __str__(self) -> str:
        return "+".join([self.overlay.name, *self.components])


VARIANTS = [Variant(o) for o in OVERLAYS] + [
    Variant(o, (PLAIN,)) for o in OVERLAYS if PLAIN not in own_components(o)
]


@pytest.fixture(scope="module", params=VARIANTS, ids=str)
def variant(request: pytest.FixtureRequest) -> Variant:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def documents(variant: Variant) -> list[Document]:
    return render(variant.overlay, volcano_file, variant.components)


def upstream(variant: Variant) -> list[Document]:
    """The release's own manifest, as the overlay names it."""
    [url] = overlay_urls(variant.overlay)
    return load_documents(volcano_file(url))


def vc_scheduler_ports(variant: Variant) -> set[int]:
    """vc-scheduler's --listen-address (metrics) and --healthz-address defaults, read from the
    release's cmd/scheduler/app/options/options.go; the sidecar shares the pod's network
    namespace."""
    [url] = overlay_urls(variant.overlay)
    module = volcano_file(url).parents[1]
    options = (module / "cmd" / "scheduler" / "app" / "options" / "options.go").read_text()
    found = re.findall(r'default(?:Listen|Healthz)Address\s*=\s*":(\d+)"', options)
    assert len(found) == 2, "vc-scheduler's default addresses moved: update this test"
    return {int(port) for port in found}


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
EVENTS = "explain-events"
"""The opt-in component granting what explainEvents needs (off in the shipped caldera.yaml)."""
EVENT_OBJECTS = [
    ("ClusterRole", "caldera-event-recorder"),
    ("ClusterRoleBinding", "caldera-event-recorder"),
]


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


def test_sidecar_sits_beside_the_unchanged_scheduler(
    variant: Variant, documents: list[Document]
) -> None:
    deployment = find(documents, "Deployment", "volcano-scheduler")
    original = find(upstream(variant), "Deployment", "volcano-scheduler")
    scheduler = container(deployment, "volcano-scheduler")
    unchanged = original["spec"]["template"]["spec"]["containers"][0]
    # The one addition: a name for vc-scheduler's metrics port, for podmonitor.yaml.
    assert scheduler.pop("ports") == [
        *unchanged.pop("ports", []),
        {"name": "vc-metrics", "containerPort": 8080, "protocol": "TCP"},
    ]
    assert scheduler == unchanged
    pod = deployment["spec"]["template"]
    names = [c["name"] for c in pod["spec"]["containers"]]
    inits = [c["name"] for c in pod["spec"].get("initContainers", [])]
    if variant.plain:
        assert (names, inits) == (["volcano-scheduler", "caldera"], [])
    else:
        assert (names, inits) == (["volcano-scheduler"], ["caldera"])
    assert pod["metadata"]["annotations"]["kubectl.kubernetes.io/default-container"] == (
        "volcano-scheduler"
    )
    # the scheduler reads its configuration from the ConfigMap the conf patch changes
    [mount] = [m for m in scheduler["volumeMounts"] if m["mountPath"] == "/volcano.scheduler"]
    [volume] = [v for v in pod["spec"]["volumes"] if v["name"] == mount["name"]]
    assert volume["configMap"]["name"] == "volcano-scheduler-configmap"
    assert "--scheduler-conf=/volcano.scheduler/volcano-scheduler.conf" in scheduler["args"]


def test_caldera_port_probes_and_config_mount(variant: Variant, documents: list[Document]) -> None:
    deployment = find(documents, "Deployment", "volcano-scheduler")
    caldera = container(deployment, "caldera")
    args = caldera_args(deployment)
    port, health_port = int(args["--port"]), int(args["--health-port"])
    assert not {port, health_port} & vc_scheduler_ports(variant)
    assert args["--host"] == "127.0.0.1", "the verbs stay on the pod's loopback"
    assert args["--health-host"] == "0.0.0.0", "the kubelet probes the pod IP, not loopback"
    [named] = caldera["ports"]
    assert named["containerPort"] == health_port, "only the health listener is a container port"
    served = set(create_app(ServeOptions.of(load_config(None))).openapi()["paths"])
    for probe, path in (("livenessProbe", "/livez"), ("readinessProbe", "/readyz")):
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


@pytest.mark.parametrize(
    ("role", "components", "rules"),
    [
        pytest.param("caldera-pdb-reader", (), [{"apiGroups": ["policy"], "resources":
                     ["poddisruptionbudgets"], "verbs": ["list", "watch"]}], id="pdb"),
        # explainEvents (app/events.py) creates an Event, then patches its count
        pytest.param("caldera-event-recorder", (EVENTS,), [{"apiGroups": [""], "resources":
                     ["events"], "verbs": ["create", "patch"]}], id="events"),
    ],
)  # fmt: skip
def test_rbac_grants_the_pod_what_caldera_does_and_nothing_more(
    variant: Variant, role: str, components: tuple[str, ...], rules: list[dict[str, list[str]]]
) -> None:
    documents = render(variant.overlay, volcano_file, (*variant.components, *components))
    assert find(documents, "ClusterRole", role)["rules"] == rules
    labels = find(documents, "ClusterRole", role)["metadata"]["labels"]
    assert labels["app.kubernetes.io/part-of"] == "caldera"
    binding = find(documents, "ClusterRoleBinding", role)
    assert binding["roleRef"]["name"] == role
    pod = find(documents, "Deployment", "volcano-scheduler")["spec"]["template"]["spec"]
    assert binding["subjects"] == [
        {"kind": "ServiceAccount", "name": pod["serviceAccount"], "namespace": "volcano-system"}
    ]


def test_caldera_configuration_is_valid_and_uses_the_kubernetes_pdb_source(
    variant: Variant, documents: list[Document], tmp_path: Path
) -> None:
    path = caldera_config_file(documents, tmp_path)
    assert main(["check-config", str(path)]) == 0
    config = load_config(str(path))
    assert config.release.name == variant.release, f"the overlay installs Volcano {variant}"
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


def test_the_scheduler_conf_is_the_releases_default_with_the_hosted_plugins_handed_over(
    variant: Variant, documents: list[Document], tmp_path: Path
) -> None:
    """Each overlay's volcano-scheduler.conf is its release's own default (from that release's
    manifest: v1.10.0's queue plugin is capacity, the others' proportion) with exactly the
    documented changes: the plugins Caldera hosts leave their tiers (priority stays for ordering,
    with enablePreemptable false), the extender entry ends the first tier, the queue plugin of a
    later tier votes no victims (enableReclaimable false: issue 47 item 6, it would reclaim what
    Caldera protects when the first tier returns none), and preempt and reclaim run after
    allocate."""
    conf, entry = extender_entry(documents)
    original = yaml.safe_load(
        find(upstream(variant), "ConfigMap", "volcano-scheduler-configmap")["data"][
            "volcano-scheduler.conf"
        ]
    )
    hosted = {
        o.name for o in load_config(str(caldera_config_file(documents, tmp_path))).plugin_options()
    }
    tiers = []
    for tier in original["tiers"]:
        plugins = []
        for plugin in tier["plugins"]:
            if plugin["name"] == "priority":
                plugins.append({**plugin, "enablePreemptable": False})
            elif plugin["name"] in ("proportion", "capacity") and tiers:
                plugins.append({**plugin, "enableReclaimable": False})
            elif plugin["name"] not in hosted:
                plugins.append(plugin)
        tiers.append({"plugins": plugins})
    tiers[0]["plugins"].append(entry)
    assert conf["tiers"] == tiers
    actions = [a.strip() for a in original["actions"].split(",")]
    at = actions.index("allocate") + 1
    assert [a.strip() for a in conf["actions"].split(",")] == [
        *actions[:at],
        "preempt",
        "reclaim",
        *actions[at:],
    ]


def test_caldera_gates_the_scheduler_start_or_is_the_documented_plain_container(
    variant: Variant, documents: list[Document]
) -> None:
    """Issue 27 item 2: an init container with restartPolicy Always (Kubernetes 1.29+) starts
    before vc-scheduler and must pass its startupProbe on /readyz (the health listener) first,
    so the scheduler's first session finds Caldera answering. The plain-container variant (for
    older clusters) is the same container among the pod's containers, without restartPolicy and
    startupProbe, its liveness and readiness probes kept."""
    deployment = find(documents, "Deployment", "volcano-scheduler")
    pod = deployment["spec"]["template"]["spec"]
    caldera = container(deployment, "caldera")
    assert caldera["livenessProbe"]["httpGet"]["path"] == "/livez"
    assert caldera["readinessProbe"]["httpGet"]["path"] == "/readyz"
    if variant.plain:
        assert caldera in pod["containers"] and not pod.get("initContainers")
        assert "restartPolicy" not in caldera and "startupProbe" not in caldera
        return
    [sidecar] = pod["initContainers"]
    assert sidecar is caldera and caldera["restartPolicy"] == "Always"
    startup = caldera["startupProbe"]["httpGet"]
    assert startup["path"] == "/readyz"
    ports = {p["name"]: p["containerPort"] for p in caldera["ports"]}
    health = int(caldera_args(deployment)["--health-port"])
    assert ports.get(startup["port"], startup["port"]) == health
    assert (
        caldera["startupProbe"]["failureThreshold"] * caldera["startupProbe"]["periodSeconds"] >= 60
    )


def test_a_release_without_native_sidecar_clusters_gets_the_plain_container() -> None:
    """Native sidecars need Kubernetes 1.29: the overlay of a release whose supported Kubernetes
    versions end before that (Volcano 1.8: up to 1.28) runs Caldera as a plain container; the
    others run the native sidecar and document the plain variant for older clusters."""
    for overlay in OVERLAYS:
        release = release_of(overlay)
        assert release in LAST_KUBERNETES, f"{overlay.name}: add its Kubernetes range"
        plain = PLAIN in own_components(overlay)
        assert plain == (LAST_KUBERNETES[release] < (1, 29)), overlay.name
        assert own_components(overlay)[0] == "sidecar", "plain-container patches the sidecar"


def test_every_release_overlay_names_its_own_manifest() -> None:
    for overlay in OVERLAYS:
        [url] = overlay_urls(overlay)
        assert f"/{overlay.name.removeprefix('volcano-')}/installer/volcano-development.yaml" in url


def test_the_events_permission_comes_only_with_its_opt_in_component(
    variant: Variant, documents: list[Document], tmp_path: Path
) -> None:
    """explainEvents is off in the shipped caldera.yaml, so the overlays grant no cluster-wide
    create on events; ../explain-events adds it for those who turn it on (issue 34)."""
    rendered = {(d["kind"], d["metadata"]["name"]) for d in documents}
    assert not rendered & set(EVENT_OBJECTS)
    assert load_config(str(caldera_config_file(documents, tmp_path))).explainEvents is False
    opted = render(variant.overlay, volcano_file, (*variant.components, EVENTS))
    added = {(d["kind"], d["metadata"]["name"]) for d in opted} - rendered
    assert added == set(EVENT_OBJECTS)
    guide = (ROOT / "docs" / "operator-guide.md").read_text()
    assert f"../{EVENTS}" in guide and "explainEvents: true" in guide
