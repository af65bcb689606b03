"""Alert rules on the real watcher's cycles, against bench/simulate.py's synthetic cluster (no Kafka;
real Redis and database): a broker leaving fires "broker down" and "under-replicated" once each, a
cycle that cannot read fires and resolves nothing, and the broker's return resolves its alert."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import override_settings

from alerts_app import evaluator
from alerts_app.models import Alert, AlertChannel, AlertRule, Notification
from bench.simulate import Model, SimGateway
from console.gateway.errors import ClusterUnavailable
from console.watcher.loop import ClusterWatcher

pytestmark = pytest.mark.django_db
CLUSTER = "sim-alerts"


@pytest.fixture
def watched(redis_server: str) -> Iterator[tuple[ClusterWatcher, Model, SimGateway]]:
    model = Model(partitions=60, groups=4, brokers=3, per_topic=10, seed=4)
    gw = SimGateway(model, failure_rate=0.0, seed=5)
    hook = AlertChannel.objects.create(name="hook", kind="webhook", url="http://127.0.0.1:9/")
    for condition in ("broker_down", "under_replicated"):
        AlertRule.objects.create(cluster=CLUSTER, name=condition, condition=condition).channels.add(hook)
    with override_settings(ANALYTICS_SAMPLES=False):
        w = ClusterWatcher(CLUSTER, "test", gw=gw)  # type: ignore[arg-type]
        w.cycle()
        w.sample_offsets()
        w.cycle()
        yield w, model, gw
        w.close()


def firing(condition: str) -> set[str]:
    return set(Alert.objects.filter(rule__condition=condition, state="firing").values_list("key", flat=True))


def sent(condition: str, kind: str) -> list[Any]:
    return list(Notification.objects.filter(rule__condition=condition, kind=kind))


def test_a_broker_leaving_fires_broker_down_and_under_replicated_once_each(watched: tuple[ClusterWatcher, Model, SimGateway]) -> None:
    w, model, _ = watched
    assert firing("broker_down") == set() and firing("under_replicated") == set()
    model.broker_down(2)
    w.cycle()
    w.cycle()
    assert firing("broker_down") == {"broker:2"}
    hosted = {f"partition:{name}:{p}" for name, parts in model.topics.items() for p, v in enumerate(parts) if 2 in v[1]}
    assert hosted and firing("under_replicated") == hosted
    assert len(sent("broker_down", "firing")) == 1
    [urp] = sent("under_replicated", "firing")
    assert len(urp.payload["alerts"]) == len(hosted)


def test_a_cycle_that_cannot_read_fires_and_resolves_nothing(watched: tuple[ClusterWatcher, Model, SimGateway],
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    w, model, gw = watched
    monkeypatch.setattr(evaluator, "GENERATION_EVERY", 0.0)  # (the new rule read at the next cycle)
    waiting = AlertRule.objects.create(cluster=CLUSTER, name="urp for 1 s", condition="under_replicated", for_seconds=1)
    model.broker_down(2)
    w.cycle()
    before = (firing("broker_down"), firing("under_replicated"), Notification.objects.count())
    assert set(Alert.objects.filter(rule=waiting).values_list("state", flat=True)) == {"pending"}
    time.sleep(1.1)

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise ClusterUnavailable("simulated: no broker answered")

    with monkeypatch.context() as m:
        m.setattr(gw, "metadata", refused)
        snap, _ = w.cycle()  # (its snapshot holds the last partitions, which it could not read again)
        assert not snap.reachable
    assert (firing("broker_down"), firing("under_replicated"), Notification.objects.count()) == before
    assert set(Alert.objects.filter(rule=waiting).values_list("state", flat=True)) == {"pending"}
    w.cycle()
    assert set(Alert.objects.filter(rule=waiting).values_list("state", flat=True)) == {"firing"}


def test_the_broker_back_resolves_its_alert(watched: tuple[ClusterWatcher, Model, SimGateway]) -> None:
    w, model, _ = watched
    model.broker_down(2)
    w.cycle()
    model.broker_up(2)
    w.cycle()
    w.cycle()
    assert firing("broker_down") == set()
    [resolved] = sent("broker_down", "resolved")
    assert [a["key"] for a in resolved.payload["alerts"]] == ["broker:2"]


def test_a_sampling_pass_fires_the_rules_on_groups(watched: tuple[ClusterWatcher, Model, SimGateway],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    w, model, _ = watched
    monkeypatch.setattr(evaluator, "GENERATION_EVERY", 0.0)
    gid = sorted(model.groups)[1]
    AlertRule.objects.create(cluster=CLUSTER, name="behind", condition="group_lag", threshold=40, target=gid)
    w.sample_offsets()
    assert firing("group_lag") == set()
    topic, committed, members = model.groups[gid]
    model.groups[gid] = (topic, {p: c - 50 for p, c in committed.items()}, members)  # (50 records behind on each partition)
    w.sample_offsets()
    assert firing("group_lag") == {f"group:{gid}"}
    assert Alert.objects.get(rule__name="behind").value == 50 * len(committed)
