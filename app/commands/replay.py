"""``caldera replay DIR [--config FILE]``: answer a recording (app/server/record.py) again, in
process, and say verb by verb where the answers differ.

Every session of the recording is replayed in order through one :class:`~app.extender.Extender`
built from the configuration given, as one server would have answered them: the bodies go
through ``Extender.handle`` (no HTTP), and the sessions' clock returns each request's recorded
wall time, so time-dependent plugins (sla, cdp, min-runtime) decide as they did then. Plugins
with a background data source (pdb) start it as the server does and are waited for: pdb with
``source: file`` reads its file, ``source: kubernetes`` the cluster of the current kubeconfig,
so their answers reflect today's PodDisruptionBudgets, not the recorded ones.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TextIO

from app.config import Backgrounds, CalderaConfig
from app.extender import Extender
from app.metrics import Metrics
from app.server.record import INDEX, answer_of
from app.session import SessionManager

BACKGROUND_SYNC_SECONDS = 30.0
SHOWN_PER_VERB = 3
"""Differences printed in full per verb; the rest are counted."""
EXCERPT = 240


class ReplayError(Exception):
    """The directory is not a recording."""


@dataclass(frozen=True, slots=True)
class Exchange:
    session: str
    seq: int
    verb: str
    time: datetime
    status: int
    request: Path
    response: Path


@dataclass
class Difference:
    exchange: Exchange
    recorded: tuple[int, bytes]
    replayed: tuple[int, bytes]


@dataclass
class Report:
    total: Counter[str] = field(default_factory=Counter)
    differing: Counter[str] = field(default_factory=Counter)
    differences: list[Difference] = field(default_factory=list)
    recordings: list[tuple[str, int]] = field(default_factory=list)
    """Each recording replayed (``.`` for the directory's own sessions, else its run-*
    name) and its number of answers."""

    @property
    def differs(self) -> bool:
        return bool(self.differing)


def _has_sessions(directory: Path) -> bool:
    return any(p.is_dir() and (p / INDEX).exists() for p in directory.iterdir())


def recordings(directory: Path) -> list[Path]:
    """Every recording ``directory`` holds, oldest first: its own sessions (the first serve
    start that recorded there), then each ``run-*`` subdirectory, one per later start
    (``app/server/record.py``). Each is replayed from a fresh start, as it was recorded."""
    if not directory.is_dir():
        raise ReplayError(f"{directory} is not a directory")
    found = [directory] if _has_sessions(directory) else []
    found += sorted(p for p in directory.glob("run-*") if p.is_dir() and _has_sessions(p))
    if not found:
        raise ReplayError(
            f"{directory} holds no recorded session (no */{INDEX} nor run-*/*/{INDEX})"
        )
    return found


def exchanges(recording: Path, label: str = "") -> list[Exchange]:
    """The exchanges of one recording's sessions, in order; ``label`` prefixes their session
    names (the run a session belongs to, when a directory holds several)."""
    sessions = sorted(p for p in recording.iterdir() if p.is_dir() and (p / INDEX).exists())
    found: list[Exchange] = []
    for session in sessions:
        for number, line in enumerate((session / INDEX).read_text().splitlines(), 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                found.append(
                    Exchange(
                        f"{label}{session.name}",
                        int(entry["seq"]),
                        str(entry["verb"]),
                        datetime.fromisoformat(entry["time"]),
                        int(entry["status"]),
                        session / entry["request"],
                        session / entry["response"],
                    )
                )
            except (ValueError, KeyError, TypeError) as exc:
                raise ReplayError(f"{session / INDEX}:{number}: not an index line: {exc}") from None
    return found


def same(recorded: tuple[int, bytes], replayed: tuple[int, bytes]) -> bool:
    if recorded[0] != replayed[0]:
        return False
    if recorded[1] == replayed[1]:
        return True
    try:
        return bool(json.loads(recorded[1]) == json.loads(replayed[1]))
    except ValueError:
        return False


class Progress:
    """A bar on stderr when it is a terminal; silent otherwise (logs stay clean)."""

    def __init__(self, total: int, stream: TextIO) -> None:
        self.total = total
        self.stream = stream
        self.enabled = stream.isatty()
        self.last = 0.0

    def update(self, done: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if done != self.total and now - self.last < 0.1:
            return
        self.last = now
        width = 30
        filled = width * done // max(self.total, 1)
        bar = "#" * filled + "-" * (width - filled)
        self.stream.write(f"\rreplaying [{bar}] {done}/{self.total}")
        if done == self.total:
            self.stream.write("\n")
        self.stream.flush()


class ReplayClock:
    def __init__(self) -> None:
        self.now: datetime | None = None

    def __call__(self) -> datetime:
        assert self.now is not None, "plugins read the clock only while a request is replayed"
        return self.now


class SyncError(ReplayError):
    """A plugin's data source failed to sync: its answers would be guesses."""


async def _wait_for_sync(config: CalderaConfig, backgrounds: Backgrounds, stderr: TextIO) -> None:
    """Until every data source has synced. The first failure ends the wait with a
    :class:`SyncError` (retrying a cluster that is not there only delays the same answer);
    a source still syncing after ``BACKGROUND_SYNC_SECONDS`` is warned about and replay goes
    on."""
    deadline = time.monotonic() + BACKGROUND_SYNC_SECONDS
    while True:
        waiting = {key: b for key, b in backgrounds.items() if not b.ready()}
        if not waiting:
            return
        for (tier, index), background in waiting.items():
            error = background.describe().get("lastError")
            if isinstance(error, str) and error:
                name = config.tiers[tier].plugins[index].name
                raise SyncError(
                    f"the data source of {name} (tiers[{tier}].plugins[{index}]) cannot sync:"
                    f" {error}. Replay reads it as the server would: pdb's source: kubernetes"
                    " lists today's PodDisruptionBudgets from your kubeconfig's cluster"
                    " ($KUBECONFIG, or the plugin's kubeconfig argument); without one, replay"
                    " with a configuration whose pdb has source: file"
                )
        if time.monotonic() > deadline:
            for tier, index in waiting:
                name = config.tiers[tier].plugins[index].name
                print(
                    f"caldera replay: warning: the data source of {name}"
                    f" (tiers[{tier}].plugins[{index}]) did not sync in"
                    f" {BACKGROUND_SYNC_SECONDS:g}s; its answers may differ",
                    file=stderr,
                )
            return
        await asyncio.sleep(0.05)


async def _replay(
    config: CalderaConfig,
    recorded: list[tuple[str, list[Exchange]]],
    progress: Progress,
    stderr: TextIO,
) -> Report:
    from app.config import build_backgrounds

    clock = ReplayClock()
    first = next((exchanges[0] for _, exchanges in recorded if exchanges), None)
    if first is not None:
        clock.now = first.time  # sessionless plugins are built at once
    backgrounds, _ = build_backgrounds(config)
    for background in backgrounds.values():
        await background.start()
    try:
        await _wait_for_sync(config, backgrounds, stderr)
        report = Report()
        done = 0
        for name, exchanges in recorded:
            # A fresh server per recording: each run is one serve start.
            metrics = Metrics()  # a registry per server: each takes a metric once
            extender = Extender(
                config, SessionManager(config, metrics, backgrounds, clock=clock), metrics
            )
            report.recordings.append((name, len(exchanges)))
            for exchange in exchanges:
                clock.now = exchange.time
                answer = answer_of(extender, exchange.verb, exchange.request.read_bytes())
                expected = (exchange.status, exchange.response.read_bytes())
                report.total[exchange.verb] += 1
                if not same(expected, answer):
                    report.differing[exchange.verb] += 1
                    report.differences.append(Difference(exchange, expected, answer))
                done += 1
                progress.update(done)
        return report
    finally:
        for background in reversed(list(backgrounds.values())):
            await background.stop()


def replay(config: CalderaConfig, directory: Path, stderr: TextIO | None = None) -> Report:
    """Replay every recording of ``directory`` (:func:`recordings`); a single one is the
    directory given, which may be a run-* subdirectory to replay that run alone."""
    found = recordings(directory)
    recorded = [
        (
            "." if recording == directory else recording.name,
            exchanges(recording, "" if recording == directory else f"{recording.name}/"),
        )
        for recording in found
    ]
    total = sum(len(e) for _, e in recorded)
    stderr = stderr or sys.stderr
    return asyncio.run(_replay(config, recorded, Progress(total, stderr), stderr))


def excerpt(answer: tuple[int, bytes]) -> str:
    text = answer[1].decode("utf-8", "replace")
    if len(text) > EXCERPT:
        text = text[:EXCERPT] + f"... ({len(answer[1])} bytes)"
    return f"{answer[0]} {text}"


def render(report: Report) -> Iterator[str]:
    """Which recordings were replayed when there are several, then verb by verb how many
    answers differ, and the first few of each."""
    if len(report.recordings) > 1:
        yield (
            f"{len(report.recordings)} recordings (one per serve start), each replayed from a"
            " fresh start: "
            + ", ".join(
                f"{name} ({count} answer{'' if count == 1 else 's'})"
                for name, count in report.recordings
            )
        )
    shown: Counter[str] = Counter()
    by_verb: dict[str, list[Difference]] = {}
    for difference in report.differences:
        by_verb.setdefault(difference.exchange.verb, []).append(difference)
    width = max((len(v) for v in report.total), default=4)
    for verb, total in report.total.items():
        differing = report.differing[verb]
        verdict = f"{differing} differ" if differing else "all same"
        yield f"{verb:<{width}}  {total:>7} answers  {verdict}"
        for difference in by_verb.get(verb, []):
            shown[verb] += 1
            if shown[verb] > SHOWN_PER_VERB:
                yield f"    ... and {differing - SHOWN_PER_VERB} more"
                break
            exchange = difference.exchange
            yield f"    {exchange.session}/{exchange.seq:06d} at {exchange.time.isoformat()}"
            yield f"      recorded: {excerpt(difference.recorded)}"
            yield f"      replayed: {excerpt(difference.replayed)}"
    total = sum(report.total.values())
    differing_total = sum(report.differing.values())
    yield (
        f"{differing_total} of {total} answers differ"
        if differing_total
        else f"all {total} answers are the same"
    )
