"""``python -m tests.service.fault_server serve ...``: the real ``caldera serve`` with test plugins
registered and one deliberate Caldera bug, for the fault tests of tests/service.

- ``test-snapshot-marker`` (needs the snapshot) fails every predicate with a message naming the
  node and job counts of the session it was built for, read at call time: an answer mixing two
  snapshots would show a pair neither has.
- ``test-fails`` raises in jobReady for a job whose UID is ``fail``, and only then.
- ``test-open-fails`` raises in onSessionOpen when the snapshot has a queue named ``poison``.
- ``test-open-waits`` (argument ``dir``), in onSessionOpen of a snapshot with a queue named
  ``wait``: writes ``dir/building``, waits (up to 30 s) until ``dir/go`` exists, then writes
  ``dir/built``: a session build that lasts as long as the test wants.
- ``test-build-fails`` raises in its constructor.
- ``test-raises`` raises in every jobEnqueueable and jobReady (a shadow's broken plugin).
- ``test-sleeps`` sleeps ``seconds`` (default 0.5) in every jobEnqueueable and jobReady, then
  permits (a shadow's slow plugin).
- A jobReady body of exactly :data:`INTERNAL_ERROR_BODY` raises a KeyError outside any plugin,
  standing for a Caldera bug: the route must still answer JSON.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from app.commands.cli import main
from app.extender import Extender
from app.wire import Body
from plugins.api import registry
from plugins.api.arguments import Arguments
from plugins.api.base import Background, FitError, Plugin, Session, Vote
from schemas.api import JobInfo, NodeInfo, TaskInfo

INTERNAL_ERROR_BODY = b'{"caldera-test": "internal error"}'


class SnapshotMarker(Plugin):
    name = "test-snapshot-marker"
    needs_snapshot = True

    def on_session_open(self, ssn: Session) -> None:
        self.ssn = ssn

    def predicate(self, task: TaskInfo, node: NodeInfo) -> FitError | None:
        return FitError(f"nodes={len(self.ssn.nodes)} jobs={len(self.ssn.jobs)}")


class Fails(Plugin):
    name = "test-fails"

    def job_ready(self, job: JobInfo) -> bool:
        if job.UID == "fail":
            raise RuntimeError("scripted failure")
        return True


class OpenFails(Plugin):
    name = "test-open-fails"
    needs_snapshot = True

    def on_session_open(self, ssn: Session) -> None:
        if "poison" in ssn.queues:
            raise RuntimeError("poisoned snapshot")


class OpenWaits(Plugin):
    name = "test-open-waits"
    needs_snapshot = True

    def __init__(self, arguments: Arguments, background: Background | None = None) -> None:
        self.dir = Path(arguments.get_string("dir", "."))

    def on_session_open(self, ssn: Session) -> None:
        if "wait" not in ssn.queues:
            return
        (self.dir / "building").touch()
        deadline = time.monotonic() + 30
        while not (self.dir / "go").exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        (self.dir / "built").touch()


class BuildFails(Plugin):
    name = "test-build-fails"

    def __init__(self, arguments: Arguments, background: Background | None = None) -> None:
        raise RuntimeError("no licence file")


class Raises(Plugin):
    name = "test-raises"

    def job_enqueueable(self, job: JobInfo) -> Vote:
        raise RuntimeError(f"scripted failure on {job.Name}")

    def job_ready(self, job: JobInfo) -> bool:
        raise RuntimeError(f"scripted failure on {job.Name}")


class Sleeps(Plugin):
    name = "test-sleeps"

    def __init__(self, arguments: Arguments, background: Background | None = None) -> None:
        self.seconds = arguments.get_float64("seconds", 0.5)

    def job_enqueueable(self, job: JobInfo) -> Vote:
        time.sleep(self.seconds)
        return Vote.PERMIT

    def job_ready(self, job: JobInfo) -> bool:
        time.sleep(self.seconds)
        return True


def _handle_with_a_bug(self: Extender, verb: str, body: Body) -> bytes:
    if verb == "jobReady" and bytes(body) == INTERNAL_ERROR_BODY:
        raise KeyError("a Caldera bug")
    return _handle(self, verb, body)


_handle = Extender.handle

if __name__ == "__main__":
    for plugin in (SnapshotMarker, Fails, OpenFails, OpenWaits, BuildFails, Raises, Sleeps):
        registry.register(plugin)
    Extender.handle = _handle_with_a_bug  # type: ignore[method-assign]
    sys.exit(main(sys.argv[1:]))
