"""sla through the real server: /jobEnqueueable votes Permit (1) once a job's SLA has passed and
Abstain (0) before; it never Rejects, and it needs no open session."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.service.conftest import StartCaldera
from tests.service.plugin_bodies import config, job, open_session, post

HOUR_NS = 3_600_000_000_000
MINUTE_NS = 60_000_000_000


def sla(arguments: str) -> str:
    return config(f"name: sla\narguments: {arguments}")


async def test_sla_global_waiting_time(caldera_server: StartCaldera) -> None:
    server = await caldera_server(sla("{sla-waiting-time: 3m}"))
    now = datetime.now(UTC)
    overdue = job("team-a", "overdue", created=now - timedelta(days=1))
    fresh = job("team-a", "fresh", created=now + timedelta(days=1))  # far from any deadline
    await open_session(server, [overdue, fresh])
    assert await post(server, "jobEnqueueable", {"job": overdue}) == {"status": 1}
    assert await post(server, "jobEnqueueable", {"job": fresh}) == {"status": 0}
    # A zero creation timestamp: time.Since saturates, the job is past any deadline.
    assert await post(server, "jobEnqueueable", {"job": job("team-a", "zero")}) == {"status": 1}
    assert await post(server, "jobEnqueued", {"job": overdue}) == {}


async def test_sla_job_waiting_time_overrides_global(caldera_server: StartCaldera) -> None:
    server = await caldera_server(sla("{sla-waiting-time: 3m}"))
    day_ago = datetime.now(UTC) - timedelta(days=1)
    await open_session(server, [])
    longer = job("team-a", "longer", created=day_ago, waiting_time=48 * HOUR_NS)
    assert await post(server, "jobEnqueueable", {"job": longer}) == {"status": 0}
    shorter = job("team-a", "shorter", created=day_ago, waiting_time=MINUTE_NS)
    assert await post(server, "jobEnqueueable", {"job": shorter}) == {"status": 1}


async def test_sla_invalid_argument_means_no_global_sla(caldera_server: StartCaldera) -> None:
    # YAML int 10 is not a string: Volcano keeps no global SLA, and neither does Caldera.
    server = await caldera_server(sla("{sla-waiting-time: 10}"))
    day_ago = datetime.now(UTC) - timedelta(days=1)
    old = job("team-a", "old", created=day_ago)
    assert await post(server, "jobEnqueueable", {"job": old}) == {"status": 0}
    # A job's own waiting time still applies, with no session open (sla needs no snapshot).
    own = job("team-a", "own", created=day_ago, waiting_time=MINUTE_NS)
    assert await post(server, "jobEnqueueable", {"job": own}) == {"status": 1}
