"""The verbs in process, through the ASGI app (httpx + ASGITransport): managedResources,
dialect dispatch, victims echoed byte for byte, sessionless answers, plugin failures."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any, ClassVar

import httpx
import pytest
import pytest_asyncio

from app.config import load_config_text
from app.server.main import create_app
from app.server.options import ServeOptions
from plugins.api import registry
from plugins.api.base import EvictResult, FitError, Plugin, Session, Vote
from schemas.api import JobInfo, NodeInfo, TaskInfo
from tests.examples import CAPTURED, example_bytes, example_json


class Scripted(Plugin):
    """Answers from its arguments: victims (UIDs), vote, fit_error, fail_in."""

    name = "test-scripted"
    seen: ClassVar[list[str]] = []

    def _maybe_fail(self, verb: str) -> None:
        Scripted.seen.append(verb)
        if self.arguments.get("fail_in") == verb:
            raise RuntimeError(f"scripted failure in {verb}")

    def predicate(self, task: TaskInfo, node: NodeInfo) -> FitError | None:
        self._maybe_fail("predicate")
        reason = self.arguments.get_string("fit_error", "")
        return FitError(reason) if reason else None

    def preemptable(self, preemptor: TaskInfo, preemptees: Sequence[TaskInfo]) -> EvictResult:
        self._maybe_fail("preemptable")
        wanted = self.arguments.get("victims") or []
        return [t for t in preemptees if t.UID in wanted], Vote(self.arguments.get_int("vote", 1))

    def job_enqueueable(self, job: JobInfo) -> Vote:
        self._maybe_fail("jobEnqueueable")
        return Vote(self.arguments.get_int("vote", 1))

    def job_enqueued(self, job: JobInfo) -> None:
        self._maybe_fail("jobEnqueued")

    def allocate(self, task: TaskInfo) -> str | None:
        self._maybe_fail("allocate")
        return self.arguments.get_string("alloc_error", "") or None


class NeedsSnapshot(Plugin):
    name = "test-needs-snapshot"
    needs_snapshot = True

    def on_session_open(self, ssn: Session) -> None:
        self.jobs = len(ssn.jobs)

    def job_ready(self, job: JobInfo) -> bool:
        return False


@pytest.fixture(autouse=True)
def doubles() -> Iterator[None]:
    for cls in (Scripted, NeedsSnapshot):
        registry.register(cls)
    Scripted.seen.clear()
    yield
    for cls in (Scripted, NeedsSnapshot):
        registry._registry.pop(cls.name, None)


def make_client(config: str) -> httpx.AsyncClient:
    app = create_app(ServeOptions.of(load_config_text(config, "test.yaml")))
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://caldera")


@pytest_asyncio.fixture
async def client_factory() -> AsyncIterator[Any]:
    clients: list[httpx.AsyncClient] = []

    def factory(config: str) -> httpx.AsyncClient:
        clients.append(make_client(config))
        return clients[-1]

    yield factory
    for client in clients:
        await client.aclose()


PREEMPTABLE = example_bytes("head", "preemptable.request.json")
VICTIM_UID = example_json("head", "preemptable.request.json")["evictees"][0]["UID"]


async def test_victims_are_the_evictees_byte_for_byte(client_factory: Any) -> None:
    client = client_factory(
        f"tiers: [{{plugins: [{{name: test-scripted, arguments: {{victims: [{VICTIM_UID}]}}}}]}}]"
    )
    response = await client.post("/preemptable", content=PREEMPTABLE)
    assert response.status_code == 200
    raw_evictee = json.dumps(
        example_json("head", "preemptable.request.json")["evictees"][0],
        separators=(",", ":"),
        ensure_ascii=False,
    ).encode()
    assert response.content == b'{"status":1,"victims":[' + raw_evictee + b"]}"
    assert response.json() == example_json("head", "preemptable.response.json")


async def test_blocked_tier_is_answered_as_permit_without_victims(client_factory: Any) -> None:
    client = client_factory("tiers: [{plugins: [{name: test-scripted, arguments: {victims: []}}]}]")
    assert (await client.post("/preemptable", content=PREEMPTABLE)).json() == {
        "status": 1,
        "victims": [],
    }


async def test_managed_resources_filter_every_task_verb(client_factory: Any) -> None:
    client = client_factory(
        "managedResources: [example.com/fpga]\n"
        f"tiers: [{{plugins: [{{name: test-scripted, arguments: {{fit_error: never,"
        f" victims: [{VICTIM_UID}], alloc_error: never}}}}]}}]"
    )
    predicate = await client.post(
        "/predicate", content=example_bytes("head", "predicate.request.json")
    )
    assert predicate.json() == {"status": "", "code": 0}
    prioritize = await client.post(
        "/prioritize", content=example_bytes("head", "prioritize.request.json")
    )
    assert prioritize.json() == {"nodeScore": {}, "errorMessage": ""}
    assert (await client.post("/preemptable", content=PREEMPTABLE)).json() == {
        "status": 0,
        "victims": [],
    }
    allocate = await client.post(
        "/allocate", content=example_bytes("head", "allocateFunc.request.json")
    )
    assert allocate.json() == {"errorMessage": ""}
    assert Scripted.seen == []  # the plugin was never asked about a task outside its resources
    # jobEnqueueable is not filtered (Volcano does not filter it either)
    await client.post(
        "/jobEnqueueable", content=example_bytes("head", "jobEnqueueable.request.json")
    )
    assert Scripted.seen[0] == "jobEnqueueable"


async def test_managed_resources_let_matching_tasks_through(client_factory: Any) -> None:
    client = client_factory(
        "managedResources: [nvidia.com/gpu]\n"
        "tiers: [{plugins: [{name: test-scripted, arguments: {fit_error: wrong GPU model}}]}]"
    )
    predicate = await client.post(
        "/predicate", content=example_bytes("head", "predicate.request.json")
    )
    assert predicate.json() == {"status": "wrong GPU model", "code": 3}


@pytest.mark.parametrize(("version", "implicit"), [("1.15", True), ("1.9", True), ("1.16", False)])
async def test_job_enqueued_is_implied_before_1_16(
    client_factory: Any, version: str, implicit: bool
) -> None:
    client = client_factory(
        f'volcanoVersion: "{version}"\ntiers: [{{plugins: [{{name: test-scripted}}]}}]'
    )
    body = example_bytes(CAPTURED, "jobEnqueueable.request.json")
    assert (await client.post("/jobEnqueueable", content=body)).json() == {"status": 1}
    assert Scripted.seen == (["jobEnqueueable", "jobEnqueued"] if implicit else ["jobEnqueueable"])


async def test_rejected_job_is_never_accounted(client_factory: Any) -> None:
    client = client_factory(
        'volcanoVersion: "1.15"\ntiers: [{plugins: [{name: test-scripted, arguments: {vote: -1}}]}]'
    )
    body = example_bytes(CAPTURED, "jobEnqueueable.request.json")
    assert (await client.post("/jobEnqueueable", content=body)).json() == {"status": -1}
    assert Scripted.seen == ["jobEnqueueable"]


async def test_legacy_releases_share_the_reclaimable_path(client_factory: Any) -> None:
    client = client_factory(
        'volcanoVersion: "1.7"\ntiers: [{plugins: [{name: test-scripted, arguments: {vote: -1}}]}]'
    )
    job = await client.post(
        "/reclaimable", content=example_bytes(CAPTURED, "jobEnqueueable.request.json")
    )
    assert job.json() == {"status": -1}
    queue = await client.post("/", content=example_bytes(CAPTURED, "queueOverused.request.json"))
    assert queue.json() == {"overused": False}
    evict = await client.post(
        "/reclaimable", content=example_bytes(CAPTURED, "reclaimable.request.json")
    )
    assert evict.json() == {"status": 0, "victims": []}
    neither = await client.post("/reclaimable", content=b'{"something": 1}')
    assert neither.status_code == 400 and "evictor" in neither.json()["error"]


async def test_predicate_dialects(client_factory: Any) -> None:
    body = example_bytes("v1.9", "predicate.request.json")
    config = "tiers: [{plugins: [{name: test-scripted, arguments: {fit_error: nope}}]}]"
    old = client_factory('volcanoVersion: "1.9"\n' + config)
    assert (await old.post("/predicate", content=body)).json() == {
        "status": [{"Code": 3, "Reason": "nope"}]
    }
    older = client_factory('volcanoVersion: "1.6"\n' + config)
    assert (await older.post("/predicate", content=body)).json() == {"errorMessage": "nope"}


async def test_plugin_failure_is_500_naming_plugin_and_verb(client_factory: Any) -> None:
    client = client_factory(
        "tiers: [{plugins: [{name: test-scripted, arguments: {fail_in: predicate}}]}]"
    )
    response = await client.post(
        "/predicate", content=example_bytes("head", "predicate.request.json")
    )
    assert response.status_code == 500
    assert response.json()["plugin"] == "test-scripted"
    assert response.json()["verb"] == "predicate"
    metrics = (await client.get("/metrics")).text
    assert (
        'caldera_plugin_errors_total{kind="raised",plugin="test-scripted",verb="predicate"} 1.0'
        in metrics
    )


async def test_verbs_without_session_skip_snapshot_plugins(client_factory: Any) -> None:
    client = client_factory("tiers: [{plugins: [{name: test-needs-snapshot}]}]")
    job = example_bytes(CAPTURED, "jobReady.request.json")
    assert (await client.post("/jobReady", content=job)).json() == {"status": True}
    metrics = (await client.get("/metrics")).text
    assert 'caldera_verbs_without_session_total{verb="jobReady"} 1.0' in metrics
    await client.post(
        "/onSessionOpen", content=example_bytes(CAPTURED, "onSessionOpen.request.json")
    )
    assert (await client.post("/jobReady", content=job)).json() == {"status": False}
    await client.post("/onSessionClose", content=b"{}")
    assert (await client.post("/jobReady", content=job)).json() == {"status": True}


async def test_each_session_builds_fresh_instances(client_factory: Any) -> None:
    client = client_factory("tiers: [{plugins: [{name: test-needs-snapshot}]}]")
    snapshot = example_bytes("head", "onSessionOpen.request.json")
    await client.post("/onSessionOpen", content=snapshot)
    app = client._transport.app  # type: ignore[attr-defined]
    first = app.runtime.sessions.current.framework.tiers[0][0].plugin
    await client.post("/onSessionOpen", content=snapshot)
    second = app.runtime.sessions.current.framework.tiers[0][0].plugin
    assert first is not second and second.jobs == 1


async def test_evictee_with_wrong_shape_is_named(client_factory: Any) -> None:
    client = client_factory("tiers: [{plugins: [{name: test-scripted}]}]")
    response = await client.post(
        "/preemptable", content=b'{"evictor": {}, "evictees": [{}, {"Status": "x"}]}'
    )
    assert response.status_code == 400
    assert "evictees[1].Status" in response.json()["error"]


async def test_openapi_and_docs_are_served(client_factory: Any) -> None:
    client = client_factory("tiers: []")
    assert (await client.get("/docs")).status_code == 200
    spec = (await client.get("/openapi.json")).json()
    assert "/predicate" in spec["paths"] and "TaskInfo" in spec["components"]["schemas"]


async def test_unanswered_verbs_validate_only_the_envelope(client_factory: Any) -> None:
    """With no plugin answering a verb the answer cannot depend on the body, so only its
    shape is checked: malformed JSON and missing objects are still refused."""
    client = client_factory("tiers: []")
    deep = b'{"evictor": {}, "evictees": [{"UID": "a", "Status": "x"}]}'
    assert (await client.post("/preemptable", content=deep)).json() == {"status": 0, "victims": []}
    assert (await client.post("/preemptable", content=deep[:-1])).status_code == 400
    missing = await client.post("/predicate", content=b'{"task": {}}')
    assert missing.status_code == 400 and "node" in missing.json()["error"]
    wrong = await client.post("/jobReady", content=b'{"job": 7}')
    assert wrong.status_code == 400 and "job" in wrong.json()["error"]


async def test_answers_volcano_could_not_read_are_refused(client_factory: Any) -> None:
    """Volcano reads at most 10 MiB of an answer; echoing 12 MiB of victims would fail its call
    anyway, so Caldera says why with a 500 instead of sending it."""
    names = [f"p{i}" for i in range(12)]
    client = client_factory(
        "maxRequestBytes: 67108864\n"
        f"tiers: [{{plugins: [{{name: test-scripted, arguments: {{victims: {names}}}}}]}}]"
    )
    filler = "x" * (1 << 20)
    evictees = [
        {"UID": name, "Name": name, "Namespace": "ns", "NodeName": filler} for name in names
    ]
    body = json.dumps({"evictor": {"UID": "e"}, "evictees": evictees}).encode()
    response = await client.post("/preemptable", content=body)
    assert response.status_code == 500
    assert "10 MiB" in response.json()["error"] and len(response.content) < 1000


async def test_invalid_utf8_in_an_evictee_is_a_json_400(client_factory: Any) -> None:
    # Was a plain-text 500: the evictees are decoded one by one, and msgspec's DecodeError
    # (not a ValidationError) escaped.
    client = client_factory(
        f"tiers: [{{plugins: [{{name: test-scripted, arguments: {{victims: [{VICTIM_UID}]}}}}]}}]"
    )
    name = json.dumps(example_json("head", "preemptable.request.json")["evictees"][0]["Name"])
    body = PREEMPTABLE.replace(name.encode(), b'"bad-\xff\xfe-name"', 1)
    assert body != PREEMPTABLE
    response = await client.post("/preemptable", content=body)
    assert response.status_code == 400
    assert response.headers["content-type"] == "application/json"
    assert "evictees[" in response.json()["error"]
