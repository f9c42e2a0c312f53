"""Every ``caldera`` command that README.md and docs/ show, run against what ships.

The same walk-through runs against two installs: the wheel in a fresh virtualenv with its runtime
dependencies only (``tests/shipped/test_wheel.py``) and the container image
(``tests/image/run.sh`` runs ``python -m tests.shipped.walkthrough --image caldera:test``). A
module that imports a package outside the runtime dependencies, or a documented command that no
longer runs, fails both.

A documented command is a line of a fenced shell block whose command, after the prefixes that
only say where it runs (``pip install . &&``, ``uv run``, ``kubectl ... exec ... --``), is
``caldera``. It runs in a scratch directory, rewritten only where the document names a place
that this machine does not have:

- an absolute path becomes its file name in the scratch directory (``/tmp/caldera.yaml``);
- ``serve`` listens on a free loopback port, is driven through one admission session and stops
  on SIGTERM (exit 0); the first one keeps serving while the ``explain`` commands ask it;
- ``explain``'s ``--port N`` or ``--url U`` names that server;
- ``> FILE`` writes the scratch directory's FILE.

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

from tests.examples import HELM_DEFAULT_CONF

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"```(?:sh|bash|console|shell)\n(.*?)```", re.S)
# Prefixes that say where a command runs, not what it is.
WHERE = re.compile(r"^(?:\$ |pip install \. && |uv run |kubectl \S.*? -- )")
COMMENT = re.compile(r"\s+#\s.*$")


@dataclass(frozen=True)
class DocumentedCommand:
    """One ``caldera`` command as a document shows it, and where."""

    where: str  # document:line
    line: str  # as written
    argv: tuple[str, ...]  # caldera's arguments, paths not yet rewritten
    stdout_to: str | None  # the file of a ``> FILE``

    @property
    def subcommand(self) -> str:
        return self.argv[0] if self.argv else ""


def documented_commands(documents: Sequence[Path] = DOCUMENTS) -> list[DocumentedCommand]:
    commands = []
    for document in documents:
        text = document.read_text()
        for block in FENCE.finditer(text):
            first_line = text.count("\n", 0, block.start(1)) + 1
            for offset, raw in enumerate(block.group(1).splitlines()):
                line = COMMENT.sub("", raw).strip()
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
                    )
                )
    return commands


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

    # -- running --------------------------------------------------------------------------
    def run(self, command: DocumentedCommand, argv: list[str]) -> Outcome:
        full = [*self.caldera, *argv]
        result = subprocess.run(
            full, cwd=self.scratch, capture_output=True, text=True, timeout=120, check=False
        )
        if command.stdout_to:
            (self.scratch / command.stdout_to).write_text(result.stdout)
        outcome = Outcome(command, full, result.returncode, result.stdout, result.stderr)
        self.outcomes.append(outcome)
        return outcome

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
            for command in serves:
                process, url = self.serve(command)
                drive_one_session(url, jobs or ["team-a/train-42"])
                if "--shadow" in command.argv:
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
            # A task is known once a predicate or an eviction asked about it; the one session
            # asks neither, so Caldera's answer is that it made no decision (exit 1).
            self.expect(
                outcome,
                outcome.returncode in (0, 1) and key in outcome.stdout + outcome.stderr,
                "explain of a task did not answer about it",
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
        outcome = self.run(command, [*argv, "--url", url])
        self.expect(
            outcome,
            outcome.returncode == 0 and "shadow" in outcome.stdout,
            "the shadow commands did not answer from the server's shadow",
        )

    def other(self, command: DocumentedCommand) -> None:
        argv = [self.local(arg) for arg in command.argv]
        outcome = self.run(command, argv)
        check = CHECKS.get(command.subcommand)
        if check is None:
            self.expect(outcome, outcome.returncode == 0, "exited non-zero")
            return
        ok, why = check(self, command, outcome)
        self.expect(outcome, ok, why)


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
    committed = json.loads((ROOT / "openapi" / "openapi.json").read_text())
    try:
        printed = json.loads(outcome.stdout)
    except ValueError:
        return False, "openapi printed no JSON"
    return printed == committed, "the installed openapi differs from openapi/openapi.json"


def _volcano_config(
    walk: Walkthrough, command: DocumentedCommand, outcome: Outcome
) -> tuple[bool, str]:
    return (
        outcome.returncode == 0 and "extender.urlPrefix" in outcome.stdout,
        "volcano-config printed no extender entry",
    )


CHECKS: dict[str, Callable[[Walkthrough, DocumentedCommand, Outcome], tuple[bool, str]]] = {
    "replay": _replay,
    "openapi": _openapi,
    "volcano-config": _volcano_config,
}


def _post(url: str, verb: str, body: dict[str, Any]) -> Any:
    request = urllib.request.Request(
        f"{url}/{verb}",
        data=json.dumps(body, separators=(",", ":")).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def drive_one_session(url: str, jobs: Sequence[str]) -> None:
    """One cycle as Volcano's enqueue action calls it: each of ``jobs`` (namespace/name) too
    large for the cluster's idle CPU, which overcommit rejects."""
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
    assert _post(url, "onSessionClose", {}) == {}


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
