"""Every ``caldera`` command that README.md and docs/ show, run against what ships.

The same walk-through runs against two installs: the wheel in a fresh virtualenv with its runtime
dependencies only (``tests/shipped/test_wheel.py``) and the container image
(``tests/image/run.sh`` runs ``python -m tests.shipped.walkthrough --image caldera:test``). A
module that imports a package outside the runtime dependencies, or a documented command that no
longer runs, fails both.

A documented command is a command of a fenced shell block (continuation lines joined, each
stage of a pipeline on its own) whose program, after the prefixes that only say where it runs
(``pip install . &&``, ``uv run``, ``kubectl ... exec ... --``, a path such as ``venv/bin/``), is
``caldera``. :func:`invocations` counts ``caldera <subcommand>`` in the same blocks without
parsing them, and ``tests/shipped/test_walkthrough.py`` holds the two equal, so a command the
collector drops fails instead of going unrun (issue 47 item 12). It runs in a scratch
directory, rewritten only where the document names a place that this machine does not have:

- an absolute path becomes its file name in the scratch directory (``/tmp/caldera.yaml``);
- ``serve`` listens on a free loopback port, is driven through one admission session and stops
  on SIGTERM (exit 0); the first one keeps serving while the ``explain`` commands ask it;
- ``explain``'s ``--port N`` or ``--url U`` names that server;
- ``> FILE`` writes the scratch directory's FILE;
- a pipeline's input (``kubectl get configmap ... | caldera volcano-config --merge -``) is its
  stand-in (:data:`STDIN_STAND_INS`: Volcano's Helm default conf for the live ConfigMap);
- ``check-plugin gpu-model`` finds the README's example plugin, installed as a distribution in
  the scratch directory (its module and an entry point on ``PYTHONPATH``).

Each is checked for what its document says it prints (:data:`CHECKS`): the exit status and the
key lines, and every line of an output block the document marks ``<!-- prints -->`` right after
the command's block.

The files the commands name are made first: a ``.yaml`` is a Caldera configuration (the
embedded default's plugins, with ``volcanoVersion`` set), a ``.conf`` Volcano's Helm default
scheduler configuration; a recording directory is what the documented ``serve --record`` wrote.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.examples import HELM_DEFAULT_CONF

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"```(?:sh|bash|console|shell)\n(.*?)```", re.S)
# Prefixes that say where a command runs, not what it is.
WHERE = re.compile(r"^(?:\$ |pip install \. && |uv run |kubectl \S.*? -- |[\w./-]+/(?=caldera ))")
COMMENT = re.compile(r"\s+#\s.*$")
PRINTS = re.compile(r"\s*<!-- prints -->\n```\w*\n(.*?)```", re.S)
"""An output block right after a command's block: what the command prints, line by line."""
SUBCOMMANDS = (
    "serve", "check-config", "check-plugin", "volcano-config", "explain", "shadow", "replay",
    "openapi",
)  # fmt: skip
INVOCATION = re.compile(rf"\bcaldera (?:{'|'.join(SUBCOMMANDS)})\b")


@dataclass(frozen=True)
class DocumentedCommand:
    """One ``caldera`` command as a document shows it, and where."""

    where: str  # document:line
    line: str  # as written
    argv: tuple[str, ...]  # caldera's arguments, paths not yet rewritten
    stdout_to: str | None  # the file of a ``> FILE``
    stdin_from: str | None = None  # the pipeline stage before it, when it reads one
    prints: tuple[str, ...] = ()  # the lines of a ``<!-- prints -->`` block after its block

    @property
    def subcommand(self) -> str:
        return self.argv[0] if self.argv else ""


def documented_commands(documents: Sequence[Path] = DOCUMENTS) -> list[DocumentedCommand]:
    commands = []
    for document in documents:
        text = document.read_text()
        for block in FENCE.finditer(text):
            first_line = text.count("\n", 0, block.start(1)) + 1
            printed = PRINTS.match(text, block.end())
            prints = tuple(printed.group(1).splitlines()) if printed else ()
            for offset, raw in _logical_lines(block.group(1)):
                stages = [stage.strip() for stage in COMMENT.sub("", raw).split(" | ")]
                for at, stage in enumerate(stages):
                    line = stage
                    while (prefix := WHERE.match(line)) is not None:
                        line = line[prefix.end() :]
                    if not line.startswith("caldera "):
                        continue
                    command, _, target = line.partition(" > ")
                    commands.append(
                        DocumentedCommand(
                            where=f"{document.relative_to(ROOT)}:{first_line + offset}",
                            line=raw.strip(),
                            argv=tuple(shlex.split(command)[1:]),
                            stdout_to=target.strip() or None,
                            stdin_from=stages[at - 1] if at else None,
                            prints=prints,
                        )
                    )
    return commands


def _logical_lines(block: str) -> list[tuple[int, str]]:
    """The block's commands, a line ending in ``\\`` joined with the next: (offset of the
    first line, the command)."""
    joined: list[tuple[int, str]] = []
    pending: tuple[int, str] | None = None
    for offset, raw in enumerate(block.splitlines()):
        if pending is not None:
            pending = (pending[0], pending[1] + " " + raw.strip())
        else:
            pending = (offset, raw)
        if pending[1].rstrip().endswith("\\"):
            pending = (pending[0], pending[1].rstrip()[:-1].rstrip())
            continue
        joined.append(pending)
        pending = None
    if pending is not None:
        joined.append(pending)
    return joined


def invocations(documents: Sequence[Path] = DOCUMENTS) -> list[str]:
    """Every ``caldera <subcommand>`` in the documents' shell blocks, found without parsing the
    commands (no prefixes, pipelines or continuations): what :func:`documented_commands` must
    collect, one each."""
    found = []
    for document in documents:
        text = document.read_text()
        for block in FENCE.finditer(text):
            for raw in block.group(1).splitlines():
                code = COMMENT.sub("", raw)
                found += [f"{document.relative_to(ROOT)}: {m}" for m in INVOCATION.findall(code)]
    return found


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def caldera_configuration() -> str:
    """The embedded default's plugins with the release set, as an operator's file would be."""
    default = (ROOT / "app" / "default_config.yaml").read_text()
    return 'volcanoVersion: "1.14"\n' + default


@dataclass
class Outcome:
    command: DocumentedCommand
    argv: list[str]
    returncode: int
    stdout: str
    stderr: str

    def describe(self) -> str:
        return (
            f"{self.command.where}: {self.command.line}\n  ran: {shlex.join(self.argv)}\n"
            f"  exit {self.returncode}\n  stdout: {self.stdout[-1500:]}\n"
            f"  stderr: {self.stderr[-3000:]}"
        )


@dataclass
class Walkthrough:
    """Runs the documented commands with ``caldera`` (an argv prefix) in ``scratch``."""

    caldera: list[str]
    scratch: Path
    outcomes: list[Outcome] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    shadow_serve: DocumentedCommand | None = None

    # -- the scratch directory ------------------------------------------------------------
    def local(self, arg: str) -> str:
        """An absolute path of a document becomes the scratch directory's file of that name."""
        if arg.startswith("/") and not arg.startswith("//"):
            return Path(arg).name
        return arg

    def prepare(self, commands: Sequence[DocumentedCommand]) -> None:
        self.scratch.mkdir(parents=True, exist_ok=True)
        os.chmod(self.scratch, 0o777)  # the image runs as an unprivileged user
        for command in commands:
            for arg in command.argv:
                name = self.local(arg)
                path = self.scratch / name
                if name.endswith(".yaml") and not path.exists():
                    path.write_text(caldera_configuration())
                elif name.endswith(".conf") and not path.exists():
                    path.write_text(HELM_DEFAULT_CONF)
            if command.stdout_to and "/" in command.stdout_to:
                (self.scratch / command.stdout_to).parent.mkdir(parents=True, exist_ok=True)
            if command.subcommand == "check-plugin" and "gpu-model" in command.argv:
                install_example_plugin(self.scratch / "site", self.scratch / "package")

    # -- running --------------------------------------------------------------------------
    def run(self, command: DocumentedCommand, argv: list[str]) -> Outcome:
        environment: dict[str, str] = {}
        cwd = self.scratch
        if command.subcommand == "check-plugin":
            # The example plugin, installed in the scratch; run in its package, whose
            # caldera.yaml is the guide's (the walk-through's own is another configuration).
            environment["PYTHONPATH"] = str(self.scratch / "site")
            cwd = self.scratch / "package"
        full = self.with_environment(environment, argv, cwd)
        stdin = None
        if command.stdin_from is not None:
            stdin = next(
                (text for pattern, text in STDIN_STAND_INS if pattern in command.stdin_from), None
            )
            if stdin is None:
                self.problems.append(f"{command.where}: no stand-in for {command.stdin_from!r}")
                stdin = ""
        result = subprocess.run(
            full, cwd=cwd, capture_output=True, text=True, timeout=120, check=False,
            input=stdin, env={**os.environ, **environment},
        )  # fmt: skip
        if command.stdout_to:
            (self.scratch / command.stdout_to).write_text(result.stdout)
        outcome = Outcome(command, full, result.returncode, result.stdout, result.stderr)
        self.outcomes.append(outcome)
        return outcome

    def with_environment(
        self, environment: dict[str, str], argv: list[str], cwd: Path
    ) -> list[str]:
        """``caldera argv`` with ``environment`` in ``cwd``: the process's own, or for the
        image ``docker run`` options (before the image, the prefix's last word)."""
        if self.caldera[0] != "docker" or (not environment and cwd == self.scratch):
            return [*self.caldera, *argv]
        options = [f"--env={name}={value}" for name, value in environment.items()]
        return [*self.caldera[:-1], *options, f"--workdir={cwd}", self.caldera[-1], *argv]

    def expect(self, outcome: Outcome, ok: bool, why: str) -> None:
        if "Traceback (most recent call last)" in outcome.stderr:
            ok, why = False, "printed a traceback"
        if not ok:
            self.problems.append(f"{why}\n{outcome.describe()}")

    def serve(self, command: DocumentedCommand) -> tuple[subprocess.Popen[str], str]:
        argv = [self.local(arg) for arg in command.argv]
        for option in ("--port", "--health-port"):
            if option in argv:
                argv[argv.index(option) + 1] = str(free_port())
        port = free_port()
        argv += ["--host", "127.0.0.1", "--port", str(port)]
        if "--health-host" in argv and "--health-port" not in argv:
            argv += ["--health-host", "127.0.0.1", "--health-port", str(free_port())]
        process = subprocess.Popen(
            [*self.caldera, *argv],
            cwd=self.scratch,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "CALDERA_LOG_FORMAT": "text"},
        )
        url = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and process.poll() is None:
            try:
                with urllib.request.urlopen(f"{url}/readyz", timeout=2) as response:
                    if response.status == 200:
                        return process, url
            except (urllib.error.URLError, OSError):
                time.sleep(0.2)
        process.kill()
        _, err = process.communicate(timeout=10)
        raise AssertionError(
            f"{command.where}: {command.line}\n  did not become ready: exit"
            f" {process.returncode}\n{err[-3000:]}"
        )

    def stop(self, command: DocumentedCommand, process: subprocess.Popen[str]) -> None:
        process.send_signal(signal.SIGTERM)
        try:
            out, err = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate(timeout=10)
        outcome = Outcome(command, list(map(str, process.args)), process.returncode, out, err)  # type: ignore[arg-type]
        self.outcomes.append(outcome)
        self.expect(outcome, process.returncode == 0, "serve did not exit 0 on SIGTERM")

    def walk(self, commands: Sequence[DocumentedCommand]) -> None:
        self.prepare(commands)
        serves = [c for c in commands if c.subcommand == "serve"]
        shadows = [c for c in commands if is_shadow(c)]
        explains = [c for c in commands if c.subcommand == "explain" and not is_shadow(c)]
        rest = [c for c in commands if c.subcommand not in ("serve", "explain", "shadow")]
        if explains and not serves:
            self.problems.append("the documents show caldera explain but no caldera serve")
        if shadows and not any("--shadow" in c.argv for c in serves):
            self.problems.append("the documents show caldera shadow but no caldera serve --shadow")
        running: list[tuple[DocumentedCommand, subprocess.Popen[str]]] = []
        try:
            jobs = sorted({c.argv[1] for c in explains if "--task" not in c.argv})
            tasks = sorted({c.argv[1] for c in explains if "--task" in c.argv})
            for command in serves:
                process, url = self.serve(command)
                drive_one_session(url, jobs or ["team-a/train-42"], tasks)
                if "--shadow" in command.argv:
                    self.shadow_serve = command
                    for shadow in shadows:
                        self.shadow(shadow, url)
                running.append((command, process))
                if len(running) > 1:
                    self.stop(*running.pop())
            if running:
                url = _url_of(running[0][1])
                for command in explains:
                    self.explain(command, url)
        finally:
            for command, process in running:
                self.stop(command, process)
        for command in rest:
            self.other(command)

    def explain(self, command: DocumentedCommand, url: str) -> None:
        argv = list(command.argv)
        for option in ("--port", "--url"):
            while option in argv:
                at = argv.index(option)
                del argv[at : at + 2]
        outcome = self.run(command, [*argv, "--url", url])
        key = argv[1]
        if "--task" in argv:
            # The session offered the task as an evictee of a preemptor (drive_one_session):
            # Caldera's victim plugins judged it, so explain answers about it (exit 0).
            self.expect(
                outcome,
                outcome.returncode == 0 and f"task {key}" in outcome.stdout,
                "explain of a task did not say what Caldera decided about it",
            )
        else:
            self.expect(
                outcome,
                outcome.returncode == 0 and "overcommit rejects" in outcome.stdout,
                "explain did not say why the job waits",
            )

    def shadow(self, command: DocumentedCommand, url: str) -> None:
        """``caldera shadow`` and ``explain --shadow`` against the server started with a
        shadow (the walk-through's shadow file is the live one again: no difference)."""
        argv = list(command.argv)
        for option in ("--port", "--url"):
            while option in argv:
                at = argv.index(option)
                del argv[at : at + 2]
        wait_for_the_shadow(url)
        outcome = self.run(command, [*argv, "--url", url])
        if command.subcommand == "explain":
            key = argv[1]
            expected = [f"the shadow decides job {key} as the live configuration does"]
        else:
            shadow_file = self.local(command_option(self.shadow_serve, "--shadow"))
            expected = [f"shadow {shadow_file} (sha256 ", " compared as the live configuration did"]
            if "--diff" in argv:
                expected += ["configuration difference (live -> shadow):",
                             "  (the files are the same)", "decision difference:"]  # fmt: skip
        missing = [line for line in expected if line not in outcome.stdout]
        self.expect(
            outcome,
            outcome.returncode == 0 and not missing,
            f"the shadow commands did not print what the operator guide says: {missing}",
        )

    def other(self, command: DocumentedCommand) -> None:
        argv = [self.local(arg) for arg in command.argv]
        outcome = self.run(command, argv)
        check = CHECKS.get(command.subcommand)
        if check is None:
            self.expect(outcome, False, f"no check says what {command.subcommand} prints")
            return
        ok, why = check(self, command, outcome)
        self.expect(outcome, ok, why)
        if command.prints:
            printed = outcome.stdout.splitlines()
            missing = [line for line in command.prints if line not in printed]
            self.expect(outcome, not missing, f"did not print the document's lines {missing}")


def is_shadow(command: DocumentedCommand) -> bool:
    """Asks a server's shadow configuration: ``caldera shadow``, ``caldera explain --shadow``."""
    return command.subcommand == "shadow" or (
        command.subcommand == "explain" and "--shadow" in command.argv
    )


def _url_of(process: subprocess.Popen[str]) -> str:
    argv = list(map(str, process.args))  # type: ignore[arg-type]
    port = argv[len(argv) - 1 - argv[::-1].index("--port") + 1]
    return f"http://127.0.0.1:{port}"


def _replay(walk: Walkthrough, command: DocumentedCommand, outcome: Outcome) -> tuple[bool, str]:
    return (
        outcome.returncode == 0 and "answers are the same" in outcome.stdout,
        "replay did not reproduce the recording",
    )


def _openapi(walk: Walkthrough, command: DocumentedCommand, outcome: Outcome) -> tuple[bool, str]:
    # The text, not the parsed document: issue 47 item 10 was an indentation difference.
    committed = (ROOT / "openapi" / "openapi.json").read_text()
    return (
        outcome.returncode == 0 and outcome.stdout == committed,
        "the installed openapi differs from openapi/openapi.json",
    )


def _check_config(
    walk: Walkthrough, command: DocumentedCommand, outcome: Outcome
) -> tuple[bool, str]:
    path = walk.local(next(a for a in command.argv if a.endswith(".yaml")))
    return (
        outcome.returncode == 0
        and outcome.stdout.startswith(f"# {path}: valid. Effective configuration")
        and "# warning:" not in outcome.stdout + outcome.stderr,
        "check-config did not say the file is valid, without warnings",
    )


def _volcano_config(
    walk: Walkthrough, command: DocumentedCommand, outcome: Outcome
) -> tuple[bool, str]:
    """The extender entry (alone, or merged into the conf), for the URL asked, sized when the
    size was given."""
    argv = command.argv
    url = command_option(command, "--url") or "http://127.0.0.1:8090"
    try:
        printed = yaml.safe_load(outcome.stdout)
    except yaml.YAMLError:
        return False, "volcano-config printed no YAML"
    if "--merge" in argv:
        entries = [p for t in printed.get("tiers", []) for p in t["plugins"]] if isinstance(
            printed, dict) else []  # fmt: skip
        if "# note: priority: kept in tier 1" not in outcome.stderr:
            return False, "the merge did not say what it did to the conf (stderr notes)"
    else:
        entries = printed if isinstance(printed, list) else []
        sized = "--nodes" in argv
        if ("# sizing: a snapshot of about" in outcome.stdout) is not sized or (
            "size it with --nodes N --pods P" in outcome.stdout
        ) is sized:
            return False, "volcano-config's sizing lines do not follow --nodes/--pods"
    notes = outcome.stderr if "--merge" in argv else outcome.stdout
    said = {  # the scheduler's settings, each with its note
        "--scheduler-sharding-mode": "# note: --scheduler-sharding-mode ",
        "--scheduler-num": "# note: MULTI_SCHEDULER_ENABLE=true, SCHEDULER_NUM=",
    }
    for flag, note in said.items():
        if flag in argv and note not in notes:
            return False, f"volcano-config printed no note for {flag}"
    extenders = [e for e in entries if e.get("name") == "extender"]
    return (
        outcome.returncode == 0
        and len(extenders) == 1
        and extenders[0]["arguments"]["extender.urlPrefix"] == url,
        f"volcano-config printed no extender entry for {url}",
    )


def _check_plugin(
    walk: Walkthrough, command: DocumentedCommand, outcome: Outcome
) -> tuple[bool, str]:
    """The plugin guide's sample output, the measured p99 the only number that differs."""
    guide = (ROOT / "docs" / "plugin-author-guide.md").read_text()
    section = guide[guide.index("### `caldera check-plugin`") :]
    sample = re.search(r"```\n(caldera check-plugin .*?)```", section, re.S)
    if sample is None:
        return False, "the plugin guide lost check-plugin's sample output"
    pattern = re.escape(sample.group(1)).replace(r"0\.004", r"\d+\.\d{3}")
    return (
        outcome.returncode == 0 and re.fullmatch(pattern, outcome.stdout) is not None,
        "check-plugin did not print the plugin guide's sample",
    )


CHECKS: dict[str, Callable[[Walkthrough, DocumentedCommand, Outcome], tuple[bool, str]]] = {
    "replay": _replay,
    "openapi": _openapi,
    "check-config": _check_config,
    "volcano-config": _volcano_config,
    "check-plugin": _check_plugin,
}
"""What each subcommand run outside a server prints, as its document says (serve, explain and
shadow are checked where they run, against the server)."""

STDIN_STAND_INS: tuple[tuple[str, str], ...] = (
    ("get configmap volcano-scheduler-configmap", HELM_DEFAULT_CONF),
)
"""A pipeline's first stage (a part of it) and what it gives ``caldera`` here: the live
scheduler conf is Volcano's Helm default."""


def command_option(command: DocumentedCommand | None, option: str) -> str | None:
    argv = list(command.argv) if command is not None else []
    return argv[argv.index(option) + 1] if option in argv[:-1] else None


def install_example_plugin(site: Path, package: Path) -> None:
    """The README's ``gpu-model`` example as an installed distribution: its module and the
    entry point pip would leave (the plugin guide's package), for ``check-plugin gpu-model``
    run in ``package``, which holds the guide's ``caldera.yaml``."""
    match = re.search(
        r"<!-- example-plugin -->\n```python\n(.*?)```", (ROOT / "README.md").read_text(), re.S
    )
    assert match, "README lost its example plugin"
    config = re.search(
        r"<!-- example-package: caldera.yaml -->\n```\w*\n(.*?)```",
        (ROOT / "docs" / "plugin-author-guide.md").read_text(), re.S,
    )  # fmt: skip
    assert config, "the plugin guide lost its package's caldera.yaml"
    package.mkdir(parents=True, exist_ok=True)
    (package / "caldera.yaml").write_text(config.group(1))
    info = site / "caldera_gpu_model-0.1.0.dist-info"
    info.mkdir(parents=True, exist_ok=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: caldera-gpu-model\nVersion: 0.1.0\n"
    )
    (info / "entry_points.txt").write_text(
        "[caldera.plugins]\ngpu-model = caldera_gpu_model:GpuModel\n"
    )
    (site / "caldera_gpu_model.py").write_text(match.group(1))
    for path in (site, info, package):
        os.chmod(path, 0o755)  # the image runs as an unprivileged user


def wait_for_the_shadow(url: str, timeout: float = 60) -> None:
    """Until the shadow has evaluated a session: its process answers after the live one."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/debug/shadow", timeout=5) as response:
                body = json.loads(response.read())
            if any(s.get("compared") for s in body.get("sessions", [])):
                return
        except (urllib.error.URLError, OSError, ValueError):
            pass
        time.sleep(0.2)


def _post(url: str, verb: str, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(
        f"{url}/{verb}",
        data=json.dumps(body, separators=(",", ":")).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def drive_one_session(url: str, jobs: Sequence[str], tasks: Sequence[str] = ()) -> None:
    """One cycle as Volcano's enqueue action calls it: each of ``jobs`` (namespace/name) too
    large for the cluster's idle CPU, which overcommit rejects; then, as its preempt action,
    each of ``tasks`` (namespace/pod, running) offered as an evictee to a preemptor of higher
    priority, which Caldera's victim plugins judge."""
    cpu = {"MilliCPU": 4000, "Memory": 16 * 2**30, "ScalarResources": None, "MaxTaskNum": 0}
    node = {
        "Name": "n1",
        "Node": {"metadata": {"name": "n1"},
                 "status": {"allocatable": {"cpu": "4", "memory": "16Gi"}}},
        "State": {"Phase": 1, "Reason": ""},
        "Idle": cpu,
        "Used": {**cpu, "MilliCPU": 0, "Memory": 0},
        "Allocatable": cpu,
        "Capacity": cpu,
        "Tasks": {},
    }  # fmt: skip
    snapshot = {"Jobs": {}, "Nodes": {"n1": node}, "Queues": {}, "NamespaceInfo": {},
                "RevocableNodes": {}}  # fmt: skip
    assert _post(url, "onSessionOpen", snapshot) == {}
    for key in jobs:
        namespace, name = key.split("/")
        job = {
            "UID": key,
            "Name": name,
            "Namespace": namespace,
            "Queue": "default",
            "MinAvailable": 1,
            "Tasks": {},
            "PodGroup": {
                "metadata": {
                    "name": name,
                    "namespace": namespace,
                    "uid": f"uid-{name}",
                    "creationTimestamp": "2026-11-27T00:00:00Z",
                },
                "spec": {"minMember": 1, "queue": "default", "minResources": {"cpu": "8"}},
                "status": {"phase": "Pending"},
                "Version": "v1beta1",
            },
        }
        answer = _post(url, "jobEnqueueable", {"job": job})
        assert answer["status"] == -1, answer
    for key in tasks:
        evictee = _task(key, priority=1, running=True)
        preemptor = _task("team-b/urgent-0", priority=1000, running=False)
        answer = _post(url, "preemptable", {"evictor": preemptor, "evictees": [evictee]})
        assert "status" in answer, answer
    assert _post(url, "onSessionClose", {}) == {}


def _task(key: str, priority: int, running: bool) -> dict[str, Any]:
    """A TaskInfo as Volcano marshals it: a pod of job ``<namespace>/<pod>`` minus its index."""
    namespace, name = key.split("/")
    job = name.rsplit("-", 2)[0]
    return {
        "UID": f"uid-{name}", "Job": f"{namespace}/{job}", "Name": name, "Namespace": namespace,
        "Resreq": {"MilliCPU": 1000, "Memory": 0}, "NodeName": "n1" if running else "",
        "Status": 32 if running else 1, "Priority": priority,
        "Pod": {"metadata": {"name": name, "namespace": namespace, "uid": f"uid-{name}",
                             "creationTimestamp": "2026-11-27T00:00:00Z",
                             "annotations": {"scheduling.k8s.io/group-name": job}},
                "spec": {"priority": priority}, "status": {"phase": "Running" if running
                                                          else "Pending"}},
    }  # fmt: skip


def image_caldera(image: str, scratch: Path) -> list[str]:
    """``caldera`` from the image, as the manifests run it, seeing the scratch directory."""
    return [
        "docker", "run", "--rm", "-i", "--network", "host", "--read-only",
        "--user", "10001:10001", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
        "-v", f"{scratch}:{scratch}", "-w", str(scratch), image,
    ]  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--image", help="run caldera from this container image")
    where.add_argument("--caldera", help="the caldera executable to run")
    parser.add_argument("--scratch", type=Path, required=True, help="an empty directory")
    args = parser.parse_args(argv)
    scratch = args.scratch.resolve()
    caldera = image_caldera(args.image, scratch) if args.image else [args.caldera]
    walk = Walkthrough(caldera, scratch)
    commands = documented_commands()
    walk.walk(commands)
    for outcome in walk.outcomes:
        print(f"exit {outcome.returncode}  {outcome.command.where}: {outcome.command.line}")
    for problem in walk.problems:
        print(f"\nPROBLEM: {problem}", file=sys.stderr)
    print(f"{len(walk.outcomes)} documented commands ran, {len(walk.problems)} problems")
    return 1 if walk.problems else 0


if __name__ == "__main__":
    sys.exit(main())
