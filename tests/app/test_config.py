"""Configuration loading: the Volcano tiers shape, defaults, and every error path."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.config import (
    DEFAULT_MAX_REQUEST_BYTES,
    DEFAULT_MAX_SNAPSHOT_BYTES,
    FLAG_DEFAULTS,
    ConfigError,
    effective_config,
    load_config,
    load_config_text,
)
from plugins.api import registry
from plugins.api.arguments import Arguments
from plugins.api.base import Plugin
from schemas.api import QueueInfo


def load(text: str):
    return load_config_text(text, "caldera.yaml")


def test_embedded_default_is_valid() -> None:
    config = load_config(None)
    assert config.volcanoVersion == (1, 15)
    assert "volcanoVersion" not in config.model_fields_set  # assumed, not pinned
    assert config.maxRequestBytes == DEFAULT_MAX_REQUEST_BYTES
    assert config.maxSnapshotBytes == DEFAULT_MAX_SNAPSHOT_BYTES


@pytest.mark.parametrize(
    ("text", "verb", "limit"),
    [
        ("", "onSessionOpen", DEFAULT_MAX_SNAPSHOT_BYTES),
        ("", "predicate", DEFAULT_MAX_REQUEST_BYTES),
        ("maxSnapshotBytes: 2048\n", "onSessionOpen", 2048),
        ("maxSnapshotBytes: 2048\n", "onSessionClose", DEFAULT_MAX_REQUEST_BYTES),
        ("maxRequestBytes: 4096\n", "onSessionOpen", DEFAULT_MAX_SNAPSHOT_BYTES),
        ("maxRequestBytes: 4096\n", "jobReady", 4096),
    ],
)
def test_the_snapshot_has_a_body_limit_of_its_own(text: str, verb: str, limit: int) -> None:
    """onSessionOpen carries the whole cluster; every other verb one task, job or queue."""
    config = load(text)
    assert config.body_limit(verb) == limit
    assert effective_config(config)["maxSnapshotBytes"] == config.maxSnapshotBytes


def test_empty_tiers_and_empty_file_are_valid() -> None:
    assert load("tiers: []\n").tiers == []
    assert load("").tiers == []


def test_full_example() -> None:
    config = load(
        """
volcanoVersion: "1.15"
managedResources: [nvidia.com/gpu]
maxRequestBytes: 1048576
tiers:
- plugins:
  - name: sla
    arguments: {sla-waiting-time: 1h}
    enableJobEnqueued: false
  - name: conformance
- plugins:
  - name: priority
"""
    )
    assert config.volcanoVersion == (1, 15)
    assert config.managedResources == ["nvidia.com/gpu"]
    sla = config.tiers[0].plugins[0]
    assert sla.arguments == {"sla-waiting-time": "1h"}
    assert sla.enabled("enableJobEnqueued") is False
    assert sla.enabled("enablePreemptable") is True


def test_flag_defaults_follow_volcano() -> None:
    option = load("tiers: [{plugins: [{name: sla}]}]").tiers[0].plugins[0]
    for flag, default in FLAG_DEFAULTS.items():
        assert option.enabled(flag) is default
    assert option.enabled("enableHierarchy") is False
    assert option.enabled("enabledClusterOrder") is False
    assert sum(not v for v in FLAG_DEFAULTS.values()) == 2


@pytest.mark.parametrize(
    ("version", "expected"),
    [
        ('"1.6"', (1, 6)),
        ('"1.10"', (1, 10)),
        ('"v1.15.1"', (1, 15, 1)),
        ('"1.14.1"', (1, 14, 1)),
        ("1.15", (1, 15)),
        ('"1.16.0-alpha.1"', (1, 16, 0)),
        ("1.9", (1, 9)),
    ],
)
def test_versions(version: str, expected: tuple[int, ...]) -> None:
    assert load(f"volcanoVersion: {version}").volcanoVersion == expected


def test_a_named_patch_release_is_kept_and_shown() -> None:
    config = load('volcanoVersion: "1.14.1"')
    assert config.release.name == "1.14.1"
    assert config.release.version == (1, 14)  # the wire protocol follows the line
    assert effective_config(config)["volcanoVersion"] == "1.14.1"


@pytest.mark.parametrize(
    ("text", "path", "problem"),
    [
        ("volcanoVersion: 1.10", "volcanoVersion", "quoted string"),
        ('volcanoVersion: "1.5"', "volcanoVersion", "not supported"),
        ('volcanoVersion: "1.17"', "volcanoVersion", "not supported"),
        ('volcanoVersion: "latest"', "volcanoVersion", "not a Volcano release"),
        ("volcanoVersion: [1]", "volcanoVersion", "must be a string"),
        ("unknownKey: 1", "unknownKey", "unknown key"),
        ("maxRequestBytes: 0", "maxRequestBytes", "greater than 0"),
        ("maxSnapshotBytes: 0", "maxSnapshotBytes", "greater than 0"),
        ("maxRequestBytes: lots", "maxRequestBytes", "valid integer"),
        ("managedResources: nvidia.com/gpu", "managedResources", "YAML list"),
        ("managedResources: [1]", "managedResources[0]", "valid string"),
        ("tiers: {plugins: []}", "tiers", "list of tiers"),
        ("tiers: [3]", "tiers[0]", "mapping"),
        ("tiers: [{plugins: [], extra: 1}]", "tiers[0].extra", "unknown tier key"),
        ("tiers: [{plugins: {name: sla}}]", "tiers[0].plugins", "list of plugins"),
        ("tiers: [{plugins: [sla]}]", "tiers[0].plugins[0]", "mapping"),
        ("tiers: [{plugins: [{name: nope}]}]", "tiers[0].plugins[0].name", "unknown plugin 'nope'"),
        ("tiers: [{plugins: [{arguments: {}}]}]", "tiers[0].plugins[0].name", "required"),
        (
            "tiers: [{plugins: [{name: sla, enablePreemptable: 'yes please'}]}]",
            "tiers[0].plugins[0].enablePreemptable",
            "true or false",
        ),
        (
            "tiers: [{plugins: [{name: sla, enablePreemptable: 1}]}]",
            "tiers[0].plugins[0].enablePreemptable",
            "true or false",
        ),
        (
            "tiers: [{plugins: [{name: sla, enablepreemptable: true}]}]",
            "tiers[0].plugins[0].enablepreemptable",
            "did you mean 'enablePreemptable'",
        ),
        (
            "tiers: [{plugins: [{name: sla, weight: 3}]}]",
            "tiers[0].plugins[0].weight",
            "unknown plugin option",
        ),
        (
            "tiers: [{plugins: [{name: sla, arguments: [1]}]}]",
            "tiers[0].plugins[0].arguments",
            "valid dictionary",
        ),
        (
            "tiers: [{plugins: [{name: pdb, arguments: {source: etcd}}]}]",
            "tiers[0].plugins[0].arguments.source",
            "unknown source 'etcd'",
        ),
        (
            "tiers: [{plugins: [{name: pdb, arguments: {source: file}}]}]",
            "tiers[0].plugins[0].arguments.file",
            "needs a 'file' argument",
        ),
        ("tiers: [\n- plugins: [", "line", "not valid YAML"),
        ("- 1\n- 2\n", "", "YAML mapping"),
    ],
)
def test_errors_name_file_path_and_problem(text: str, path: str, problem: str) -> None:
    with pytest.raises(ConfigError) as info:
        load(text)
    message = str(info.value)
    assert message.startswith("caldera.yaml")
    assert info.value.path.startswith(path)
    assert problem in message


def test_unreadable_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the file"):
        load_config(tmp_path / "missing.yaml")


def test_null_arguments_are_empty() -> None:
    option = load("tiers: [{plugins: [{name: sla, arguments: null}]}]").tiers[0].plugins[0]
    assert option.arguments == {}


def test_effective_configuration_spells_out_defaults() -> None:
    config = load("tiers: [{plugins: [{name: sla, enablePreemptable: false}]}]")
    effective = effective_config(config)
    entry = effective["tiers"][0]["plugins"][0]
    assert entry["enablePreemptable"] is False and "enableJobEnqueued" not in entry
    assert effective["volcanoVersion"] == "1.15"
    every = effective_config(config, all_flags=True)["tiers"][0]["plugins"][0]
    assert every["enablePreemptable"] is False and every["enableJobEnqueued"] is True


@pytest.mark.parametrize(
    ("version", "plugin", "verbs", "refusal"),
    [
        ("1.16", "nodegroup", {"predicate", "prioritize", "allocate", "deallocate"}, None),
        ("1.15", "nodegroup", {"predicate", "prioritize"}, None),
        ("1.13", "nodegroup", {"predicate", "prioritize"}, None),
        ("1.12", "nodegroup", None, "follows Volcano's from v1.13.0"),
        ("1.9", "nodegroup", None, "follows Volcano's from v1.13.0"),
        ("1.16", "usage", {"predicate", "prioritize", "allocate", "deallocate"}, None),
        ("1.14", "usage", {"predicate", "prioritize"}, None),
        ("1.10", "usage", {"predicate", "prioritize"}, None),
        ("1.9", "usage", None, "follows Volcano's from v1.10.0"),
        ("1.12", "task-topology", None, "needs the allocate verb"),
    ],
)
def test_the_verbs_a_plugin_needs_depend_on_the_release(
    version: str, plugin: str, verbs: set[str] | None, refusal: str | None
) -> None:
    """Issue 29 item 3: nodegroup's and usage's allocate/deallocate handlers exist from 1.16;
    before it they need no event verbs, so the releases whose upstream plugin they follow (1.13
    and 1.10 on) can use them. An older release is refused for the real reason."""
    from app.commands.volcano_entry import needed_verbs

    text = f'volcanoVersion: "{version}"\ntiers: [{{plugins: [{{name: {plugin}}}]}}]\n'
    if refusal is not None:
        with pytest.raises(ConfigError, match=refusal):
            load(text)
        return
    needed, _ = needed_verbs(load(text))
    assert set(needed) - {"onSessionOpen", "onSessionClose"} == verbs


class _ArgumentErrors(Plugin):
    """A plugin whose ``argument_errors`` answers whatever the case gives it."""

    name = "test-config-argument-errors"
    answer: object = None

    @classmethod
    def argument_errors(cls, arguments: Arguments) -> dict[str, str]:
        if isinstance(cls.answer, Exception):
            raise cls.answer
        return cls.answer  # type: ignore[return-value]

    def overused(self, queue: QueueInfo) -> bool:
        return False


@pytest.mark.parametrize(
    ("name", "answer", "problem"),
    [
        pytest.param("a list, as an author wrote it", ["limit must be positive"],
                     "plugin 'test-config-argument-errors': argument_errors returned list"
                     " ['limit must be positive']; expected a dict of"
                     " argument name to problem (dict[str, str])", id="list"),
        pytest.param("a message that is not a string", {"limit": 3},
                     "plugin 'test-config-argument-errors': argument_errors returned the entry"
                     " 'limit': 3; expected a dict", id="int"),
        pytest.param("raises", ValueError("limit"),
                     "plugin 'test-config-argument-errors': argument_errors raised ValueError:"
                     " limit", id="raises"),
        pytest.param("the contract: its problems, by key", {"limit": "must be positive"},
                     "tiers[0].plugins[0].arguments.limit: must be positive", id="dict"),
    ],
)  # fmt: skip
def test_argument_errors_of_another_type_are_a_configuration_error_naming_the_plugin(
    name: str, answer: object, problem: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Issue 47 item 9: a plugin returning a list from argument_errors made check-config print a
    traceback."""
    from app.commands.cli import main

    registry.register(_ArgumentErrors)
    _ArgumentErrors.answer = answer
    try:
        path = tmp_path / "caldera.yaml"
        path.write_text(f"tiers: [{{plugins: [{{name: {_ArgumentErrors.name}}}]}}]\n")
        assert main(["check-config", str(path)]) == 2, name
        err = capsys.readouterr().err
        assert problem in err, (name, err)
        assert "Traceback" not in err
    finally:
        registry._registry.pop(_ArgumentErrors.name, None)


@pytest.mark.parametrize(
    ("name", "text", "problems", "rest"),
    [
        pytest.param("an unknown plugin set aside, the others where the file has them",
                     "tiers:\n- plugins:\n  - name: nosuch\n  - name: overcommit\n"
                     "  - {name: sla, enableJobEnqueued: maybe}\n",
                     ["tiers[0].plugins[0].name", "tiers[0].plugins[2].enableJobEnqueued"],
                     {"maxSnapshotBytes": DEFAULT_MAX_SNAPSHOT_BYTES,
                      "tiers": [[(1, "overcommit"), (2, "sla")]]},
                     id="unknown plugin"),
        pytest.param("a key pydantic refuses goes; the entry's plugin is still checked",
                     "tiers: [{plugins: [{name: cdp, arguments: 5}, {name: nosuch}]}]\n",
                     ["tiers[0].plugins[0].arguments", "tiers[0].plugins[1].name"],
                     {"maxSnapshotBytes": DEFAULT_MAX_SNAPSHOT_BYTES, "tiers": [[(0, "cdp")]]},
                     id="refused arguments"),
        pytest.param("a refused top-level key takes its default",
                     "maxSnapshotBytes: -1\ntiers: [{plugins: [{name: nosuch}, {name: sla}]}]\n",
                     ["maxSnapshotBytes", "tiers[0].plugins[0].name"],
                     {"maxSnapshotBytes": DEFAULT_MAX_SNAPSHOT_BYTES, "tiers": [[(1, "sla")]]},
                     id="top level"),
        pytest.param("an entry that is no mapping (no 'unknown plugin' beside it)",
                     "tiers: [{plugins: [5, {name: sla}]}]\n",
                     ["tiers[0].plugins[0]"],
                     {"maxSnapshotBytes": DEFAULT_MAX_SNAPSHOT_BYTES, "tiers": [[(1, "sla")]]},
                     id="not a mapping"),
    ],
)  # fmt: skip
def test_a_config_error_carries_the_rest_of_the_file(
    name: str, text: str, problems: list[str], rest: dict
) -> None:
    """One salvage for every reader: parse_config says every problem and keeps what is valid
    without them (ConfigError.rest), each entry at its file position, for check-config's
    warnings (it had its own reparse of the file before)."""
    with pytest.raises(ConfigError) as caught:
        load(text)
    error = caught.value
    assert [error.path, *(path for path, _ in error.more)] == problems, name
    assert error.rest is not None, name
    kept = {
        "maxSnapshotBytes": error.rest.maxSnapshotBytes,
        "tiers": [[(i, o.name) for i, o in tier.indexed()] for tier in error.rest.tiers],
    }
    assert kept == rest, name


def test_no_rest_when_what_is_left_is_not_a_configuration() -> None:
    with pytest.raises(ConfigError) as caught:
        load("tiers: 5\n")
    assert caught.value.rest is None
