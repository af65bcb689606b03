"""The real watcher against bench/simulate.py's synthetic cluster: no Kafka, real Redis and database.

Read failures (errors, and metadata answers missing a random share of the topics) are injected; the
snapshot must never lose a topic to them nor report a deletion or a broker event the model never made,
while a topic really deleted is reported.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from django.test import override_settings

from bench.simulate import SPURIOUS_KINDS, Model, SimGateway
from brokers_app.models import Event
from console.watcher.loop import ClusterWatcher

pytestmark = pytest.mark.django_db


@pytest.fixture
def watcher(redis_server: str) -> Any:
    model = Model(partitions=600, groups=40, brokers=6, per_topic=20, seed=4)
    gw = SimGateway(model, failure_rate=0.0, seed=5)
    with override_settings(ANALYTICS_SAMPLES=False):
        w = ClusterWatcher("sim-test", "test", gw=gw)  # type: ignore[arg-type]
        w.cycle()
        w.sample_offsets()
        yield w, model, gw


def test_a_thousand_cycles_with_failed_and_partial_reads_raise_no_spurious_events(watcher: Any) -> None:
    w, model, gw = watcher
    gw.failure_rate = 0.2
    rng = random.Random(6)
    for i in range(1000):
        model.step(0.01, 1.0)
        snap, _changes = w.cycle()
        if snap.reachable:
            # Never a partial snapshot: every topic of the model is there, whatever the answer held.
            assert snap.topics.keys() == model.topics.keys(), i
        if rng.random() < 0.2:
            w.sample_offsets()
    assert gw.failures.get("partial metadata", 0) > 50, gw.failures  # the test did inject partial answers
    kinds = list(Event.objects.filter(cluster="sim-test").values_list("kind", flat=True))
    assert not [k for k in kinds if k in SPURIOUS_KINDS], sorted(set(kinds))
    assert "leader_change" in kinds  # the real changes were seen


def test_a_topic_really_deleted_is_reported_once_kafka_says_so(watcher: Any) -> None:
    w, model, gw = watcher
    gone = model.names[3]
    with model.lock:
        del model.topics[gone]
        model.names.remove(gone)
    snap, changes = w.cycle()
    assert gone not in snap.topics
    assert [c.kind for c in changes if c.topic == gone] == ["topic_deleted"]


def test_a_topic_kafka_cannot_vouch_for_is_kept(watcher: Any) -> None:
    w, model, gw = watcher

    def cannot_tell(names: Any) -> dict[str, bool]:
        from console.gateway.errors import ClusterUnavailable

        raise ClusterUnavailable("describe timed out")

    hidden = model.names[5]
    real_metadata = gw.metadata

    def without_one() -> Any:
        from dataclasses import replace

        md = real_metadata()
        return replace(md, topics=tuple(t for t in md.topics if t.name != hidden))

    gw.metadata, gw.topics_exist = without_one, cannot_tell
    snap, changes = w.cycle()
    assert hidden in snap.topics
    assert not [c for c in changes if c.topic == hidden]
