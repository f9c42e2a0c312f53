"""docs/plugin-author-guide.md, "Publishing a plugin": the guide's example package — its
pyproject.toml, the README's plugin module, its tests and caldera.yaml — built into a wheel
beside Caldera's own, installed into a fresh virtualenv outside this checkout, passes its own
tests, mypy --strict and ``caldera check-plugin``, by running the guide's commands as written."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from plugins.api import testing

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "plugin-author-guide.md"
CALDERA_CHECKOUT = "path/to/caldera"
"""What the guide's commands call Caldera's checkout."""


def guide() -> str:
    return GUIDE.read_text()


def block(marker: str) -> str:
    """The fenced block that follows ``<!-- marker -->`` in the guide."""
    match = re.search(rf"<!-- {re.escape(marker)} -->\n```\w*\n(.*?)```", guide(), re.S)
    assert match, f"the guide lost its {marker} block"
    return match.group(1)


def readme_module() -> str:
    match = re.search(
        r"<!-- example-plugin -->\n```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S
    )
    assert match, "README lost its example plugin"
    return match.group(1)


def package_files() -> dict[str, str]:
    """Every file of the example package, by its path in the package."""
    files = {
        name: block(f"example-package: {name}")
        for name in re.findall(r"<!-- example-package: (\S+) -->", guide())
    }
    files["caldera_gpu_model.py"] = readme_module()
    return files


def commands() -> list[str]:
    return [line for line in block("example-commands").splitlines() if line.strip()]


def test_the_guide_describes_a_complete_package() -> None:
    files = package_files()
    assert set(files) == {
        "pyproject.toml",
        "caldera_gpu_model.py",
        "tests/test_gpu_model.py",
        "caldera.yaml",
    }
    assert 'dependencies = ["caldera-volcano' in files["pyproject.toml"]
    section = guide()[guide().index("## Publishing a plugin") :]
    # tests/image/run.sh and test_entry_point_plugin.py take the section's first toml block.
    first_toml = re.search(r"```toml\n(.*?)```", section, re.S)
    assert first_toml and first_toml.group(1) == files["pyproject.toml"]


def isolated_environment() -> dict[str, str]:
    """This process's environment without what would let the package see the checkout or
    this suite's virtualenv."""
    leaks = ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "UV_PROJECT_ENVIRONMENT", "CONDA_PREFIX")
    environment = {k: v for k, v in os.environ.items() if k not in leaks}
    environment["PATH"] = os.pathsep.join(
        part
        for part in environment.get("PATH", "").split(os.pathsep)
        if not part.startswith(str(ROOT))
    )
    return environment


def test_the_example_package_installed_from_wheels_passes_its_checks(tmp_path: Path) -> None:
    """The commands run in a directory outside the checkout; the virtualenv they make has
    Caldera only from its wheel. PyPI (or uv's cache) provides Caldera's own dependencies."""
    uv = shutil.which("uv")
    if uv is None:
        pytest.fail("uv builds the wheels (the README's test setup installs it)")
    package = tmp_path / "caldera-gpu-model"
    for name, text in package_files().items():
        path = package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert not package.resolve().is_relative_to(ROOT)
    environment = isolated_environment()
    outputs: dict[str, str] = {}
    for line in commands():
        argv = [str(ROOT) if word == CALDERA_CHECKOUT else word for word in shlex.split(line)]
        if argv[0] == "uv":
            argv[0] = uv
        result = subprocess.run(
            argv,
            cwd=package,
            env=environment,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert result.returncode == 0, f"{line}\n{result.stdout}\n{result.stderr}"
        outputs[line] = result.stdout
    [wheel] = (package / "wheels").glob("caldera_volcano-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        shipped = set(archive.namelist())
    assert {"app/py.typed", "plugins/py.typed", "schemas/py.typed"} <= shipped
    for release in testing.CAPTURED_RELEASES:
        for verb in testing.captured_verbs(release):
            assert f"plugins/api/captured/volcano-{release}/{verb}.request.json" in shipped
    venv = package / "venv"
    installed = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import plugins, caldera_gpu_model; "
         "print(plugins.__file__); print(caldera_gpu_model.__file__)"],
        cwd=tmp_path, capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    assert all(Path(path).is_relative_to(venv) for path in installed), installed
    [pytest_line] = [line for line in commands() if "pytest" in line]
    assert re.search(r"^4 passed", outputs[pytest_line], re.M), outputs[pytest_line]
    [check_line] = [line for line in commands() if "check-plugin" in line]
    assert_check_plugin_prints_as_the_guide_shows(outputs[check_line])


def assert_check_plugin_prints_as_the_guide_shows(printed: str) -> None:
    """The guide's sample output, with the measured p99 the only number that differs."""
    section = guide()[guide().index("### `caldera check-plugin`") :]
    sample = re.search(r"```\n(caldera check-plugin .*?)```", section, re.S)
    assert sample, "the guide lost check-plugin's sample output"
    pattern = re.escape(sample.group(1)).replace(r"0\.004", r"\d+\.\d{3}")
    assert re.fullmatch(pattern, printed), printed


def test_the_protective_plugin_spares_what_it_cannot_read_and_passes_check_plugin() -> None:
    """ "A protective plugin fails safe by failing": its example spares annotated pods and pods
    it cannot read, names them, and is clean under check-plugin."""
    from app.commands.check_plugin import check, entry_of
    from plugins.api import Arguments, Plugin, Vote, answer_of, registry
    from plugins.api.reasons import Explained

    namespace: dict[str, object] = {}
    exec(compile(block("protective-plugin"), "plugin-author-guide.md", "exec"), namespace)
    cls = namespace["DoNotEvict"]
    assert isinstance(cls, type) and issubclass(cls, Plugin)
    kept = testing.task("kept", annotations={"example.com/do-not-evict": "yes"})
    unreadable = testing.task("unreadable", Pod=None)
    free = testing.task("free")
    plugin = cls(Arguments(plugin=cls.name))
    for hook in (plugin.preemptable, plugin.reclaimable):
        result = hook(testing.task("urgent"), [kept, unreadable, free])
        assert answer_of(result) == ([free], Vote.PERMIT)
        assert isinstance(result, Explained) and set(result.vetoes) == {kept.UID, unreadable.UID}
    registry.register(cls)
    try:
        config, entry = entry_of(cls.name, None)
        assert check(entry, config).clean
    finally:
        registry._registry.pop(cls.name, None)


PROD = """\
volcanoVersion: "1.15"
tiers:
- plugins:
  - name: priority
  - name: conformance
"""
MY_PLUGIN = "test-guide-no-night-jobs"
WITH_MY_PLUGIN = PROD + f"- plugins:\n  - name: {MY_PLUGIN}\n"


def test_the_guides_replay_commands_run_as_commented(tmp_path: Path) -> None:
    """ "Replay recorded traffic": record with prod.yaml, replay it (exit 0: reproducible),
    replay it with a plugin added (exit 1, the verb it changes named)."""
    section = guide()[guide().index("### Replay recorded traffic") :]
    listed = re.search(r"```sh\n(.*?)```", section, re.S)
    assert listed, "the guide lost its replay commands"
    lines = [line.partition("#")[0].split() for line in listed.group(1).splitlines()]
    record, same, changed = lines
    assert record[:2] == ["caldera", "serve"] and same[:2] == changed[:2] == ["caldera", "replay"]
    (tmp_path / "prod.yaml").write_text(PROD)
    (tmp_path / "prod-with-my-plugin.yaml").write_text(WITH_MY_PLUGIN)

    server = testing.serve(None, tmp_path, args=record[2:], cwd=tmp_path)
    try:
        for verb in ("onSessionOpen", "jobEnqueueable", "preemptable", "onSessionClose"):
            assert server.post(verb, testing.captured_body("1.15", verb)).status == 200
    finally:
        assert server.stop() == 0
    assert (tmp_path / "rec").is_dir()

    module = tmp_path / "site" / "guide_plugin.py"  # the plugin added, installed for replay
    module.parent.mkdir()
    module.write_text(
        "from plugins.api import Plugin, Vote\n\n\n"
        "class NoNightJobs(Plugin):\n"
        f"    name = {MY_PLUGIN!r}\n\n"
        "    def job_enqueueable(self, job):\n"
        "        return Vote.REJECT\n"
    )
    dist = module.parent / "guide_plugin-0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: guide-plugin\nVersion: 0\n")
    (dist / "entry_points.txt").write_text(
        f"[caldera.plugins]\n{MY_PLUGIN} = guide_plugin:NoNightJobs\n"
    )
    environment = {**os.environ, "PYTHONPATH": str(module.parent)}
    results = [
        subprocess.run(
            [*testing.caldera_command(), *argv[1:]],
            cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=120,
            check=False,
        )
        for argv in (same, changed)
    ]  # fmt: skip
    assert results[0].returncode == 0, results[0].stdout + results[0].stderr
    assert "answers are the same" in results[0].stdout
    assert results[1].returncode == 1, results[1].stdout + results[1].stderr
    [row] = [line for line in results[1].stdout.splitlines() if line.startswith("jobEnqueueable")]
    assert "1 differ" in row
