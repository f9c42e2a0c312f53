"""The caldera command: check-config, volcano-config, openapi (serve is covered by the service
tests, which run it as a subprocess)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from app.commands.cli import main, openapi_text
from app.config import load_config
from app.server.main import create_app
from app.server.options import ServeOptions

ROOT = Path(__file__).resolve().parents[3]


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "caldera.yaml"
    path.write_text(text)
    return str(path)


def test_check_config_prints_effective_configuration(tmp_path: Path, capsys) -> None:
    path = write(
        tmp_path, "tiers: [{plugins: [{name: overcommit, arguments: {overcommit-factor: 'x'}}]}]"
    )
    assert main(["check-config", path]) == 0
    captured = capsys.readouterr()
    out = captured.out
    assert "valid" in out
    assert (
        "warning: plugin overcommit (tiers[0].plugins[0].arguments.overcommit-factor = 'x'):"
        " argument 'overcommit-factor' = 'x' is not a valid float64" in out
    )
    assert captured.err == ""  # every problem is in the output, once
    effective = yaml.safe_load(out)
    entry = effective["tiers"][0]["plugins"][0]
    assert entry["arguments"] == {"overcommit-factor": 1.2}  # the value in use, not 'x'
    assert "enableJobEnqueued" not in entry  # Volcano's default: left out
    assert effective["volcanoVersion"] == "1.15"
    assert main(["check-config", "--all-flags", path]) == 0
    every = yaml.safe_load(capsys.readouterr().out)["tiers"][0]["plugins"][0]
    assert every["enableJobEnqueued"] is True and every["enableHierarchy"] is False


@pytest.mark.parametrize(
    ("text", "warning", "arguments"),
    [
        pytest.param(
            "tiers: [{plugins: [{name: sla, arguments: {sla-waiting-time: banana}}]}]",
            "plugin sla (tiers[0].plugins[0].arguments.sla-waiting-time = 'banana'): cannot"
            " parse global job waiting time 'banana'",
            {"sla-waiting-time": None},
            id="a duration sla cannot parse: no global SLA",
        ),
        pytest.param(
            "tiers: [{plugins: [{name: overcommit, arguments: {overcommit-factor: 0.0001}}]}]",
            "plugin overcommit (tiers[0].plugins[0].arguments.overcommit-factor = 0.0001):"
            " Invalid input 0.000100 for overcommit-factor, reason: overcommit-factor cannot be"
            " less than 1",
            {"overcommit-factor": 1.2},
            id="a factor below 1: the default",
        ),
        pytest.param(
            "tiers: [{plugins: [{name: min-runtime, arguments: {defaultPreemptMinRuntime: x}}]}]",
            "plugin min-runtime (tiers[0].plugins[0].arguments.defaultPreemptMinRuntime = 'x'):"
            " failed to parse defaultPreemptMinRuntime 'x'",
            {"defaultPreemptMinRuntime": "0s"},
            id="a min-runtime duration: 0s",
        ),
        pytest.param(
            "tiers: []",
            "no plugin is configured",
            None,
            id="no plugin at all",
        ),
        pytest.param(
            "",
            "no plugin is configured",
            None,
            id="an empty file",
        ),
    ],
)
def test_check_config_says_every_problem_on_its_output_and_prints_the_values_in_use(
    tmp_path: Path, capsys, text: str, warning: str, arguments: dict[str, Any] | None
) -> None:
    assert main(["check-config", write(tmp_path, text)]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    [line] = [x for x in captured.out.splitlines() if x.startswith("# warning:")]
    assert warning in line
    effective = yaml.safe_load(captured.out)
    if arguments is not None:
        in_use = effective["tiers"][0]["plugins"][0]["arguments"]
        assert in_use.items() >= arguments.items()  # besides the defaults of the others


def test_check_config_reports_every_error_of_a_file_at_once(tmp_path: Path, capsys) -> None:
    path = write(
        tmp_path,
        "tiers:\n- plugins:\n  - name: slaa\n  - name: overcommit\n    enableJobEnqueued: x\n"
        "  - name: pdb\n    arguments: {source: etcd}\n- plugins:\n  - name: sla\n"
        "    enableNodeOrdr: true\n",
    )
    assert main(["check-config", path]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "caldera: 4 configuration errors:"
    assert [line.split(": ")[1] for line in err[1:]] == [
        "tiers[0].plugins[0].name",
        "tiers[0].plugins[1].enableJobEnqueued",
        "tiers[0].plugins[2].arguments.source",
        "tiers[1].plugins[0].enableNodeOrdr",
    ]


UNKNOWN = "unknown plugin 'nosuch'"


@pytest.mark.parametrize(
    ("name", "text", "errors"),
    [
        pytest.param("a top-level error and an unknown plugin",
                     "maxSnapshotBytes: -1\ntiers: [{plugins: [{name: nosuch}, {name: sla}]}]\n",
                     [("maxSnapshotBytes", "Input should be greater than 0"),
                      ("tiers[0].plugins[0].name", UNKNOWN)], id="top level and plugin"),
        pytest.param("a refused entry and an unknown plugin after it",
                     "tiers: [{plugins: [{name: sla, arguments: [1]}, {name: nosuch}]}]\n",
                     [("tiers[0].plugins[0].arguments", "Input should be a valid dictionary"),
                      ("tiers[0].plugins[1].name", UNKNOWN)], id="entry and plugin"),
        pytest.param("a refused entry and a plugin's argument error after it",
                     "tiers: [{plugins: [{name: sla, arguments: [1]},"
                     " {name: pdb, arguments: {source: etcd}}]}]\n",
                     [("tiers[0].plugins[0].arguments", "Input should be a valid dictionary"),
                      ("tiers[0].plugins[1].arguments.source", "")], id="entry and argument"),
        pytest.param("a refused volcanoVersion: the plugins are still looked up",
                     'volcanoVersion: "1.99"\ntiers: [{plugins: [{name: nosuch}]}]\n',
                     [("tiers[0].plugins[0].name", UNKNOWN),
                      ("volcanoVersion", "Volcano 1.99 is not supported")],
                     id="version and plugin"),
        pytest.param("a tier that is not a mapping: the next keeps its index",
                     "tiers: [x, {plugins: [{name: nosuch}]}]\n",
                     [("tiers[0]", "must be a mapping"), ("tiers[1].plugins[0].name", UNKNOWN)],
                     id="tier and plugin"),
    ],
)  # fmt: skip
def test_check_config_says_a_refused_key_beside_the_plugins_errors(
    tmp_path: Path, capsys, name: str, text: str, errors: list[tuple[str, str]]
) -> None:
    """Issue 47: a refused top-level key (or entry key) hid every plugin's error, the unknown
    plugin among them; the operator guide promises every problem at once."""
    assert main(["check-config", write(tmp_path, text)]) == 2, name
    err = capsys.readouterr().err.splitlines()
    assert err[0] == f"caldera: {len(errors)} configuration errors:", (name, err)
    said = [line for line in err[1:] if not line.startswith("# warning: ")]
    for line, (path, problem) in zip(said, errors, strict=True):
        assert line.split(": ", 2)[1:2] == [path] and problem in line, (name, line)


def test_check_config_error_exits_2_naming_file_and_key(tmp_path: Path, capsys) -> None:
    path = write(tmp_path, "tiers: [{plugins: [{name: sla, enableJobEnqueued: maybe}]}]")
    assert main(["check-config", path]) == 2
    err = capsys.readouterr().err
    assert path in err and "tiers[0].plugins[0].enableJobEnqueued" in err
    assert "true or false" in err


def entry(tmp_path: Path, capsys, text: str, *extra: str) -> tuple[dict, str]:
    assert main(["volcano-config", "--config", write(tmp_path, text), *extra]) == 0
    out = capsys.readouterr().out
    [plugin] = yaml.safe_load(out)
    return plugin, out


def test_volcano_config_lists_exactly_the_needed_verbs(tmp_path: Path, capsys) -> None:
    plugin, _ = entry(
        tmp_path,
        capsys,
        'volcanoVersion: "1.16"\nmanagedResources: [nvidia.com/gpu]\n'
        "tiers: [{plugins: [{name: conformance}, {name: overcommit}]}]",
        "--url",
        "http://caldera:9000/",
        "--http-timeout",
        "2s",
        "--ignorable",
    )
    assert plugin["name"] == "extender"
    args = plugin["arguments"]
    assert args["extender.urlPrefix"] == "http://caldera:9000"
    assert args["extender.httpTimeout"] == "2s"
    assert args["extender.ignorable"] is True
    assert args["extender.managedResources"] == ["nvidia.com/gpu"]
    verbs = {k: v for k, v in args.items() if k.endswith("Verb")}
    assert verbs == {
        "extender.onSessionOpenVerb": "onSessionOpen",
        "extender.onSessionCloseVerb": "onSessionClose",
        "extender.preemptableVerb": "preemptable",
        "extender.reclaimableVerb": "reclaimable",
        "extender.jobEnqueueableVerb": "jobEnqueueable",
        "extender.jobEnqueuedVerb": "jobEnqueued",
    }


@pytest.mark.parametrize(
    ("environment", "url"),
    [
        pytest.param({}, "http://127.0.0.1:8090", id="the shipped sidecar's port"),
        pytest.param({"CALDERA_PORT": "9100"}, "http://127.0.0.1:9100", id="serve's port"),
        pytest.param({"CALDERA_HOST": "0.0.0.0"}, "http://127.0.0.1:8090", id="wildcard"),
        pytest.param({"CALDERA_HOST": "::1"}, "http://[::1]:8090", id="IPv6"),
    ],
)
def test_volcano_config_default_url_is_where_serve_listens(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch, environment: dict[str, str], url: str
) -> None:
    """Issue 34: the default was vc-scheduler's own port 8080; it is serve's default (8090, the
    shipped manifests'), or what CALDERA_HOST/CALDERA_PORT make serve listen on."""
    for name in ("CALDERA_HOST", "CALDERA_PORT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    plugin, _ = entry(tmp_path, capsys, "tiers: [{plugins: [{name: cdp}]}]")
    assert plugin["arguments"]["extender.urlPrefix"] == url


def test_volcano_config_help_names_only_options_it_has(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["volcano-config", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "default http://127.0.0.1:8090" in text
    assert "--host" not in text and "--port" not in text and "host/port" not in text


def test_volcano_config_respects_flags_and_release(tmp_path: Path, capsys) -> None:
    plugin, out = entry(
        tmp_path,
        capsys,
        'volcanoVersion: "1.15"\n'
        "tiers: [{plugins: [{name: conformance, enableReclaimable: false}, {name: overcommit}]}]",
    )
    verbs = {k for k in plugin["arguments"] if k.endswith("Verb")}
    assert "extender.reclaimableVerb" not in verbs
    assert "extender.jobEnqueuedVerb" not in verbs  # Volcano 1.15 has no jobEnqueued
    assert "no jobEnqueued verb" in out


def test_volcano_config_legacy_release_uses_reclaimable_path(tmp_path: Path, capsys) -> None:
    plugin, out = entry(
        tmp_path, capsys, 'volcanoVersion: "1.6"\ntiers: [{plugins: [{name: sla}]}]'
    )
    verbs = {k: v for k, v in plugin["arguments"].items() if k.endswith("Verb")}
    assert verbs == {"extender.reclaimableVerb": "reclaimable"}
    assert "posts jobEnqueueable and queueOverused to the reclaimable" in out


def test_volcano_config_identifiers_entry_for_the_patched_plugin(tmp_path: Path, capsys) -> None:
    """Issue 51: ``--bodies identifiers`` asks the patched plugin for identifiers, the batched
    predicate where a plugin answers the predicate, and onSessionOpen for the session's roster;
    the rest of cluster mode's entry is unchanged."""
    cluster = 'volcanoVersion: "1.14"\nsessionState: cluster\n'
    plugin, out = entry(
        tmp_path,
        capsys,
        cluster + "tiers: [{plugins: [{name: sla}, {name: nodegroup}]}]",
        "--bodies",
        "identifiers",
    )
    plain, _ = entry(
        tmp_path, capsys, cluster + "tiers: [{plugins: [{name: sla}, {name: nodegroup}]}]"
    )
    args = plugin["arguments"]
    assert args["extender.bodies"] == "identifiers"
    assert args["extender.batchPredicateVerb"] == "batchPredicate"
    assert args["extender.onSessionOpenVerb"] == "onSessionOpen"
    assert "onSessionOpen" not in str(plain["arguments"])
    added = {"extender.bodies", "extender.batchPredicateVerb", "extender.onSessionOpenVerb"}
    assert set(args) - added == set(plain["arguments"])
    assert "protocol/volcano-identifiers" in out
    jobs_only, _ = entry(
        tmp_path, capsys, cluster + "tiers: [{plugins: [{name: sla}]}]", "--bodies", "identifiers"
    )
    assert "extender.batchPredicateVerb" not in jobs_only["arguments"]  # no predicate asked


def test_volcano_config_refuses_identifiers_outside_cluster_mode(tmp_path: Path, capsys) -> None:
    config = write(tmp_path, 'volcanoVersion: "1.14"\ntiers: [{plugins: [{name: sla}]}]')
    assert main(["volcano-config", "--config", config, "--bodies", "identifiers"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "--bodies identifiers needs sessionState: cluster" in captured.err


def test_volcano_config_with_no_plugins_has_no_verbs(tmp_path: Path, capsys) -> None:
    plugin, _ = entry(tmp_path, capsys, "tiers: []")
    assert not [k for k in plugin["arguments"] if k.endswith("Verb")]


def test_openapi_document_is_checked_in_and_current(capsys) -> None:
    assert main(["openapi"]) == 0
    printed = capsys.readouterr().out
    checked_in = (ROOT / "openapi" / "openapi.json").read_text()
    assert printed == checked_in, "run `uv run caldera openapi > openapi/openapi.json`"
    document = json.loads(printed)
    assert set(document["paths"]) >= {"/predicate", "/healthz", "/readyz", "/metrics"}


def test_openapi_is_independent_of_configuration() -> None:
    assert (
        openapi_text(create_app(ServeOptions.of(load_config(None))).openapi())
        == (ROOT / "openapi" / "openapi.json").read_text()
    )


@pytest.mark.parametrize("argv", [[], ["serve", "--port", "x"], ["nope"]])
def test_usage_errors_exit_2(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2


def test_volcano_config_follows_release_specific_hooks(tmp_path: Path, capsys) -> None:
    """cdp registers its reclaimable hook only from Volcano 1.12."""
    old, _ = entry(tmp_path, capsys, 'volcanoVersion: "1.11"\ntiers: [{plugins: [{name: cdp}]}]')
    assert {k for k in old["arguments"] if k.endswith("Verb")} == {"extender.preemptableVerb"}
    new, _ = entry(tmp_path, capsys, 'volcanoVersion: "1.12"\ntiers: [{plugins: [{name: cdp}]}]')
    assert "extender.reclaimableVerb" in new["arguments"]


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("tiers: []", "volcanoVersion is not set: assuming Volcano 1.15"),
        ('volcanoVersion: "1.16"', "volcanoVersion 1.16 is an alpha release"),
        ('volcanoVersion: "1.12"', "volcanoVersion 1.12: it decides"),
        ("volcanoVersion: auto", "volcanoVersion is auto: Caldera infers the release"),
    ],
    ids=["default", "alpha", "named", "auto"],
)
def test_check_config_says_which_release_is_assumed(
    tmp_path: Path, capsys, text: str, said: str
) -> None:
    assert main(["check-config", write(tmp_path, text)]) == 0
    assert said in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv",
    [
        ["check-config", "app/default_config.yaml"],
        ["volcano-config", "--nodes", "3000", "--pods", "30000"],
        ["openapi"],
    ],
    ids=lambda a: a[0],
)
def test_a_reader_that_stops_early_ends_the_command_quietly(argv: list[str]) -> None:
    """Issue 24: `caldera check-config FILE | head -1` ended in a BrokenPipeError traceback."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    script = Path(sys.executable).with_name("caldera")
    process = subprocess.Popen(
        [str(script), *argv], cwd=root, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert process.stdout is not None
    process.stdout.readline()
    process.stdout.close()  # as head -1 does after its line
    _, err = process.communicate(timeout=30)
    assert b"Traceback" not in err and b"BrokenPipeError" not in err, err.decode()


@pytest.mark.parametrize(
    ("entry", "unread"),
    [
        ("{name: sla, arguments: {sla-waiting-tme: 1h}}", ["sla-waiting-tme"]),
        ("{name: sla, arguments: {sla-waiting-time: 1h}}", []),
        ("{name: overcommit, arguments: {overcommit-factor: 1.5, overcommit_factor: 2}}",
         ["overcommit_factor"]),
        ("{name: nodegroup, arguments: {strict: false, enablePreferredOrder: true}}", []),
        ("{name: usage, arguments: {usage.weight: 2, thresholds: {cpu: 90}, treshold: 1}}",
         ["treshold"]),
        ("{name: min-runtime, arguments: {defaultPreemptMinRuntime: 1m, defaultPreemptMinRunTime: 2m}}",
         ["defaultPreemptMinRunTime"]),
        ("{name: resource-strategy-fit, arguments: {resourceStrategyFitWeight: 5, resources: {cpu: "
         "{type: MostAllocated, weight: 1}}, sra: {enable: false}, proportional: {enable: false}}}",
         []),
        ("{name: task-topology, arguments: {task-topology.weight: 2}}", []),
        ("{name: priority, arguments: {anything: 1}}", ["anything"]),
    ],
    ids=["sla typo", "sla", "overcommit typo", "nodegroup", "usage typo", "min-runtime typo",
         "resource-strategy-fit", "task-topology", "priority takes none"],
)  # fmt: skip
def test_an_argument_no_plugin_reads_is_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], entry: str, unread: list[str]
) -> None:
    """Issue 24: a typo in a plugin's arguments quietly kept the default (Volcano ignores it
    too); check-config now names every key the plugin does not read."""
    path = tmp_path / "caldera.yaml"
    path.write_text(f'volcanoVersion: "1.16"\ntiers: [{{plugins: [{entry}]}}]\n')
    assert main(["check-config", str(path)]) == 0
    warned = [
        line.split(".arguments.")[1].split(" = ")[0]
        for line in capsys.readouterr().out.splitlines()
        if "not read by this plugin" in line
    ]
    assert warned == unread


@pytest.mark.parametrize(
    ("arguments", "warned"),
    [
        (
            "{source: file, file: /nonexistent/pdbs.yaml}",
            "arguments.file = '/nonexistent/pdbs.yaml'): /nonexistent/pdbs.yaml",
        ),
        (
            "{source: kubernetes, kubeconfig: /nonexistent/kc}",
            "arguments.kubeconfig = '/nonexistent/kc'): /nonexistent/kc",
        ),
        ("{source: file, file: FILE}", None),
        ("{source: kubernetes}", None),
    ],
    ids=["budgets file missing", "kubeconfig missing", "budgets file present", "service account"],
)
def test_check_config_names_each_file_a_plugin_will_read_that_is_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], arguments: str, warned: str | None
) -> None:
    """Issue 24: check-config said valid for a pdb file or kubeconfig that does not exist, and
    /readyz then stayed 503. Warned, not refused: the file may exist only where it is mounted."""
    budgets = tmp_path / "pdbs.yaml"
    budgets.write_text("[]\n")
    path = tmp_path / "caldera.yaml"
    path.write_text(f"tiers: [{{plugins: [{{name: pdb, arguments: {arguments}}}]}}]\n")
    path.write_text(path.read_text().replace("FILE", str(budgets)))
    assert main(["check-config", str(path)]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if "no such file here" in line]
    if warned is None:
        assert lines == []
    else:
        [line] = lines
        assert warned in line and "pdb would never sync" in line


@pytest.mark.parametrize(
    ("settings", "warned"),
    [
        ("explainEvents: true\nexplainEventsKubeconfig: /nonexistent/kc\n", True),
        ("explainEvents: true\nexplainEventsKubeconfig: KUBECONFIG\n", False),
        ("explainEvents: false\nexplainEventsKubeconfig: /nonexistent/kc\n", False),
        ("explainEvents: true\n", False),
    ],
    ids=["events on, kubeconfig missing", "events on, kubeconfig present", "events off",
         "events on, service account"],
)  # fmt: skip
def test_check_config_names_a_missing_kubeconfig_for_podgroup_events(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], settings: str, warned: bool
) -> None:
    """The stop-33 note's limit: a wrong explainEventsKubeconfig showed only when the first
    Event failed to send."""
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\nkind: Config\n")
    path = tmp_path / "caldera.yaml"
    path.write_text(
        settings.replace("KUBECONFIG", str(kubeconfig)) + "tiers: [{plugins: [{name: sla}]}]\n"
    )
    assert main(["check-config", str(path)]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if "no such file here" in line]
    if warned:
        [line] = lines
        assert "explainEventsKubeconfig: /nonexistent/kc" in line and "no PodGroup Event" in line
    else:
        assert lines == []


WARNED = 'volcanoVersion: "1.15"\ntiers:\n- plugins:\n  - name: cdp\n    arguments: {cdp-nope: 1}\n'
UNREAD = "not read by this plugin"


@pytest.mark.parametrize(
    ("argv", "stdin"),
    [
        pytest.param(["FILE"], None, id="positional"),
        pytest.param(["--config", "FILE"], None, id="--config"),
        pytest.param(["-"], WARNED, id="stdin"),
        pytest.param(["--config", "-"], WARNED, id="--config-stdin"),
        pytest.param(["FILE", "--config", "FILE"], None, id="both-the-same"),
    ],
)
def test_check_config_takes_the_file_as_every_subcommand_does_and_stdin(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch, argv: list[str], stdin: str | None
) -> None:
    import io

    path = write(tmp_path, WARNED)
    if stdin is not None:
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    assert main(["check-config", *(path if a == "FILE" else a for a in argv)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"# {'<stdin>' if stdin else path}: valid.")
    assert UNREAD in out


def test_check_config_refuses_two_different_files(tmp_path: Path, capsys) -> None:
    path = write(tmp_path, WARNED)
    assert main(["check-config", path, "--config", "other.yaml"]) == 2
    assert "give the file once" in capsys.readouterr().err


def test_check_config_without_a_file_reads_caldera_config(
    tmp_path: Path, capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CALDERA_CONFIG", write(tmp_path, WARNED))
    assert main(["check-config"]) == 0
    assert UNREAD in capsys.readouterr().out


@pytest.mark.parametrize(
    ("text", "strict", "code"),
    [
        pytest.param(WARNED, False, 0, id="warning"),
        pytest.param(WARNED, True, 1, id="warning-strict"),
        pytest.param("tiers: [{plugins: [{name: cdp}]}]\n", True, 0, id="clean-strict"),
    ],
)
def test_check_config_strict_fails_on_a_warning(
    tmp_path: Path, capsys, text: str, strict: bool, code: int
) -> None:
    argv = ["check-config", write(tmp_path, text), *(["--strict"] if strict else [])]
    assert main(argv) == code
    capsys.readouterr()


@pytest.mark.parametrize(
    ("name", "release", "entry", "error"),
    [
        pytest.param("a typo in another plugin's flag", "1.15", "  - name: priority\n"
                     "    enablePreemptablee: true\n",
                     "tiers[0].plugins[1].enablePreemptablee: unknown plugin option", id="flag"),
        # Issue 47 item 10: an unknown plugin hid every warning of the file.
        pytest.param("an unknown plugin", "1.15", "  - name: nope\n",
                     "tiers[0].plugins[1].name: unknown plugin 'nope'", id="unknown plugin"),
        pytest.param("a plugin this release does not have", "1.10", "  - name: nodegroup\n",
                     "tiers[0].plugins[1].name: plugin 'nodegroup' follows Volcano's from v1.13",
                     id="plugin of another release"),
    ],
)  # fmt: skip
def test_check_config_shows_the_warnings_beside_an_error(
    tmp_path: Path, capsys, name: str, release: str, entry: str, error: str
) -> None:
    """An error in one entry must not hide an unread argument in another: every problem at
    once, as the README says."""
    path = write(tmp_path, WARNED.replace('"1.15"', f'"{release}"') + entry)
    assert main(["check-config", path]) == 2, name
    err = capsys.readouterr().err
    assert error in err, (name, err)
    assert f"# warning: plugin cdp (tiers[0].plugins[0].arguments.cdp-nope = 1): {UNREAD}" in err


OVERCOMMIT_LOW = "  - name: overcommit\n    arguments: {overcommit-factor: 0.5}\n"
SLA_BOGUS = "  - name: sla\n    arguments: {sla-waiting-time: bogus}\n"


@pytest.mark.parametrize(
    ("name", "text", "paths"),
    [
        pytest.param("an unknown plugin first",
                     "tiers:\n- plugins:\n  - name: nosuch\n" + OVERCOMMIT_LOW
                     + "  - name: priority\n" + SLA_BOGUS,
                     ["tiers[0].plugins[1].arguments.overcommit-factor",
                      "tiers[0].plugins[3].arguments.sla-waiting-time"], id="unknown first"),
        pytest.param("two unknown plugins, in two tiers",
                     "tiers:\n- plugins:\n  - name: nosuch\n" + OVERCOMMIT_LOW
                     + "- plugins:\n  - name: priority\n  - name: nosuch2\n" + SLA_BOGUS,
                     ["tiers[0].plugins[1].arguments.overcommit-factor",
                      "tiers[1].plugins[2].arguments.sla-waiting-time"], id="two tiers"),
        pytest.param("an unknown plugin and a top-level error",
                     "maxSnapshotBytes: -1\ntiers:\n- plugins:\n  - name: nosuch\n"
                     + OVERCOMMIT_LOW + "  - name: priority\n" + SLA_BOGUS,
                     ["tiers[0].plugins[1].arguments.overcommit-factor",
                      "tiers[0].plugins[3].arguments.sla-waiting-time"], id="and top level"),
    ],
)  # fmt: skip
def test_check_config_warnings_name_the_entry_where_the_file_has_it(
    tmp_path: Path, capsys, name: str, text: str, paths: list[str]
) -> None:
    """Issue 47: with an unknown plugin set aside, the warnings named each entry by its index
    among the others (plugins[0] for the file's plugins[1])."""
    assert main(["check-config", write(tmp_path, text)]) == 2, name
    warned = [
        line.split(" (", 1)[1].split(" = ")[0]
        for line in capsys.readouterr().err.splitlines()
        if line.startswith("# warning: ")
    ]
    assert warned == paths, name


def test_check_config_spells_out_the_explain_defaults(tmp_path: Path, capsys) -> None:
    from app.config import CalderaConfig

    assert main(["check-config", write(tmp_path, "tiers: []\n")]) == 0
    effective = yaml.safe_load(capsys.readouterr().out)
    for key in ("explainSessions", "explainEntries", "explainEvents", "explainEventsKubeconfig"):
        assert effective[key] == CalderaConfig.model_fields[key].default, key


def test_check_config_says_every_warning_in_one_shape_with_key_path_and_value(
    tmp_path: Path, capsys
) -> None:
    """Three shapes before (``plugin overcommit: argument ...``, ``sla: cannot parse global job
    waiting time 5: time: invalid duration ""`` with neither key path nor the value it met,
    ``plugin cdp (tiers[0].plugins[2]): ...``): one now, the value as written."""
    import re

    text = (
        'volcanoVersion: "1.15"\ntiers:\n- plugins:\n'
        "  - {name: overcommit, arguments: {overcommit-factor: x}}\n"
        "  - {name: sla, arguments: {sla-waiting-time: 5}}\n"
        "  - {name: cdp, arguments: {cdp-nope: 1}}\n"
    )
    assert main(["check-config", write(tmp_path, text)]) == 0
    warnings = [
        line.removeprefix("# warning: ")
        for line in capsys.readouterr().out.splitlines()
        if line.startswith("# warning: ")
    ]
    shape = re.compile(
        r"^plugin [\w-]+ \(tiers\[0\]\.plugins\[\d\]\.arguments\.[\w-]+ = [^)]+\): \S"
    )
    assert len(warnings) == 3 and all(shape.match(w) for w in warnings), warnings
    [sla] = [w for w in warnings if w.startswith("plugin sla")]
    assert sla.startswith("plugin sla (tiers[0].plugins[1].arguments.sla-waiting-time = 5): ")
    assert 'invalid duration ""' not in sla and 'such as "5m"' in sla


GOOD_KUBECONFIG = (
    "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
    "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
    "clusters: [{name: k, cluster: {server: 'https://127.0.0.1:6443'}}]\n"
    "users: [{name: u, user: {token: t}}]\n"
)
# Issue 49 item 4: (case, the sessionStateKubeconfig file's text or None for no file, exit
# status, what is said). The mode cannot serve without the cluster it names.
KUBECONFIG_CASES = [
    ("a kubeconfig that parses", GOOD_KUBECONFIG, 0, None),
    ("no such file", None, 2, "sessionStateKubeconfig: {path}: no such file here"),
    ("not a kubeconfig", "just: [text", 2, "sessionStateKubeconfig: {path}: does not parse"),
]


@pytest.mark.parametrize(
    ("text", "code", "said"),
    [c[1:] for c in KUBECONFIG_CASES],
    ids=[c[0] for c in KUBECONFIG_CASES],
)
@pytest.mark.parametrize("mode", ["cluster", "compare"])
def test_check_config_refuses_a_session_state_kubeconfig_it_cannot_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], mode: str, text: str | None, code: int,
    said: str | None,
) -> None:  # fmt: skip
    kubeconfig = tmp_path / "kc"
    if text is not None:
        kubeconfig.write_text(text)
    path = tmp_path / "caldera.yaml"
    path.write_text(
        f'volcanoVersion: "1.14"\nsessionState: {mode}\nsessionStateKubeconfig: {kubeconfig}\n'
        "tiers: [{plugins: [{name: sla}]}]\n"
    )
    assert main(["check-config", str(path)]) == code
    out = capsys.readouterr()
    if said is not None:
        assert said.format(path=kubeconfig) in out.err, out.err
        assert "Traceback" not in out.err


def test_check_config_warns_when_no_cluster_would_be_watched_here(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    monkeypatch.setenv("HOME", str(tmp_path))
    path = tmp_path / "caldera.yaml"
    path.write_text(
        'volcanoVersion: "1.14"\nsessionState: cluster\ntiers: [{plugins: [{name: sla}]}]\n'
    )
    assert main(["check-config", str(path)]) == 0
    out = capsys.readouterr().out
    assert "sessionStateKubeconfig is unset and no cluster" in out
    assert "in a pod the service account is used" in out


@pytest.mark.parametrize(
    ("name", "argv", "sizing_asked"),
    [
        pytest.param("no size given: the note asks for it", [], True, id="unsized"),
        # Issue 47 item 10: it still said "size it with --nodes N --pods P" with both given.
        pytest.param("the size given: the sizing lines answer", ["--nodes", "100", "--pods", "2000"],
                     False, id="sized"),
    ],
)  # fmt: skip
def test_volcano_config_asks_for_the_size_only_when_not_given_it(
    capsys, name: str, argv: list[str], sizing_asked: bool
) -> None:
    assert main(["volcano-config", *argv]) == 0
    out = capsys.readouterr().out
    assert ("size it with --nodes N --pods P" in out) is sizing_asked, (name, out)
    assert ("# sizing: a snapshot of about" in out) is not sizing_asked, (name, out)


@pytest.mark.parametrize(
    ("name", "entry", "shown"),
    [
        pytest.param("no arguments: none, as Volcano's conf carries none", "{name: sla}",
                     {}, id="none given"),
        pytest.param("a waiting time sla cannot parse: the value in use, no global SLA",
                     "{name: sla, arguments: {sla-waiting-time: 5}}",
                     {"sla-waiting-time": None}, id="refused"),
        pytest.param("a waiting time sla reads", "{name: sla, arguments: {sla-waiting-time: 1h}}",
                     {"sla-waiting-time": "1h"}, id="given"),
    ],
)  # fmt: skip
def test_check_config_prints_the_arguments_as_the_readme_says(
    tmp_path: Path, capsys, name: str, entry: str, shown: dict[str, Any]
) -> None:
    """Issue 47 item 10: the README said ``null`` where check-config printed ``{}``."""
    path = write(tmp_path, f"tiers: [{{plugins: [{entry}]}}]\n")
    assert main(["check-config", path]) == 0, name
    printed = yaml.safe_load(capsys.readouterr().out)
    assert printed["tiers"][0]["plugins"][0]["arguments"] == shown, name


@pytest.mark.parametrize("command", ["explain", "shadow"])
def test_the_asking_commands_call_host_where_to_ask_not_where_to_listen(
    capsys, command: str
) -> None:
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--host HOST the address of the Caldera to ask" in text, text
    assert "listen on" not in text and "listen address" not in text, text


def test_the_openapi_descriptions_do_not_depend_on_msgspecs_version() -> None:
    """Issue 47 item 10: the wheel's ``caldera openapi`` differed from openapi/openapi.json in
    the indentation of the schemas' descriptions (struct docstrings: msgspec 0.23 cleans them,
    0.22 keeps their indentation). Every description is as ``inspect.cleandoc`` leaves it."""
    import inspect

    from app.server.openapi import components

    def descriptions(node: Any) -> list[str]:
        if isinstance(node, dict):
            found = [v for k, v in node.items() if k == "description" and isinstance(v, str)]
            return found + [d for v in node.values() for d in descriptions(v)]
        if isinstance(node, list):
            return [d for v in node for d in descriptions(v)]
        return []

    found = descriptions(components())
    assert any("\n" in d for d in found), "the check would hold vacuously"
    assert [d for d in found if d != inspect.cleandoc(d)] == []
