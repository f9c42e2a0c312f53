"""app/metrics.py: the tallies read as the Prometheus counters they replace."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, generate_latest

from app.metrics import Metrics, Tally

ANSWERS = [
    (("priority", "preemptable", "victims"), 3.0),
    (("priority", "preemptable", "none"), 1.0),
    (("pdb", "reclaimable", "victims"), 2.0),
    (("priority", "preemptable", "victims"), 1.0),
]


def exposition(registry: CollectorRegistry) -> list[str]:
    lines = generate_latest(registry).decode().splitlines()
    return [line for line in lines if "_created" not in line]


def test_a_tally_is_exposed_exactly_as_a_labelled_counter() -> None:
    counted, tallied = CollectorRegistry(), CollectorRegistry()
    labels = ["plugin", "verb", "outcome"]
    counter = Counter("caldera_plugin_decisions_total", "Answers.", labels, registry=counted)
    tally = Tally("caldera_plugin_decisions_total", "Answers.", labels, registry=tallied)
    assert exposition(tallied) == exposition(counted)  # HELP and TYPE before any answer
    for values, amount in ANSWERS:
        counter.labels(*values).inc(amount)
        tally.inc(values, amount)
    assert exposition(tallied) == exposition(counted)
    assert tally.counts[("priority", "preemptable", "victims")] == 4.0


def test_decisions_and_rejections_are_tallies_on_the_apps_registry() -> None:
    metrics = Metrics()
    metrics.decisions.inc(("priority", "preemptable", "victims"))
    metrics.rejections.inc(("priority", "preemptable", "not-lower-priority"), 2)
    text = generate_latest(metrics.registry).decode()
    assert (
        'caldera_plugin_decisions_total{outcome="victims",plugin="priority",verb="preemptable"} 1.0'
        in text
    )
    assert (
        'caldera_rejections_total{plugin="priority",reason="not-lower-priority",'
        'verb="preemptable"} 2.0' in text
    )
