"""``caldera replay DIR [--config FILE]``: answer a recording (app/record.py) again, in process,
and say verb by verb where the answers differ.

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

from app.config import CalderaConfig
from app.extender import Extender
from app.record import INDEX, answer_of
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

    @property
    def differs(self) -> bool:
        return bool(self.differing)


def exchanges(directory: Path) -> list[Exchange]:
    if not directory.is_dir():
        raise ReplayError(f"{directory} is not a directory")
    sessions = sorted(p for p in directory.iterdir() if p.is_dir() and (p / INDEX).exists())
    if not sessions:
        # serve --record into a directory already in use records into a run-* subdirectory.
        runs = sorted(p for p in directory.glob("run-*") if any(p.glob(f"*/{INDEX}")))
        if len(runs) > 1:
            raise ReplayError(
                f"{directory} holds {len(runs)} recordings (one per serve start): replay one of "
                + ", ".join(str(run) for run in runs)
            )
        if runs:
            return exchanges(runs[0])
        raise ReplayError(f"{directory} holds no recorded session (no */{INDEX})")
    found: list[Exchange] = []
    for session in sessions:
        for number, line in enumerate((session / INDEX).read_text().splitlines(), 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
                found.append(
                    Exchange(
                        session.name,
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


async def _replay(config: CalderaConfig, recorded: list[Exchange], progress: Progress) -> Report:
    from app.config_watch import build_backgrounds

    clock = ReplayClock()
    if recorded:
        clock.now = recorded[0].time  # sessionless plugins are built at once
    backgrounds, _ = build_backgrounds(config)
    for background in backgrounds.values():
        await background.start()
    try:
        deadline = time.monotonic() + BACKGROUND_SYNC_SECONDS
        while not all(b.ready() for b in backgrounds.values()):
            if time.monotonic() > deadline:
                for key, background in backgrounds.items():
                    if not background.ready():
                        print(
                            f"caldera replay: warning: the data source of tiers[{key[0]}]"
                            f".plugins[{key[1]}] did not sync in {BACKGROUND_SYNC_SECONDS:g}s"
                            f" ({background.describe().get('lastError')}); its answers may"
                            " differ",
                            file=sys.stderr,
                        )
                break
            await asyncio.sleep(0.05)
        extender = Extender(config, SessionManager(config, None, backgrounds, clock=clock))
        report = Report()
        for done, exchange in enumerate(recorded, 1):
            clock.now = exchange.time
            answer = answer_of(extender, exchange.verb, exchange.request.read_bytes())
            expected = (exchange.status, exchange.response.read_bytes())
            report.total[exchange.verb] += 1
            if not same(expected, answer):
                report.differing[exchange.verb] += 1
                report.differences.append(Difference(exchange, expected, answer))
            progress.update(done)
        return report
    finally:
        for background in reversed(list(backgrounds.values())):
            await background.stop()


def replay(config: CalderaConfig, directory: Path, stderr: TextIO = sys.stderr) -> Report:
    recorded = exchanges(directory)
    return asyncio.run(_replay(config, recorded, Progress(len(recorded), stderr)))


def excerpt(answer: tuple[int, bytes]) -> str:
    text = answer[1].decode("utf-8", "replace")
    if len(text) > EXCERPT:
        text = text[:EXCERPT] + f"... ({len(answer[1])} bytes)"
    return f"{answer[0]} {text}"


def render(report: Report) -> Iterator[str]:
    """Verb by verb: how many answers differ, and the first few of each."""
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
