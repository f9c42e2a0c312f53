"""overcommit through the real server: onSessionOpen with nodes and jobs, then jobEnqueueable
and (1.16) jobEnqueued, or (1.15) the framework's implicit accounting after a non-Reject answer."""

from __future__ import annotations

from typing import Any

from tests.service.conftest import CalderaProcess, StartCaldera
from tests.service.plugin_bodies import admission_job, post, resource

GI = 2**30
GPU = "nvidia.com/gpu"


def config(version: str, factor: float = 1.0) -> str:
    return (
        f'volcanoVersion: "{version}"\n'
        "tiers:\n"
        "- plugins:\n"
        "  - name: overcommit\n"
        f"    arguments: {{overcommit-factor: {factor}}}\n"
    )


def node(name: str, cpu: str, memory: str, milli_cpu: float, mem_bytes: float) -> dict[str, Any]:
    return {
        "Name": name,
        "Node": {
            "metadata": {"name": name},
            "status": {"allocatable": {"cpu": cpu, "memory": memory}},
        },
        "State": {"Phase": 1, "Reason": ""},
        "Idle": resource(milli_cpu, mem_bytes),
        "Used": resource(),
        "Allocatable": resource(milli_cpu, mem_bytes),
        "Capacity": resource(milli_cpu, mem_bytes),
        "Tasks": {},
    }


def job(
    name: str, phase: str, min_resources: dict[str, str] | None, ns: str = "team-a"
) -> dict[str, Any]:
    return admission_job(name, min_resources, phase=phase, ns=ns)


async def open_session(server: CalderaProcess, jobs: list[dict[str, Any]]) -> None:
    body = {
        "Jobs": {j["UID"]: j for j in jobs},
        "Nodes": {
            "n1": node("n1", "2", "4Gi", 2000, 4 * GI),
            "n2": node("n2", "4", "16Gi", 4000, 16 * GI),
        },
        "Queues": {},
        "NamespaceInfo": {},
        "RevocableNodes": {},
    }
    assert await post(server, "onSessionOpen", body) == {}


async def enqueueable(server: CalderaProcess, j: dict[str, Any]) -> int:
    return int((await post(server, "jobEnqueueable", {"job": j}))["status"])


# The snapshot holds 2 CPUs Inqueue; at factor 1.0 idle is 6000m: 4000m are left.
QUEUED = job("queued", "Inqueue", {"cpu": "2", "memory": "1Gi"})
JOB_A = job("a", "Pending", {"cpu": "3", "memory": "1Gi"})
JOB_B = job("b", "Pending", {"cpu": "2", "memory": "1Gi"})


async def test_overcommit_1_16_accounts_on_job_enqueued(caldera_server: StartCaldera) -> None:
    server = await caldera_server(config("1.16"))
    await open_session(server, [QUEUED])
    assert await enqueueable(server, JOB_A) == 1
    assert await enqueueable(server, JOB_B) == 1  # the vote alone reserves nothing
    assert await post(server, "jobEnqueued", {"job": JOB_A}) == {}
    assert await enqueueable(server, JOB_B) == -1  # 2000 + 3000 + 2000 > 6000
    assert await enqueueable(server, job("best-effort", "Pending", None)) == 1
    assert await enqueueable(server, job("gpu", "Pending", {"cpu": "1", GPU: "1"})) == -1

    # A new session starts from its snapshot again.
    await open_session(server, [QUEUED])
    assert await enqueueable(server, JOB_B) == 1


async def test_overcommit_1_15_accounts_after_a_permit(caldera_server: StartCaldera) -> None:
    server = await caldera_server(config("1.15"))
    await open_session(server, [QUEUED])
    assert await enqueueable(server, JOB_A) == 1  # admitted: the framework accounts for it
    assert await enqueueable(server, JOB_B) == -1
    # A rejected job is not accounted: a smaller one still fits (2000 + 3000 + 1000 = 6000).
    assert await enqueueable(server, job("c", "Pending", {"cpu": "1"})) == 1
    assert await enqueueable(server, job("d", "Pending", {"cpu": "1m"})) == -1


async def test_overcommit_factor_from_the_configuration(caldera_server: StartCaldera) -> None:
    # 1.2: idle 7200m; 2000 queued + 5200 asked fits exactly, 5201m does not.
    server = await caldera_server(config("1.16", 1.2))
    await open_session(server, [QUEUED])
    assert await enqueueable(server, job("e", "Pending", {"cpu": "5200m"})) == 1
    assert await enqueueable(server, job("f", "Pending", {"cpu": "5201m"})) == -1
